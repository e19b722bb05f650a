"""Any convex arm set, end to end: exploration certificates, SEGE and CLUCB."""

import cvxpy as cp
import numpy as np
import pytest
from _decisions import sege_decision_margins
from problems import floor_setting

import sege_cvx as sc
from sege_cvx.arm_sets.discretization import discretization_error, sphere_directions
from sege_cvx.arm_sets.exploration import Exploration
from sege_cvx.problems.examples import EXAMPLES

H = np.array([[1.0, 0.3], [0.3, 0.5]])
CENTER = np.array([1.0, 1.0])
H_INV_SQRT = np.linalg.inv(sc.Ellipsoid(CENTER, H).shape_sqrt)


def generic_ellipsoid() -> sc.ConvexArmSet:
    return sc.ConvexArmSet(2, lambda x: [cp.norm(H_INV_SQRT @ (x - CENTER)) <= 1])


def test_box_exploration_is_its_inscribed_ellipsoid():
    box = sc.Box([0.0, -1.0, 2.0], [2.0, 1.0, 2.5])
    e = box.exploration()
    assert e.kind == "sphere"
    np.testing.assert_allclose(e.center, [1.0, 0.0, 2.25])
    np.testing.assert_allclose(np.diag(e.B), [1.0, 1.0, 0.25])
    assert e.sigma2 == pytest.approx(0.25**2 / 3)
    assert box.certify_exploration(e)
    assert not box.certify_exploration(Exploration(e.center, 1.01 * e.B, "sphere"))


def test_polytope_max_volume_ellipsoid_is_certified_and_tight():
    # Square [-1, 1]^2: its maximum-volume inscribed ellipsoid is the unit disk.
    square = sc.Polytope(np.vstack([np.eye(2), -np.eye(2)]), np.ones(4))
    e = square.exploration()
    np.testing.assert_allclose(e.center, 0.0, atol=1e-6)
    np.testing.assert_allclose(e.B, np.eye(2), atol=1e-5)
    assert square.certify_exploration(e)
    # Points of the ellipsoid stay inside the polytope (certificate is exact).
    angles = np.linspace(0, 2 * np.pi, 1000)
    pts = e.center + np.column_stack([np.cos(angles), np.sin(angles)]) @ e.B.T
    assert np.all(square.contains(pts, tol=0.0))


def test_generic_set_explores_on_a_certified_cross_polytope():
    l15 = sc.ConvexArmSet(3, lambda x: [cp.pnorm(x - 1, 1.5) <= 1])
    e = l15.exploration()
    assert e.kind == "cross"
    np.testing.assert_allclose(e.center, 1.0, atol=1e-5)
    np.testing.assert_allclose(np.diag(e.B), 1.0, atol=1e-5)  # vertices on the axes' tips
    assert np.all(l15.contains(e.vertices(), tol=0.0))
    assert e.sigma2 == pytest.approx(1 / 3, rel=1e-4)
    # U is uniform on the 2d vertices: zero mean, covariance B B^T / d.
    U = e.points(np.random.default_rng(0).standard_normal((60000, 3)))
    np.testing.assert_allclose(U.mean(axis=0), e.center, atol=0.01)
    np.testing.assert_allclose(np.cov(U.T), e.B @ e.B.T / 3, atol=0.01)
    with pytest.raises(ValueError, match="cannot be certified"):
        sc.SEGE(floor_setting(l15, [1.0, 1.0, 1.0], 3.0, 2.5),
                exploration=Exploration(e.center, 0.5 * np.eye(3), "sphere"))


def test_sets_without_interior_are_rejected():
    with pytest.raises(ValueError, match="empty interior"):
        sc.ConvexArmSet(2, lambda x: [cp.abs(x[0]) <= 1, x[1] == 0])


def test_uncertified_exploration_and_small_L_are_rejected():
    disk = sc.Ball([1.0, 1.0], 1.0)
    outside = Exploration(np.array([1.0, 1.0]), 1.2 * np.eye(2), "cross")
    with pytest.raises(ValueError, match="not certified"):
        sc.SEGE(floor_setting(disk, [1.2, 1.9], 2.24, 1.8), exploration=outside)
    with pytest.raises(ValueError, match=r"L = 1.0 is below \|\|x\|\| = 2.24722 of the point"):
        sc.SEGE(floor_setting(disk, [1.2, 1.9], 2.24, 1.8), L=1.0)


def test_generic_ellipsoid_gives_the_same_sege_trajectory_as_the_ellipsoid_class():
    exact, generic = sc.Ellipsoid(CENTER, H), generic_ellipsoid()
    theta = np.array([0.6, 0.8])
    x0 = np.array([1.3, 1.3])
    b0 = float(x0 @ theta)
    common = dict(lam=0.1, c=0.05)
    settings = [floor_setting(arm_set, x0, b0, 0.8 * b0, noise_sd=0.3) for arm_set in (exact, generic)]
    rho_exact, rho_generic = (sc.SEGE(setting, **common).rho_bar for setting in settings)
    assert 0 < rho_generic <= rho_exact
    assert rho_exact == pytest.approx(0.2 * b0 / (2 * np.sqrt(np.linalg.eigvalsh(H)[-1])))
    # Same exploration distribution (the generic set's certified cross-polytope, which the
    # Ellipsoid also certifies), same L and rho: only the arm computations differ (closed form
    # against Clarabel).
    shared = dict(common, rho=rho_generic, L=exact.norm_bound(), exploration=generic.exploration())
    runs, horizon = 3, 600
    policy_seeds, noise_seeds = sc.run_seeds(2, runs)

    def policy(setting):
        return sc.SEGE(setting, n_runs=runs, seed=policy_seeds, **shared)

    def bandit():
        return sc.LinearBandit(theta, 0.3, noise_seeds, threshold=0.8 * b0)

    results = [sc.simulate(policy(setting), bandit(), horizon, traces=True) for setting in settings]
    # Two arithmetic paths, compared exactly on their decisions: sound because no decision is a
    # near-tie.  Along both trajectories every test statistic stays >= 1e-9 (relative) from its
    # threshold (8.5e-6 at least, measured), a million times what CPU-dependent rounding (here
    # the set-up's BLAS and LAPACK, e.g. FMA or not in H^{1/2}: ~1e-16) could move it.
    for setting in settings:
        margins = sege_decision_margins(policy(setting), bandit(), horizon)
        assert min(margins.values()) >= 1e-9, margins
    np.testing.assert_array_equal(results[0].decisions, results[1].decisions)
    assert len(np.unique(results[0].decisions)) == 3  # exploit, LCB and baseline explorations
    np.testing.assert_allclose(results[0].expected_reward, results[1].expected_reward, atol=1e-4)


@pytest.mark.parametrize("name, rho_bar, c, runs, horizon", [
    # rho_bar = (b0 - b) / (S D) with D the bounding-box diagonal: sqrt(3) for the unit cube and
    # the cut cube, 2 sqrt(3) for the l_1.5 ball of radius 1 (widened by the 1e-5 margin).  c:
    # each example's c before the default doubled (the runs this test was measured on).  The
    # l_1.5 ball takes Clarabel and its exact proof every stage (about 600 us a run-stage): fewer
    # runs and stages keep the suite's time.
    ("box", 0.2 * 0.75 / np.sqrt(3), 6e-3, 20, 3000),
    ("polytope", 0.2 * 0.59 / np.sqrt(3), 2e-3, 20, 3000),
    ("lp-ball", 0.2 * 1.67 / (2 * np.sqrt(3)), 0.03, 6, 2000),
])
def test_sege_is_safe_on_general_sets(name, rho_bar, c, runs, horizon):
    problem = EXAMPLES[name]()
    assert problem.policy("SEGE", 1, 0).rho_bar == pytest.approx(rho_bar, rel=3e-5)
    policy_seeds, noise_seeds = sc.run_seeds(1, runs)
    policy = problem.policy("SEGE", runs, policy_seeds, c=c)
    result = sc.simulate(policy, problem.bandit(noise_seeds), horizon)
    assert result.stats.total_violations.sum() == 0
    assert policy.solver_fallbacks.sum() == 0


def test_clucb_on_a_general_set_reports_its_discretization_error():
    l15 = sc.ConvexArmSet(2, lambda x: [cp.pnorm(x, 1.5) <= 1])
    policy = sc.CLUCB(floor_setting(l15, [0.0, 0.0], 0.5, 0.4), n_arms=64)
    assert policy.arms.shape == (64, 2)
    assert np.all(l15.contains(policy.arms, tol=1e-7))
    assert 0 < policy.discretization_error < 0.01
    more = discretization_error(l15, l15.greedy_arm(sphere_directions(2, 256)), 1.0)
    assert more < policy.discretization_error / 4  # error ~ 1/K^2 for a smooth boundary


def test_sphere_directions_are_unit_and_well_spread():
    for d, K in ((3, 500), (5, 800)):
        u = sphere_directions(d, K)
        np.testing.assert_allclose(np.linalg.norm(u, axis=1), 1.0)
        # every test direction has a lattice point within a modest angle
        tests = np.random.default_rng(0).standard_normal((4000, d))
        tests /= np.linalg.norm(tests, axis=1, keepdims=True)
        worst = np.degrees(np.arccos((tests @ u.T).max(axis=1).min()))
        assert worst < (12 if d == 3 else 45)
