"""The public policy protocol (sc.Policy): a user's policy, written against the public API only,
runs in simulate, with the base's checks, seeds and decision counts; the conformance kit's named
checks (sc.testing.policy_checks, check_policy) run alone and catch what they name."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest
from problems import constrained_problem, floor_setting, paper_problem

import sege_cvx as sc

#: The paper's problem with less noise: its setting is what every policy here is told.
PROBLEM = paper_problem(noise_sd=0.1)
SETTING = PROBLEM.setting
DISK = SETTING.arm_set
THETA = np.array(PROBLEM.theta_star)
X0, B0 = np.array([1.2, 1.9]), 2.24


class RandomMix(sc.Policy):
    """Plays its LCB arm where that arm's LCB clears the threshold, else a random point of the
    segment from the baseline arm toward the set's centre (each run's draws from its own rng)."""

    decision_names = ("lcb", "mix")

    def __init__(self, setting, *, lam=0.1, n_runs=1, seed=None, radius=1.0):
        super().__init__(setting, lam=lam, n_runs=n_runs, seed=seed)
        self.radius = radius
        self.confidence = sc.ConfidenceEllipsoid(self.d, self.lam, self.n_runs)

    def select(self):
        s = self.setting
        conf, r = self.confidence, np.full(self.n_runs, self.radius)
        arms = s.arm_set.lcb_arm(conf.theta_hat, conf.V, r)
        safe = conf.lcb(arms, r) >= s.safety.threshold
        steps = np.array([rng.uniform(0.0, 0.1) for rng in self.rngs])
        mix = s.safe_arm + steps[:, None] * (s.arm_set.exploration().center - s.safe_arm)
        self.last_decision = np.where(safe, 0, 1)
        return np.where(safe[:, None], arms, mix)

    def observe(self, arms, rewards, constraint_values):
        self.confidence.update(arms, rewards)


def make(n_runs=4, seed=None, **kwargs):
    return RandomMix(SETTING, n_runs=n_runs, seed=seed, **kwargs)


def bandit(noise_seeds):
    return PROBLEM.bandit(noise_seeds)


def test_a_users_policy_runs_in_simulate_alone_or_batched_bit_for_bit():
    policy_seeds, noise_seeds = sc.run_seeds(5, 3)
    batched = sc.simulate(make(3, policy_seeds), bandit(noise_seeds), 150, traces=True)
    assert batched.stats.total_violations.sum() == 0
    for i in range(3):
        alone = sc.simulate(make(1, policy_seeds[i:i + 1]), bandit(noise_seeds[i:i + 1]), 150,
                            traces=True)
        assert alone.expected_reward[:, 0].tobytes() == batched.expected_reward[:, i].tobytes()
        assert np.array_equal(alone.decisions[:, 0], batched.decisions[:, i])


def test_the_base_stores_the_setting_and_counts_decisions():
    policy = make(4, seed=3)
    assert policy.setting is SETTING
    assert (policy.d, policy.n_runs, policy.setting.S, policy.setting.noise_sd, policy.lam) == (
        2, 4, 1.0, 0.1, 0.1)
    floor = policy.setting.safety
    assert floor.threshold == 0.8 * B0 and floor.baseline_reward == B0 and policy.seed == 3
    assert len(policy.rngs) == 4 and policy.t == 0
    result = sc.simulate(policy, bandit(sc.run_seeds(3, 4)[1]), 60)
    assert policy.t == 60 and policy.decision_counts.shape == (4, 2)
    assert (policy.decision_counts.sum(axis=1) == 60).all()
    assert result.stats.decision_counts[:, :2].sum() == 240


def test_select_then_observe_is_enforced():
    policy = make(1)
    x = policy.select()
    assert x.shape == (2,)
    with pytest.raises(RuntimeError, match="select\\(\\) called twice"):
        policy.select()
    with pytest.raises(ValueError, match="arms returned by the last select"):
        policy.observe(x + 1.0, 0.5)
    policy.observe(x, 0.5)
    assert policy.t == 1
    with pytest.raises(RuntimeError, match="observe\\(\\) called before select"):
        policy.observe(x, 0.5)


class WrongShape(RandomMix):
    def select(self):
        super().select()  # the parent's select is checked once, by this outermost call
        return np.zeros(3)


class BadCode(RandomMix):
    def select(self):
        arms = super().select()
        self.last_decision = np.full(self.n_runs, 5)
        return arms


class StaleCode(sc.Policy):
    """Sets last_decision at the first stage only."""

    decision_names = ("baseline",)

    def select(self):
        if self.t == 0:
            self.last_decision = np.zeros(self.n_runs, dtype=int)
        return np.tile(self.setting.safe_arm, (self.n_runs, 1))

    def observe(self, arms, rewards, constraint_values):
        pass


class NoNames(sc.Policy):
    def select(self):
        return self.setting.safe_arm

    def observe(self, arms, rewards, constraint_values):
        pass


def test_what_a_policy_returns_is_checked_and_named():
    with pytest.raises(ValueError, match=r"WrongShape.select\(\) must return shape \(2, 2\)"):
        WrongShape(SETTING, n_runs=2).select()
    with pytest.raises(ValueError, match=r"BadCode.select\(\) must set last_decision"):
        BadCode(SETTING, n_runs=2).select()
    stale = StaleCode(SETTING, n_runs=2)
    stale.observe(stale.select(), [0.5, 0.5])
    with pytest.raises(ValueError, match=r"StaleCode.select\(\) must set last_decision .* got "
                                         r"\[-1 -1\]"):
        stale.select()
    with pytest.raises(TypeError, match="NoNames.decision_names must be a nonempty tuple"):
        NoNames(SETTING)


def test_the_setting_is_validated_once_before_the_base_takes_it():
    with pytest.raises(ValueError, match="threshold must be < baseline_reward"):
        RandomMix(floor_setting(DISK, X0, B0, B0 + 1.0, noise_sd=0.1))
    with pytest.raises(TypeError, match="^RandomMix is told a sc.SafeSetting, got tuple$"):
        RandomMix((DISK, X0, B0, 0.8 * B0))
    with pytest.raises(TypeError, match=r"^RandomMix runs on the stagewise floor .*, not on an "
                                        r"unknown linear constraint .*\(sc.registered_policies\("
                                        r"'linear_constraint'\) names the policies that do\)$"):
        RandomMix(constrained_problem().setting)
    with pytest.raises(ValueError, match="n_runs must be"):
        make(0)
    with pytest.raises(ValueError, match="seed must"):
        make(2, seed=[np.random.SeedSequence(1)])


class FiveCodes(RandomMix):
    """RandomMix with its mix split by the stage's residue mod 4 into four codes."""

    decision_names = ("lcb", "mix_0", "mix_1", "mix_2", "mix_3")

    def select(self):
        arms = super().select()
        mixed = self.last_decision == 1
        self.last_decision = np.where(mixed, 1 + (self.t + 1) % 4, 0)
        return arms


def test_decisions_are_recorded_by_the_policy_s_own_number_of_codes(tmp_path, monkeypatch):
    import pandas as pd

    from sege_cvx.policies import registry

    policy = FiveCodes(SETTING, n_runs=3, seed=1)
    result = sc.simulate(policy, bandit(sc.run_seeds(0, 3)[1]), 40)
    counts = result.stats.decision_counts
    assert counts.shape == (3, 5) and result.stats.decisions.shape[2] == 5
    np.testing.assert_array_equal(counts, policy.decision_counts)
    assert (counts.sum(axis=1) == 40).all() and (counts[:, 1:] > 0).all()
    # Through a sweep: a runs column per name, the curves' as well.
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    sc.register_policy("FiveCodes", FiveCodes)
    spec = {"seed": 0, "runs": 3, "horizon": 40, "problems": [{"name": "paper"}],
            "algorithms": [{"name": "FiveCodes"}, {"name": "CLUCB"}]}
    results = sc.run_sweep(spec, tmp_path / "out", workers=1, progress=False)
    runs = results.runs.set_index("algorithm")
    five = runs.loc["FiveCodes", list(FiveCodes.decision_names)]
    assert (five.sum(axis=1) == 40).all() and five.notna().all().all()
    assert runs.loc["CLUCB", "mix_3"].isna().all()
    assert pd.isna(runs.loc["FiveCodes", "optimistic"]).all()


def test_simulate_names_the_protocol_for_other_objects():
    class Duck:
        n_runs = 1

        def select(self):
            return X0

    with pytest.raises(TypeError, match="sege_cvx.Policy"):
        sc.simulate(Duck(), bandit(sc.run_seeds(0, 1)[1]), 5)


def test_clucb_counts_its_decisions_by_their_codes():
    policy = sc.CLUCB(SETTING, n_runs=3)
    sc.simulate(policy, bandit(sc.run_seeds(0, 3)[1]), 100)
    assert policy.decision_counts.shape == (3, 3) and (policy.decision_counts[:, 1] == 0).all()
    assert (policy.decision_counts.sum(axis=1) == 100).all()


# ------------------------------------------------------------------------- the new protocol
def test_an_observe_that_cannot_take_constraint_values_is_refused_when_the_class_is_defined():
    with pytest.raises(TypeError, match=r"^TwoArguments.observe must take \(self, arms, rewards, "
                                        r"constraint_values\): one signature for both safety "
                                        "models"):
        class TwoArguments(RandomMix):
            def observe(self, arms, rewards):
                pass

    # What can take three arguments is accepted: a default, or *args.
    class Defaulted(RandomMix):
        def observe(self, arms, rewards, constraint_values=None):
            super().observe(arms, rewards, constraint_values)

    class Starred(RandomMix):
        def observe(self, *args):
            super().observe(*args)

    for cls in (Defaulted, Starred):
        policy = cls(SETTING)
        policy.observe(policy.select(), 0.5)  # the stagewise caller's two arguments
        assert policy.t == 1 and policy.confidence.counts[0] == 1


class NeedsRadius(RandomMix):
    """A radius with no constructor default: its defaults on a problem give it, from the
    setting alone (twice the noise level)."""

    def __init__(self, setting, *, radius, lam=0.1, n_runs=1, seed=None):
        super().__init__(setting, lam=lam, n_runs=n_runs, seed=seed, radius=radius)

    @classmethod
    def defaults(cls, problem):
        return {"radius": 2.0 * problem.setting.noise_sd}


def test_policy_defaults_are_what_a_problem_and_check_policy_give_the_policy():
    assert sc.Policy.defaults(PROBLEM) == {} and RandomMix.defaults(PROBLEM) == {}
    assert PROBLEM.policy(NeedsRadius, 2, seed=0).radius == 0.2
    assert paper_problem().policy(NeedsRadius, 1).radius == 2.0  # read from that setting
    assert PROBLEM.policy(NeedsRadius, 1, radius=0.5).radius == 0.5  # the caller's value wins
    with pytest.raises(TypeError, match="radius"):
        NeedsRadius(SETTING)  # without the problem's defaults it has none
    sc.testing.check_policy(NeedsRadius, PROBLEM, stages=5)


def test_the_base_declares_fallbacks_and_radii_for_every_policy():
    policy = make(3)
    assert policy.solver_fallbacks.dtype == np.int64 and policy.solver_fallbacks.tolist() == [0] * 3
    assert policy.fallback_reasons == Counter()
    radii = policy.radii()
    assert radii.shape == (3,) and np.isnan(radii).all()  # no confidence radius of its own
    for cls in (sc.SEGE, sc.CLUCB, sc.StagewiseROFUL):
        built_in = PROBLEM.policy(cls, 2)
        assert built_in.solver_fallbacks.shape == (2,) and built_in.fallback_reasons == Counter()
        assert np.isfinite(built_in.radii()).all() and built_in.radii().shape == (2,)


# --------------------------------------------------------------------------- conformance kit
@pytest.mark.parametrize("cls", [sc.SEGE, sc.CLUCB, sc.StagewiseROFUL, RandomMix])
def test_the_built_in_policies_and_a_users_pass_check_policy(cls):
    sc.testing.check_policy(cls, stages=30)


CHECKS = ["protocol", "stores_its_setting", "refuses_calls_out_of_order", "arms_in_the_set",
          "reproducible", "runs_alone_as_in_a_batch", "runs_use_their_own_seeds",
          "pickles_mid_run", "compiled_stages_as_stepped", "keeps_safety"]


@pytest.mark.parametrize("check", sc.testing.policy_checks(RandomMix, stages=10), ids=repr)
def test_each_check_runs_alone_as_a_test_of_its_own(check):
    check()


@pytest.mark.parametrize("check", sc.testing.policy_checks(sc.SEGE, stages=10), ids=repr)
def test_each_check_of_a_compiled_policy_runs_alone(check):
    check()


def test_the_checks_are_named_and_a_skip_must_name_one():
    assert [check.name for check in sc.testing.policy_checks(RandomMix)] == CHECKS
    with pytest.raises(ValueError, match=r"^skip names no check: \['keep_safety'\] \(the checks: "
                                         r"protocol, .*, keeps_safety\)$"):
        sc.testing.check_policy(RandomMix, stages=5, skip=("keep_safety",))


def failure(cls, problem=None, **kwargs) -> str:
    """check_policy's message on ``cls``, checked to be one sentence starting as the kit's."""
    with pytest.raises(AssertionError) as caught:
        sc.testing.check_policy(cls, problem, **kwargs)
    message = str(caught.value)
    assert message.startswith("check_policy: ") and "\n" not in message, message
    return message


def run_check(cls, name, problem=None, **kwargs) -> str:
    """The named check alone on ``cls``: its failure's message (one sentence, as above)."""
    check = next(c for c in sc.testing.policy_checks(cls, problem, **kwargs) if c.name == name)
    with pytest.raises(AssertionError) as caught:
        check()
    message = str(caught.value)
    assert message.startswith("check_policy: ") and "\n" not in message, message
    return message


class Outside(RandomMix):
    """Plays its arm moved by (1, 1), out of the set, at stage 5."""

    def select(self):
        arms = super().select()
        return arms + (self.t == 4) * 1.0


class SharedRandomness(RandomMix):
    """Draws from one generator for all runs: a run's arms depend on its batch."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.shared = np.random.default_rng(0)

    def select(self):
        arms = super().select()
        safe_arm = self.setting.safe_arm
        return safe_arm + self.shared.uniform(0.0, 0.1, (self.n_runs, 1)) * (arms - safe_arm)


class NotAPolicy:
    decision_names = ("a",)


@pytest.mark.parametrize("cls, match", [
    (Outside, r"Outside played \[.*\] at stage 5, run 0: not in the arm set exactly"),
    (SharedRandomness, r"SharedRandomness's run 0 alone played .* at stage 2, in a batch of 3"),
    (NotAPolicy, "NotAPolicy is not a subclass of sege_cvx.Policy"),
])
def test_check_policy_names_what_fails(cls, match):
    assert re.search(match, failure(cls, stages=20))


def centre_ward(policy, step):
    """Every run's arm: ``step`` of the way from the safe arm toward the set's centre."""
    s = policy.setting
    point = s.safe_arm + step * (s.arm_set.exploration().center - s.safe_arm)
    policy.last_decision = np.ones(policy.n_runs, dtype=int)
    return np.tile(point, (policy.n_runs, 1))


class FromRunZero(RandomMix):
    """Draws one step from run 0's generator and plays it in every run."""

    def select(self):
        return centre_ward(self, self.rngs[0].uniform(0.0, 0.1))


class FromAllSeeds(RandomMix):
    """Draws one step from a generator seeded by all runs' seeds together, and plays it in every
    run."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.joint = np.random.default_rng([int(rng.integers(2**32)) for rng in self.rngs])

    def select(self):
        return centre_ward(self, self.joint.uniform(0.0, 0.1))


@pytest.mark.parametrize("cls", [FromRunZero, FromAllSeeds])
def test_runs_that_ignore_their_own_seeds_are_caught(cls):
    message = failure(cls, stages=10)
    assert re.match(rf"check_policy: {cls.__name__}'s run \d alone played .* at stage 1, in a "
                    "batch of 3", message), message
    # Each check that looks at the runs' seeds catches it, run alone.
    assert "a run's draws must come from its own seed" in run_check(
        cls, "runs_alone_as_in_a_batch", stages=10)
    assert run_check(cls, "runs_use_their_own_seeds", stages=10).startswith(
        f"check_policy: {cls.__name__}'s runs all played the same arms at every stage")


class BelowFloor(RandomMix):
    """Plays the set's centre (reward 1.4, below b = 1.792) from stage 3 on: in the set, not
    safe."""

    def select(self):
        arms = super().select()
        return np.tile(self.setting.arm_set.exploration().center, (self.n_runs, 1)) \
            if self.t >= 2 else arms


class Conservative(BelowFloor):
    """Does not declare stagewise safety (as CLUCB): not held to it."""

    stagewise_safe = False


def test_a_policy_that_breaks_the_floor_is_caught():
    message = failure(BelowFloor, stages=10)
    assert message == ("check_policy: BelowFloor's run 0 broke the safety criterion at stage 3 "
                       "(its expected reward below the threshold; 8 such stages in 10), though it "
                       "declares stagewise_safe")
    assert run_check(BelowFloor, "keeps_safety", stages=10) == message
    sc.testing.check_policy(BelowFloor, stages=10, skip=("keeps_safety",))  # the only fault
    sc.testing.check_policy(Conservative, stages=10)


class BreaksConstraint(sc.Policy):
    """Under a constraint, plays the end of the star's first ray, (1, 0): <x, gamma*> = 0.7 is
    above the limit 0.3."""

    decision_names = ("ray",)
    safety_models = ("linear_constraint",)

    def select(self):
        self.last_decision = np.zeros(self.n_runs, dtype=int)
        return np.tile(self.setting.arm_set.endpoints[0], (self.n_runs, 1))

    def observe(self, arms, rewards, constraint_values):
        pass


def test_a_policy_that_breaks_a_linear_constraint_is_caught():
    assert failure(BreaksConstraint, stages=5) == (
        "check_policy: BreaksConstraint's run 0 broke the safety criterion at stage 1 (its "
        "constraint value above the limit; 5 such stages in 5), though it declares "
        "stagewise_safe")
    sc.testing.check_policy(BreaksConstraint, stages=5, skip=("keeps_safety",))


class LateOutside(RandomMix):
    """Plays its arm moved by (1, 1), out of the set, from stage 41 on."""

    def select(self):
        arms = super().select()
        return arms + (self.t >= 40) * 1.0


def test_a_fault_after_the_stages_played_is_seen_only_with_more_stages():
    sc.testing.check_policy(LateOutside, stages=40)  # stage 41 is never played
    message = failure(LateOutside, stages=60)
    assert message.startswith("check_policy: LateOutside played [")
    assert message.endswith("at stage 41, run 0: not in the arm set exactly (contains(x, tol=0))")


# --------------------------------------------------------------- found by an adversarial review
class RewritesCodes(RandomMix):
    """Overwrites last_decision in observe with a code out of range."""

    def observe(self, arms, rewards, constraint_values):
        super().observe(arms, rewards, constraint_values)
        self.last_decision = np.full(self.n_runs, 3)


def test_simulate_records_the_codes_select_set():
    policy = RewritesCodes(SETTING, n_runs=2)
    result = sc.simulate(policy, bandit(sc.run_seeds(0, 2)[1]), 50)
    np.testing.assert_array_equal(result.stats.decision_counts[:, :2], policy.decision_counts)


class FailsOnce(RandomMix):
    failed = False

    def observe(self, arms, rewards, constraint_values):
        if not self.failed:
            self.failed = True
            raise RuntimeError("the data store is down")
        super().observe(arms, rewards, constraint_values)


def test_an_observe_that_raises_leaves_the_arms_pending():
    policy = FailsOnce(SETTING)
    assert not policy.awaiting_observe
    x = policy.select()
    with pytest.raises(RuntimeError, match="data store"):
        policy.observe(x, 0.5)
    assert policy.t == 0 and policy.awaiting_observe
    policy.observe(x, 0.5)  # the same stage, again
    assert policy.t == 1 and policy.confidence.counts[0] == 1 and not policy.awaiting_observe


class Mixin:
    decision_names = ("baseline",)

    def select(self):
        self.last_decision = np.zeros(self.n_runs, dtype=int)
        return np.tile(self.setting.safe_arm, (self.n_runs, 1)) + np.nan

    def observe(self, arms, rewards, constraint_values):
        pass


class FromMixin(Mixin, sc.Policy):
    pass


class NoSuper(RandomMix):
    def __init__(self):
        pass


def test_methods_from_a_mixin_are_checked_and_a_missing_super_init_is_named():
    policy = FromMixin(SETTING)
    with pytest.raises(ValueError, match="FromMixin.select\\(\\) returned a non-finite arm"):
        policy.select()
    with pytest.raises(TypeError, match="NoSuper.__init__ must call super\\(\\).__init__"):
        NoSuper().select()


class BoolArms(RandomMix):
    def select(self):
        return super().select() > 1.0


def test_arms_that_are_not_real_numbers_are_refused():
    with pytest.raises(TypeError, match="BoolArms.select\\(\\) must return real numbers"):
        BoolArms(SETTING).select()


class WrongBaseline(RandomMix):
    """Tells the base another setting than its own: the baseline reward raised by 0.5."""

    def __init__(self, setting, **kwargs):
        floor = setting.safety
        other = sc.SafeSetting(setting.arm_set, setting.safe_arm, S=setting.S,
                               noise_sd=setting.noise_sd,
                               safety=sc.RewardFloor(floor.baseline_reward + 0.5, floor.threshold))
        super().__init__(other, **kwargs)


def test_check_policy_compares_the_setting_and_its_own_arguments():
    with pytest.raises(AssertionError, match=r"^check_policy: WrongBaseline.setting is "
                                             r"SafeSetting\(.*baseline_reward=2.74.*\), expected "
                                             r"SafeSetting\(.*baseline_reward=2.24.*\): call "
                                             r"super\(\).__init__\(setting"):
        sc.testing.check_policy(WrongBaseline, stages=5)
    with pytest.raises(AssertionError, match="pass the class, not an instance of RandomMix"):
        sc.testing.check_policy(make(1), stages=5)
    with pytest.raises(ValueError, match="stages must be"):
        sc.testing.check_policy(RandomMix, stages=0)
