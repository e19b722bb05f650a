"""The public policy protocol (sc.Policy): a user's policy, written against the public API only,
runs in simulate, with the base's checks, seeds and decision counts."""

from __future__ import annotations

import numpy as np
import pytest

import sege_cvx as sc

DISK = sc.Ball(center=[1.0, 1.0], radius=1.0)
THETA = np.array([0.6, 0.8])
X0, B0 = np.array([1.2, 1.9]), 2.24


class RandomMix(sc.Policy):
    """Plays its LCB arm where that arm's LCB clears the threshold, else a random point of the
    segment from the baseline arm toward the set's centre (each run's draws from its own rng)."""

    decision_names = ("lcb", "mix")

    def __init__(self, arm_set, baseline_arm, baseline_reward, threshold, *, S, noise_sd,
                 lam=0.1, n_runs=1, seed=None, radius=1.0):
        super().__init__(arm_set, baseline_arm, baseline_reward, threshold, S=S,
                         noise_sd=noise_sd, lam=lam, n_runs=n_runs, seed=seed)
        self.radius = radius
        self.confidence = sc.ConfidenceEllipsoid(self.d, self.lam, self.n_runs)

    def select(self):
        conf, r = self.confidence, np.full(self.n_runs, self.radius)
        arms = self.arm_set.lcb_arm(conf.theta_hat, conf.V, r)
        safe = conf.lcb(arms, r) >= self.threshold
        steps = np.array([rng.uniform(0.0, 0.1) for rng in self.rngs])
        mix = self.baseline_arm + steps[:, None] * (self.arm_set.exploration().center
                                                    - self.baseline_arm)
        self.last_decision = np.where(safe, 0, 1)
        return np.where(safe[:, None], arms, mix)

    def observe(self, arms, rewards):
        self.confidence.update(arms, rewards)


def make(n_runs=4, seed=None, **kwargs):
    return RandomMix(DISK, X0, B0, 0.8 * B0, S=1.0, noise_sd=0.1, n_runs=n_runs, seed=seed,
                     **kwargs)


def test_a_users_policy_runs_in_simulate_alone_or_batched_bit_for_bit():
    policy_seeds, noise_seeds = sc.run_seeds(5, 3)
    batched = sc.simulate(make(3, policy_seeds), sc.LinearBandit(THETA, 0.1, noise_seeds), 150,
                          traces=True)
    assert batched.stats.total_violations.sum() == 0
    for i in range(3):
        alone = sc.simulate(make(1, policy_seeds[i:i + 1]),
                            sc.LinearBandit(THETA, 0.1, noise_seeds[i:i + 1]), 150, traces=True)
        assert alone.expected_reward[:, 0].tobytes() == batched.expected_reward[:, i].tobytes()
        assert np.array_equal(alone.decisions[:, 0], batched.decisions[:, i])


def test_the_base_stores_the_problem_and_counts_decisions():
    policy = make(4, seed=3)
    assert (policy.d, policy.n_runs, policy.S, policy.noise_sd, policy.lam) == (2, 4, 1.0, 0.1, 0.1)
    assert policy.threshold == 0.8 * B0 and policy.baseline_reward == B0 and policy.seed == 3
    assert len(policy.rngs) == 4 and policy.t == 0
    result = sc.simulate(policy, sc.LinearBandit(THETA, 0.1, sc.run_seeds(3, 4)[1]), 60)
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
        return np.tile(self.baseline_arm, (self.n_runs, 1))

    def observe(self, arms, rewards):
        pass


class NoNames(sc.Policy):
    def select(self):
        return self.baseline_arm

    def observe(self, arms, rewards):
        pass


def test_what_a_policy_returns_is_checked_and_named():
    with pytest.raises(ValueError, match=r"WrongShape.select\(\) must return shape \(2, 2\)"):
        WrongShape(DISK, X0, B0, 0.8 * B0, S=1.0, noise_sd=0.1, n_runs=2).select()
    with pytest.raises(ValueError, match=r"BadCode.select\(\) must set last_decision"):
        BadCode(DISK, X0, B0, 0.8 * B0, S=1.0, noise_sd=0.1, n_runs=2).select()
    stale = StaleCode(DISK, X0, B0, 0.8 * B0, S=1.0, noise_sd=0.1, n_runs=2)
    stale.observe(stale.select(), [0.5, 0.5])
    with pytest.raises(ValueError, match=r"StaleCode.select\(\) must set last_decision .* got "
                                         r"\[-1 -1\]"):
        stale.select()
    with pytest.raises(TypeError, match="NoNames.decision_names must be a nonempty tuple"):
        NoNames(DISK, X0, B0, 0.8 * B0, S=1.0, noise_sd=0.1)


def test_the_problem_is_validated_once_by_the_base():
    with pytest.raises(ValueError, match="threshold must be < baseline_reward"):
        RandomMix(DISK, X0, B0, B0 + 1.0, S=1.0, noise_sd=0.1)
    with pytest.raises(ValueError, match="n_runs must be"):
        make(0)
    with pytest.raises(ValueError, match="seed must"):
        make(2, seed=[np.random.SeedSequence(1)])


class FourCodes(RandomMix):
    decision_names = ("a", "b", "c", "d")


def test_simulate_refuses_more_decision_codes_than_it_records():
    policy = FourCodes(DISK, X0, B0, 0.8 * B0, S=1.0, noise_sd=0.1)
    with pytest.raises(ValueError, match="FourCodes has 4 decision codes; simulate records at most 3"):
        sc.simulate(policy, sc.LinearBandit(THETA, 0.1, sc.run_seeds(0, 1)[1]), 5)


def test_simulate_names_the_protocol_for_other_objects():
    class Duck:
        n_runs = 1

        def select(self):
            return X0

    with pytest.raises(TypeError, match="sege_cvx.Policy"):
        sc.simulate(Duck(), sc.LinearBandit(THETA, 0.1, sc.run_seeds(0, 1)[1]), 5)


def test_clucb_counts_its_decisions_by_their_codes():
    policy = sc.CLUCB(DISK, X0, B0, 0.8 * B0, S=1.0, noise_sd=0.1, n_runs=3)
    sc.simulate(policy, sc.LinearBandit(THETA, 0.1, sc.run_seeds(0, 3)[1]), 100)
    assert policy.decision_counts.shape == (3, 3) and (policy.decision_counts[:, 1] == 0).all()
    assert (policy.decision_counts.sum(axis=1) == 100).all()


# --------------------------------------------------------------------------- conformance kit
@pytest.mark.parametrize("cls", [sc.SEGE, sc.CLUCB, sc.ROFUL, RandomMix])
def test_the_built_in_policies_and_a_users_pass_check_policy(cls):
    sc.testing.check_policy(cls, stages=30)


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
        return self.baseline_arm + self.shared.uniform(0.0, 0.1, (self.n_runs, 1)) * (
            arms - self.baseline_arm)


class NotAPolicy:
    decision_names = ("a",)


@pytest.mark.parametrize("cls, match", [
    (Outside, r"Outside played \[.*\] at stage 5, run 0: not in the arm set exactly"),
    (SharedRandomness, r"SharedRandomness's run 0 alone played .* at stage 2, in a batch of 3"),
    (NotAPolicy, "NotAPolicy is not a subclass of sege_cvx.Policy"),
])
def test_check_policy_names_what_fails(cls, match):
    with pytest.raises(AssertionError, match=match):
        sc.testing.check_policy(cls, stages=20)


# --------------------------------------------------------------- found by an adversarial review
class RewritesCodes(RandomMix):
    """Overwrites last_decision in observe with a code out of range."""

    def observe(self, arms, rewards):
        super().observe(arms, rewards)
        self.last_decision = np.full(self.n_runs, 3)


def test_simulate_records_the_codes_select_set():
    policy = RewritesCodes(DISK, X0, B0, 0.8 * B0, S=1.0, noise_sd=0.1, n_runs=2)
    result = sc.simulate(policy, sc.LinearBandit(THETA, 0.1, sc.run_seeds(0, 2)[1]), 50)
    np.testing.assert_array_equal(result.stats.decision_counts[:, :2], policy.decision_counts)


class FailsOnce(RandomMix):
    failed = False

    def observe(self, arms, rewards):
        if not self.failed:
            self.failed = True
            raise RuntimeError("the data store is down")
        super().observe(arms, rewards)


def test_an_observe_that_raises_leaves_the_arms_pending():
    policy = FailsOnce(DISK, X0, B0, 0.8 * B0, S=1.0, noise_sd=0.1)
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
        return np.tile(self.baseline_arm, (self.n_runs, 1)) + np.nan

    def observe(self, arms, rewards):
        pass


class FromMixin(Mixin, sc.Policy):
    pass


class NoSuper(RandomMix):
    def __init__(self):
        pass


def test_methods_from_a_mixin_are_checked_and_a_missing_super_init_is_named():
    policy = FromMixin(DISK, X0, B0, 0.8 * B0, S=1.0, noise_sd=0.1)
    with pytest.raises(ValueError, match="FromMixin.select\\(\\) returned a non-finite arm"):
        policy.select()
    with pytest.raises(TypeError, match="NoSuper.__init__ must call super\\(\\).__init__"):
        NoSuper().select()


class BoolArms(RandomMix):
    def select(self):
        return super().select() > 1.0


def test_arms_that_are_not_real_numbers_are_refused():
    with pytest.raises(TypeError, match="BoolArms.select\\(\\) must return real numbers"):
        BoolArms(DISK, X0, B0, 0.8 * B0, S=1.0, noise_sd=0.1).select()


class WrongBaseline(RandomMix):
    def __init__(self, arm_set, baseline_arm, baseline_reward, threshold, **kwargs):
        super().__init__(arm_set, baseline_arm, baseline_reward + 0.5, threshold, **kwargs)


def test_check_policy_compares_the_problem_and_its_own_arguments():
    with pytest.raises(AssertionError, match="WrongBaseline holds baseline_arm .* and "
                                             "baseline_reward 2.74"):
        sc.testing.check_policy(WrongBaseline, stages=5)
    with pytest.raises(AssertionError, match="pass the class, not an instance of RandomMix"):
        sc.testing.check_policy(make(1), stages=5)
    with pytest.raises(ValueError, match="stages must be"):
        sc.testing.check_policy(RandomMix, stages=0)
