"""The compiled stage loop is open: a policy outside the package registers a stage record and its
hooks, and simulate plays it through the one loop, bit for bit as its select/observe."""

from typing import NamedTuple

import numpy as np
import pytest
from _same_runs import assert_same_confidence, assert_same_simulations, simulate_on_threads
from problems import paper_problem

import sege_cvx as sc
from sege_cvx._numba import njit
from sege_cvx.confidence.cholesky import lcb_one
from sege_cvx.confidence.state import ConfidenceState, learn, learn_scratch, run_confidence
from sege_cvx.problems.problem import BanditProblem
from sege_cvx.stages.loop import (
    Decisions,
    StageHooks,
    choose_loop,
    geometry_of,
    radius_of,
    register_stage_hooks,
    stage_loop,
)
from sege_cvx.testing import check_policy

CANDIDATE, BASELINE = 0, 1


class RoundRobinStages(NamedTuple):
    confidence: ConfidenceState
    decisions: Decisions
    candidates: np.ndarray
    baseline: np.ndarray
    width: float
    threshold: float


class RoundRobinScratch(NamedTuple):
    w: np.ndarray
    learn: tuple


@njit(inline="always")
def _scratch(policy, d):
    return RoundRobinScratch(w=np.empty(d), learn=learn_scratch(d))


@njit(inline="always")
def _run_view(policy, i):
    return run_confidence(policy.confidence, i)


@njit(inline="always")
def _choose_arm(policy, run, work, i, s, t, arm):
    # Candidate t mod K if its lower confidence bound clears the threshold, else the baseline.
    candidate = policy.candidates[t % policy.candidates.shape[0]]
    ok = lcb_one(candidate, run.theta_hat, run.chol, policy.width, work.w) >= policy.threshold
    for j in range(arm.shape[0]):
        arm[j] = candidate[j] if ok else policy.baseline[j]
    return CANDIDATE if ok else BASELINE


@njit(inline="always")
def _learn(policy, run, work, i, arm, y, code, z):
    # z: the constraint's feedback, NaN on the stagewise floor (unused here).
    return learn(policy.confidence, run, i, arm, y, work.learn)


register_stage_hooks(RoundRobinStages, StageHooks(_scratch, _run_view, _choose_arm, _learn))


class RoundRobin(sc.Policy):
    """Plays the finite set's arms in turn where certified safe, else the baseline."""

    decision_names = ("candidate", "baseline")
    compiled_stages = True

    def __init__(self, setting, *, lam=0.1, n_runs=1, seed=None, radius: float = 1.0):
        super().__init__(setting, lam=lam, n_runs=n_runs, seed=seed)
        self.radius = radius
        self.candidates = np.array(setting.arm_set.arms)
        self.confidence = sc.ConfidenceEllipsoid(self.d, self.lam, self.n_runs)

    def stage_record(self, t0, n_stages):
        return RoundRobinStages(confidence=self.confidence.state(),
                                decisions=self.decision_record(), candidates=self.candidates,
                                baseline=self.setting.safe_arm, width=self.radius,
                                threshold=self.setting.safety.threshold)

    def select(self):
        t = self.t + 1
        arms = np.empty((self.n_runs, self.d))
        codes = np.empty(self.n_runs, dtype=np.int8)
        choose_loop(RoundRobinStages)(self.stage_record(t, 1), t, arms, codes)
        self.last_decision = codes
        return arms

    def observe(self, arms, rewards, constraint_values):
        self.confidence.update(arms, rewards)


class SteppedRoundRobin(RoundRobin):
    compiled_stages = False


def _problem():
    arms = sc.FiniteArmSet([[0.5, 0.5], [2.0, 0.0], [0.0, 2.0], [1.5, 1.5], [1.0, 0.2]])
    return BanditProblem.from_truth(arms, theta_star=(0.6, 0.8), safe_arm=(0.5, 0.5))


@pytest.mark.parametrize("threads", [1, 2])
def test_a_users_compiled_policy_plays_through_the_loop_as_through_select_observe(threads):

    problem = _problem()
    policy_seeds, noise_seeds = sc.run_seeds(4, 5)
    results = []
    for cls in (RoundRobin, SteppedRoundRobin):
        policy = cls(problem.setting, n_runs=5, seed=policy_seeds, radius=0.5)
        bandit = problem.bandit(noise_seeds)
        results.append((policy, simulate_on_threads(policy, bandit, 1500, threads, traces=True)))
    (fused, a), (stepped, b) = results
    assert_same_simulations(a, b)
    assert_same_confidence(fused, stepped)
    np.testing.assert_array_equal(fused.decision_counts, stepped.decision_counts)
    assert fused.t == stepped.t == 1500
    # Both decisions occur: the rule is exercised, not one branch of it.
    assert set(np.unique(a.decisions)) == {CANDIDATE, BASELINE}


def test_the_compiled_path_is_the_loop_not_select(monkeypatch):
    problem = _problem()
    policy = RoundRobin(problem.setting, n_runs=2)

    def refuse(self):
        raise AssertionError("select called")

    monkeypatch.setattr(RoundRobin, "select", refuse)
    sc.simulate(policy, problem.bandit(sc.run_seeds(0, 2)[1]), 50)
    assert policy.t == 50 and policy.decision_counts.sum() == 100


def test_check_policy_passes_the_users_compiled_policy():
    check_policy(RoundRobin, _problem(), radius=0.5)


def test_a_loop_of_hooks_outside_the_package_is_not_cached_on_disk():
    from sege_cvx._numba import has_disk_cache
    from sege_cvx.arm_sets.ellipsoid.arms import EllipsoidGeometry
    from sege_cvx.confidence.radius import Theorem1Rule
    from sege_cvx.policies.sege_rule import SEGEStages

    assert not has_disk_cache(stage_loop(RoundRobinStages))
    assert has_disk_cache(stage_loop(SEGEStages, EllipsoidGeometry, Theorem1Rule))


def test_stage_records_are_refused_with_one_line():
    class NotARecord:
        pass

    class Partial(NamedTuple):
        V: np.ndarray

    hooks = StageHooks(_scratch, _run_view, _choose_arm, _learn)
    with pytest.raises(TypeError, match="must be a NamedTuple class"):
        register_stage_hooks(NotARecord, hooks)
    with pytest.raises(TypeError, match=r"lacks the field 'decisions' \(a Decisions\)"):
        register_stage_hooks(Partial, hooks)
    with pytest.raises(TypeError, match="hooks must be a StageHooks"):
        register_stage_hooks(RoundRobinStages, (_scratch, _run_view, _choose_arm, _learn))
    with pytest.raises(TypeError, match="no compiled stage loop for Partial"):
        stage_loop(Partial)


def test_a_hook_the_loop_cannot_call_is_refused_when_it_is_registered():
    class SevenParameters(NamedTuple):
        decisions: Decisions

    @njit(inline="always")
    def learn_without_z(policy, run, work, i, arm, y, code):  # the form before 0.1.0
        return True

    hooks = StageHooks(_scratch, _run_view, _choose_arm, learn_without_z)
    with pytest.raises(TypeError, match=r"stage hook learn of SevenParameters must take \(policy, "
                                        r"run, work, i, arm, y, code, z\)"):
        register_stage_hooks(SevenParameters, hooks)
    with pytest.raises(TypeError, match=r"stage hook choose_arm of SevenParameters must take"):
        register_stage_hooks(SevenParameters, hooks._replace(learn=_learn, choose_arm=_run_view))


ShiftedStages = NamedTuple("ShiftedStages", list(RoundRobinStages.__annotations__.items()))


@njit(inline="always")
def _choose_shifted(policy, run, work, i, s, t, arm):
    return _choose_arm(policy, run, work, i, s, t + 1, arm)  # not what select plays


register_stage_hooks(ShiftedStages, StageHooks(_scratch, _run_view, _choose_shifted, _learn))


class Shifted(RoundRobin):
    def stage_record(self, t0, n_stages):
        return ShiftedStages(*super().stage_record(t0, n_stages))

    def select(self):  # the step API of RoundRobin, on its own record
        t = self.t + 1
        arms = np.empty((self.n_runs, self.d))
        codes = np.empty(self.n_runs, dtype=np.int8)
        choose_loop(RoundRobinStages)(RoundRobin.stage_record(self, t, 1), t, arms, codes)
        self.last_decision = codes
        return arms


def test_check_policy_fails_compiled_stages_that_are_not_select_observe():
    with pytest.raises(AssertionError, match="Shifted's compiled stages gave decisions"):
        check_policy(Shifted, _problem(), radius=0.5)


BadCodeStages = NamedTuple("BadCodeStages", list(RoundRobinStages.__annotations__.items()))


@njit(inline="always")
def _choose_bad_code(policy, run, work, i, s, t, arm):
    code = _choose_arm(policy, run, work, i, s, t, arm)
    return 7 if t == 30 else code  # no such column in decision_counts


register_stage_hooks(BadCodeStages, StageHooks(_scratch, _run_view, _choose_bad_code, _learn))


class BadCode(RoundRobin):
    def stage_record(self, t0, n_stages):
        return BadCodeStages(*super().stage_record(t0, n_stages))


def test_a_compiled_code_outside_the_decisions_stops_simulate_with_its_run_and_stage():
    problem = _problem()
    policy = BadCode(problem.setting, n_runs=2)
    with pytest.raises(ValueError, match=r"BadCode's compiled stages gave run 0 a non-finite arm "
                                         r"or a decision code outside 0..1 at stage 30"):
        sc.simulate(policy, problem.bandit(sc.run_seeds(0, 2)[1]), 50)


def test_a_record_class_has_one_set_of_hooks_and_its_loops_are_made_once():
    from sege_cvx.policies.clucb import CLUCBStages
    from sege_cvx.policies.roful import ROFULStages
    from sege_cvx.policies.sege_rule import SEGEStages

    hooks = StageHooks(_scratch, _run_view, _choose_arm, _learn)
    register_stage_hooks(RoundRobinStages, hooks)  # the same hooks again: nothing changes
    with pytest.raises(TypeError, match="RoundRobinStages already has stage hooks"):
        register_stage_hooks(RoundRobinStages, hooks._replace(choose_arm=_choose_shifted))
    # The built-in policies' kernels (warm_up compiles them) are the loops simulate runs: one
    # per kind of set where the record holds the set's geometry record.
    disk = paper_problem()
    box = BanditProblem.from_truth(sc.Box([0.0, 0.0], [1.0, 1.0]), theta_star=(0.6, 0.8),
                                   safe_arm=(0.5, 0.5))
    kernels = {}
    for problem in (disk, box):
        for name, record in (("SEGE", SEGEStages), ("CLUCB", CLUCBStages),
                             ("ROFUL", ROFULStages)):
            policy = problem.policy(name, 1, 0)
            record_ = policy.stage_record(1, 1)
            loop = stage_loop(record, geometry_of(record_), radius_of(record_))
            assert policy.compiled_kernels == (loop,)
            kernels[problem is box, name] = loop
    assert kernels[False, "CLUCB"] is kernels[True, "CLUCB"]  # its arms are its own table
    assert kernels[True, "CLUCB"].__name__ == "run_stages_CLUCBStages_Theorem1Rule"
    for name, rule in (("SEGE", "Theorem1Rule"), ("ROFUL", "SelfNormalizedRule")):
        assert kernels[False, name] is not kernels[True, name]
        assert kernels[True, name].__name__ == f"run_stages_{name}Stages_PolytopeGeometry_{rule}"


def test_the_arms_of_a_stage_are_bound_by_the_geometry_record_class():
    from sege_cvx.arm_sets.kernels import registry
    from sege_cvx.arm_sets.polytope import arms
    from sege_cvx.arm_sets.polytope.arms import PolytopeGeometry

    bindings = registry.arm_bindings(PolytopeGeometry)
    assert bindings[registry.greedy_arm] is arms.greedy_one
    assert bindings[registry.pull_in] is arms.pull_inside_one
    assert bindings[registry.radial_extent] is arms.radial_one
    assert bindings[registry.greedy_arm_within] is arms.greedy_within_one
    assert bindings[registry.within_scratch] is arms.within_scratch_of
    assert bindings[registry.within_start] is arms.within_start_of
    assert set(bindings) == {registry.greedy_arm, registry.lcb_arm, registry.pull_inside,
                             registry.pull_in, registry.radial_extent,
                             registry.greedy_arm_within, registry.within_scratch,
                             registry.within_start, registry.safe_set_arm,
                             registry.safe_set_scratch, registry.safe_set_start}
    assert bindings[registry.safe_set_arm] is registry.no_safe_set_arm
    assert bindings[registry.safe_set_start] is registry.no_safe_set_start
    # A geometry without a pull-in or an extent along a ray binds the ones that do nothing.
    from sege_cvx.arm_sets.hull.arms import HullGeometry
    hull = registry.arm_bindings(HullGeometry)
    assert hull[registry.radial_extent] is registry.no_radial_extent
    assert hull[registry.pull_in] is registry.no_pull_in
    assert registry.greedy_arm_within not in hull  # Safe-LUCB does not compile its stages there
    with pytest.raises(TypeError, match=r"no compiled arms for geometry records of class "
                                        r"'RoundRobinStages' \(registered: "):
        registry.arm_bindings(RoundRobinStages)
    with pytest.raises(TypeError, match="no compiled arms"):
        stage_loop(RoundRobinStages, RoundRobinStages)  # a geometry that is none
    with pytest.raises(NotImplementedError, match="bound to a geometry's function"):
        registry.greedy_arm(None, None, None, None, None, None)
    with pytest.raises(TypeError, match="kernels.within and kernels.within_scratch come "
                                        "together"):
        registry.register_geometry(RoundRobinStages, registry.GeometryKernels(
            within=arms.greedy_within_one))
    with pytest.raises(TypeError, match="kernels.within and kernels.within_start come "
                                        "together"):
        registry.register_geometry(RoundRobinStages, registry.GeometryKernels(
            within=arms.greedy_within_one, within_scratch=arms.within_scratch_of))
    with pytest.raises(TypeError, match="kernels.safe_set and kernels.safe_set_scratch come "
                                        "together"):
        registry.register_geometry(RoundRobinStages, registry.GeometryKernels(
            safe_set_scratch=arms.within_scratch_of))
    with pytest.raises(TypeError, match="kernels.safe_set and kernels.safe_set_start come "
                                        "together"):
        registry.register_geometry(RoundRobinStages, registry.GeometryKernels(
            safe_set=arms.greedy_within_one, safe_set_scratch=arms.within_scratch_of))
    with pytest.raises(TypeError, match="already has kernels"):
        registry.register_geometry(PolytopeGeometry, registry.GeometryKernels(
            greedy=arms.lcb_one))
    # A user's record may have a field of that name for its own data: no binding, no error.
    class Own(NamedTuple):
        geometry: tuple

    assert geometry_of(Own((1.0, 2.0))) is None
    assert geometry_of(RoundRobinStages._make([None] * len(RoundRobinStages._fields))) is None
