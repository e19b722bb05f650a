"""Faults are contained: a solve that raises falls back like a failed status, and simulate checks
everything it needs before the first stage."""

import numpy as np
import pytest
from problems import floor_setting

import sege_cvx as sc
from sege_cvx.conic.compiled import SolverFailure
from sege_cvx.policies.sege import EXPLORE_BASELINE

SQUARE = np.vstack([np.eye(2), -np.eye(2)]), [2.0, 2.0, 0.0, 0.0]
THETA = np.array([0.6, 0.8])


class FlakySolve:
    """Wraps a compiled program's ``solve``: raises ``error`` on every ``every``-th call."""

    def __init__(self, solve, error, every):
        self.solve, self.error, self.every, self.calls = solve, error, every, 0

    def __call__(self, *args):
        self.calls += 1
        if self.calls % self.every == 0:
            raise self.error
        return self.solve(*args)


def _policy(n_runs=3):
    """SEGE with its LCB arms from Clarabel (a polytope's own are compiled and certified: their
    fallbacks are tested in test_polytope_arms.py)."""
    setting = floor_setting(sc.Polytope(*SQUARE), [1.0, 1.0], 1.4, 1.2, noise_sd=0.3)
    return sc.SEGE(setting, c=0.01, n_runs=n_runs, seed=0, lcb_method="solver")


def test_an_exception_inside_a_solve_falls_back_and_is_counted():
    policy = _policy()
    program = policy.setting.arm_set._lcb_program
    program.solve = FlakySolve(program.solve, RuntimeError("panic in the binding"), every=4)
    bandit = sc.LinearBandit(THETA, 0.3, sc.run_seeds(1, 3)[1])
    for _ in range(60):
        x = policy.select()
        assert np.all(policy.setting.arm_set.contains(x, tol=0.0))
        policy.observe(x, bandit.pull(x)[1])
    raised = program.solve.calls // 4
    assert raised > 0
    assert policy.solver_fallbacks.sum() == raised
    assert policy.fallback_reasons == {"error: RuntimeError": raised}


def test_a_failed_lcb_arm_means_the_baseline_is_the_safe_arm():
    policy = _policy(1)
    program = policy.setting.arm_set._lcb_program
    program.solve = FlakySolve(program.solve, ValueError("bad data"), every=1)
    x = policy.select()
    assert policy.last_decision[0] == EXPLORE_BASELINE
    np.testing.assert_array_equal(policy.last_safe_arm[0], policy.setting.safe_arm)
    assert policy.setting.arm_set.contains(x, tol=0.0)
    assert policy.fallback_reasons == {"error: ValueError": 1}


@pytest.mark.parametrize("error", [KeyboardInterrupt(), SystemExit(3)])
def test_interrupts_propagate(error):
    policy = _policy(1)
    program = policy.setting.arm_set._lcb_program
    program.solve = FlakySolve(program.solve, error, every=1)
    with pytest.raises(type(error)):
        policy.select()


def test_a_fast_path_exception_also_falls_back(monkeypatch):
    disk = sc.Ball([1.0, 1.0], 1.0)
    monkeypatch.setattr(disk, "compiled_arms", None)  # SEGE then calls the set's methods

    def broken(*args):
        raise ZeroDivisionError("fast path")

    monkeypatch.setattr(disk, "_lcb_closed_form", broken)
    policy = sc.SEGE(floor_setting(disk, [1.2, 1.9], 2.24, 1.8), seed=0)
    x = policy.select()
    assert disk.contains(x, tol=0.0) and policy.last_decision[0] == EXPLORE_BASELINE
    assert policy.fallback_reasons == {"error: ZeroDivisionError": 1}


@pytest.mark.parametrize("engine", ["step API", "fused stages"])
def test_an_unverified_compiled_lcb_arm_falls_back_to_the_baseline(engine):
    """The compiled stage verifies its LCB arm; here the closed form is given a NaN centre in
    its whitened coordinates (the greedy arm does not use them), so no LCB arm verifies: every
    exploring stage must use the baseline as its safe arm, count a NotFinite fallback, and still
    play arms of the set."""
    disk = sc.Ball([1.0, 1.0], 1.0)
    policy = sc.SEGE(floor_setting(disk, [1.2, 1.9], 2.24, 1.8, noise_sd=0.3), c=0.05, n_runs=3,
                     seed=0)
    wrong = policy._compiled[0]._replace(white_center=np.full(2, np.nan), kappa=np.nan)
    policy._compiled = (wrong, policy._compiled[1])
    bandit = sc.LinearBandit(THETA, 0.3, sc.run_seeds(1, 3)[1], threshold=1.8)
    if engine == "step API":
        for _ in range(200):
            x = policy.select()
            assert np.all(disk.contains(x, tol=0.0))
            explored = policy.last_decision != 0
            np.testing.assert_array_equal(policy.last_safe_arm[explored],
                                          np.broadcast_to(policy.setting.safe_arm,
                                                          (explored.sum(), 2)))
            policy.observe(x, bandit.pull(x)[1])
        result = None
    else:
        result = sc.simulate(policy, bandit, 200, traces=True)
    counts = policy.decision_counts.sum(axis=0)
    assert counts[1] == 0 and counts[2] > 0  # never the LCB arm; explorations happened
    assert policy.solver_fallbacks.sum() == counts[2]
    assert policy.fallback_reasons == {"NotFinite": counts[2]}
    if result is not None:
        assert result.stats.total_violations.sum() == 0


def _bandit(n_runs, dim=2):
    """The paper's theta* (in 2-D; a 3-D one for the dimension check), scoring _never's floor."""
    theta = THETA if dim == 2 else np.full(dim, 0.5)
    return sc.LinearBandit(theta, 1.0, sc.run_seeds(0, n_runs)[1], threshold=1.8)


class NeverSelect(sc.SEGE):
    def select(self):
        raise AssertionError("simulate started stages before checking its inputs")


def _never(n_runs):
    return NeverSelect(floor_setting(sc.Ball([1.0, 1.0], 1.0), [1.2, 1.9], 2.24, 1.8),
                       n_runs=n_runs)


@pytest.mark.parametrize("policy, bandit, error, match", [
    ("x", _bandit(1), TypeError, "policy must be a sege_cvx.Policy"),
    (_never(1), "bandit", TypeError, "bandit must be a LinearBandit"),
    (_never(1), _bandit(1, dim=3), ValueError, "bandit has dimension 3 but NeverSelect's arm set "
                                               "has dimension 2"),
    (_never(4), _bandit(1), ValueError, "bandit has 1 noise stream.* acts on 4 runs"),
])
def test_simulate_checks_its_inputs_before_the_first_stage(policy, bandit, error, match):
    with pytest.raises(error, match=match):
        sc.simulate(policy, bandit, 10)


def test_simulate_computes_the_optimal_reward_first(monkeypatch):
    policy = _never(2)

    def failing_support(theta):
        raise SolverFailure("instance 0: solver failed (status NumericalError)", "NumericalError")

    monkeypatch.setattr(policy.setting.arm_set, "support", failing_support)
    with pytest.raises(ValueError, match="could not compute the optimal reward"):
        sc.simulate(policy, _bandit(2), 10)
    with pytest.raises(ValueError, match="snapshot_stages"):
        sc.simulate(_never(2), _bandit(2), 10, snapshot_stages=[11])


def test_confidence_update_rejects_bad_observations():
    ce = sc.ConfidenceEllipsoid(2, 0.1, n_runs=3)
    with pytest.raises(ValueError, match="x must be finite"):
        ce.update(np.array([[1.0, np.nan]] * 3), np.zeros(3))
    with pytest.raises(ValueError, match="y must be finite"):
        ce.update(np.ones((3, 2)), np.array([0.0, np.inf, 0.0]))
    with pytest.raises(ValueError, match=r"x must have shape \(3, 2\): one arm per run"):
        ce.update(np.ones((1, 2)), np.zeros(3))  # one row for three runs: no broadcasting
    with pytest.raises(ValueError, match="y must hold one reward per run"):
        ce.update(np.ones((3, 2)), np.zeros(1))
    with pytest.raises(ValueError, match="mask must be a boolean array"):
        ce.update(np.ones((3, 2)), np.zeros(3), mask=[1, 0, 1])
    ce.update(np.ones((3, 2)), np.zeros(3), mask=np.array([True, False, True]))
    np.testing.assert_array_equal(ce.counts, [1, 0, 1])


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(t="10"), TypeError, "t must be numeric"),
    (dict(t=True), TypeError, "t must be numeric"),
    (dict(delta="0.1"), TypeError, "delta must be numeric"),
])
def test_confidence_radius_rejects_non_numbers(kwargs, error, match):
    args = dict(t=10, delta=0.1, dim=2, noise_sd=1.0, lam=0.1, S=1.0, L=1.0)
    args.update(kwargs)
    with pytest.raises(error, match=match):
        sc.confidence_radius(**args)


def test_a_fast_path_fault_fails_only_its_own_instance(monkeypatch):
    disk = sc.Ball([1.0, 1.0], 1.0)
    kernel = disk._lcb_closed_form

    def faulty_for_marked_rows(thetas, V_inv, radii):
        if np.any(radii == 0.5):  # the marked instance
            raise ArithmeticError("fast path")
        return kernel(thetas, V_inv, radii)

    monkeypatch.setattr(disk, "_lcb_closed_form", faulty_for_marked_rows)
    thetas, chols = np.array([[0.6, 0.8], [0.5, 0.5]]), np.stack([np.eye(2) * 3.0] * 2)
    alone = disk.lcb_arm_batch(thetas[:1], chols[:1], np.array([1.0]))
    batch = disk.lcb_arm_batch(thetas, chols, np.array([1.0, 0.5]))
    assert batch.status == ["closed_form", "error: ArithmeticError"]
    np.testing.assert_array_equal(batch.ok, [True, False])
    np.testing.assert_array_equal(batch.arms[0], alone.arms[0])


def test_simulate_needs_a_fresh_policy():
    policy = sc.SEGE(floor_setting(sc.Ball([1.0, 1.0], 1.0), [1.2, 1.9], 2.24, 1.8))
    x = policy.select()
    with pytest.raises(ValueError, match="has already played 0 stage.* pending select"):
        sc.simulate(policy, _bandit(1), 10)
    policy.observe(x, 1.0)
    with pytest.raises(ValueError, match="has already played 1 stage"):
        sc.simulate(policy, _bandit(1), 10)
    with pytest.raises(ValueError, match="checkpoints must hold stages in 1..10, got True"):
        sc.simulate(_never(1), _bandit(1), 10, checkpoints=[2, True])
