"""FiniteArmSet: a finite list of arms; CLUCB plays its rows exactly, SEGE refuses it."""

import pickle

import numpy as np
import pytest
from _ulps import assert_close_ulps
from problems import floor_setting

import sege_cvx as sc
from sege_cvx.confidence.cholesky import lcb_values
from sege_cvx.confidence.validation import as_spd_batch
from sege_cvx.problems import BanditProblem

THETA = np.array([0.5, 0.3, 0.6])
NOISE = 0.5
STAGES = 500


def unit_arms(k: int = 20, seed: int = 3) -> np.ndarray:
    """``k`` random arms of norm 0.8 to 1.2 in 3-D, then the baseline arm (0.3, 0.3, 0.3)."""
    rng = np.random.default_rng(seed)
    u = rng.normal(size=(k, 3))
    arms = u / np.linalg.norm(u, axis=1, keepdims=True) * rng.uniform(0.8, 1.2, size=(k, 1))
    return np.vstack([arms, [0.3, 0.3, 0.3]])


ARMS = unit_arms()
BASELINE = ARMS[-1]
B0 = float(BASELINE @ THETA)


def finite_problem() -> BanditProblem:
    """The arms ``ARMS``, ``theta* = THETA``, the baseline arm ``BASELINE`` (b = 0.8 b0)."""
    return BanditProblem.from_truth(sc.FiniteArmSet(ARMS), THETA, BASELINE, noise_sd=NOISE)


def finite_setting(arm_set=None, baseline=BASELINE) -> sc.SafeSetting:
    """The stagewise setting of :func:`finite_problem` (on ``arm_set``, of ``baseline``)."""
    arm_set = sc.FiniteArmSet(ARMS) if arm_set is None else arm_set
    return floor_setting(arm_set, baseline, B0, 0.8 * B0, noise_sd=NOISE)


def is_row(x: np.ndarray, arms: np.ndarray) -> np.ndarray:
    """Per row of ``x``: equal to some row of ``arms`` bit for bit (no tolerance)."""
    return (x[:, None, :] == arms[None]).all(axis=2).any(axis=1)


def index_order_values(thetas: np.ndarray, arms: np.ndarray) -> np.ndarray:
    """``<theta_i, a_k>`` for every pair, summed in index order with elementwise numpy: the very
    IEEE operations (each correctly rounded, no FMA) of FiniteArmSet's compiled scan, so the
    same bits on every CPU.  (``thetas @ arms.T`` goes through BLAS, whose kernel, and so the
    last bit of a value and the winner of a near-tie, depends on the CPU.)"""
    return sum(thetas[:, None, j] * arms[None, :, j] for j in range(arms.shape[1]))


# ------------------------------------------------------------------ validation
@pytest.mark.parametrize(("arms", "error", "words"), [
    ([1.0, 2.0], ValueError, ["2-D", "(2,)"]),
    (np.zeros((0, 3)), ValueError, ["at least one arm", "(0, 3)"]),
    (np.zeros((2, 0)), ValueError, ["at least one arm", "(2, 0)"]),
    ([[0.0, 1.0], [np.nan, 0.0]], ValueError, ["finite", "nan"]),
    ([[0.0, 1.0], [np.inf, 0.0]], ValueError, ["finite", "inf"]),
    ([[0.0, 1.0], [2.0, 3.0], [0.0, 1.0]], ValueError, ["distinct", "row 2", "[0. 1.]", "row 0"]),
    ([["a", "b"]], TypeError, ["numeric", "'a'"]),
    ([[0.0, 0.0], [1.5e308, 1.5e308]], ValueError, ["arm 1", "norm", "1.5e+308"]),
])
def test_invalid_arms_are_refused_naming_the_value(arms, error, words):
    with pytest.raises(error) as info:
        sc.FiniteArmSet(arms)
    for word in words:
        assert word in str(info.value)


def test_arms_are_a_read_only_copy():
    given = ARMS.copy()
    arm_set = sc.FiniteArmSet(given)
    given[0] = 7.0
    assert not np.array_equal(arm_set.arms[0], given[0])
    with pytest.raises(ValueError):
        arm_set.arms[0, 0] = 1.0
    assert (arm_set.n_arms, arm_set.dim, arm_set.is_convex) == (21, 3, False)
    assert sc.Box([0.0], [1.0]).is_convex


# ------------------------------------------------------------------ geometry
def test_greedy_arm_is_the_exact_best_row_first_of_ties():
    arm_set = sc.FiniteArmSet(ARMS)
    thetas = np.random.default_rng(0).normal(size=(200, 3))
    arms = arm_set.greedy_arm(thetas)
    assert is_row(arms, ARMS).all()
    # The reference sums in the scan's order: the argmax (first of ties) and the support value
    # are then the library's bit for bit on any CPU, near-ties included.
    values = index_order_values(thetas, ARMS)
    best = np.argmax(values, axis=1)
    np.testing.assert_array_equal(arms, ARMS[best])
    np.testing.assert_array_equal(arm_set.support(thetas), values[np.arange(len(thetas)), best])
    # Ties: the first of the rows with the largest value.
    tied = sc.FiniteArmSet([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 0.0 + 1.0]])
    np.testing.assert_array_equal(tied.greedy_arm([1.0, -1.0]), [1.0, 0.0])
    np.testing.assert_array_equal(tied.greedy_arm([0.0, 1.0]), [0.0, 1.0])
    np.testing.assert_array_equal(tied.greedy_arm([0.0, 0.0]), [0.0, 0.0])
    np.testing.assert_array_equal(tied.greedy_arm([-1.0, -1.0]), [0.0, 0.0])


def test_a_single_arm_is_a_set():
    one = sc.FiniteArmSet([[0.3, -0.4]])
    np.testing.assert_array_equal(one.greedy_arm([-1.0, 2.0]), [0.3, -0.4])
    # ||(0.3, -0.4)|| is computed with rounding (0.3^2 is no float): a norm of d terms is within
    # (d/2 + 1) u of its exact value, 0.5, i.e. 2 ulps of it.  One arm: no distance, exactly 0.
    assert_close_ulps(one.norm_bound(), 0.5, ulps=2)
    assert one.diameter_bound() == 0.0


def test_lcb_arm_is_the_row_maximizing_the_lcb():
    arm_set = sc.FiniteArmSet(ARMS)
    rng = np.random.default_rng(1)
    for _ in range(20):
        theta_hat = rng.normal(size=3)
        A = rng.normal(size=(3, 3))
        V = A @ A.T + 0.1 * np.eye(3)
        r = rng.uniform(0.0, 3.0)
        arm = arm_set.lcb_arm(theta_hat, V, r)
        # V factored as lcb_arm factors it (np.linalg.cholesky is LAPACK, whose last bits depend
        # on the BLAS kernel): the LCB values are then the scan's own, bit for bit, and their
        # argmax (first of ties) cannot flip on a near-tie.
        _, chol = as_spd_batch("V", V, 3)
        values = lcb_values(ARMS, np.tile(theta_hat, (len(ARMS), 1)),
                            np.tile(chol, (len(ARMS), 1, 1)), np.full(len(ARMS), r))
        np.testing.assert_array_equal(arm, ARMS[np.argmax(values)])
    with pytest.raises(TypeError, match="ConvexHull"):
        arm_set.lcb_arm(theta_hat, V, r, method="solver")


def test_contains_is_within_tol_of_a_row_and_exact_at_zero():
    arm_set = sc.FiniteArmSet(ARMS)
    assert arm_set.contains(ARMS).all()
    assert arm_set.contains(ARMS[4], tol=0.0)
    near = ARMS[4] + [0.0, 1e-10, 0.0]
    assert arm_set.contains(near) and not arm_set.contains(near, tol=0.0)
    assert not arm_set.contains(ARMS[4] + 0.01, tol=0.009)
    assert arm_set.contains(ARMS[4] + 0.01, tol=0.011)
    assert not arm_set.contains(0.5 * ARMS[0] + 0.5 * ARMS[1])  # not convex
    index, distance = arm_set.nearest(near)
    assert index == 4 and distance == pytest.approx(1e-10)
    points, ok = arm_set.pull_inside(np.vstack([ARMS[2], near]))
    np.testing.assert_array_equal(ok, [True, False])
    np.testing.assert_array_equal(points[1], near)  # nothing is moved


def test_bounds_are_exact():
    arm_set = sc.FiniteArmSet(ARMS)
    lo, hi = arm_set.bounding_box()
    np.testing.assert_array_equal(lo, ARMS.min(axis=0))
    np.testing.assert_array_equal(hi, ARMS.max(axis=0))
    assert arm_set.norm_bound() == pytest.approx(np.linalg.norm(ARMS, axis=1).max(), rel=1e-15)
    pairwise = np.linalg.norm(ARMS[:, None] - ARMS[None], axis=2).max()
    assert arm_set.diameter_bound() == pytest.approx(pairwise, rel=1e-15)


def test_no_convex_representation():
    arm_set = sc.FiniteArmSet(ARMS)
    with pytest.raises(TypeError, match="not a convex set.*ConvexHull"):
        arm_set.constraints(None)
    with pytest.raises(TypeError, match="convex arm set.*ConvexHull"):
        arm_set.exploration()


# ------------------------------------------------------------------ policies
def test_sege_refuses_a_finite_set_naming_convex_hull():
    with pytest.raises(TypeError) as info:
        sc.SEGE(finite_setting())
    message = str(info.value)
    assert "SEGE needs a convex arm set" in message and "sc.ConvexHull(points)" in message
    problem = finite_problem()
    with pytest.raises(TypeError, match="ConvexHull"):
        problem.policy("SEGE", 2, 0)
    with pytest.raises(TypeError, match="ROFUL needs a convex arm set.*ConvexHull"):
        problem.policy("ROFUL", 2)  # ROFUL plays points of segments too


def test_clucb_baseline_and_n_arms_must_match_the_list():
    arm_set = sc.FiniteArmSet(ARMS)
    with pytest.raises(ValueError, match=r"one of the arms .* exactly; the nearest is row 20"):
        sc.CLUCB(finite_setting(arm_set, BASELINE + 1e-12))
    with pytest.raises(ValueError, match="n_arms = 5, but FiniteArmSet.21 arms in R.3. has 21"):
        sc.CLUCB(finite_setting(arm_set), n_arms=5)
    policy = sc.CLUCB(finite_setting(arm_set), n_arms=21)
    np.testing.assert_array_equal(policy.arms, ARMS)
    assert policy.discretization_error == 0.0
    np.testing.assert_array_equal(policy.setting.safe_arm, BASELINE)
    assert policy.setting.safety.baseline_reward == B0  # not moved, so not discounted


def _clucb_steps(runs, noise_seeds):
    """Arms and decisions of ``runs`` side by side through the step API, ``(runs, STAGES, ...)``."""
    problem = finite_problem()
    policy = problem.policy("CLUCB", len(runs))
    bandit = problem.bandit([noise_seeds[r] for r in runs])
    arms, decisions = [], []
    for _ in range(STAGES):
        x = policy.select().reshape(len(runs), -1)
        _, y = bandit.pull(x)
        policy.observe(x, y)
        arms.append(x)
        decisions.append(policy.last_decision.copy())
    return np.stack(arms, axis=1), np.stack(decisions, axis=1)


def test_clucb_plays_exactly_the_rows_and_a_run_is_the_same_alone_and_in_a_batch():
    _, noise_seeds = sc.run_seeds(11, 4)
    arms, decisions = _clucb_steps([0, 1, 2, 3], noise_seeds)
    assert is_row(arms.reshape(-1, 3), ARMS).all()
    assert (decisions == 0).any() and (decisions == 2).any()  # both optimistic and baseline rounds
    assert len({tuple(a) for a in arms.reshape(-1, 3)}) > 2  # more than one optimistic arm
    alone_arms, alone_decisions = _clucb_steps([2], noise_seeds)
    np.testing.assert_array_equal(alone_arms[0], arms[2])
    np.testing.assert_array_equal(alone_decisions[0], decisions[2])


def test_clucb_simulation_on_a_finite_set_matches_the_step_api():
    _, noise_seeds = sc.run_seeds(11, 4)
    arms, decisions = _clucb_steps([0, 1, 2, 3], noise_seeds)
    problem = finite_problem()
    result = sc.simulate(problem.policy("CLUCB", 4), problem.bandit(noise_seeds), STAGES,
                         traces=True)
    np.testing.assert_array_equal(result.decisions, decisions.T)  # engine vs step API: one path
    # numpy's dot goes through BLAS, whose kernel (and so its last bit) depends on the CPU
    # (SkylakeX's differed by 5.6e-17 in 104 of these 2,000 values, the Prescott kernel's by
    # 1.1e-16 in 474, 1 ulp); the engine sums <x, theta*> in index order.  Any two sums of a
    # d-term dot product lie within gamma_d |x|.|theta| <= d ulps of ||x|| ||theta|| of the
    # exact one: 2 d ulps apart at most.
    d = len(THETA)
    assert_close_ulps(result.expected_reward.T,
                      np.array([[float(a @ THETA) for a in run] for run in arms]), ulps=2 * d,
                      scale=np.linalg.norm(arms, axis=2) * np.linalg.norm(THETA))
    # The best row by BLAS values, valued by BLAS: on a near-tie it may be another row than the
    # engine's, but one whose exact value is within 2 gamma_d s of the best; with the value's
    # own rounding the two optima differ by at most 4 d ulps of s = max_k ||a_k|| ||theta||.
    assert_close_ulps(result.optimal_reward, float(ARMS[np.argmax(ARMS @ THETA)] @ THETA),
                      ulps=4 * d, scale=np.linalg.norm(ARMS, axis=1).max() * np.linalg.norm(THETA))
    assert result.stats.conservative_met.all()  # CLUCB's (cumulative) safety


# ------------------------------------------------------------------ pickling
def test_finite_set_and_clucb_on_it_pickle():
    arm_set = sc.FiniteArmSet(ARMS)
    arm_set.diameter_bound()
    loaded = pickle.loads(pickle.dumps(arm_set))
    np.testing.assert_array_equal(loaded.arms, ARMS)
    assert not loaded.arms.flags.writeable
    assert loaded.diameter_bound() == arm_set.diameter_bound()
    np.testing.assert_array_equal(loaded.greedy_arm(THETA), arm_set.greedy_arm(THETA))
    policy = sc.CLUCB(finite_setting(arm_set), n_runs=2)
    copy = pickle.loads(pickle.dumps(policy))
    np.testing.assert_array_equal(copy.select(), policy.select())
