"""The confidence radii are a registry: a user's radius, registered by name with its rule record
and compiled kernel, is what every policy's ``radius=`` takes, bound into the compiled stage loop
as the built-in radii are."""

from typing import NamedTuple

import numpy as np
import pytest
from problems import paper_problem

import sege_cvx as sc
from sege_cvx._numba import has_disk_cache, njit
from sege_cvx.confidence import radius as radii
from sege_cvx.stages.loop import radius_of, stage_loop


class ScaledRule(NamedTuple):
    factor: float


@njit(inline="always")
def scaled_radius(rule, stage_value, chol):
    return rule.factor * stage_value


class ScaledTheorem1(radii.Theorem1Radius):
    """eq. (r_t) times a factor: a radius of a user's own rule record."""

    name, Rule, kernel = "scaled_theorem1", ScaledRule, scaled_radius
    factor = 1.0

    def __init__(self, dim, noise_sd, lam, S, L):
        super().__init__(dim, noise_sd, lam, S, L)
        self.rule = ScaledRule(factor=self.factor)


@pytest.fixture
def registered(monkeypatch):
    monkeypatch.setattr(radii, "_RADII", dict(radii._RADII))
    monkeypatch.setattr(radii, "_KERNELS", dict(radii._KERNELS))
    return radii.register_radius(ScaledTheorem1)


def test_the_built_in_radii_are_registered_records():
    assert radii.registered_radii() == radii.RADII == ("theorem1", "self_normalized")
    r = radii.make_radius("self_normalized", 3, 0.5, 0.1, 2.0, 1.0)
    assert type(r.rule) is radii.SelfNormalizedRule
    assert r.rule._asdict() == pytest.approx({"noise_sd": 0.5, "half_d_log_lam": 1.5 * np.log(0.1),
                                              "offset": np.sqrt(0.1) * 2.0}, rel=1e-15)
    with pytest.raises(NotImplementedError, match="bound to a radius rule's kernel"):
        radii.radius_one(r.rule, 0.0, np.eye(3))


def test_a_users_radius_runs_in_the_compiled_loop_bit_for_bit(registered):
    # Factor 1: the user's rule gives theorem1's numbers through its own kernel and loop.
    problem = paper_problem()
    policy_seeds, noise_seeds = sc.run_seeds(3, 4)
    results = {}
    for radius in ("theorem1", "scaled_theorem1"):
        policy = problem.policy("SEGE", 4, policy_seeds, radius=radius)
        results[radius] = (policy, sc.simulate(policy, problem.bandit(noise_seeds), 400))
    (base, a), (mine, b) = results.values()
    assert radius_of(mine.stage_record(1, 1)) is ScaledRule
    loop, = mine.compiled_kernels
    assert loop is stage_loop(type(mine.stage_record(1, 1)), type(mine._compiled[0]), ScaledRule)
    assert loop.__name__.endswith("_ScaledRule")
    assert not has_disk_cache(loop)  # a user's kernel: compiled in each process
    np.testing.assert_array_equal(a.stats.regret, b.stats.regret)
    np.testing.assert_array_equal(a.stats.decision_counts, b.stats.decision_counts)
    np.testing.assert_array_equal(base.radii_at(401), mine.radii_at(401))


def test_a_users_radius_changes_the_runs(registered, monkeypatch):
    monkeypatch.setattr(ScaledTheorem1, "factor", 3.0)
    problem = paper_problem()
    wide = problem.policy("SEGE", 2, 0, radius="scaled_theorem1")
    base = problem.policy("SEGE", 2, 0)
    np.testing.assert_array_equal(wide.radii_at(10), 3.0 * base.radii_at(10))
    stats = sc.simulate(wide, problem.bandit(sc.run_seeds(0, 2)[1]), 300).stats
    assert stats.total_violations.sum() == 0
    assert stats.decision_counts[:, 0].sum() == 0  # so wide a radius never exploits this early


def test_a_radius_is_refused_with_one_line(registered):
    with pytest.raises(ValueError, match=r"radius must be one of \('theorem1', 'self_normalized', "
                                         r"'scaled_theorem1'\), got 'scaled'"):
        paper_problem().policy("SEGE", 1, 0, radius="scaled")
    with pytest.raises(TypeError, match="already registered"):
        radii.register_radius(type("Other", (ScaledTheorem1,), {"kernel": radii.theorem1_radius}))

    class NoRecord(ScaledTheorem1):
        name, Rule = "no_record", dict

    with pytest.raises(TypeError, match="NoRecord.Rule must be a NamedTuple class"):
        radii.register_radius(NoRecord)

    class TwoParameters(ScaledTheorem1):
        name, Rule = "two", NamedTuple("Two", [("a", float)])
        kernel = njit(inline="always")(lambda rule, value: value)

    with pytest.raises(TypeError, match=r"TwoParameters.kernel must take \(rule, stage_value, "
                                        r"chol\)"):
        radii.register_radius(TwoParameters)
