"""A run's numbers depend only on its seeds: alone, in any batch, at any position, bit for bit.

Every comparison is ``assert_array_equal``: no tolerance.  The property holds by construction
(each run computed by the same per-run arithmetic whatever its companions), so a difference of
one ulp is a bug, on any machine.
"""

import cvxpy as cp
import numpy as np
import pytest
from _same_runs import assert_same_confidence, assert_same_simulations, simulate_on_threads
from problems import floor_setting, paper_problem

import sege_cvx as sc
from sege_cvx.problems.examples import ellipsoid_problem

THETA = np.array([0.6, 0.8])
THETA_3D = np.array(ellipsoid_problem().theta_star)
NOISE = 0.3
HORIZON = 300
# Runs 1 and 5 are followed alone, inside two batches of 3 and inside a permuted batch of 8.
BATCHES = [[1], [6, 1, 2], [5], [5, 0, 3], [4, 7, 1, 0, 6, 3, 5, 2]]


def l15_ball(x):
    """A ConvexArmSet's constraints (module level, so the set also pickles)."""
    return [cp.pnorm(x - 1.0, 1.5) <= 1]


def _policy(case, n_runs, seeds):
    if case == "SEGE closed form (disk)":
        return paper_problem(noise_sd=NOISE, safe_arm=(1.0, 1.0)).policy(
            "SEGE", n_runs, seeds, c=0.05, lcb_method="closed_form")
    if case == "SEGE solver (disk)":
        return paper_problem(noise_sd=NOISE, safe_arm=(1.0, 1.0)).policy(
            "SEGE", n_runs, seeds, c=0.05, lcb_method="solver")
    if case == "SEGE closed form (3-D ellipsoid)":
        setting = ellipsoid_problem().setting
        floor = setting.safety
        return sc.SEGE(floor_setting(setting.arm_set, setting.safe_arm, floor.baseline_reward,
                                     floor.threshold, noise_sd=NOISE),
                       c=0.002, n_runs=n_runs, seed=seeds)
    if case in ("SEGE certified active set (polytope)", "SEGE solver (polytope)"):
        square = sc.Polytope(np.vstack([np.eye(2), -np.eye(2)]), [2.0, 2.0, 0.0, 0.0])
        return sc.SEGE(floor_setting(square, [1.0, 1.0], 1.4, 1.2, noise_sd=NOISE), c=0.01,
                       n_runs=n_runs, seed=seeds,
                       lcb_method="solver" if "solver" in case else "auto")
    if case == "SEGE certified active set (box)":
        return sc.SEGE(floor_setting(sc.Box([0.0, 0.0], [2.0, 2.0]), [1.0, 1.0], 1.4, 1.2,
                                     noise_sd=NOISE), c=0.01, n_runs=n_runs, seed=seeds)
    if case == "SEGE solver (ConvexArmSet)":
        return sc.SEGE(floor_setting(sc.ConvexArmSet(2, l15_ball), [1.0, 1.0], 1.4, 1.2,
                                     noise_sd=NOISE), c=0.01, n_runs=n_runs, seed=seeds)
    if case == "SEGE self-normalized radius (disk)":
        return paper_problem(noise_sd=NOISE, safe_arm=(1.0, 1.0)).policy(
            "SEGE", n_runs, seeds, c=0.05, radius="self_normalized")
    if case == "CLUCB self-normalized radius":
        return paper_problem(noise_sd=NOISE).policy("CLUCB", n_runs, radius="self_normalized")
    if case == "ROFUL (disk)":
        return paper_problem(noise_sd=NOISE).policy("ROFUL", n_runs)
    if case == "ROFUL (polytope)":
        square = sc.Polytope(np.vstack([np.eye(2), -np.eye(2)]), [2.0, 2.0, 0.0, 0.0])
        return sc.StagewiseROFUL(floor_setting(square, [1.0, 0.5], 1.0, 0.6, noise_sd=NOISE),
                                 n_directions=24, n_runs=n_runs)
    if case == "ROFUL (ConvexArmSet)":
        return sc.StagewiseROFUL(floor_setting(sc.ConvexArmSet(2, l15_ball), [1.0, 0.5], 1.0, 0.6,
                                               noise_sd=NOISE), n_directions=24, n_runs=n_runs)
    if case == "ROFUL lifted (ConvexHull)":
        hull = sc.ConvexHull([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0], [2.0, 2.0], [1.0, 1.5]])
        return sc.StagewiseROFUL(floor_setting(hull, [1.0, 0.5], 1.0, 0.6, noise_sd=NOISE),
                                 n_directions=24, n_runs=n_runs)
    if case in ("SEGE lifted (ConvexHull)", "SEGE lifted solver (ConvexHull)"):
        hull = sc.ConvexHull([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0], [2.0, 2.0], [1.0, 1.5]])
        return sc.SEGE(floor_setting(hull, [1.0, 1.0], 1.4, 0.8, noise_sd=NOISE), c=0.01,
                       n_runs=n_runs, seed=seeds,
                       lcb_method="solver" if "solver" in case else "auto")
    return paper_problem(noise_sd=NOISE).policy("CLUCB", n_runs)


def _trajectories(case, runs, policy_seeds, noise_seeds):
    """Arms, expected and observed rewards and decisions of ``runs``, simulated side by side
    through the step API."""
    policy = _policy(case, len(runs), [policy_seeds[r] for r in runs])
    theta = THETA_3D if policy.setting.dim == 3 else THETA
    bandit = sc.LinearBandit(theta, NOISE, [noise_seeds[r] for r in runs],
                             threshold=policy.setting.safety.threshold)
    out = {"arms": [], "mean": [], "observed": [], "decision": []}
    for _ in range(HORIZON):
        x = policy.select()
        mean, y = bandit.pull(x)
        policy.observe(x, y if len(runs) > 1 else y[0])
        for key, value in zip(out, (x.reshape(len(runs), -1), mean, y, policy.last_decision),
                              strict=True):
            out[key].append(np.array(value))
    return {key: np.stack(value, axis=1) for key, value in out.items()}  # (runs, HORIZON, ...)


CASES = ["SEGE closed form (disk)", "SEGE closed form (3-D ellipsoid)", "SEGE solver (disk)",
         "SEGE certified active set (polytope)", "SEGE solver (polytope)",
         "SEGE certified active set (box)",
         "SEGE solver (ConvexArmSet)", "SEGE lifted (ConvexHull)", "SEGE lifted solver (ConvexHull)",
         "SEGE self-normalized radius (disk)", "CLUCB", "CLUCB self-normalized radius",
         "ROFUL (disk)", "ROFUL (polytope)", "ROFUL (ConvexArmSet)", "ROFUL lifted (ConvexHull)"]
#: Decision codes each case must show in the last batch (so every branch is compared).
CODES = {"CLUCB": {0, 2}, "CLUCB self-normalized radius": {0, 2}, "ROFUL (disk)": {0, 1},
         "ROFUL (polytope)": {0, 1}, "ROFUL (ConvexArmSet)": {0, 1},
         "ROFUL lifted (ConvexHull)": {0, 1}}


@pytest.mark.parametrize("case", CASES)
def test_a_run_is_bitwise_the_same_alone_and_in_any_batch(case):
    policy_seeds, noise_seeds = sc.run_seeds(2024, 8)
    batches = [(runs, _trajectories(case, runs, policy_seeds, noise_seeds)) for runs in BATCHES]
    for run in (1, 5):
        views = [{k: v[runs.index(run)] for k, v in traj.items()}
                 for runs, traj in batches if run in runs]
        assert len(views) == 3
        for other in views[1:]:
            for key in views[0]:
                np.testing.assert_array_equal(views[0][key], other[key], err_msg=f"{case}: {key}")
    # The runs do switch decisions, so the comparison covers every branch of the rule.
    decisions = batches[-1][1]["decision"]
    assert set(np.unique(decisions)) == CODES.get(case, {0, 1, 2})


@pytest.mark.parametrize("case", ["SEGE closed form (disk)", "CLUCB"])
def test_the_engine_equals_the_step_api_bitwise(case):
    policy_seeds, noise_seeds = sc.run_seeds(5, 3)
    step = _trajectories(case, [0, 1, 2], policy_seeds, noise_seeds)
    policy = _policy(case, 3, policy_seeds)
    bandit = sc.LinearBandit(THETA, NOISE, noise_seeds, threshold=policy.setting.safety.threshold)
    result = sc.simulate(policy, bandit, HORIZON, traces=True)
    np.testing.assert_array_equal(result.expected_reward.T, step["mean"])
    np.testing.assert_array_equal(result.decisions.T, step["decision"])


class StepByStepCLUCB(sc.CLUCB):
    """CLUCB without its fused loop: the engine then steps it through select/observe."""

    compiled_stages = False


class StepByStepSEGE(sc.SEGE):
    """SEGE without its fused loop."""

    compiled_stages = False


class StepByStepROFUL(sc.StagewiseROFUL):
    """ROFUL without its fused loop."""

    compiled_stages = False


@pytest.mark.parametrize("fused_cls, stepped_cls, radius", [
    (sc.CLUCB, StepByStepCLUCB, "theorem1"), (sc.SEGE, StepByStepSEGE, "theorem1"),
    (sc.CLUCB, StepByStepCLUCB, "self_normalized"), (sc.SEGE, StepByStepSEGE, "self_normalized"),
    (sc.StagewiseROFUL, StepByStepROFUL, "self_normalized"),
    (sc.StagewiseROFUL, StepByStepROFUL, "theorem1")])
@pytest.mark.parametrize("threads", [1, 2])
def test_compiled_stages_equal_select_observe_bitwise(fused_cls, stepped_cls, radius, threads):
    """The engine's compiled multi-stage loop (runs spread over ``threads`` threads) gives
    bitwise the step API's numbers: arms, statistics and the policy's whole state."""
    problem = paper_problem(noise_sd=NOISE)
    policy_seeds, noise_seeds = sc.run_seeds(9, 5)
    kwargs = dict(n_runs=5, radius=radius)
    snapshots = []
    if fused_cls is sc.SEGE:
        kwargs.update(c=0.05, seed=policy_seeds)
        snapshots = [1, 7, 512, 513, 1300]  # the fused loop stops before each
    results = []
    for cls in (fused_cls, stepped_cls):
        policy = cls(problem.setting, **kwargs)
        result = simulate_on_threads(policy, problem.bandit(noise_seeds), 1300,
                                     threads, traces=True, snapshot_stages=snapshots)
        results.append((policy, result))
    (fused, a), (stepped, b) = results
    assert_same_simulations(a, b)
    names = ["decision_counts", "last_decision", "t"]
    names += {sc.CLUCB: ["optimistic_sum"], sc.StagewiseROFUL: ["solver_fallbacks"],
              sc.SEGE: ["last_safe_arm", "last_exploration_arm", "solver_fallbacks"]}[fused_cls]
    for name in names:
        np.testing.assert_array_equal(getattr(fused, name), getattr(stepped, name), err_msg=name)
    assert_same_confidence(fused, stepped)
    if fused_cls is sc.SEGE:
        assert fused.fallback_reasons == stepped.fallback_reasons
        assert sorted(a.snapshots) == snapshots
        for t in snapshots:
            for mine, theirs in zip(a.snapshots[t], b.snapshots[t], strict=True):
                np.testing.assert_array_equal(mine, theirs, err_msg=f"snapshot {t}")
    expected = {sc.CLUCB: {0, 2}, sc.StagewiseROFUL: {0, 1}, sc.SEGE: {0, 1, 2}}[fused_cls]
    assert set(np.unique(a.decisions)) == expected
