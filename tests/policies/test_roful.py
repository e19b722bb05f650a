"""ROFUL (issue 10, part 4) and the choice of confidence radius (part 3)."""

import numpy as np
import pytest
from problems import floor_setting, paper_problem

import sege_cvx as sc
from sege_cvx.confidence import make_radius, self_normalized_radius
from sege_cvx.confidence.ellipsoid import RadiusFormula
from sege_cvx.policies.roful import BASELINE, FULL_STEP, SCALED_STEP

SETUP = paper_problem()
THETA = np.array(SETUP.theta_star)
X0 = np.array(SETUP.setting.safe_arm)


def paper_roful(**kw):
    """ROFUL on the paper's problem: the stagewise class (sc.StagewiseROFUL)."""
    return SETUP.policy("ROFUL", kw.pop("n_runs", 1), **kw)


#: Near-tie width of the reference's decisions, relative to the scale of the quantities decided
#: on.  The reference (numpy and LAPACK, from V^{-1}) and the kernel (a Cholesky factor of V,
#: sums in index order) compute the same values up to rounding: at most a few (d + 3) kappa(V)
#: ulps of their scale apart, with kappa(V) < 100 along these runs (asserted).  Within TIE of a
#: threshold either branch is correct, so the reference allows both; outside it, it decides.
#: (The smallest decisive gap measured here is 5.5e-6 of the scale: no stage is a near-tie.)
TIE = 1e-10
MAX_CONDITION = 100.0


def reference_arms(policy, theta_hat, V, beta):
    """The issue's rule, written directly in numpy from V (no Cholesky factor, no kernel).

    Returns every ``(arm, code)`` the rule allows: one, or more where a choice (the best
    direction, whether its value is negative, whether ``gamma >= 1``) is within :data:`TIE` of a
    tie, so that rounding cannot make the comparison fail on any CPU.
    """
    assert np.linalg.cond(V) < MAX_CONDITION  # the premise of TIE
    m, S = policy.margin, policy.setting.S
    V_inv = np.linalg.inv(V)
    values, sigmas, sizes = [], [], []
    for u, s in zip(policy.directions, policy.steps, strict=True):
        g, w = u @ theta_hat, np.sqrt(u @ V_inv @ u)
        loss = -g - beta * w
        sigma = min(m / loss, s) if loss > 0 else s
        values.append(sigma * (g + beta * w))
        sigmas.append(sigma)
        sizes.append(sigma * (abs(g) + beta * w))
    values = np.array(values)
    tie = TIE * max(sizes)
    best = int(np.argmax(values))  # the first of exact ties, as the kernel
    allowed = []
    if values[best] < tie:  # every value negative (or within rounding of it): the baseline
        allowed.append((X0.copy(), BASELINE))
    for j in np.flatnonzero(values >= values[best] - tie) if values[best] >= -tie else []:
        x_tilde = sigmas[j] * policy.directions[j]
        p = -theta_hat @ x_tilde + beta * np.sqrt(x_tilde @ V_inv @ x_tilde)
        mu = min(m / p, 1.0) if p > 0 else 1.0
        kappa = min((m / S) / np.linalg.norm(x_tilde), 1.0)
        gamma = max(kappa, mu)
        codes = {FULL_STEP if gamma >= 1 else SCALED_STEP}
        unclipped = max((m / S) / np.linalg.norm(x_tilde), m / p if p > 0 else np.inf)
        if abs(unclipped - 1.0) <= TIE:  # either side of gamma = 1: the same arm, either code
            codes = {FULL_STEP, SCALED_STEP}
        allowed.extend((X0 + gamma * x_tilde, code) for code in codes)
    return allowed


def test_paper_setup_constants():
    policy = paper_roful()
    assert type(policy) is sc.StagewiseROFUL
    assert policy.margin == pytest.approx(0.2 * 2.24)
    assert policy.directions.shape == (41, 2)  # CLUCB's 41 boundary points of the disk
    np.testing.assert_array_equal(policy.points, SETUP.policy("CLUCB", 1).arms)
    np.testing.assert_allclose(np.linalg.norm(policy.directions, axis=1), 1.0, rtol=1e-15)
    np.testing.assert_allclose(policy.steps, np.linalg.norm(policy.points - X0, axis=1))
    # L bounds ||x - x0|| on the disk: ||x0 - c|| + 1, attained.
    assert policy.L == pytest.approx(np.linalg.norm(X0 - 1.0) + 1.0)
    assert policy.radius == "self_normalized" and policy.delta == 0.1


@pytest.mark.parametrize("radius", ["self_normalized", "theorem1"])
def test_every_arm_follows_the_rule_and_is_safe_on_the_confidence_event(radius):
    """Along 400 stages of 3 runs, each arm equals the issue's rule computed from V directly,
    lies in the set exactly, and is certified: ||x - x0|| <= m / S or the pessimistic bound
    <x', theta_hat> - beta ||x'||_{V^-1} >= -m."""
    policy = paper_roful(n_runs=3, radius=radius)
    bandit = sc.LinearBandit(THETA, 1.0, sc.run_seeds(4, 3)[1])
    seen = set()
    near_ties = 0
    for _ in range(400):
        conf = policy.confidence
        theta_hat, V, beta = conf.theta_hat.copy(), conf.V.copy(), policy.radii()
        x = policy.select()
        for i in range(3):
            allowed = reference_arms(policy, theta_hat[i], V[i], beta[i])
            near_ties += len(allowed) > 1
            code = policy.last_decision[i]
            matches = [arm for arm, c in allowed if c == code]
            assert matches, (code, allowed)
            # Within rounding of the reference's arm (x ~ 2: 1e-12 is some 2,000 ulps of it).
            worst = min(np.max(np.abs(x[i] - arm)) for arm in matches)
            assert worst <= 1e-12, (x[i], matches)
            seen.add(code)
            rel = x[i] - X0
            pessimistic = rel @ theta_hat[i] - beta[i] * np.sqrt(rel @ np.linalg.solve(V[i], rel))
            assert (np.linalg.norm(rel) <= policy.margin / policy.setting.S * (1 + 1e-12)
                    or pessimistic >= -policy.margin * (1 + 1e-12))
        assert policy.setting.arm_set.contains(x, tol=0.0).all()
        policy.observe(x, bandit.pull(x)[1])
    assert seen == {FULL_STEP, SCALED_STEP}
    assert near_ties <= 12  # at most 1 % of the 1,200 checks: the comparison stays decisive


def test_the_confidence_set_is_kept_relative_to_the_baseline():
    policy = paper_roful()
    x = policy.select()
    policy.observe(x, 3.0)
    rel = x - X0
    np.testing.assert_allclose(policy.confidence.V[0], 0.1 * np.eye(2) + np.outer(rel, rel))
    np.testing.assert_allclose(policy.confidence.xy_sum[0], rel * (3.0 - 2.24))


def test_paper_study_numbers():
    """ROFUL on the paper's setup, 40 runs x 2,000 stages (seed 0), regret pinned (a regression
    check of the whole rule).  With Theorem 1's radius no stage violates; the tighter
    self-normalized radius lets run 22 fall below b at stages 24 and 25: the confidence set
    (risk delta = 0.1 over all stages) failed there, which the guarantee allows for up to 10 % of
    runs."""
    policy_seeds, noise_seeds = sc.run_seeds(0, 40)
    out = {}
    for radius in ("self_normalized", "theorem1"):
        result = sc.simulate(paper_roful(n_runs=40, radius=radius), SETUP.bandit(noise_seeds), 2000)
        out[radius] = result.stats
    assert out["theorem1"].total_violations.sum() == 0
    assert np.flatnonzero(out["self_normalized"].total_violations).tolist() == [22]
    assert out["self_normalized"].first_violation[22] == 24
    assert out["self_normalized"].total_violations[22] == 2
    assert out["self_normalized"].regret[-1].mean() == pytest.approx(125.23372, rel=1e-6)
    assert out["theorem1"].regret[-1].mean() == pytest.approx(149.84594, rel=1e-6)


def test_roful_refuses_what_it_cannot_guarantee():
    disk = SETUP.arm_set
    with pytest.raises(ValueError, match="exact reward"):  # a baseline moved into the set
        sc.StagewiseROFUL(floor_setting(disk, [1.0, 2.0 + 1e-12], 2.2, 1.8))
    with pytest.raises(ValueError, match="threshold"):
        sc.StagewiseROFUL(floor_setting(disk, X0, 2.24, 2.24))
    setting = floor_setting(disk, X0, 2.24, 1.8)
    with pytest.raises(ValueError, match="radius"):
        sc.StagewiseROFUL(setting, radius="tight")
    with pytest.raises(ValueError, match="delta"):
        sc.StagewiseROFUL(setting, delta=1.0)
    with pytest.raises(ValueError, match="n_directions"):
        sc.StagewiseROFUL(setting, n_directions=0)
    with pytest.raises(ValueError, match="n_directions must be at most 1000000"):
        sc.StagewiseROFUL(setting, n_directions=10**12)
    with pytest.raises(ValueError, match="n_arms must be at most 1000000"):
        sc.CLUCB(setting, n_arms=10**12)
    with pytest.raises(ValueError, match="seed"):
        sc.StagewiseROFUL(setting, seed=-1)


# ---------------------------------------------------------------------- the radius (part 3)
def test_self_normalized_radius_is_abbasi_yadkori_theorem_2():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 3))
    V = 0.5 * np.eye(3) + X.T @ X
    expect = 0.7 * np.sqrt(np.linalg.slogdet(V)[1] - 3 * np.log(0.5) + 2 * np.log(1 / 0.05)) \
        + np.sqrt(0.5) * 2.0
    got = self_normalized_radius(V, 0.05, noise_sd=0.7, lam=0.5, S=2.0)
    assert got == pytest.approx(expect, rel=1e-13)
    # At V = lam I (no data) it reduces to sigma sqrt(2 log(1/delta)) + sqrt(lam) S.
    assert self_normalized_radius(0.5 * np.eye(3), 0.05, noise_sd=0.7, lam=0.5, S=2.0) == \
        pytest.approx(0.7 * np.sqrt(2 * np.log(20)) + np.sqrt(0.5) * 2.0, rel=1e-14)
    with pytest.raises(ValueError, match="delta"):
        self_normalized_radius(V, 0.0, noise_sd=0.7, lam=0.5, S=2.0)
    with pytest.raises(ValueError, match="V"):
        self_normalized_radius(-V, 0.05, noise_sd=0.7, lam=0.5, S=2.0)


def test_theorem1_radius_is_unchanged_and_the_default_of_sege_and_clucb():
    rule = make_radius("theorem1", 2, 1.0, 0.1, 1.0, 2.5)
    assert rule.stage_value(37, 0.01) == RadiusFormula(2, 1.0, 0.1, 1.0, 2.5).scalar(37, 0.01)
    assert SETUP.policy("SEGE", 1, 0).radius == "theorem1" and SETUP.policy("CLUCB", 1).radius == "theorem1"
    with pytest.raises(ValueError, match="radius"):
        SETUP.policy("SEGE", 1, 0, radius="Theorem1")


@pytest.mark.parametrize("algorithm", ["SEGE", "CLUCB"])
def test_self_normalized_sege_and_clucb_use_the_bound_at_their_own_V(algorithm):
    policy = SETUP.policy(algorithm, 2, 0, radius="self_normalized")
    bandit = sc.LinearBandit(THETA, 1.0, sc.run_seeds(1, 2)[1])
    for _ in range(59):
        x = policy.select()
        policy.observe(x, bandit.pull(x)[1])
    conf = policy.confidence
    for i in range(2):
        if algorithm == "SEGE":
            got, delta = policy.radii_at(60)[i], policy.risk_level(60)
        else:
            got, delta = policy.radii()[i], policy.delta
        assert got == pytest.approx(self_normalized_radius(conf.V[i], delta, noise_sd=1.0,
                                                           lam=0.1, S=1.0), rel=1e-13)
        # Tighter than Theorem 1's r_t here (d = 2, t < 60).
        assert got < RadiusFormula(2, 1.0, 0.1, 1.0, policy.L).scalar(60, delta)
