"""Tests for the exact LCB arm over an ellipsoid, eq. (lcb arm).

``X^LCB = argmax_{x in E} <x, theta_hat> - r ||x||_{V^{-1}}``, ``E = {(x-c)^T H^{-1} (x-c) <= 1}``.
References: hand-derived optima, instances built from their KKT conditions, Clarabel (through
cvxpy) and dense sampling of the boundary in 2-D.
"""

from __future__ import annotations

import math
import warnings

import cvxpy as cp
import numpy as np
import pytest

from sege_cvx.arm_sets.ellipsoid.lcb import EllipsoidLCBKernel, ellipsoid_lcb_arms

SQRT2 = math.sqrt(2.0)


def rand_spd(rng: np.random.Generator, d: int, spread: float) -> np.ndarray:
    """Random rotation of eigenvalues spread over ``spread`` orders of magnitude."""
    q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    lam = 10.0 ** rng.uniform(-spread / 2, spread / 2, d)
    return (q * lam) @ q.T


def sqrtm_spd(h: np.ndarray) -> np.ndarray:
    lam, vecs = np.linalg.eigh(h)
    return (vecs * np.sqrt(lam)) @ vecs.T


def objective(x: np.ndarray, theta: np.ndarray, v_inv: np.ndarray, r: float) -> float:
    return float(theta @ x - r * math.sqrt(max(x @ v_inv @ x, 0.0)))


def ellipsoid_quad(x: np.ndarray, c: np.ndarray, h: np.ndarray) -> float:
    return float((x - c) @ np.linalg.solve(h, x - c))


def v_norm(theta: np.ndarray, v_inv: np.ndarray) -> float:
    """||theta||_V with V = v_inv^{-1}, by solving rather than inverting."""
    return math.sqrt(theta @ np.linalg.solve(v_inv, theta))


def lcb_one(c, h, theta, v_inv, r):
    """Single instance through the batch API: (arm, value, gap)."""
    arms, values, gaps = ellipsoid_lcb_arms(
        np.asarray(c, float),
        np.asarray(h, float),
        np.asarray(theta, float)[None],
        np.asarray(v_inv, float)[None],
        np.array([r], float),
        return_gap=True,
    )
    return arms[0], float(values[0]), float(gaps[0])


def random_instance(rng: np.random.Generator, d: int, spread: float = 2.0):
    """Anisotropic H, V^{-1}; centre at whitened distance in [0, 2.5) (0 in E iff < 1)."""
    h = rand_spd(rng, d, spread) * 10 ** rng.uniform(-1, 1)
    v_inv = rand_spd(rng, d, spread) * 10 ** rng.uniform(-2, 1)
    direction = rng.normal(size=d)
    direction /= np.linalg.norm(direction)
    c = sqrtm_spd(h) @ direction * rng.uniform(0.0, 2.5)
    theta = rng.normal(size=d)
    r = v_norm(theta, v_inv) * rng.uniform(0.0, 2.0)  # 0 in the confidence set iff factor >= 1
    return c, h, theta, v_inv, r


# ---------------------------------------------------------------------------------------------
# 1. Agreement with a conic solver.


class _ClarabelLCB:
    """``max theta @ x - ||(r L^T) x||  s.t. ||H^{-1/2} x - H^{-1/2} c|| <= 1``, one DPP problem per d."""

    def __init__(self) -> None:
        self._problems: dict[int, tuple] = {}

    def __call__(self, c, h, theta, v_inv, r):
        d = c.size
        if d not in self._problems:
            x = cp.Variable(d)
            theta_p = cp.Parameter(d)
            rlt = cp.Parameter((d, d))
            h_is = cp.Parameter((d, d))
            h_is_c = cp.Parameter(d)
            prob = cp.Problem(cp.Maximize(theta_p @ x - cp.norm(rlt @ x)), [cp.norm(h_is @ x - h_is_c) <= 1])
            self._problems[d] = (prob, x, theta_p, rlt, h_is, h_is_c)
        prob, x, theta_p, rlt, h_is, h_is_c = self._problems[d]
        lam, vecs = np.linalg.eigh(h)
        h_inv_sqrt = (vecs / np.sqrt(lam)) @ vecs.T
        theta_p.value = theta
        rlt.value = r * np.linalg.cholesky(v_inv).T
        h_is.value = h_inv_sqrt
        h_is_c.value = h_inv_sqrt @ c
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "solution may be inaccurate" at these tolerances
            prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
        return np.array(x.value), float(prob.value)


def test_agrees_with_clarabel_on_500_random_instances():
    rng = np.random.default_rng(20240611)
    solve_ref = _ClarabelLCB()
    err_value = err_arm = 0.0
    zero_in_e = zero_in_conf = zero_arm = 0
    for _ in range(500):
        d = int(rng.integers(2, 21))
        c, h, theta, v_inv, r = random_instance(rng, d)
        arm, value, gap = lcb_one(c, h, theta, v_inv, r)
        x_ref, f_ref = solve_ref(c, h, theta, v_inv, r)
        scale = max(1.0, abs(f_ref))
        assert abs(value - f_ref) <= 1e-7 * scale
        assert np.linalg.norm(arm - x_ref) <= 1e-5 * max(1.0, np.linalg.norm(x_ref))
        # An exact maximiser cannot be worse than the solver, nor than its (pulled-in) point.
        assert value >= f_ref - 1e-9 * scale
        x_ref_in = c + (x_ref - c) / max(1.0, math.sqrt(ellipsoid_quad(x_ref, c, h)))
        assert value >= objective(x_ref_in, theta, v_inv, r) - 1e-12 * scale
        assert ellipsoid_quad(arm, c, h) <= 1.0 + 1e-12
        assert gap <= 1e-10 * max(1.0, abs(value))
        err_value = max(err_value, abs(value - f_ref) / scale)
        err_arm = max(err_arm, np.linalg.norm(arm - x_ref) / max(1.0, np.linalg.norm(x_ref)))
        zero_in_e += ellipsoid_quad(np.zeros(d), c, h) < 1.0
        zero_in_conf += v_norm(theta, v_inv) <= r
        zero_arm += not arm.any()
    # The sample covers every regime: 0 inside/outside E and inside/outside the confidence set.
    assert 100 <= zero_in_e <= 400
    assert 100 <= zero_in_conf <= 400
    assert zero_arm >= 30
    assert err_value < 1e-8
    assert err_arm < 1e-5


# ---------------------------------------------------------------------------------------------
# 2. Hand-computed optima.


def test_unit_disk_at_1_1_theta_along_centre_takes_far_point():
    # V = 4 I: f(x) = 2 <x, e> - ||x|| / 2 <= 1.5 ||x||, equality on the ray e = (1, 1)/sqrt(2);
    # the farthest point of the disk on that ray is (1 + 1/sqrt(2)) (1, 1), at norm sqrt(2) + 1.
    theta = 2.0 * np.array([1.0, 1.0]) / SQRT2
    arm, value, gap = lcb_one([1.0, 1.0], np.eye(2), theta, np.eye(2) / 4.0, 1.0)
    np.testing.assert_allclose(arm, [1.0 + 1.0 / SQRT2] * 2, rtol=0, atol=1e-13)
    assert value == pytest.approx(1.5 * (SQRT2 + 1.0), abs=1e-13)  # 3.6213203435596424
    assert 0.0 <= gap <= 1e-14


def test_unit_disk_at_1_1_pessimistic_takes_near_point():
    # ||theta||_V = 1 < r = 2 (0 in the confidence set) but 0 is not in E: f(x) <= -||x||, best
    # at the point of the disk nearest to 0, (1 - 1/sqrt(2)) (1, 1), value -(sqrt(2) - 1).
    theta = np.array([1.0, 1.0]) / SQRT2
    arm, value, gap = lcb_one([1.0, 1.0], np.eye(2), theta, np.eye(2), 2.0)
    np.testing.assert_allclose(arm, [1.0 - 1.0 / SQRT2] * 2, rtol=0, atol=1e-13)
    assert value == pytest.approx(1.0 - SQRT2, abs=1e-13)  # -0.41421356237309515
    assert abs(gap) <= 1e-14


def test_zero_radius_is_the_greedy_arm():
    # x = c + H theta / ||theta||_H = (1, 2) + (4, 0) / 2 = (3, 2); value <c, theta> + ||theta||_H = 3.
    h = np.diag([4.0, 1.0])
    arm, value, gap = lcb_one([1.0, 2.0], h, [1.0, 0.0], np.eye(2), 0.0)
    np.testing.assert_allclose(arm, [3.0, 2.0], rtol=0, atol=1e-15)
    assert value == pytest.approx(3.0, abs=1e-15)
    assert abs(gap) <= 1e-15


def test_zero_radius_random_matches_greedy_formula():
    rng = np.random.default_rng(3)
    for d in (2, 7, 20):
        h = rand_spd(rng, d, 2)
        c = rng.normal(size=d)
        kernel = EllipsoidLCBKernel(c, h)
        theta = rng.normal(size=(50, d))
        v_inv = np.stack([rand_spd(rng, d, 2) for _ in range(50)])
        arms, values, gaps = kernel(theta, v_inv, np.zeros(50), return_gap=True)
        h_theta = theta @ h
        norm_h = np.sqrt(np.einsum("ni,ni->n", theta, h_theta))
        np.testing.assert_allclose(arms, c + h_theta / norm_h[:, None], rtol=0, atol=1e-12)
        np.testing.assert_allclose(values, theta @ c + norm_h, rtol=1e-13, atol=1e-13)
        assert np.all(np.abs(gaps) <= 1e-12)


def test_zero_theta_outside_gives_v_inv_nearest_point():
    # min sqrt(x1^2 + 4 x2^2) over the unit disk at (0, 3): on the circle the square is
    # 3 x2^2 + 6 x2 - 8, increasing on [2, 4], so the minimiser is (0, 2) with norm 4.
    arm, value, gap = lcb_one([0.0, 3.0], np.eye(2), [0.0, 0.0], np.diag([1.0, 4.0]), 0.5)
    np.testing.assert_allclose(arm, [0.0, 2.0], rtol=0, atol=1e-12)
    assert value == pytest.approx(-2.0, abs=1e-12)
    assert abs(gap) <= 1e-12


def test_zero_theta_outside_isotropic_and_ellipse():
    # Disk radius 1 at (3, 0): nearest point (2, 0).  Ellipse H = diag(4, 1) at (5, 0), V = I:
    # nearest point (3, 0).
    arm, value, _ = lcb_one([3.0, 0.0], np.eye(2), [0.0, 0.0], np.eye(2), 1.5)
    np.testing.assert_allclose(arm, [2.0, 0.0], rtol=0, atol=1e-12)
    assert value == pytest.approx(-3.0, abs=1e-12)
    arm, value, _ = lcb_one([5.0, 0.0], np.diag([4.0, 1.0]), [0.0, 0.0], np.eye(2), 1.0)
    np.testing.assert_allclose(arm, [3.0, 0.0], rtol=0, atol=1e-12)
    assert value == pytest.approx(-3.0, abs=1e-12)


def test_kkt_constructed_instances_have_known_optimum():
    # Pick x* = c + H z / ||z||_H on the boundary (outer normal z / ||z||_H) and
    # theta = r V^{-1} x* / ||x*||_{V^{-1}} + nu z / ||z||_H with nu > 0: the KKT conditions of
    # the concave problem hold at x*, so x* is the maximiser and f* = nu <z, x*> / ||z||_H.
    rng = np.random.default_rng(11)
    for _ in range(300):
        d = int(rng.integers(2, 21))
        h = rand_spd(rng, d, 2)
        v_inv = rand_spd(rng, d, 2)
        c = rng.normal(size=d) * rng.uniform(0.0, 2.0)
        z = rng.normal(size=d)
        normal = z / math.sqrt(z @ h @ z)
        x_star = c + h @ normal
        r, nu = rng.uniform(0.05, 2.0, 2)
        theta = r * v_inv @ x_star / math.sqrt(x_star @ v_inv @ x_star) + nu * normal
        arm, value, gap = lcb_one(c, h, theta, v_inv, r)
        np.testing.assert_allclose(arm, x_star, rtol=0, atol=1e-9 * max(1.0, np.linalg.norm(x_star)))
        assert value == pytest.approx(nu * normal @ x_star, abs=1e-11 * max(1.0, abs(value)))
        assert gap <= 1e-11 * max(1.0, abs(value))


# ---------------------------------------------------------------------------------------------
# 3. Degenerate cases.


def test_zero_in_e_and_in_confidence_set_gives_zero_arm():
    # ||theta||_V = 0.5 * 5 = 2.5 <= r = 3 and 0 in E: f <= 0 = f(0).
    arm, value, gap = lcb_one([0.5, 0.0], np.eye(2), [3.0, 4.0], 4.0 * np.eye(2), 3.0)
    np.testing.assert_array_equal(arm, [0.0, 0.0])
    assert value == 0.0
    assert gap == 0.0


def test_zero_theta_with_zero_in_e_gives_zero_arm():
    arm, value, gap = lcb_one([0.3, -0.2], np.diag([2.0, 0.5]), [0.0, 0.0], np.eye(2), 0.7)
    np.testing.assert_array_equal(arm, [0.0, 0.0])
    assert value == 0.0
    assert gap == 0.0


def test_theta_on_confidence_boundary_gives_zero_value():
    # ||theta||_V = ||(0.6, 0.8)|| = r: f <= 0 with equality on the ray of theta.
    arm, value, gap = lcb_one([0.0, 0.0], np.eye(2), [0.6, 0.8], np.eye(2), 1.0)
    assert abs(value) <= 1e-15
    assert abs(arm[0] * 0.8 - arm[1] * 0.6) <= 1e-15  # 0 or a point of the optimal ray
    assert abs(gap) <= 1e-15


def test_zero_radius_and_zero_theta_returns_centre():
    arm, value, gap = lcb_one([1.5, -2.0], np.eye(2), [0.0, 0.0], np.eye(2), 0.0)
    np.testing.assert_array_equal(arm, [1.5, -2.0])
    assert value == 0.0
    assert gap == 0.0


def test_zero_in_e_outside_confidence_set():
    # c = 0, H = I, V = I: f(x) = <x, (3, 4)> - ||x|| <= 4 ||x||, maximised at theta / 5.
    arm, value, gap = lcb_one([0.0, 0.0], np.eye(2), [3.0, 4.0], np.eye(2), 1.0)
    np.testing.assert_allclose(arm, [0.6, 0.8], rtol=0, atol=1e-15)
    assert value == pytest.approx(4.0, abs=1e-14)
    assert abs(gap) <= 1e-14
    # Anisotropic, 0 inside: ellipse H = diag(9, 1) at (1, 0); V^{-1} = I, theta = (2, 0), r = 1:
    # on the x1 axis f = x1 for x1 > 0; the farthest point is (4, 0), f = 4.
    arm, value, _ = lcb_one([1.0, 0.0], np.diag([9.0, 1.0]), [2.0, 0.0], np.eye(2), 1.0)
    np.testing.assert_allclose(arm, [4.0, 0.0], rtol=0, atol=1e-13)
    assert value == pytest.approx(4.0, abs=1e-13)


def test_zero_on_boundary_of_e():
    c, h, v_inv = np.array([1.0, 0.0]), np.eye(2), np.eye(2)  # 0 exactly on the unit circle at c
    # Greedy arm is 0 itself (theta points outward at 0): f <= <x, theta> <= 0 = f(0).
    arm, value, gap = lcb_one(c, h, [-1.0, 0.0], v_inv, 0.5)
    np.testing.assert_array_equal(arm, [0.0, 0.0])
    assert value == 0.0 and gap == 0.0
    # 0 in the confidence set: f <= 0 = f(0), 0 is in E.
    arm, value, gap = lcb_one(c, h, [-1.0, 0.1], v_inv, 2.0)
    np.testing.assert_array_equal(arm, [0.0, 0.0])
    assert value == 0.0 and gap == 0.0
    # theta = (-1, 0.1), r = 0.9 < ||theta|| = 1.005: every feasible direction d (d1 > 0) has
    # f(d) = -d1 + 0.1 d2 - 0.9 ||d|| < 0 (|0.1 d2| < 0.9 ||d||), so 0 is still optimal.
    arm, value, gap = lcb_one(c, h, [-1.0, 0.1], v_inv, 0.9)
    assert np.linalg.norm(arm) <= 1e-100
    assert abs(value) <= 1e-100
    assert abs(gap) <= 1e-15
    # theta = (1, 0): the whole disk lies on the ray side; far point (2, 0), f = 2 (1 - 0.5) = 1.
    arm, value, _ = lcb_one(c, h, [1.0, 0.0], v_inv, 0.5)
    np.testing.assert_allclose(arm, [2.0, 0.0], rtol=0, atol=1e-15)
    assert value == pytest.approx(1.0, abs=1e-15)
    # theta = (0, 1), r = 0.5: on x = (2 cos^2 p, 2 sin p cos p), f = cos p (2 sin p - 1),
    # stationary at sin p = (1 + sqrt(33)) / 8.
    arm, value, gap = lcb_one(c, h, [0.0, 1.0], v_inv, 0.5)
    s = (1.0 + math.sqrt(33.0)) / 8.0
    cos_p = math.sqrt(1.0 - s * s)
    np.testing.assert_allclose(arm, [2.0 * cos_p**2, 2.0 * s * cos_p], rtol=0, atol=1e-13)
    assert value == pytest.approx(cos_p * (2.0 * s - 1.0), abs=1e-14)  # 0.3690087298281905
    assert abs(gap) <= 1e-14


@pytest.mark.parametrize("offset", [1e-4, 1e-8, 1e-12, -1e-12, -1e-8, -1e-4])
def test_zero_near_boundary_of_e(offset):
    # Centre (1 + offset, 0): 0 is just outside (offset > 0) or inside (offset < 0) the disk.
    c, h, v_inv = np.array([1.0 + offset, 0.0]), np.eye(2), np.eye(2)
    # Shifting E by offset changes f* by at most |offset| (|theta_1| + r) = 0.5 |offset| from the
    # boundary case above.
    arm, value, gap = lcb_one(c, h, [0.0, 1.0], v_inv, 0.5)
    assert value == pytest.approx(0.3690087298281905, abs=0.5 * abs(offset) + 1e-15)
    assert abs(gap) <= 1e-14
    # Optimum at (or next to) 0: |f*| <= 4 |offset| (the point c - (1, 0) is within |offset| of 0).
    for theta, r in (([-1.0, 0.1], 0.9), ([-1.0, 0.1], 2.0), ([0.0, 0.0], 1.0)):
        arm, value, gap = lcb_one(c, h, theta, v_inv, r)
        assert abs(value) <= 4.0 * abs(offset)
        assert abs(gap) <= 1e-14
        assert ellipsoid_quad(arm, c, h) <= 1.0


def test_arms_are_inside_e_and_values_are_f_of_arms():
    rng = np.random.default_rng(5)
    for d in (2, 3, 10):
        c, h, *_ = random_instance(rng, d)
        kernel = EllipsoidLCBKernel(c, h)
        n = 300
        theta = rng.normal(size=(n, d))
        v_inv = np.stack([rand_spd(rng, d, 3) for _ in range(n)])
        radius = rng.uniform(0.0, 3.0, n)
        arms, values = kernel(theta, v_inv, radius)
        dx = arms - c
        h_inv = np.linalg.inv(h)
        assert np.all(np.einsum("ni,ij,nj->n", dx, h_inv, dx) <= 1.0 + 1e-13)
        recomputed = [objective(arms[k], theta[k], v_inv[k], radius[k]) for k in range(n)]
        np.testing.assert_allclose(values, recomputed, rtol=1e-13, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# 4. Brute force in 2-D.


def test_brute_force_boundary_sampling_in_2d():
    rng = np.random.default_rng(7)
    angles = np.linspace(0.0, 2.0 * np.pi, 100_000, endpoint=False)
    circle = np.stack([np.cos(angles), np.sin(angles)])
    for _ in range(40):
        c, h, theta, v_inv, r = random_instance(rng, 2)
        arm, value, _ = lcb_one(c, h, theta, v_inv, r)
        points = c[:, None] + sqrtm_spd(h) @ circle
        sampled = theta @ points - r * np.sqrt(np.einsum("in,ij,jn->n", points, v_inv, points))
        best = sampled.max()
        if ellipsoid_quad(np.zeros(2), c, h) <= 1.0:
            best = max(best, 0.0)  # the only possible interior maximiser is x = 0
        assert value >= best - 1e-9
        assert value <= best + 1e-6


# ---------------------------------------------------------------------------------------------
# 5. Certificate and 6. batch consistency.


@pytest.mark.parametrize("d", [2, 3, 5, 10, 20])
def test_certified_gap_is_tiny(d):
    rng = np.random.default_rng(100 + d)
    for _ in range(4):
        c, h, *_ = random_instance(rng, d, spread=3.0)
        n = 250
        theta = rng.normal(size=(n, d)) * 10 ** rng.uniform(-1, 1)
        v_inv = np.stack([rand_spd(rng, d, 3) * 10 ** rng.uniform(-2, 1) for _ in range(n)])
        radius = np.array([v_norm(theta[k], v_inv[k]) for k in range(n)]) * rng.uniform(0.0, 2.0, n)
        radius[::10] = 0.0
        theta[5::17] = 0.0
        _, values, gaps = EllipsoidLCBKernel(c, h)(theta, v_inv, radius, return_gap=True)
        assert np.all(np.isfinite(gaps))
        assert np.all(np.abs(gaps) <= 1e-10 * np.maximum(1.0, np.abs(values)))


def test_batch_equals_one_by_one_and_function_equals_kernel():
    rng = np.random.default_rng(9)
    for d in (2, 4, 20):
        c, h, *_ = random_instance(rng, d)
        n = 60
        theta = rng.normal(size=(n, d))
        v_inv = np.stack([rand_spd(rng, d, 2) for _ in range(n)])
        radius = rng.uniform(0.0, 2.0, n)
        radius[::7] = 0.0
        kernel = EllipsoidLCBKernel(c, h)
        arms, values, gaps = kernel(theta, v_inv, radius, return_gap=True)
        for k in range(n):
            arm_k, value_k, gap_k = kernel(theta[k : k + 1], v_inv[k : k + 1], radius[k : k + 1], True)
            np.testing.assert_array_equal(arm_k[0], arms[k])
            assert value_k[0] == values[k] and gap_k[0] == gaps[k]
        arms_f, values_f = ellipsoid_lcb_arms(c, h, theta, v_inv, radius)
        np.testing.assert_array_equal(arms_f, arms)
        np.testing.assert_array_equal(values_f, values)


def test_accepts_lists_and_non_contiguous_input():
    theta = np.array([[3.0, 4.0, 0.0], [0.0, 0.0, 0.0]])[:, :2]  # non-contiguous view
    v_inv = [np.eye(2).tolist(), np.eye(2).tolist()]
    arms, values = ellipsoid_lcb_arms([0, 0], [[1, 0], [0, 1]], theta, v_inv, [1, 1])
    assert arms.shape == (2, 2) and values.shape == (2,)
    np.testing.assert_allclose(arms, [[0.6, 0.8], [0.0, 0.0]], rtol=0, atol=1e-15)
    np.testing.assert_allclose(values, [4.0, 0.0], rtol=0, atol=1e-14)
