"""SEGE and CLUCB: parameters, reproducibility, and the invariants of every arm they play."""

import cvxpy as cp
import numpy as np
import pytest
from _decisions import sege_decision_margins
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from problems import floor_setting, paper_problem, paper_setting

import sege_cvx as sc
from sege_cvx.confidence import lcb_from_precision
from sege_cvx.policies.clucb import BASELINE, OPTIMISTIC
from sege_cvx.policies.sege import EXPLOIT, EXPLORE_BASELINE, EXPLORE_LCB

SETUP = paper_problem()
DISK = SETUP.arm_set
THETA = np.array(SETUP.theta_star)


def paper_sege(**kw):
    """SEGE on the paper's setting; ``S`` and ``noise_sd`` are the setting's."""
    setting = paper_setting(**{k: kw.pop(k) for k in ("S", "noise_sd") if k in kw})
    args = dict(lam=0.1, c=0.5)
    args.update(kw)
    return sc.SEGE(setting, **args)


def test_paper_constants():
    policy = paper_sege()
    assert SETUP.setting.safety.baseline_reward == pytest.approx(2.24)
    assert policy.rho_bar == pytest.approx(0.224) and policy.rho == policy.rho_bar
    assert policy.L == pytest.approx(1 + np.sqrt(2))
    assert policy.sigma2 == pytest.approx(0.5)  # lambda_min(H) / d for zeta uniform on the circle
    # delta_1 = 6 * 0.1 / pi^2; r_1 = sqrt(2 log((1 + L^2/0.1) / delta_1)) + sqrt(0.1)
    delta1 = 0.6 / np.pi**2
    assert policy.radii_at(1)[0] == pytest.approx(
        np.sqrt(2 * np.log((1 + (1 + np.sqrt(2)) ** 2 / 0.1) / delta1)) + np.sqrt(0.1))


@pytest.mark.parametrize("kwargs, match", [
    (dict(rho=0.3), "rho"),
    (dict(rho=0.0), "rho"),
    (dict(S=0.0), "S"),
    (dict(noise_sd=-1.0), "noise_sd"),
    (dict(lam=0.0), "lam"),
    (dict(c=-0.5), "c"),
    (dict(n_runs=0), "n_runs"),
    (dict(lcb_method="newton"), "lcb_method"),
])
def test_sege_rejects_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        paper_sege(**kwargs)


def test_sege_rejects_bad_threshold_baseline_and_risk():
    with pytest.raises(ValueError, match="threshold"):
        sc.SEGE(floor_setting(DISK, [1.2, 1.9], 2.24, 2.24))
    with pytest.raises(ValueError, match="outside the arm set"):
        sc.SEGE(floor_setting(DISK, [2.2, 1.9], 2.24, 1.8))
    with pytest.raises(ValueError, match="shape"):
        sc.SEGE(floor_setting(DISK, [1.2, 1.9, 0.0], 2.24, 1.8))
    for bad in (0.0, 1.0, float("nan")):
        policy = paper_sege(risk=lambda t, bad=bad: bad)
        with pytest.raises(ValueError, match="outside"):
            policy.select()
    with pytest.raises(TypeError, match="callable"):
        paper_sege(risk=0.1)


def test_seed_objects_are_not_consumed():
    seq = np.random.SeedSequence(5)
    a, b = (sc.SEGE(floor_setting(DISK, [1.2, 1.9], 2.24, 1.8), n_runs=2, seed=seq)
            for _ in range(2))
    np.testing.assert_array_equal(a.select(), b.select())
    first, again = sc.run_seeds(seq, 3), sc.run_seeds(seq, 3)
    assert [s.spawn_key for s in first[0]] == [s.spawn_key for s in again[0]]


def test_baseline_on_the_boundary_is_played_exactly_inside_with_a_certified_reward():
    x0 = np.array([1.0, 1.0]) + np.array([0.6, 0.8]) * (1 + 5e-10)  # 5e-10 outside the disk
    b0 = float(x0 @ THETA)
    policy = sc.SEGE(floor_setting(DISK, x0, b0, 1.8))
    setting = policy.setting
    assert DISK.contains(setting.safe_arm, tol=0.0)
    shift = np.linalg.norm(setting.safe_arm - x0)
    assert setting.safe_shift == shift and 4e-10 < shift <= 1.01e-9
    # <x0', theta*> >= b0 - S ||x0' - x0||: the bound SEGE uses is that of the arm it plays.
    certified = setting.safety.baseline_reward
    assert b0 - 1.01 * shift < certified < b0 - shift
    assert float(setting.safe_arm @ THETA) >= certified
    assert policy.rho_bar == pytest.approx((certified - 1.8) / 2.0, rel=1e-15)
    # The case: b = b0 - 1e-10 is above the moved arm's certified reward.
    moved = r"threshold must be < baseline_reward .*moved \d(\.\d+)?e-(10|09) into the set"
    with pytest.raises(ValueError, match=moved):
        sc.SEGE(floor_setting(DISK, x0, b0, b0 - 1e-10))
    with pytest.raises(ValueError, match="outside the arm set"):
        sc.SEGE(floor_setting(DISK, x0 + 1e-6, 2.0, 1.8))
    inside = np.array([1.2, 1.9])  # strictly inside: nothing moves, b0 is kept exactly
    policy = sc.SEGE(floor_setting(DISK, inside, 2.24, 1.8))
    assert policy.setting.safe_shift == 0.0 and policy.setting.safety.baseline_reward == 2.24


def test_closed_form_lcb_method_needs_a_closed_form():
    # An exponential cone: no compiled cone program, so no fast path (a p-norm ball has one).
    with pytest.raises(ValueError, match="no closed-form"):
        sc.SEGE(floor_setting(sc.ConvexArmSet(2, lambda x: [cp.log_sum_exp(x - 1.0) <= 1.5,
                                                             x >= -1]), [0.5, 0.5],
                              1.4, 1.2), lcb_method="closed_form")


def test_step_protocol_is_enforced():
    policy = paper_sege(seed=0)
    with pytest.raises(RuntimeError, match="before select"):
        policy.observe([1.2, 1.9], 1.0)
    x = policy.select()
    with pytest.raises(RuntimeError, match="twice"):
        policy.select()
    with pytest.raises(ValueError, match="returned by the last select"):
        policy.observe(x + 0.1, 1.0)
    with pytest.raises(ValueError, match="finite"):
        policy.observe(x, float("nan"))
    policy.observe(x, 1.0)
    assert policy.t == 1


def _single_run_trajectory(make_policy, policy_seed, noise_seed, horizon):
    policy = make_policy(1, policy_seed)
    bandit = sc.LinearBandit(THETA, 1.0, [noise_seed])
    rewards, decisions = [], []
    for _ in range(horizon):
        x = policy.select()
        mean, y = bandit.pull(x[None])
        policy.observe(x, y[0])
        rewards.append(mean[0])
        decisions.append(policy.last_decision[0])
    return np.array(rewards), np.array(decisions)


@pytest.mark.parametrize("algorithm", ["SEGE", "CLUCB", "SEGE on a polytope (solver)"])
def test_step_api_and_batched_engine_give_identical_trajectories(algorithm):
    runs, horizon = 3, (300 if "polytope" in algorithm else 1500)
    policy_seeds, noise_seeds = sc.run_seeds(7, runs)
    square = sc.Polytope(np.vstack([np.eye(2), -np.eye(2)]), [2.0, 2.0, 0.0, 0.0])

    def make(n, seed):
        if algorithm == "SEGE":
            return SETUP.policy("SEGE", n, seed)
        if algorithm == "CLUCB":
            return SETUP.policy("CLUCB", n)
        return sc.SEGE(floor_setting(square, [1.0, 1.0], 1.4, 1.2), c=0.01, n_runs=n, seed=seed)

    threshold = 1.2 if "polytope" in algorithm else SETUP.setting.safety.threshold
    batch = sc.simulate(make(runs, policy_seeds),
                        sc.LinearBandit(THETA, 1.0, noise_seeds, threshold=threshold), horizon,
                        traces=True)
    for r in range(runs):
        rewards, decisions = _single_run_trajectory(make, policy_seeds[r], noise_seeds[r], horizon)
        np.testing.assert_array_equal(decisions, batch.decisions[:, r])
        np.testing.assert_array_equal(rewards, batch.expected_reward[:, r])  # bit for bit
    assert len(np.unique(batch.decisions)) > 1  # the runs do switch decisions


def test_closed_form_and_solver_paths_make_the_same_decisions():
    # A lower baseline reward than the paper's so that LCB arms get played in a short test.
    setup, runs, horizon = paper_problem(noise_sd=0.3, safe_arm=(1.0, 1.0)), 2, 400
    policy_seeds, noise_seeds = sc.run_seeds(3, runs)
    results = {}
    for method in ("closed_form", "solver"):
        # c = 0.5, the paper's (its default here would be 0.2: rho_bar is smaller at (1, 1)).
        policy = setup.policy("SEGE", runs, policy_seeds, lcb_method=method, c=0.5)
        results[method] = sc.simulate(policy, setup.bandit(noise_seeds), horizon, traces=True)
        assert policy.solver_fallbacks.sum() == 0
        # Two arithmetic paths, compared exactly on their decisions: sound because no decision
        # is a near-tie (every test statistic >= 1e-9 relative from its threshold; 2.2e-3 at
        # least, measured), far beyond what any rounding could move.  (Both paths are also
        # CPU-independent here: no BLAS or LAPACK on the paper's disk.)
        margins = sege_decision_margins(setup.policy("SEGE", runs, policy_seeds, lcb_method=method,
                                                     c=0.5),
                                        sc.LinearBandit(THETA, 0.3, noise_seeds), horizon)
        assert min(margins.values()) >= 1e-9, margins
    a, b = results["closed_form"], results["solver"]
    np.testing.assert_array_equal(a.decisions, b.decisions)
    assert (a.decisions == EXPLORE_LCB).sum() > 700  # the LCB arm was actually played
    np.testing.assert_allclose(a.expected_reward, b.expected_reward, atol=1e-5)


def test_clucb_discretization_meets_paper_error():
    policy = SETUP.policy("CLUCB", 1)
    # K equally spaced boundary points of the unit disk; worst loss S (1 - cos(pi / K)) <= 3e-3.
    assert policy.arms.shape == (41, 2)
    assert policy.discretization_error == pytest.approx(1 - np.cos(np.pi / 41), rel=1e-4)
    assert 1 - np.cos(np.pi / 40) > 3e-3  # 40 arms would not do
    np.testing.assert_allclose(np.linalg.norm(policy.arms - DISK.center, axis=1), 1.0)
    assert policy.alpha == pytest.approx(0.2)


def test_clucb_conservative_check_on_every_round():
    policy = SETUP.policy("CLUCB", 4)
    bandit = sc.LinearBandit(THETA, 1.0, sc.run_seeds(11, 4)[1])
    baseline_plays = np.zeros(4)
    for t in range(1, 801):
        conf = policy.confidence
        beta = policy.radii()
        z = policy.optimistic_sum.copy()
        x = policy.select()
        opt = policy.last_decision == OPTIMISTIC
        low = lcb_from_precision(z + x, conf.theta_hat, conf.V_inv, beta)
        assert np.all(low[opt] + baseline_plays[opt] * 2.24 >= 0.8 * t * 2.24 - 1e-9)
        np.testing.assert_array_equal(x[~opt], np.tile([1.2, 1.9], ((~opt).sum(), 1)))
        baseline_plays += policy.last_decision == BASELINE
        policy.observe(x, bandit.pull(x)[1])
    assert policy.decision_counts[:, OPTIMISTIC].min() > 0 and policy.decision_counts[:, BASELINE].min() > 0


@st.composite
def small_problems(draw):
    d = draw(st.integers(2, 3))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    H = (Q * rng.uniform(0.3, 2.0, d)) @ Q.T
    center = rng.uniform(-1, 2, d)
    if draw(st.booleans()):
        E = sc.Ellipsoid(center, H)  # closed-form greedy and LCB arms
    else:
        E = sc.Box(center - 1.0, center + rng.uniform(0.5, 2.0, d))  # LCB arms by Clarabel
    theta = rng.standard_normal(d)
    theta *= rng.uniform(0.3, 1.0) / np.linalg.norm(theta)
    expl = E.exploration()
    x0 = expl.center + 0.5 * expl.B @ (u := rng.standard_normal(d)) / np.linalg.norm(u)
    b0 = float(x0 @ theta) - draw(st.floats(0.0, 0.2))
    b = b0 - draw(st.floats(0.05, 1.0))
    return E, theta, x0, b0, b, seed


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_problems())
def test_every_sege_arm_is_in_the_set_and_certified(problem):
    E, theta, x0, b0, b, seed = problem
    policy = sc.SEGE(floor_setting(E, x0, b0, b, noise_sd=0.5), lam=0.5, c=0.2, n_runs=3,
                     seed=seed)
    x0 = policy.setting.safe_arm  # as certified: moved exactly inside if it was on the boundary
    bandit = sc.LinearBandit(theta, 0.5, sc.run_seeds(seed, 3)[1])
    D = E.diameter_bound()
    d = E.dim
    for t in range(1, 301):
        conf = policy.confidence
        theta_hat, V_inv, r = conf.theta_hat.copy(), conf.V_inv.copy(), policy.radii_at(t)[0]
        kappa = np.linalg.cond(conf.V)
        x = policy.select()
        assert np.all(E.contains(x, tol=0.0))  # every played arm lies in the set exactly
        dec = policy.last_decision
        expl = dec == EXPLOIT
        lcb_t = lcb_from_precision(x, theta_hat, V_inv, np.full(3, r))
        # lcb_from_precision (x^T V^{-1} x with V^{-1} formed) and the policy's own LCB (a
        # triangular solve with the factor of V) round differently: their norm terms differ by
        # at most ~d^2 kappa(V) u relative (first-order bounds of both), so the rule's tests are
        # checked up to 16 d^2 kappa(V) ulps of r ||x||_{V^-1}: a near-tie decided by the policy's
        # rounding must not fail here on a CPU whose set-up (QR, eigh: BLAS) rounds otherwise.
        slack = 16 * d**2 * kappa * np.spacing(
            r * np.sqrt(np.einsum("ni,nij,nj->n", x, V_inv, x)))
        assert np.all(lcb_t[expl] >= b - slack[expl])  # exploit only if LCB_t(X_t) >= b (line 5)
        XS, U = policy.last_safe_arm[~expl], policy.last_exploration_arm[~expl]
        # Lemma 1: X^SE = (1 - rho) X^S + rho U with ||X^S - U|| <= D, hence
        # <X^SE, theta*> >= <X^S, theta*> - rho D ||theta*||.
        np.testing.assert_allclose(x[~expl], (1 - policy.rho) * XS + policy.rho * U, atol=1e-12)
        assert np.all(np.linalg.norm(XS - U, axis=1) <= D + 1e-12)
        assert np.all(E.contains(U, tol=1e-12))  # U may sit on the boundary, up to rounding
        B_inv = np.linalg.inv(policy.exploration.B)  # U_t on the exploration ellipsoid's boundary
        np.testing.assert_allclose(np.linalg.norm((U - policy.exploration.center) @ B_inv.T, axis=1), 1.0)
        base = dec[~expl] == EXPLORE_BASELINE
        np.testing.assert_array_equal(XS[base], np.tile(x0, (base.sum(), 1)))
        assert policy.solver_fallbacks.sum() == 0
        XL, V_inv_L = XS[~base], V_inv[~expl][~base]
        lcb_safe = lcb_from_precision(XL, theta_hat[~expl][~base], V_inv_L, np.full(len(XL), r))
        slack = 16 * d**2 * kappa[~expl][~base] * np.spacing(
            r * np.sqrt(np.einsum("ni,nij,nj->n", XL, V_inv_L, XL)))
        assert np.all(lcb_safe >= b0 - slack)  # X^S = LCB arm only if LCB_t(X^LCB) >= b0
        policy.observe(x, bandit.pull(x)[1])
    assert policy.decision_counts.sum() == 900


def test_each_policy_names_its_own_decision_codes():
    from sege_cvx.policies import clucb, roful, sege

    assert sege.SEGE.decision_names[sege.EXPLOIT] == "exploit"
    assert sege.SEGE.decision_names[sege.EXPLORE_LCB] == "explore_lcb"
    assert sege.SEGE.decision_names[sege.EXPLORE_BASELINE] == "explore_baseline"
    assert clucb.CLUCB.decision_names[clucb.OPTIMISTIC] == "optimistic"
    assert clucb.CLUCB.decision_names[clucb.BASELINE] == "baseline"
    assert clucb.CLUCB.decision_names.count(None) == 1  # the code CLUCB never records
    for cls in (roful.StagewiseROFUL, roful.ROFUL):  # one class per safety model, the same codes
        assert cls.decision_names[roful.FULL_STEP] == "full_step"
        assert cls.decision_names[roful.SCALED_STEP] == "scaled_step"
        assert cls.decision_names[roful.BASELINE] == "baseline"
    # SafeTS shares the ray step's codes, under names that say what a sample's arm did.
    from sege_cvx.policies import directional, safe_ts

    names = safe_ts.SafeTS.decision_names
    assert names[directional.FULL_STEP] == "sampled"
    assert names[directional.SCALED_STEP] == "sampled_on_bound"
    assert names[directional.BASELINE] == "baseline"


def test_the_defaults_a_policy_chose_are_attributes_and_in_a_sweep_s_manifest(tmp_path):
    """ROFUL's and GNOP's ray count on a convex set, CLUCB's arm count and SEGE's c are the
    values in effect, read back as attributes and per cell in the manifest (issue 39, item 7)."""
    from problems import constrained_problem

    from sege_cvx.experiments import run_sweep

    problem = constrained_problem()
    for name in ("ROFUL", "GNOP"):
        policy = problem.policy(name, 1)
        assert policy.n_directions == policy.directions.shape[0] > 0
        assert policy.parameters()["n_directions"] == policy.n_directions
        assert problem.policy(name, 1, n_directions=24).n_directions <= 24
    clucb = sc.paper_problem().policy("CLUCB", 1)
    assert clucb.n_arms == clucb.arms.shape[0] == 41
    spec = {"seed": 0, "runs": 1, "horizon": 5, "problems": [{"name": "paper"}],
            "algorithms": [{"name": "SEGE"}, {"name": "CLUCB", "grid": {"n_arms": [20]}}]}
    cells = run_sweep(spec, tmp_path / "out", workers=1, progress=False).manifest["cells"]
    assert [(c["algorithm"], c["settings"]) for c in cells] == [("SEGE", {}),
                                                                ("CLUCB", {"n_arms": 20})]
    assert cells[0]["parameters"]["c"] == 0.5 and cells[0]["parameters"]["lam"] == 0.1
    assert cells[1]["parameters"] == {"lam": 0.1, "delta": 0.1, "n_arms": 20,
                                      "radius": "theorem1"}
