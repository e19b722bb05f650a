"""Arm sets: closed forms against hand-computed values and against linear programs."""

from unittest import mock

import cvxpy as cp
import numpy as np
import pytest
from _exact import outside_polytope
from scipy.optimize import linprog

import sege_cvx as sc
from sege_cvx.arm_sets.base import ArmSet
from sege_cvx.arm_sets.kernels import exact

DISK = sc.Ball(center=[1.0, 1.0], radius=1.0)
SIMPLEX = sc.Polytope(A=np.vstack([-np.eye(2), np.ones((1, 2))]), b=[0.0, 0.0, 1.0])


def test_disk_greedy_arm_is_paper_optimal_arm():
    # X* = x-bar + H theta / ||theta||_H = (1,1) + (0.6, 0.8) for the paper's setup.
    np.testing.assert_allclose(DISK.greedy_arm([0.6, 0.8]), [1.6, 1.8], atol=1e-15)
    assert DISK.support(np.array([0.6, 0.8])) == pytest.approx(2.4)


def test_ellipsoid_greedy_by_hand():
    E = sc.Ellipsoid(center=[0.0, 0.0], shape=np.diag([4.0, 1.0]))
    # theta = (1, 1): H theta = (4, 1), ||theta||_H = sqrt(5).
    np.testing.assert_allclose(E.greedy_arm([1.0, 1.0]), np.array([4.0, 1.0]) / np.sqrt(5))
    assert E.support(np.array([1.0, 1.0])) == pytest.approx(np.sqrt(5))


@pytest.mark.parametrize("arm_set", [
    sc.Ellipsoid([0.5, -1.0, 2.0], np.array([[2.0, 0.3, 0.0], [0.3, 1.0, 0.2], [0.0, 0.2, 0.5]])),
    sc.Ball([1.0, 2.0, 3.0], 0.7),
    sc.Box([-1.0, 0.0, 2.0], [1.0, 0.5, 4.0]),
])
def test_closed_form_greedy_matches_solver(arm_set):
    thetas = np.random.default_rng(0).standard_normal((20, arm_set.dim))
    closed = arm_set.greedy_arm(thetas)
    solved, ok, _, _ = arm_set._solve_each(arm_set._greedy_program, thetas)
    assert ok.all()
    np.testing.assert_allclose(np.einsum("ni,ni->n", closed, thetas),
                               np.einsum("ni,ni->n", solved, thetas), rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(closed, solved, atol=1e-4)


def test_polytope_greedy_matches_scipy_linprog():
    rng = np.random.default_rng(1)
    A = rng.standard_normal((12, 3))
    P = sc.Polytope(A, np.ones(12) + np.abs(A).sum(axis=1) * 0.0)
    for theta in rng.standard_normal((10, 3)):
        ref = linprog(-theta, A_ub=A, b_ub=np.ones(12), bounds=[(None, None)] * 3)
        assert ref.status == 0
        assert P.support(theta) == pytest.approx(-ref.fun, rel=1e-7, abs=1e-7)


def test_simplex_greedy_and_bounds():
    np.testing.assert_allclose(SIMPLEX.greedy_arm([1.0, 2.0]), [0.0, 1.0], atol=1e-8)
    # The box is certified: it contains the true box [0, 1]^2, widened by at most the margin.
    lo, hi = SIMPLEX.bounding_box()
    assert np.all(lo <= 0) and np.all(lo >= -1.5e-5)
    assert np.all(hi >= 1) and np.all(hi <= 1 + 2.5e-5)
    # Chebyshev radius of the unit simplex: 1 / (2 + sqrt(2)).
    assert SIMPLEX.chebyshev_radius == pytest.approx(1 / (2 + np.sqrt(2)), rel=1e-7)
    assert np.sqrt(2) <= SIMPLEX.norm_bound() <= np.sqrt(2) * (1 + 2.5e-5)
    assert np.sqrt(2) <= SIMPLEX.diameter_bound() <= np.sqrt(2) * (1 + 2.5e-5)


def test_ellipsoid_certified_bounds_are_the_paper_terms():
    assert DISK.norm_bound() == pytest.approx(1 + np.sqrt(2))  # max ||x|| on the paper's disk
    assert DISK.diameter_bound() == pytest.approx(2.0)
    E = sc.Ellipsoid([3.0, 0.0], np.diag([9.0, 1.0]))
    assert E.diameter_bound() == pytest.approx(6.0)
    # Bounds must dominate sampled boundary points.
    angles = np.linspace(0, 2 * np.pi, 10001)
    pts = E.center + np.column_stack([3 * np.cos(angles), np.sin(angles)])
    assert np.linalg.norm(pts, axis=1).max() <= E.norm_bound() + 1e-12


def test_generic_set_bounds_dominate_true_extent():
    l15 = sc.ConvexArmSet(2, lambda x: [cp.pnorm(x, 1.5) <= 1])
    angles = np.linspace(0, 2 * np.pi, 2001)
    u = np.column_stack([np.cos(angles), np.sin(angles)])
    boundary = u / (np.abs(u) ** 1.5).sum(axis=1, keepdims=True) ** (1 / 1.5)
    assert np.linalg.norm(boundary, axis=1).max() <= l15.norm_bound() + 1e-9
    assert l15.diameter_bound() >= 2 * np.linalg.norm(boundary, axis=1).max() - 1e-9
    lo, hi = l15.bounding_box()
    assert np.all(hi >= 1) and np.all(hi <= 1 + 2.5e-5)
    assert np.all(lo <= -1) and np.all(lo >= -1 - 2.5e-5)


def test_contains():
    assert DISK.contains([1.6, 1.8])
    assert not DISK.contains([2.01, 1.0])
    np.testing.assert_array_equal(DISK.contains(np.array([[1, 1], [0, 0]])), [True, False])
    box = sc.Box([0, 0], [1, 1])
    assert box.contains([1 + 1e-10, 0.5]) and not box.contains([1 + 1e-6, 0.5])
    assert SIMPLEX.contains([0.5, 0.5]) and not SIMPLEX.contains([0.6, 0.6])
    l15 = sc.ConvexArmSet(2, lambda x: [cp.pnorm(x, 1.5) <= 1])
    np.testing.assert_array_equal(l15.contains(np.array([[0.5, 0.5], [0.7, 0.7]])), [True, False])


@pytest.mark.parametrize("arm_set", [
    sc.Box([0.0, 0.0], [1.0, 2.0]),
    SIMPLEX,
    sc.ConvexArmSet(2, lambda x: [cp.pnorm(x - 1, 1.5) <= 1]),
])
def test_solver_lcb_arm_beats_every_sampled_arm(arm_set):
    rng = np.random.default_rng(2)
    theta_hat, V, r = rng.standard_normal(2), np.array([[5.0, 1.0], [1.0, 3.0]]), 0.8
    x = arm_set.lcb_arm(theta_hat, V, r)
    assert arm_set.contains(x, tol=1e-7)
    lo, hi = arm_set.bounding_box()
    samples = rng.uniform(lo, hi, size=(20000, 2))
    samples = samples[arm_set.contains(samples)]
    assert len(samples) > 1000
    best_sampled = sc.lcb(samples, theta_hat, V, r).max()
    assert sc.lcb(x, theta_hat, V, r) >= best_sampled - 1e-9


def test_lcb_arm_batch_matches_single():
    rng = np.random.default_rng(3)
    thetas = rng.standard_normal((4, 2))
    Vs = np.array([np.eye(2) * (k + 1) for k in range(4)])
    batch = DISK.lcb_arm(thetas, Vs, np.array([0.1, 0.5, 1.0, 2.0]))
    for i in range(4):
        np.testing.assert_allclose(batch[i], DISK.lcb_arm(thetas[i], Vs[i], [0.1, 0.5, 1.0, 2.0][i]))


def test_cross_check_passes_and_detects_disagreement(monkeypatch):
    rng = np.random.default_rng(4)
    thetas = rng.standard_normal((5, 2))
    V = np.array([[4.0, 1.0], [1.0, 2.0]])
    DISK.lcb_arm(thetas, V, 0.7, cross_check=True)
    E = sc.Ellipsoid([1.0, 1.0], np.eye(2))
    broken = E._lcb_closed_form
    c, s = np.cos(1e-3), np.sin(1e-3)  # rotate the arms about the centre: still in the set
    rot = np.array([[c, -s], [s, c]])
    monkeypatch.setattr(E, "_lcb_closed_form", lambda *a: E.center + (broken(*a) - E.center) @ rot.T)
    with pytest.raises(sc.CrossCheckError, match="disagree"):
        E.lcb_arm(thetas, V, 0.7, cross_check=True)


def test_single_call_fast_path_equals_the_batched_path_bitwise():
    """A single float64 instance is validated and solved in one compiled call; its arm is the
    batched path's, bit for bit (same factorization, same kernel, same verification)."""
    rng = np.random.default_rng(11)
    E = sc.Ellipsoid([1.0, 0.5, -0.2], np.diag([2.0, 1.0, 0.5]) + 0.1)
    for k in range(50):
        theta = rng.standard_normal(3) * 10.0 ** rng.uniform(-3, 3)
        A = rng.standard_normal((3, 3))
        V = A @ A.T + 0.1 * np.eye(3)
        r = 0.0 if k == 0 else float(rng.uniform(0.0, 3.0))
        fast = E.lcb_arm(theta, V, r)
        batched = E.lcb_arm(theta[None], V[None], np.array([r]))[0]
        listed = E.lcb_arm(theta.tolist(), V.tolist(), r)
        np.testing.assert_array_equal(fast, batched)
        np.testing.assert_array_equal(fast, listed)
        assert E.contains(fast, tol=0.0)


@pytest.mark.parametrize("theta, V, r, match", [
    (np.array([np.nan, 0.0]), np.eye(2), 1.0, "theta_hat must be finite"),
    (np.array([0.6, 0.8]), np.array([[1.0, 0.5], [0.0, 1.0]]), 1.0, "V must be symmetric"),
    (np.array([0.6, 0.8]), np.array([[1.0, 2.0], [2.0, 1.0]]), 1.0, "V must be positive definite"),
    (np.array([0.6, 0.8]), np.eye(2), -1.0, "radius must be nonnegative"),
    (np.array([0.6, 0.8]), np.eye(2), 1e-310, "radius must be 0 or at least"),
])
def test_single_call_fast_path_rejects_what_the_general_path_rejects(theta, V, r, match):
    with pytest.raises(ValueError, match=match):
        DISK.lcb_arm(theta, V, r)


@pytest.mark.parametrize("arm_set", [SIMPLEX, sc.Box([0.0, -1.0], [1.0, 2.0])])
def test_compiled_pull_in_is_the_batched_schedule_bit_for_bit(arm_set):
    # Polytopes and boxes pull points in by a compiled per-row kernel; ArmSet's batched form of
    # the schedule gives the same bits (rows inside, just outside, beyond reach, NaN).
    rng = np.random.default_rng(6)
    center = arm_set.exploration().center
    edge = arm_set.greedy_arm(rng.standard_normal((40, 2)))
    points = np.vstack([edge * (1.0 + 10.0 ** rng.uniform(-16, -6, (40, 1))), edge,
                        center + 0.5 * (edge - center), [[np.nan, 0.5], edge[0] + 1.0]])
    ours, ok = arm_set.pull_inside_unchecked(points)  # the policies' path: NaN rows come back not ok
    batched = np.array(points)
    # The compiled schedule accepts what the float test proves (exact.in_polytope): the same
    # test in the batched schedule.
    rows = arm_set._member_rows
    with mock.patch.object(arm_set, "_inside", lambda X, tol: np.array(
            [exact.in_polytope(x, rows) for x in X])):
        ok_batched = ArmSet._pull_in(arm_set, batched)
    assert ours.tobytes() == batched.tobytes() and np.array_equal(ok, ok_batched)
    moved = np.any(ours[:120] != points[:120], axis=1)
    assert ok[:120].all() and not ok[120:].any() and moved[:40].sum() >= 20 and not moved[40:].any()
    assert outside_polytope(*arm_set._given_rows(), ours[:120]) == []
    # The simplex's vertex (1, 0) is on x + y <= 1 exactly: the float test cannot prove it (the
    # compiled pull-in moves it), the public pull_inside keeps it, as every row inside exactly.
    vertex = np.array([[1.0, 0.0]])
    assert (arm_set.pull_inside_unchecked(vertex)[0] != vertex).any() == (arm_set is SIMPLEX)
    assert np.array_equal(arm_set.pull_inside(vertex)[0], vertex)


def test_pull_inside_moves_finite_rows_next_to_nan_rows():
    # A NaN row's limit is NaN: it once stopped every other row's schedule (the policies' path;
    # the public method refuses NaN, below).
    l15 = sc.ConvexArmSet(2, lambda x: [cp.pnorm(x - 1, 1.5) <= 1])
    just_out = np.array([2.0, 1.0]) + 1e-9
    points, ok = l15.pull_inside_unchecked(np.array([[np.nan, np.nan], just_out]))
    np.testing.assert_array_equal(ok, [False, True])
    assert l15.contains(points[1], tol=0.0) and np.linalg.norm(points[1] - just_out) < 1e-8


@pytest.mark.parametrize("points, witnesses, error, match", [
    ([[np.nan, 0.5]], None, ValueError, "points must be finite"),
    ([[np.inf, 0.5], [1.0, 1.0]], None, ValueError, "points must be finite"),
    ([["1", "0.5"]], None, TypeError, "points must be numeric"),
    ([1.0, 0.5], None, ValueError, r"points must have shape \(n, 2\), got \(2,\)"),
    ([[1.0, 0.5, 0.0]], None, ValueError, r"points must have shape \(n, 2\)"),
])
def test_pull_inside_refuses_points_that_are_not_finite_rows(points, witnesses, error, match):
    for arm_set in (DISK, SIMPLEX):
        with pytest.raises(error, match=match):
            arm_set.pull_inside(points, witnesses)


def test_pull_inside_refuses_witnesses_that_are_not_finite():
    hull = sc.ConvexHull([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0]])
    with pytest.raises(ValueError, match="witnesses must be finite"):
        hull.pull_inside([[0.5, 0.5]], [[np.nan, 0.5, 0.25]])


def test_single_call_fast_path_reports_like_the_general_path():
    # A radius beyond the float range, and data that overflow inside the closed form (d = 3,
    # where eigh is LAPACK's), are reported as by the general path, not by the fast path.
    E = sc.Ellipsoid([0.5, 0.0], np.eye(2))
    with pytest.raises(ValueError, match="radius must be finite"):
        E.lcb_arm(np.array([1.0, 0.3]), 2.0 * np.eye(2), 10**400)
    big = sc.Ellipsoid(np.zeros(3), 1e10 * np.eye(3))
    args = (np.array([1.0, 0.0, 0.0]), 1e-300 * np.eye(3), 1.0)
    with pytest.raises(sc.SolverFailure) as fast:
        big.lcb_arm(*args)
    with pytest.raises(sc.SolverFailure) as general:
        big.lcb_arm(args[0].tolist(), args[1].tolist(), 1.0)
    assert str(fast.value) == str(general.value)


def test_spd_validation_names_asymmetry_first_then_the_most_indefinite_instance():
    with pytest.raises(ValueError, match="V must be symmetric; instance 1"):
        DISK.lcb_arm(np.ones((2, 2)), [[[1.0, 0.0], [0.0, -1.0]], [[1.0, 0.5], [0.0, 1.0]]], 1.0)
    with pytest.raises(ValueError, match="instance 1 has smallest eigenvalue -5"):
        DISK.lcb_arm(np.ones((2, 2)), [np.diag([1.0, -1.0]), np.diag([1.0, -5.0])], 1.0)
