"""What a policy is told and what the bandit holds must agree: ``simulate`` refuses a policy whose
setting disagrees with its bandit, a bandit scores one safety criterion, and a setting or a
problem built from the truth is refused in one line naming what is wrong."""

import numpy as np
import pytest
from problems import constrained_problem, floor_setting, paper_problem, paper_setting

import sege_cvx as sc

DISK = sc.Ball([1.0, 1.0], 1.0)
THETA = (0.6, 0.8)


def _seeds(n_runs: int = 2) -> list:
    return sc.run_seeds(0, n_runs)[1]


def _one_line(exc_info) -> str:
    message = str(exc_info.value)
    assert "\n" not in message, message
    return message


# --- simulate: the policy's setting against the bandit ------------------------------------------

def test_simulate_refuses_a_bandit_scoring_another_threshold():
    policy = sc.SEGE(paper_setting(), n_runs=2, seed=0)
    told = policy.setting.safety.threshold
    with pytest.raises(ValueError) as exc:
        sc.simulate(policy, sc.LinearBandit(THETA, 1.0, _seeds(), threshold=1.5), 10)
    assert _one_line(exc) == (f"SEGE was told the threshold {told!r}, the bandit scores "
                              "violations against 1.5")
    assert policy.t == 0


def test_simulate_refuses_a_stagewise_policy_on_a_bandit_without_threshold():
    policy = sc.CLUCB(paper_setting(), n_runs=2)
    with pytest.raises(ValueError, match=r"CLUCB keeps a reward floor but the bandit scores none: "
                                         r"make it with LinearBandit\(\.\.\., threshold="):
        sc.simulate(policy, sc.LinearBandit(THETA, 1.0, _seeds()), 10)


def test_simulate_refuses_a_constraint_the_bandit_does_not_have():
    problem = constrained_problem()
    policy = problem.policy("GNOP", 2)
    without = sc.LinearBandit(problem.theta_star, problem.setting.noise_sd, _seeds())
    with pytest.raises(ValueError) as exc:
        sc.simulate(policy, without, 10)
    assert _one_line(exc).startswith("GNOP was told a linear constraint but the bandit has none")
    # Nor another constraint than the one it was told (another limit).
    other = sc.LinearConstraint(0.2, gamma_star=(0.7, 0.5), noise_sd=0.1)
    with pytest.raises(ValueError, match=r"GNOP was told another constraint than the bandit's: "
                                         r"limit 0\.3, .* against 0\.2, "):
        sc.simulate(policy, sc.LinearBandit(problem.theta_star, problem.setting.noise_sd,
                                            _seeds(), constraint=other), 10)
    # And a stagewise policy on a bandit with a constraint.
    with pytest.raises(ValueError, match="the bandit has a linear constraint but SEGE was told a "
                                         "reward floor"):
        sc.simulate(sc.SEGE(paper_setting(), n_runs=2, seed=0),
                    sc.LinearBandit(THETA, 1.0, _seeds(), constraint=other), 10)


def test_simulate_refuses_a_theta_beyond_s_naming_both_numbers_unless_misspecified():
    setting = paper_setting()
    bandit = sc.LinearBandit((3.0, 4.0), 1.0, _seeds(), threshold=setting.safety.threshold)
    with pytest.raises(ValueError) as exc:
        sc.simulate(sc.SEGE(setting, n_runs=2, seed=0), bandit, 10)
    assert _one_line(exc).startswith(r"||theta*|| = 5 exceeds S = 1 (the paper's Assumption 1): "
                                     "the bandit breaks what SEGE was told (pass misspecified=True")
    policy = sc.SEGE(setting, n_runs=2, seed=0)
    again = sc.LinearBandit((3.0, 4.0), 1.0, _seeds(), threshold=setting.safety.threshold)
    result = sc.simulate(policy, again, 10, misspecified=True)
    assert policy.t == 10 and result.horizon == 10 and result.n_runs == 2
    assert result.threshold == setting.safety.threshold


# --- LinearBandit: one safety criterion ------------------------------------------------------------

def test_a_bandit_refuses_a_threshold_and_a_constraint_together():
    constraint = sc.LinearConstraint(0.3, gamma_star=(0.7, 0.5), noise_sd=0.1)
    with pytest.raises(TypeError) as exc:
        sc.LinearBandit(THETA, 1.0, _seeds(), threshold=1.5, constraint=constraint)
    assert _one_line(exc) == ("a bandit scores one safety criterion: a reward floor (threshold) "
                              "or a linear constraint, not both")


# --- BanditProblem.from_truth: the threshold fraction ---------------------------------------------

@pytest.mark.parametrize("overrides, match", [
    (dict(threshold_fraction=1.2), r"threshold_fraction 1\.2 gives the threshold b = 2\.688\d*, "
                                   r"not below the baseline reward b0 = 2\.24"),
    # With a known lower bound b0 < 0, a negative fraction puts b above b0.
    (dict(threshold_fraction=-0.5, b0=-1.0), r"threshold_fraction -0\.5 gives the threshold "
                                             r"b = 0\.5, not below the baseline reward b0 = -1\.0"),
])
def test_from_truth_refuses_a_fraction_giving_no_threshold_below_b0(overrides, match):
    with pytest.raises(ValueError, match=match) as exc:
        paper_problem(**overrides)
    _one_line(exc)


# --- SafeSetting's validation ------------------------------------------------------------------------

def test_a_setting_needs_an_arm_set_and_a_safety_model():
    floor = sc.RewardFloor(2.24, 1.792)
    with pytest.raises(TypeError) as exc:
        sc.SafeSetting(np.eye(2), [1.2, 1.9], S=1.0, noise_sd=1.0, safety=floor)
    assert _one_line(exc) == "arm_set must be an ArmSet, got ndarray"
    with pytest.raises(TypeError) as exc:
        sc.SafeSetting(DISK, [1.2, 1.9], S=1.0, noise_sd=1.0, safety=1.792)
    assert _one_line(exc) == "safety must be a sc.RewardFloor or a sc.KnownConstraint, got float"


def test_a_setting_refuses_a_safe_arm_outside_the_set():
    with pytest.raises(ValueError) as exc:
        floor_setting(DISK, [2.5, 2.5], 2.24, 1.792)
    assert _one_line(exc) == "the safe arm [2.5 2.5] lies outside the arm set"
    # Under a constraint (safe there: <x, gamma*> = 3 < 5) it must lie in the set exactly.
    known = sc.LinearConstraint(5.0, gamma_star=(0.7, 0.5), noise_sd=0.1).known([2.5, 2.5], THETA)
    with pytest.raises(ValueError, match=r"the safe arm \[2\.5 2\.5\] must lie in .* exactly") as exc:
        sc.SafeSetting(DISK, [2.5, 2.5], S=1.0, noise_sd=1.0, safety=known)
    _one_line(exc)


def test_a_setting_refuses_a_threshold_not_below_b0():
    with pytest.raises(ValueError) as exc:
        floor_setting(DISK, [1.2, 1.9], 2.24, 2.24)
    assert _one_line(exc) == "threshold must be < baseline_reward 2.24, got 2.24"
    # A baseline arm 5e-10 outside the disk is moved into it (by about 1e-9), and its certified
    # b0 drops by S times the move: below a threshold 1e-10 under the given b0.
    with pytest.raises(ValueError, match=r"threshold must be < baseline_reward 1\.99999999\d* \(the "
                                         r"safe arm was moved \S+ into the set, so its certified "
                                         r"reward is b0 - S \* \S+ = 1\.99999999\d*\), got "
                                         r"1\.9999999999") as exc:
        floor_setting(DISK, [1.0, 2.0 + 5e-10], 2.0, 2.0 - 1e-10)
    _one_line(exc)


def test_a_setting_refuses_a_margin_lost_to_rounding():
    b = float(np.nextafter(2.24, 0.0))  # one ulp below b0
    with pytest.raises(ValueError, match=r"threshold .* is .* below baseline_reward 2\.24, a margin "
                                         r"lost to rounding: b0 - b must be at least") as exc:
        floor_setting(DISK, [1.2, 1.9], 2.24, b)
    _one_line(exc)
