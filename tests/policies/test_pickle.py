"""Arm sets and policies pickle, and a policy restored mid-run continues bit for bit."""

import copy
import pickle

import cloudpickle
import cvxpy as cp
import numpy as np
import pytest
from problems import floor_setting, paper_setting

import sege_cvx as sc
import sege_cvx.arm_sets.polytope.sets as polyhedral
import sege_cvx.conic.programs as programs
from sege_cvx.policies.sege import EXPLOIT, EXPLORE_LCB

THETA = np.array([0.6, 0.8])
STAGES = 150  # stages before the checkpoint, and again after it


def l15_ball(x: cp.Variable) -> list:
    """The l1.5 ball of radius 1 around (1, 1): module level, so the standard pickle works."""
    return [cp.pnorm(x - 1.0, 1.5) <= 1]


def l1_epigraph(x: cp.Variable) -> list:
    """A lifted set: the l1 ball of radius 1.5 about (1, 1) through its epigraph variable."""
    t = cp.Variable()
    return [cp.norm1(x - 1.0) <= t, t <= 1.5]


def square() -> sc.Polytope:
    return sc.Polytope(np.vstack([np.eye(2), -np.eye(2)]), [2.0, 2.0, 0.0, 0.0])


ARM_SETS = {
    "ellipsoid": lambda: sc.Ellipsoid([1.0, 1.0], [[1.0, 0.3], [0.3, 0.5]]),
    "ball": lambda: sc.Ball([1.0, 1.0], 1.0),
    "box": lambda: sc.Box([0.0, 0.0], [2.0, 1.0]),
    "polytope": square,
    "convex": lambda: sc.ConvexArmSet(2, l15_ball),
    "lifted": lambda: sc.ConvexArmSet(2, l1_epigraph),
    "hull": lambda: sc.ConvexHull([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0], [2.0, 2.0], [1.0, 1.0]]),
}


def exercise(arm_set: sc.ArmSet) -> tuple[np.ndarray, ...]:
    """Greedy arms, solver LCB arms and membership: fills every cache the set has."""
    rng = np.random.default_rng(1)
    thetas = rng.standard_normal((5, 2))
    V = np.array([[2.0, 0.5], [0.5, 1.0]])
    greedy = arm_set.greedy_arm(thetas)
    lcb = arm_set.lcb_arm(thetas, V, 0.7, method="solver")
    inside = arm_set.contains(np.vstack([greedy, rng.uniform(-1.0, 3.0, (20, 2))]), tol=0.0)
    return greedy, lcb, inside, arm_set.exploration().vertices()


@pytest.mark.parametrize("name", ARM_SETS)
def test_every_arm_set_pickles_and_gives_the_same_arms(name):
    arm_set = ARM_SETS[name]()
    before = exercise(arm_set)
    cached = [k for k in arm_set._UNPICKLED_CACHES if k in arm_set.__dict__]
    assert cached  # the set did hold unpicklable caches
    for loaded in (pickle.loads(pickle.dumps(arm_set)), cloudpickle.loads(cloudpickle.dumps(arm_set)),
                   copy.deepcopy(arm_set)):
        assert type(loaded) is type(arm_set)
        assert not set(loaded._UNPICKLED_CACHES) & set(loaded.__dict__)
        for got, want in zip(exercise(loaded), before, strict=True):
            np.testing.assert_array_equal(got, want)
    # The original keeps its caches: pickling copies the state, it does not strip it.
    assert all(k in arm_set.__dict__ for k in cached)


def test_loaded_polytope_is_not_rebuilt_but_its_programs_are(monkeypatch):
    poly = square()
    poly.exploration()  # the maximum-volume ellipsoid, a log-det program
    thetas = np.random.default_rng(2).standard_normal((8, 2))
    V = np.array([[3.0, -0.4], [-0.4, 1.5]])
    greedy = poly.greedy_arm(thetas)  # the certified simplex method (no solver program)
    lcb = poly.lcb_arm(thetas, V, 0.9, method="solver")
    certified = poly.lcb_arm(thetas, V, 0.9)
    data = pickle.dumps(poly)

    # Loading must not re-solve the certified data: make every program that computes it fail.
    def fail(*args, **kwargs):
        raise AssertionError("a loaded polytope re-solved its certified data")

    monkeypatch.setattr(polyhedral, "max_volume_inscribed_ellipsoid", fail)
    monkeypatch.setattr(polyhedral.Polytope, "_chebyshev_ball", fail)
    compiled = []

    def counting(builder):
        def build(*args, **kwargs):
            compiled.append(builder.__name__)
            return builder(*args, **kwargs)
        return build

    # The arm sets import the builders from their module when they compile (cvxpy loads then).
    monkeypatch.setattr(programs, "greedy_program", counting(programs.greedy_program))
    monkeypatch.setattr(programs, "lcb_arm_program", counting(programs.lcb_arm_program))

    loaded = pickle.loads(data)
    assert "_box" in loaded.__dict__ and "_mve" in loaded.__dict__
    for got, want in zip(loaded.bounding_box(), poly.bounding_box(), strict=True):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(loaded.exploration().center, poly.exploration().center)
    np.testing.assert_array_equal(loaded.exploration().B, poly.exploration().B)
    assert loaded.chebyshev_radius == poly.chebyshev_radius
    assert loaded.norm_bound() == poly.norm_bound()
    assert loaded.diameter_bound() == poly.diameter_bound()
    assert compiled == []  # nothing compiled by loading or by the certified data

    # The certified arms need no program; the solver's is compiled again at first use, once,
    # and everything agrees bit for bit.
    np.testing.assert_array_equal(loaded.greedy_arm(thetas), greedy)
    np.testing.assert_array_equal(loaded.lcb_arm(thetas, V, 0.9), certified)
    assert compiled == []
    np.testing.assert_array_equal(loaded.lcb_arm(thetas, V, 0.9, method="solver"), lcb)
    np.testing.assert_array_equal(loaded.lcb_arm(thetas, V, 0.9, method="solver"), lcb)
    assert compiled == ["lcb_arm_program"]


def test_convex_arm_set_from_a_lambda_needs_cloudpickle():
    arm_set = sc.ConvexArmSet(2, lambda x: [cp.pnorm(x - 1.0, 1.5) <= 1])
    before = exercise(arm_set)
    with pytest.raises((pickle.PicklingError, AttributeError)):
        pickle.dumps(arm_set)
    loaded = cloudpickle.loads(cloudpickle.dumps(arm_set))
    for got, want in zip(exercise(loaded), before, strict=True):
        np.testing.assert_array_equal(got, want)


# ----------------------------------------------------------------------- policies
def run(policy, bandit, stages: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``stages`` select/observe rounds; arms, decisions and observed rewards per stage."""
    arms, decisions, rewards = [], [], []
    for _ in range(stages):
        x = policy.select()
        _, y = bandit.pull(x.reshape(policy.n_runs, -1))
        policy.observe(x, y)
        arms.append(x)
        decisions.append(np.array(policy.last_decision, copy=True))
        rewards.append(y)
    return np.array(arms), np.array(decisions), np.array(rewards)


def assert_resumes(policy, bandit, before: int, dumps=pickle.dumps, loads=pickle.loads) -> tuple:
    """Checkpoint (policy, bandit) after ``before`` stages; both copies must then agree exactly."""
    run(policy, bandit, before)
    restored, restored_bandit = loads(dumps((policy, bandit)))
    assert restored.t == policy.t == before
    original = run(policy, bandit, STAGES)
    resumed = run(restored, restored_bandit, STAGES)
    for got, want in zip(resumed, original, strict=True):
        np.testing.assert_array_equal(got, want)
    assert restored.t == policy.t == before + STAGES
    return original


def bandit(n_runs: int) -> sc.LinearBandit:
    return sc.LinearBandit(THETA, 1.0, np.random.SeedSequence(7).spawn(n_runs))


def sege_disk() -> sc.SEGE:
    return sc.SEGE(paper_setting(), n_runs=3, seed=0)


def sege_square() -> sc.SEGE:
    # c = 0.03 mixes exploiting and LCB-exploring stages after stage 150 (c = 0.01 only exploits).
    return sc.SEGE(floor_setting(square(), [1.0, 1.0], 1.4, 1.2), c=0.03, n_runs=2, seed=0)


def sege_l15() -> sc.SEGE:
    return sc.SEGE(floor_setting(sc.ConvexArmSet(2, l15_ball), [1.1, 1.0], 1.46, 1.2), c=0.01,
                   n_runs=2, seed=0)


def clucb_disk() -> sc.CLUCB:
    return sc.CLUCB(paper_setting(), n_runs=3)


POLICIES = {"sege_disk": sege_disk, "sege_square": sege_square, "sege_l15": sege_l15,
            "clucb_disk": clucb_disk}


@pytest.mark.parametrize("before", [0, STAGES])
@pytest.mark.parametrize("name", POLICIES)
def test_policy_restored_mid_run_continues_bit_for_bit(name, before):
    policy = POLICIES[name]()
    decisions = assert_resumes(policy, bandit(policy.n_runs), before)[1]
    if name in ("sege_square", "sege_l15"):
        # The continuation solves greedy and LCB programs, rebuilt after loading for the
        # solver-backed sets: both kinds of stage must occur for the comparison to cover them.
        assert np.any(decisions == EXPLOIT) and np.any(decisions == EXPLORE_LCB)


def test_policy_on_a_lambda_set_resumes_through_cloudpickle():
    # What Dask does to ship a policy to a worker.
    arm_set = sc.ConvexArmSet(2, lambda x: [cp.pnorm(x - 1.0, 1.5) <= 1])
    policy = sc.SEGE(floor_setting(arm_set, [1.1, 1.0], 1.46, 1.2), c=0.01, n_runs=2, seed=0)
    assert_resumes(policy, bandit(2), 20, cloudpickle.dumps, cloudpickle.loads)


def test_a_pickled_setting_keeps_its_safe_arm_read_only():
    # Compiled stages carry the safe arm: a writeable copy after a pickle (a sweep's or a
    # warm-up's helper process) would be another array type, and numba would compile the whole
    # stage loop again for it.
    setting = paper_setting()
    loaded = pickle.loads(pickle.dumps(setting))
    assert not setting.safe_arm.flags.writeable and not loaded.safe_arm.flags.writeable
    assert loaded.safe_arm.tobytes() == setting.safe_arm.tobytes()
    assert loaded.safety == setting.safety
    policy = sc.SEGE(loaded, n_runs=2, seed=0)
    assert sc.stages.geometry_of(policy.stage_record(1, 1)) is not None
