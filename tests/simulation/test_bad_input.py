"""Every public entry point rejects bad input with an error that names what is wrong."""

import re

import cvxpy as cp
import numpy as np
import pytest
from problems import floor_setting

import sege_cvx as sc

DISK = sc.Ball([1.0, 1.0], 1.0)
V = np.array([[2.0, 0.5], [0.5, 1.0]])
#: The disk with the baseline arm (1.2, 1.9), b0 = 2.24 and b = 1.8.
DISK_SETTING = floor_setting(DISK, [1.2, 1.9], 2.24, 1.8)


@pytest.mark.parametrize("make, error, match", [
    (lambda: sc.Ellipsoid([0.0, np.nan], np.eye(2)), ValueError, "center must be finite"),
    (lambda: sc.Ellipsoid([0.0, 0.0], np.eye(3)), ValueError, r"shape must have shape \(2, 2\)"),
    (lambda: sc.Ellipsoid([0.0, 0.0], [[1.0, 0.5], [0.0, 1.0]]), ValueError, "symmetric"),
    (lambda: sc.Ellipsoid([0.0, 0.0], [[1.0, 0.0], [0.0, -1.0]]), ValueError, "positive definite"),
    (lambda: sc.Ellipsoid([0.0, 0.0], [[1.0, 0.0], [0.0, np.inf]]), ValueError, "finite"),
    (lambda: sc.Ball([0.0, 0.0], -1.0), ValueError, "radius must be > 0"),
    (lambda: sc.Ball([[0.0, 0.0]], 1.0), ValueError, "center must have shape"),
    (lambda: sc.Box([0.0, 1.0], [1.0, 1.0]), ValueError, "coordinate 1"),
    (lambda: sc.Box([0.0, 0.0], [1.0]), ValueError, "upper"),
    (lambda: sc.Polytope(np.eye(2), [1.0, 1.0]), ValueError, "unbounded"),
    (lambda: sc.Polytope(np.vstack([np.eye(2), -np.eye(2)]), [-1.0, 0, 0, 0]), ValueError, "empty"),
    (lambda: sc.Polytope(np.vstack([np.eye(2), -np.eye(2)]), [1.0, 0, 0, 0]), ValueError,
     "empty interior"),
    (lambda: sc.Polytope(np.zeros((2, 2)), [1.0, 1.0]), ValueError, "all-zero row"),
    (lambda: sc.ConvexArmSet(2, lambda x: [x >= 0]), ValueError, "unbounded"),
    (lambda: sc.ConvexArmSet(2, lambda x: [cp.norm(x) <= 1, x[0] >= 2]), ValueError, "empty"),
    (lambda: sc.ConvexArmSet(2, lambda x: [cp.norm(x) >= 1]), ValueError, "DCP"),
    (lambda: sc.ConvexArmSet(2, lambda x: 3), TypeError, "cvxpy constraints"),
    (lambda: sc.ConvexArmSet(0, lambda x: [x <= 1]), ValueError, "dim"),
])
def test_arm_set_construction_errors(make, error, match):
    with pytest.raises(error, match=match):
        make()


@pytest.mark.parametrize("call, error, match", [
    (lambda: DISK.lcb_arm([0.6, np.nan], V, 1.0), ValueError, "theta_hat must be finite"),
    (lambda: DISK.lcb_arm([0.6, 0.8, 1.0], V, 1.0), ValueError, "theta_hat must have shape"),
    (lambda: DISK.lcb_arm([0.6, 0.8], -V, 1.0), ValueError, "V must be positive definite"),
    (lambda: DISK.lcb_arm([0.6, 0.8], [[1.0, 0.2], [0.0, 1.0]], 1.0), ValueError, "V must be symmetric"),
    (lambda: DISK.lcb_arm([0.6, 0.8], np.eye(3), 1.0), ValueError, "V must have shape"),
    (lambda: DISK.lcb_arm([0.6, 0.8], V, -0.5), ValueError, "radius must be nonnegative"),
    (lambda: DISK.lcb_arm([0.6, 0.8], V, np.inf), ValueError, "radius must be finite"),
    (lambda: DISK.lcb_arm([0.6, 0.8], V, 1.0, method="newton"), ValueError, "method"),
    (lambda: DISK.lcb_arm(np.ones((3, 2)), np.stack([V, V]), 1.0), ValueError, "3 rows"),
    (lambda: sc.ConvexArmSet(2, lambda x: [cp.log_sum_exp(x) <= 1, x >= -2]).lcb_arm(
        [1.0, 1.0], V, 1.0, method="closed_form"), ValueError, "no closed-form"),
    (lambda: DISK.greedy_arm([1.0, "a"]), TypeError, "theta must be numeric"),
    (lambda: DISK.contains([1.0, 1.0], tol=-1.0), ValueError, "tol"),
    (lambda: sc.lcb([1.0, 1.0], [0.6, 0.8], V, -1.0), ValueError, "radius"),
    (lambda: sc.lcb([1.0, 1.0], [0.6, 0.8], -V, 1.0), ValueError, "positive definite"),
    (lambda: sc.confidence_radius(10, 1.5, dim=2, noise_sd=1, lam=0.1, S=1, L=1), ValueError, "delta"),
    (lambda: sc.confidence_radius(-1, 0.1, dim=2, noise_sd=1, lam=0.1, S=1, L=1), ValueError, "t must"),
    (lambda: sc.confidence_radius(1, 0.1, dim=2, noise_sd=1, lam=0.0, S=1, L=1), ValueError, "lam"),
    (lambda: sc.ConfidenceEllipsoid(2, lam=-1.0), ValueError, "lam"),
])
def test_call_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_exploration_and_bandit_errors():
    from sege_cvx.arm_sets.exploration import Exploration
    with pytest.raises(ValueError, match="kind"):
        Exploration([0.0, 0.0], np.eye(2), "cube")
    with pytest.raises(ValueError, match="center must be finite"):
        Exploration([0.0, np.nan], np.eye(2), "sphere")
    with pytest.raises(ValueError, match=r"B must have shape \(2, 2\)"):
        Exploration([0.0, 0.0], np.eye(3), "sphere")
    with pytest.raises(ValueError, match="nonsingular"):
        Exploration([0.0, 0.0], np.zeros((2, 2)), "cross")
    with pytest.raises(TypeError, match="seeds"):
        sc.LinearBandit([0.6, 0.8], 1.0, 7)
    with pytest.raises(ValueError, match="SeedSequence"):
        sc.LinearBandit([0.6, 0.8], 1.0, [1, 2])


def test_simulation_and_reproduce_errors():
    policy = sc.SEGE(DISK_SETTING)
    with pytest.raises(ValueError, match="horizon"):
        sc.simulate(policy, sc.LinearBandit([0.6, 0.8], 1.0, sc.run_seeds(0, 1)[1], threshold=1.8), 0)
    with pytest.raises(ValueError, match="seed must hold 2"):
        sc.SEGE(DISK_SETTING, n_runs=2, seed=[np.random.SeedSequence(0)])
    from sege_cvx.experiments import run_study
    with pytest.raises(ValueError, match="runs"):
        run_study(runs=0, horizon=10)
    with pytest.raises(ValueError, match="horizon"):
        run_study(runs=1, horizon=0)


# ------------------------------------------------------------------ seeds and run counts
@pytest.mark.parametrize("call, error, match", [
    (lambda: sc.run_seeds(0, 0), ValueError, "n_runs must be >= 1, got 0"),
    (lambda: sc.run_seeds(0, -1), ValueError, "n_runs must be >= 1, got -1"),
    (lambda: sc.run_seeds(0, 2.5), TypeError, "n_runs must be an integer, got 2.5"),
    (lambda: sc.run_seeds(0, True), TypeError, "n_runs must be an integer"),
    (lambda: sc.run_seeds(0, 10**30), ValueError, "n_runs must be at most"),
    (lambda: sc.run_seeds(-1, 3), ValueError, "seed must be a nonnegative integer, got -1"),
    (lambda: sc.run_seeds(True, 3), TypeError, "seed must be an int"),
    (lambda: sc.run_seeds("7", 3), TypeError, "seed must be an int"),
    (lambda: sc.run_seeds(1.0, 3), TypeError, "seed must be an int"),
    (lambda: sc.SEGE(DISK_SETTING, seed=-5), ValueError, "seed must be a nonnegative integer, got -5"),
    (lambda: sc.SEGE(DISK_SETTING, n_runs=10**30), ValueError, "n_runs must be at most"),
])
def test_seed_and_run_count_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_numpy_integer_seeds_and_counts_are_accepted():
    a, _ = sc.run_seeds(np.int64(3), np.int32(2))
    b, _ = sc.run_seeds(3, 2)
    assert [s.spawn_key for s in a] == [s.spawn_key for s in b]


# ------------------------------------------------------------------ strings, bools, complex
@pytest.mark.parametrize("value", ["1.5", ["1.0", "2.0"], [True, False], [1 + 0j, 2.0],
                                   None, [1.0, None], [[1.0], [1.0, 2.0]]])
def test_non_numeric_arrays_are_rejected_not_converted(value):
    with pytest.raises(TypeError, match="theta must be numeric"):
        DISK.greedy_arm(value)


# ------------------------------------------------------------------ bounds beyond the float range
def test_box_bounds_are_computed_without_overflow():
    box = sc.Box(-1e200 * np.ones(2), 1e200 * np.ones(2))
    assert box.diameter_bound() == pytest.approx(2 * np.sqrt(2) * 1e200, rel=1e-15)
    assert box.norm_bound() == pytest.approx(np.sqrt(2) * 1e200, rel=1e-15)
    np.testing.assert_array_equal(box.greedy_arm([1.0, 0.0]), [1e200, 0.0])


@pytest.mark.parametrize("lower, upper, match", [
    (-1e308 * np.ones(2), 1e308 * np.ones(2), "diameter bound of Box.* is not representable"),
    (-1e308 * np.ones(1), 1e308 * np.ones(1), "diameter bound of Box.* is not representable"),
    (1e308 * np.ones(2), 1.7e308 * np.ones(2), "norm bound max \\|\\|x\\|\\| of Box.* is not "
     "representable"),
])
def test_box_bounds_beyond_the_float_range_are_rejected(lower, upper, match):
    with pytest.raises(ValueError, match=match):
        sc.Box(lower, upper)


def test_box_exploration_beyond_the_float_range_is_rejected():
    with pytest.raises(ValueError, match="exploration covariance .* not representable"):
        sc.Box([0.0, 0.0], [1e160, 1e160]).exploration()


# ------------------------------------------------------------------ scale-relative checks
SQUARE_A = np.vstack([np.eye(2), -np.eye(2)])


@pytest.mark.parametrize("scale", [1e-12, 1e-6, 1.0, 1e6, 1e100])
def test_polytope_checks_do_not_depend_on_row_scaling(scale):
    # The unit square [0, 1]^2 with every inequality multiplied by `scale`.
    P = sc.Polytope(scale * SQUARE_A, scale * np.array([1.0, 1.0, 0.0, 0.0]))
    assert P.chebyshev_radius == pytest.approx(0.5, rel=1e-7)
    np.testing.assert_allclose(P.greedy_arm([1.0, 2.0]), [1.0, 1.0], atol=1e-7)
    assert P.certify_exploration(P.exploration())
    assert np.sqrt(2) <= P.diameter_bound() <= np.sqrt(2) * (1 + 3e-5)


@pytest.mark.parametrize("reach", [1e13, 1e16, 1e150])
def test_a_polytope_beyond_what_its_programs_resolve_is_refused_by_its_data(reach):
    """Named where the value enters (issue 39, item 6): Clarabel once called a square of
    half-width 1e16 unbounded, and one of 1e150 ended its Chebyshev program unbounded."""
    with pytest.raises(ValueError, match="^" + re.escape(
            f"inequality 0 of A x <= b lies {reach:.3g} from the origin (|b[0]| / ||A[0]||), "
            "beyond 1e+12, the farthest the programs that certify a polytope (Clarabel's) "
            "resolve: rescale the problem")):
        sc.Polytope(SQUARE_A, reach * np.ones(4))
    box = sc.Polytope(SQUARE_A, 1e12 * np.ones(4))  # the farthest accepted: bounded right
    np.testing.assert_allclose(box.bounding_box()[1], [1e12, 1e12], rtol=1e-4)


def test_a_policy_given_a_keyword_it_lacks_names_its_parameters_and_the_setting():
    setting = sc.paper_problem().setting
    with pytest.raises(TypeError, match=r"^SEGE: got an unexpected keyword argument 'constraint' "
                                        r"\(its parameters: setting, lam, c, rho, .*\); the "
                                        r"problem's arms, truth and safety model \(a constraint "
                                        r"included\) reach a policy through its setting"):
        sc.SEGE(setting, constraint=None)
    with pytest.raises(TypeError, match=r"^CLUCB: got an unexpected keyword argument 'c' \(its "
                                        r"parameters: setting, lam, delta, n_arms, radius, "
                                        r"n_runs, seed\)$"):
        sc.CLUCB(setting, c=0.5)

    class Flagged(sc.SEGE):  # forwards the rest to SEGE
        def __init__(self, setting, *, flag: bool = False, **kwargs):
            super().__init__(setting, **kwargs)

    with pytest.raises(TypeError, match=r"^Flagged: got an unexpected keyword argument 'flg' "
                                        r"\(its parameters: setting, flag, lam, c, "):
        Flagged(setting, flg=True)


@pytest.mark.parametrize("size", [1e-5, 1e-3, 1e3, 1e12])
def test_polytope_interior_test_is_relative_to_its_size(size):
    P = sc.Polytope(SQUARE_A, size * np.array([1.0, 1.0, 0.0, 0.0]))
    assert P.chebyshev_radius == pytest.approx(size / 2, rel=1e-6)
    thin = size * np.array([1.0, 1e-12, 0.0, 0.0])  # width ratio 1e-12 < MIN_INTERIOR_RADIUS
    with pytest.raises(ValueError, match="empty interior"):
        sc.Polytope(SQUARE_A, thin)


@pytest.mark.parametrize("radius", [1e-5, 1e-3, 1e3, 1e6])
def test_convex_arm_set_interior_test_is_relative_to_its_size(radius):
    ball = sc.ConvexArmSet(2, lambda x: [cp.norm(x) <= radius])
    e = ball.exploration()
    # The largest inscribed axis cross-polytope of a disk has its vertices on the circle.
    np.testing.assert_allclose(np.diag(e.B), radius, rtol=2e-3)
    assert np.all(ball.contains(e.vertices(), tol=0.0))


@pytest.mark.parametrize("make", [
    lambda: sc.ConvexArmSet(2, lambda x: [cp.norm(x) <= 1e-12]),
    lambda: sc.Polytope(SQUARE_A, 1e-12 * np.array([1.0, 1.0, 0.0, 0.0])),
    lambda: sc.ConvexArmSet(2, lambda x: [cp.norm(x - 1e12) <= 1]),  # tiny relative to |x|
])
def test_sets_too_small_for_the_solver_say_so(make):
    with pytest.raises(ValueError, match="too small for the solver's tolerances.*rescale"):
        make()


def test_inconsistent_solver_results_are_reported():
    # Clarabel reports Solved at 1.6% of the support of this ball (its data are ~1e13; a ball
    # of radius 1e12 is solved accurately with the first tier's regularization of 1e-10).
    with pytest.raises(ValueError, match="inconsistent.*rescale"):
        sc.ConvexArmSet(2, lambda x: [cp.norm(x) <= 1e13])


def test_large_generic_ball_is_bounded_accurately():
    # Clarabel's default regularization (1e-8) gave this ball support values of 1.85e9.
    ball = sc.ConvexArmSet(2, lambda x: [cp.norm(x) <= 1e12])
    lo, hi = ball.bounding_box()
    np.testing.assert_allclose(hi, 1e12 * (1 + 1e-5), rtol=1e-6)
    np.testing.assert_allclose(lo, -hi)
    np.testing.assert_allclose(ball.greedy_arm([3.0, 4.0]), [6e11, 8e11], rtol=1e-6)


def test_ball_far_from_the_origin_greedy_arm():
    # Needs the fix in ellipsoid.py: centre + step rounds to the 1.2e-4 grid of 1e12 and lands
    # outside the set (gauge 1 + 6e-5), beyond what pull_inside's contraction (1e-5) repairs.
    ball = sc.Ball([1e12, 1e12], 1.0)
    theta = np.array([1.0, 0.3])
    x = ball.greedy_arm(theta)
    assert ball.contains(x, tol=0.0)
    np.testing.assert_allclose(x - 1e12, theta / np.linalg.norm(theta), atol=1e-3)


def test_ball_far_from_the_origin_lcb_arm():
    # For |c| >> 1, <x, theta> - r ||x|| ~ const + <x - c, theta - r c / |c|>.
    ball = sc.Ball([1e12, 1e12], 1.0)
    theta, r = np.array([1.0, 0.3]), 0.5
    g = theta - r * ball.center / np.linalg.norm(ball.center)
    best = ball.center + g / np.linalg.norm(g)
    x = ball.lcb_arm(theta, np.eye(2), r)
    assert ball.contains(x, tol=0.0)
    assert sc.lcb(x, theta, np.eye(2), r) >= sc.lcb(best, theta, np.eye(2), r) - 1e-2


# ------------------------------------------------------------------ CLUCB in one dimension
def test_sphere_directions_in_one_dimension():
    from sege_cvx.arm_sets.discretization import default_arm_count, discretization_error, sphere_directions
    np.testing.assert_array_equal(sphere_directions(1, 2), [[1.0], [-1.0]])
    np.testing.assert_array_equal(sphere_directions(1, 100), [[1.0], [-1.0]])
    np.testing.assert_array_equal(sphere_directions(1, 1), [[1.0]])
    interval = sc.Box([0.0], [1.0])
    assert default_arm_count(interval, 1.0) == 2
    assert discretization_error(interval, [[0.0], [1.0]], 1.0) == 0.0
    assert discretization_error(interval, [[0.5]], 2.0) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="count must be >= 1"):
        sphere_directions(2, 0)


def test_clucb_runs_in_one_dimension():
    policy = sc.CLUCB(floor_setting(sc.Box([0.0], [1.0]), [0.5], 0.5, 0.4))
    np.testing.assert_array_equal(np.sort(policy.arms[:, 0]), [0.0, 1.0])
    assert policy.discretization_error == 0.0
    rng = np.random.default_rng(0)
    for _ in range(50):
        x = policy.select()
        assert np.all(np.isfinite(x)) and 0.0 <= x[0] <= 1.0
        policy.observe(x, 0.8 * x[0] + 0.1 * rng.standard_normal())
    assert policy.decision_counts.sum() == 50


# ------------------------------------------------------------------ ConvexArmSet constraints
#: An auxiliary variable created once, outside the constraint function (refused).
SHARED_T = cp.Variable()


@pytest.mark.parametrize("constraints, match", [
    (lambda x: [x <= cp.Variable(2, boolean=True), cp.norm(x) <= 1],
     "must be convex: variable .* is boolean"),
    (lambda x: [x <= cp.Variable(2, integer=True), cp.norm(x) <= 1],
     "must be convex: variable .* is integer"),
    (lambda x: [cp.norm(x) <= SHARED_T, SHARED_T <= 1],  # one t for every call
     "auxiliary variable .* is shared by every call"),
    (lambda x: [x[5] <= 1], "constraints\\(x\\) raised IndexError"),
    (lambda x: [cp.norm(x) <= np.nan], "constraints must have finite data"),
    (lambda x: [cp.norm(x - np.array([0.0, np.inf])) <= 1], "constraints must have finite data"),
])
def test_convex_arm_set_constraint_errors(constraints, match):
    with pytest.raises(ValueError, match=match):
        sc.ConvexArmSet(2, constraints)


def test_convex_arm_set_dimension_limit():
    with pytest.raises(ValueError, match="dim must be at most"):
        sc.ConvexArmSet(10**30, lambda x: [cp.norm(x) <= 1])


# ------------------------------------------------------------------ solver data scaling
@pytest.mark.parametrize("scale", [1e-8, 1e8])
def test_solver_arms_do_not_depend_on_the_scale_of_theta(scale):
    l15 = sc.ConvexArmSet(2, lambda x: [cp.pnorm(x, 1.5) <= 1])
    theta = np.array([0.3, -0.9])
    np.testing.assert_allclose(l15.greedy_arm(scale * theta), l15.greedy_arm(theta), atol=1e-6)
    box = sc.Box([0.0, 0.0], [1.0, 2.0])
    # (theta, r) -> scale (theta, r) and (V, r) -> (V / c, r / sqrt(c)) leave the LCB arm as is.
    ref = box.lcb_arm(theta, V, 0.4)
    np.testing.assert_allclose(box.lcb_arm(scale * theta, V, scale * 0.4), ref, atol=1e-6)
    np.testing.assert_allclose(box.lcb_arm(theta, scale * V, 0.4 * np.sqrt(scale)), ref, atol=1e-6)


def test_v_with_an_unrepresentable_inverse_is_rejected():
    with pytest.raises(ValueError, match="V must be positive definite with a representable inverse"):
        DISK.lcb_arm([0.6, 0.8], 1e-320 * np.eye(2), 1.0)
    # Huge and tiny but representable V are fine.
    for scale in (1e300, 1e-300):
        assert DISK.contains(DISK.lcb_arm([0.6, 0.8], scale * np.eye(2), 1.0))
