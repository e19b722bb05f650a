"""Confidence ellipsoid: radius, rank-one updates, and the closed-form LCB."""

import numpy as np
import pytest

import sege_cvx as sc


def test_confidence_radius_by_hand():
    # r = sigma sqrt(d log((1 + t L^2 / lam) / delta)) + sqrt(lam) S
    r = sc.confidence_radius(100, 0.05, dim=2, noise_sd=1.0, lam=0.1, S=1.0, L=1 + np.sqrt(2))
    expect = np.sqrt(2 * np.log((1 + 100 * (1 + np.sqrt(2)) ** 2 / 0.1) / 0.05)) + np.sqrt(0.1)
    assert r == pytest.approx(expect, rel=1e-14)
    assert r == pytest.approx(5.146632777, rel=1e-9)


def test_rank_one_updates_match_direct_solution():
    rng = np.random.default_rng(0)
    d, n_obs, lam = 3, 300, 0.1
    X = rng.standard_normal((n_obs, d))
    Y = X @ np.array([0.5, -1.0, 2.0]) + rng.standard_normal(n_obs)
    ce = sc.ConfidenceEllipsoid(d, lam, n_runs=2)
    for x, y in zip(X, Y, strict=True):
        ce.update(np.stack([x, 2 * x]), np.array([y, 0.0]), mask=np.array([True, False]))
    V = lam * np.eye(d) + X.T @ X
    np.testing.assert_allclose(ce.V[0], V, rtol=1e-12)
    np.testing.assert_allclose(ce.V_inv[0], np.linalg.inv(V), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ce.theta_hat[0], np.linalg.solve(V, X.T @ Y), rtol=1e-9)
    np.testing.assert_array_equal(ce.counts, [n_obs, 0])
    np.testing.assert_allclose(ce.V[1], lam * np.eye(d))  # masked-out run untouched
    np.testing.assert_allclose(ce.lambda_min()[0], np.linalg.eigvalsh(V)[0], rtol=1e-10)


def test_lambda_min_closed_form_2d():
    ce = sc.ConfidenceEllipsoid(2, 1.0, n_runs=1)
    ce.update(np.array([[3.0, 4.0]]), np.array([1.0]))
    assert ce.lambda_min()[0] == pytest.approx(np.linalg.eigvalsh(ce.V[0])[0], rel=1e-14)
    assert ce.lambda_min()[0] == pytest.approx(1.0)


def test_lcb_by_hand():
    assert sc.lcb(np.array([3.0, 4.0]), np.array([1.0, 0.0]), 4 * np.eye(2), 1.0) == pytest.approx(0.5)


def test_lcb_equals_brute_force_minimum_over_confidence_boundary():
    rng = np.random.default_rng(1)
    theta_hat = np.array([0.6, 0.8])
    V = np.array([[7.0, 2.0], [2.0, 3.0]])
    r = 1.3
    # Boundary of {theta : ||theta - theta_hat||_V <= r}: theta_hat + r L^{-T} u, V = L L^T.
    L = np.linalg.cholesky(V)
    angles = np.linspace(0, 2 * np.pi, 200001)
    u = np.column_stack([np.cos(angles), np.sin(angles)])
    thetas = theta_hat + r * np.linalg.solve(L.T, u.T).T
    xs = rng.standard_normal((25, 2)) * 2
    brute = (xs @ thetas.T).min(axis=1)
    closed = sc.lcb(xs, theta_hat, V, r)
    np.testing.assert_allclose(closed, brute, atol=1e-8)
    assert np.all(closed <= brute + 1e-12)  # the closed form is the exact minimum
