"""The second safety model: an unknown linear constraint <x, gamma*> <= c (issue 29).

ROFUL and GNOP as their authors' code defines them, on star sets (compiled stages) and on convex
sets holding the origin; the constraint, the star set, the environment's feedback, the problem
and the roful-2024 study.  Membership is decided in rationals against the sets' own data.
"""

from __future__ import annotations

import math
from fractions import Fraction

import cvxpy as cp
import numpy as np
import pytest
from _exact import q
from problems import (
    B_THEIRS,
    assert_certified,
    b_problem,
    constrained_problem,
    constraint_problem,
    floor_setting,
    paper_problem,
)

import sege_cvx as sc
from sege_cvx.experiments.roful2024 import authors_trials, run_roful_study
from sege_cvx.policies.directional import SHRINK


def unit_directions(rng, K, d=2):
    u = rng.normal(size=(K, d))
    return u / np.linalg.norm(u, axis=1)[:, None]


def on_ray_exactly(star: sc.StarSet, x) -> bool:
    """``x = fl(s u_k)`` for some float ``0 <= s <= cap_k``, decided by rounding the exact
    products ``Fraction(s) * Fraction(u_kj)`` (Python's float(Fraction) rounds correctly)."""
    found = star.ray_of(x)
    if found is None:
        return False
    k, s = found
    if not 0.0 <= s <= star.caps[k]:
        return False
    return all(float(q(s) * q(u)) == v for u, v in zip(star.directions[k], x, strict=True))


# ----------------------------------------------------------------------------- the constraint
def test_linear_constraint_validates_its_model():
    with pytest.raises(ValueError, match="exactly one of gamma_star .* got both"):
        sc.LinearConstraint(1.0, gamma_star=[1.0, 0.0], B=np.eye(2))
    with pytest.raises(ValueError, match="got neither"):
        sc.LinearConstraint(1.0)
    with pytest.raises(ValueError, match="needs noise_sd"):
        sc.LinearConstraint(1.0, gamma_star=[1.0, 0.0])
    with pytest.raises(ValueError, match="takes no noise_sd"):
        sc.LinearConstraint(1.0, B=np.eye(2), noise_sd=0.1)
    with pytest.raises(ValueError, match=r"B must be a square \(d, d\) matrix, got shape \(2, 3\)"):
        sc.LinearConstraint(1.0, B=np.ones((2, 3)))
    with pytest.raises(ValueError, match="limit"):
        sc.LinearConstraint(float("nan"), gamma_star=[1.0], noise_sd=0.1)


def test_b_model_vector_is_b_transpose_theta_and_safe_arm_must_be_strictly_safe():
    B = np.array([[3.0, 9.0], [9.0, 2.0]]) / 5
    con = sc.LinearConstraint(0.9, B=B)
    theta = np.array([20.8, 1.0]) / 23
    assert np.array_equal(con.vector(theta), np.array([math.fsum(B[:, j] * theta)
                                                       for j in range(2)]))
    known = con.known([0.0, 0.0], theta)
    assert (known.limit, known.safe_value, known.margin, known.separate_feedback) == (
        0.9, 0.0, 0.9, False)
    with pytest.raises(ValueError, match="not strictly safe: its constraint value 0.9 is not "
                                         "below the limit 0.9"):
        sc.LinearConstraint(0.9, gamma_star=[0.9, 0.0], noise_sd=0.1).known([1.0, 0.0], theta)


# ----------------------------------------------------------------------------- the star set
def test_star_set_arms_are_float_products_decided_exactly():
    rng = np.random.default_rng(3)
    star = sc.StarSet(unit_directions(rng, 7, 3), radius=1.5)
    for _ in range(500):
        k = rng.integers(7)
        s = rng.uniform(0.0, star.caps[k])
        x = s * star.directions[k]
        assert star.contains(x, tol=0) and on_ray_exactly(star, x)
        y = x.copy()
        y[rng.integers(3)] += 1e-9
        assert not star.contains(y, tol=0)
        assert star.contains(y, tol=1e-8)
    beyond = np.nextafter(star.caps[0], np.inf) * 1.000001 * star.directions[0]
    assert not star.contains(beyond, tol=0)
    assert star.contains(star.endpoints, tol=0).all()
    assert star.contains(np.zeros(3), tol=0)


def test_star_set_caps_are_radius_over_norm_and_inputs_are_checked():
    star = sc.StarSet([[3.0, 4.0], [1.0, 0.0]], radius=2.0)
    assert star.caps.tolist() == [0.4, 2.0]
    assert star.endpoints.tolist() == [[1.2000000000000002, 1.6], [2.0, 0.0]]
    with pytest.raises(ValueError, match="direction 1 is zero"):
        sc.StarSet([[1.0, 0.0], [0.0, 0.0]], 1.0)
    with pytest.raises(ValueError, match="radius"):
        sc.StarSet([[1.0, 0.0]], 0.0)
    with pytest.raises(TypeError, match="not convex"):
        star.constraints(None)
    with pytest.raises(TypeError, match="SEGE needs a convex arm set"):
        sc.SEGE(floor_setting(star, [0.0, 0.0], 1.0, 0.5))


def test_star_set_optima_match_a_scan_of_each_ray():
    rng = np.random.default_rng(5)
    star = sc.StarSet(unit_directions(rng, 10), 1.0)
    for _ in range(20):
        theta, gamma = rng.uniform(-1, 1, 2), rng.uniform(-1, 1, 2)
        limit = rng.uniform(0.05, 1.0)
        s = np.linspace(0.0, 1.0, 20001)
        pts = s[None, :, None] * star.directions[:, None, :]
        ok = pts @ gamma <= limit
        brute = np.max(np.where(ok, pts @ theta, -np.inf))
        exact = star.constrained_support(theta, gamma, limit)
        assert brute - 1e-12 <= exact <= brute + 1e-4
        assert star.support(theta) == pytest.approx(max(0.0, (star.endpoints @ theta).max()),
                                                    abs=0)


# ----------------------------------------------------------------------------- the problem
def test_problem_with_a_constraint_refuses_stagewise_policies_and_checks_gamma():
    star = sc.StarSet([[1.0, 0.0], [0.0, 1.0]], 1.0)
    problem = constraint_problem(star, gamma=(0.7, 0.5))
    for name in ("SEGE", "CLUCB"):
        with pytest.raises(TypeError, match=f"{name} runs on the stagewise floor .*, not on an "
                                            "unknown linear constraint with its own feedback: "
                                            "use ROFUL, GNOP, SafeTS"):
            problem.policy(name, 1)
    with pytest.raises(ValueError, match=r"\|\|gamma\*\|\| = 1.41421 exceeds S = 1"):
        constraint_problem(star, gamma=(1.0, 1.0))
    assert constraint_problem(star, gamma=(1.0, 1.0), S=1.5).assumption_violations() == []
    with pytest.raises(ValueError, match="not strictly safe"):
        constraint_problem(star, limit=-0.1)
    with pytest.raises(TypeError, match="GNOP runs on an unknown linear constraint with its own "
                                        "feedback, not on the stagewise floor"):
        sc.GNOP(floor_setting(star, [0.0, 0.0], 1.0, 0.5, noise_sd=0.1))
    on_theta = sc.BanditProblem.from_truth(star, theta_star=(0.6, 0.3), safe_arm=(0.0, 0.0),
                                           constraint=sc.LinearConstraint(0.5, B=np.eye(2)))
    with pytest.raises(TypeError, match="ROFUL runs on .*, not on a linear constraint <B x, "
                                        r"theta\*> <= c on the reward's parameter: use Safe-LUCB"):
        on_theta.policy("ROFUL", 1)
    # ROFUL learns the constraint from its own feedback: B's model has none.
    with pytest.raises(TypeError, match="^ROFUL runs on an unknown linear constraint with its own "
                                        "feedback, not on a linear constraint <B x"):
        sc.ROFUL(on_theta.setting)
    off = sc.BanditProblem.from_truth(sc.Ball([0.0, 0.0], 1.0), theta_star=(0.6, 0.3),
                                      safe_arm=(0.1, 0.0), constraint=sc.LinearConstraint(
                                          0.5, gamma_star=(0.5, 0.5), noise_sd=0.1))
    with pytest.raises(ValueError, match="GNOP works from the origin"):
        off.policy("GNOP", 1)


def test_simulate_refuses_a_gamma_beyond_the_s_the_policy_was_told():
    """ROFUL told S = 0.2 on a bandit whose ||gamma*|| = 0.9: refused in one line naming both,
    unless the study says it is misspecified."""
    star = SETS["star"]()
    theta = (0.12, 0.06)  # ||theta*|| = 0.134: within S, so only gamma* is named
    con = sc.LinearConstraint(0.3, gamma_star=(0.72, 0.54), noise_sd=0.1)
    setting = sc.SafeSetting(star, [0.0, 0.0], S=0.2, noise_sd=0.1,
                             safety=con.known([0.0, 0.0], theta))
    bandit = sc.LinearBandit(theta, 0.1, sc.run_seeds(0, 2)[1], constraint=con)
    with pytest.raises(ValueError, match=r"^\|\|gamma\*\|\| = 0.9 exceeds S = 0.2: the bandit "
                                         r"breaks what ROFUL was told \(pass misspecified=True "
                                         r"to study a misspecified problem\)$") as caught:
        sc.simulate(sc.ROFUL(setting, n_runs=2), bandit, 20)
    assert "\n" not in str(caught.value)
    result = sc.simulate(sc.ROFUL(setting, n_runs=2), bandit, 20, misspecified=True)
    assert result.stats.decision_counts.sum() == 40


def test_the_paper_problem_s_fingerprint_is_pinned():
    # Its setting and truth as 0.1.0 hashes them (the fingerprint of before 0.1.0 also hashed
    # the algorithms' constants a problem no longer carries): a change to the hash, or to what
    # it reads, shows here before it makes every sweep restart.
    assert paper_problem().fingerprint == (
        "439b0e2980e2fbadf1ffea59af7ec888de6239058d66519a1e2b842b755abec4")
    with_constraint = constraint_problem(sc.Box([-1.0, -1.0], [1.0, 1.0]))
    assert with_constraint.fingerprint != paper_problem().fingerprint


def test_simulate_refuses_a_policy_and_a_bandit_of_different_models():
    star = sc.StarSet([[1.0, 0.0], [0.0, 1.0]], 1.0)
    problem = constraint_problem(star)
    policy = problem.policy("ROFUL", 2)
    plain = sc.LinearBandit(problem.theta_star, 0.1, sc.run_seeds(0, 2)[1])
    with pytest.raises(ValueError, match="ROFUL was told a linear constraint but the bandit has "
                                         "none"):
        sc.simulate(policy, plain, 5)
    short = sc.LinearBandit(problem.theta_star, 0.1, draws=np.zeros((2, 3, 2)),
                            constraint=problem.constraint)
    with pytest.raises(ValueError, match="given draws cover 3 stages, fewer than the horizon 5"):
        sc.simulate(policy, short, 5)
    with pytest.raises(ValueError, match=r"draws must have shape \(n_runs, horizon, 2\)"):
        sc.LinearBandit(problem.theta_star, 0.1, draws=np.zeros((2, 3, 1)),
                        constraint=problem.constraint)
    with pytest.raises(TypeError, match="needs constraint_values"):
        x = policy.select()
        policy.observe(x, np.zeros(2))


# ----------------------------------------------------------------------------- the rules
def reference_choice(rule, theta_hat, gamma_hat, V, beta, dirs, caps, c, S):
    """The module docstring's rule in plain NumPy (V inverted directly): the arm."""
    V_inv = np.linalg.inv(V)
    w = np.sqrt(np.einsum("kj,jl,kl->k", dirs, V_inv, dirs))
    dot, cdot = dirs @ theta_hat, dirs @ gamma_hat
    unit = cdot - beta * w if rule == "ROFUL" else cdot + beta * w
    sigma = np.where(unit > 0, np.minimum(c / np.where(unit > 0, unit, 1), caps), caps)
    bonus = beta * w if rule == "ROFUL" else (1 + 2 * S / c) * beta * w
    value = sigma * (dot + bonus)
    k = int(np.argmax(value))
    if value[k] < 0:
        return np.zeros(dirs.shape[1])
    x = sigma[k] * dirs[k]
    if rule == "ROFUL":
        p = x @ gamma_hat + beta * math.sqrt(x @ V_inv @ x)
        mu = min(c / p, 1.0) if p > 0 else 1.0
        known = min((c / S) / np.linalg.norm(x), 1.0)
        x = max(known, mu) * x
    return x


@pytest.mark.parametrize("rule", ["ROFUL", "GNOP"])
def test_rule_matches_the_docstring_formula_on_random_states(rule):
    rng = np.random.default_rng(11)
    star = sc.StarSet(unit_directions(rng, 10), 1.0)
    problem = constraint_problem(star, limit=0.4, gamma=(0.5, -0.6), theta=(0.3, 0.8), S=1.5)
    policy = problem.policy(rule, 40)
    # A random history per run, through the policy's own observe (past the protocol's wrapper,
    # which takes only the arms select returned).
    learn = type(policy).observe.__wrapped__
    for _ in range(int(rng.integers(3, 30))):
        x = rng.uniform(-1, 1, (40, 2))
        learn(policy, x, rng.normal(size=40), rng.normal(size=40))
    arms = policy.select()
    conf, beta = policy.confidence, policy.radii()
    for i in range(40):
        ref = reference_choice(rule, conf.theta_hat[i], policy.gamma_hat[i], conf.V[i], beta[i],
                               star.directions, star.caps, 0.4, 1.5)
        assert np.allclose(arms[i], ref, rtol=1e-9, atol=1e-12), (i, arms[i], ref)
        assert on_ray_exactly(star, arms[i])


# ----------------------------------------------------------------------------- safety
def exactly_in(arm_set, x) -> bool:
    """Membership in rationals of the sets these tests use."""
    if isinstance(arm_set, sc.StarSet):
        return on_ray_exactly(arm_set, x)
    xq = [q(v) for v in x]
    if isinstance(arm_set, sc.Ball):  # centred at the origin, radius 1
        return sum(v * v for v in xq) <= 1
    if isinstance(arm_set, sc.Box):  # [-1, 1]^2
        return all(-1 <= v <= 1 for v in xq)
    # the user's cvxpy set: x1^2 + 2 x2^2 <= 1 and x1 + x2 <= 1.2
    return xq[0] ** 2 + 2 * xq[1] ** 2 <= 1 and xq[0] + xq[1] <= Fraction(6, 5)


SETS = {
    "star": lambda: sc.StarSet(unit_directions(np.random.default_rng(2), 10), 1.0),
    "ball": lambda: sc.Ball([0.0, 0.0], 1.0),
    "box": lambda: sc.Box([-1.0, -1.0], [1.0, 1.0]),
    "cvxpy": lambda: sc.ConvexArmSet(2, lambda x: [cp.square(x[0]) + 2 * cp.square(x[1]) <= 1,
                                                   x[0] + x[1] <= 1.2]),
}


@pytest.mark.parametrize("rule", ["ROFUL", "GNOP", "SafeTS"])
@pytest.mark.parametrize("set_name", list(SETS))
def test_no_violation_and_every_arm_exactly_in_the_set(rule, set_name):
    arm_set = SETS[set_name]()
    problem = constraint_problem(arm_set, limit=0.25, gamma=(0.7, 0.5), theta=(0.6, 0.3))
    n, T = 3, 150
    policy = problem.policy(rule, n, seed=5, **({} if rule == "SafeTS" else {"n_directions": 12}))
    bandit = problem.bandit(sc.run_seeds(4, n)[1])
    gamma = np.array(problem.constraint.gamma_star)
    for _ in range(T):
        arms = policy.select()
        assert all(exactly_in(arm_set, x) for x in arms)
        assert_certified(policy, arms, gamma, 0.25)
        feedback = bandit.feedback(arms)
        policy.observe(arms, feedback.observed, feedback.observed_constraint)
    assert policy.solver_fallbacks.sum() == 0
    played = policy.decision_counts[:, :2].sum()
    assert played > T  # it left the safe arm


@pytest.mark.parametrize(("rule", "set_name"), [
    ("ROFUL", "star"), ("GNOP", "star"), ("SafeTS", "star"), ("ROFUL", "ball"), ("GNOP", "box")])
def test_compiled_stages_are_bitwise_the_step_api(rule, set_name):
    problem = constraint_problem(SETS[set_name]())
    n, T = 5, 400
    compiled = problem.policy(rule, n, seed=2)
    assert compiled.compiled_stages
    result = sc.simulate(compiled, problem.bandit(sc.run_seeds(8, n)[1]), T, traces=True)
    stepped = problem.policy(rule, n, seed=2)
    bandit = problem.bandit(sc.run_seeds(8, n)[1])
    rewards = np.empty((T, n))
    for t in range(T):
        arms = stepped.select()
        feedback = bandit.feedback(arms)
        stepped.observe(arms, feedback.observed, feedback.observed_constraint)
        rewards[t] = feedback.mean
    assert np.array_equal(rewards, result.expected_reward)
    assert np.array_equal(stepped.decision_counts, compiled.decision_counts)
    assert np.array_equal(stepped.gamma_hat, compiled.gamma_hat)
    assert result.stats.total_violations.sum() == 0


def test_shrink_is_what_the_certificate_needs():
    assert SHRINK == 2.0 ** -40


# ----------------------------------------------------------------------------- the study
def test_authors_generator_draws_their_first_problem():
    # slb_short.py's draws with numpy.random.default_rng(0): theta, gamma, c, then directions.
    rng = np.random.default_rng(0)
    theta, gamma, c = rng.uniform(-1, 1, 2), rng.uniform(-1, 1, 2), rng.uniform(0.25, 1)
    problem = authors_trials("2a", 1)[0]
    assert np.array_equal(problem.theta_star, theta)
    assert problem.constraint.gamma_star == tuple(gamma)
    assert problem.constraint.limit == c
    assert problem.replayed_noise.shape == (50_000, 2)
    # ... drawn after the problem's numbers, and replayed by every run of its bandit.
    bandit = problem.bandit([None, None])
    first = bandit.pull(np.zeros((2, 2)))[1]
    np.testing.assert_array_equal(first, 0.1 * problem.replayed_noise[0, 0])
    assert problem.arm_set.n_directions == 10 and problem.arm_set.radius == 1.0


def test_roful_study_is_safe_and_gnop_pays_for_its_pessimism():
    study = run_roful_study("2a", n_trials=6, horizon=3000, workers=2)
    summary = study.summary()["algorithms"]
    assert summary["ROFUL"]["violating_stages"] == summary["GNOP"]["violating_stages"] == 0
    assert summary["ROFUL"]["fallbacks"] == summary["GNOP"]["fallbacks"] == 0
    # Their Figure 2a: GNOP's regret well above ROFUL's (here about 2x over these trials).
    assert summary["GNOP"]["R_T_mean"] > 1.5 * summary["ROFUL"]["R_T_mean"]
    assert study.stages[-1] == 3000 and study.regret["ROFUL"].shape == (6, len(study.stages))


def test_roful_study_is_a_sweep_of_the_trials_with_their_noise_replayed():
    from sege_cvx.experiments.roful2024 import DELTA, LAM, authors_problem

    study = run_roful_study("2b", n_trials=3, horizon=400, workers=1, algorithms=("ROFUL",))
    assert set(study.curves["problem"]) == {
        f"sege_cvx.experiments.roful2024:authors_problem(figure='2b', trial={k})"
        for k in range(3)}
    for k in range(3):  # each trial's sweep cell is simulate on that trial, bit for bit
        problem = authors_problem("2b", k)
        policy = problem.policy("ROFUL", 1, 0, lam=LAM, delta=DELTA)
        direct = sc.simulate(policy, problem.bandit([None]), 400,
                             checkpoints=study.stages.tolist())
        np.testing.assert_array_equal(study.regret["ROFUL"][k], direct.stats.regret[:, 0])
        assert study.violations["ROFUL"][k] == direct.stats.total_violations[0]
    with pytest.raises(ValueError, match=r"trial must be an int in 0..29, got 30"):
        authors_problem("2a", 30)


def test_reproduce_roful_2024_writes_the_figure_table_and_summary(tmp_path, capsys):
    import json

    import pandas as pd

    from sege_cvx.cli import main

    out = tmp_path / "r"
    assert main(["reproduce", "--study", "roful-2024", "--figure", "2a", "--horizon", "300",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "ROFUL paper, Figure 2a: ROFUL, GNOP on its 30 problems" in printed
    names = sorted(p.name for p in out.iterdir())
    assert names == ["fig2a_regret.pdf", "fig2a_regret.png", "manifest.json", "summary.json",
                     "trials.parquet"]
    summary = json.loads((out / "summary.json").read_text())["figures"]["2a"]
    assert summary["horizon"] == 300 and summary["trials"] == 30
    table = pd.read_parquet(out / "trials.parquet")
    assert len(table) == 60 and table.violations.sum() == 0
    for name, row in summary["algorithms"].items():
        mine = table[table.algorithm == name].regret_over_sqrt_T.to_numpy()
        assert row["R_T_over_sqrt_T_mean"] == pytest.approx(mine.mean(), rel=1e-12)


@pytest.mark.parametrize(("argv", "message"), [
    (["--study", "roful-2024", "--algorithms", "SEGE"],
     "SEGE runs on the stagewise floor (a reward floor below a known baseline arm), not on an "
     "unknown linear constraint"),
    (["--study", "roful-2024", "--algorithms", "Safe-LUCB"], "Safe-LUCB runs on a linear "
     "constraint <B x, theta*> <= c on the reward's parameter, not on an unknown linear"),
    (["--algorithms", "GNOP"], "GNOP runs on an unknown linear constraint with its own feedback,"
     " not on the stagewise floor"),
    (["--study", "roful-2024", "--horizon", "60000"],
     "--horizon: at most 50000 for Figure(s) 2a 2b, got 60000"),
])
def test_reproduce_refuses_a_policy_of_the_other_model_in_one_line(tmp_path, capsys, argv,
                                                                    message):
    from sege_cvx.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["reproduce", *argv, "--out", str(tmp_path / "r")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "r").exists()


# ----------------------------------------------------------------------------- sweeps
STAR_FACTORY = '''
import numpy as np
import sege_cvx as sc

def star():
    rays = np.array([[np.cos(a), np.sin(a)] for a in np.linspace(0, 2 * np.pi, 10, endpoint=False)])
    return sc.BanditProblem.from_truth(
        sc.StarSet(rays, 1.0), theta_star=[0.6, 0.3], safe_arm=[0.0, 0.0], S=1.0, noise_sd=0.1,
        name="star", constraint=sc.LinearConstraint(0.3, gamma_star=[0.7, 0.5], noise_sd=0.1))
'''


def test_a_sweep_puts_both_models_side_by_side(tmp_path, monkeypatch):
    from sege_cvx.experiments.spec import SpecError
    from sege_cvx.experiments.sweeps.report import write_report

    (tmp_path / "starprobs.py").write_text(STAR_FACTORY)
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = {"seed": 3, "runs": 4, "horizon": 300,
            "problems": [{"factory": "starprobs:star"}, {"name": "paper"}],
            "algorithms": [{"name": "ROFUL"}, {"name": "GNOP", "problems": ["starprobs:star"]},
                           {"name": "SEGE", "problems": ["paper"]}]}
    assert [(p.label, a.name) for p, a, _ in sc.StudySpec.from_dict(spec).cells()] == [
        ("starprobs:star", "ROFUL"), ("starprobs:star", "GNOP"), ("paper", "ROFUL"),
        ("paper", "SEGE")]
    results = sc.run_sweep(spec, tmp_path / "out", workers=1, progress=False)
    runs = results.runs
    assert len(runs) == 16 and runs.violations.sum() == 0
    problems = results.manifest["problems"]
    assert problems["starprobs:star"]["safety_model"] == "linear_constraint"
    assert problems["starprobs:star"]["threshold"] is None
    assert problems["starprobs:star"]["constraint_limit"] == 0.3
    assert problems["paper"]["threshold"] == pytest.approx(1.792)
    write_report(results, tmp_path / "report")
    table = (tmp_path / "report" / "table.md").read_text()
    assert "| starprobs:star |   2 |    - |     - |     0.3 |" in table
    wrong = dict(spec, algorithms=[{"name": "SEGE"}])
    with pytest.raises(SpecError, match="SEGE runs on the stagewise floor .* name the problems "
                                        "SEGE runs on in its"):
        sc.run_sweep(wrong, tmp_path / "wrong", workers=1, progress=False)
    with pytest.raises(SpecError, match=r"algorithms\[0\].problems: 'nope' is not a problem"):
        sc.StudySpec.from_dict(dict(spec, algorithms=[{"name": "SEGE", "problems": ["nope"]}]))
    again = dict(spec, algorithms=[{"name": "SEGE", "problems": ["paper"]},
                                   {"name": "SEGE", "problems": ["paper"]}])
    with pytest.raises(SpecError, match="again \\(on paper\\)"):
        sc.StudySpec.from_dict(again)
    round_trip = sc.StudySpec.from_dict(spec)
    assert sc.StudySpec.from_dict(round_trip.to_dict()) == round_trip


# ----------------------------------------------------------------------------- the protocol
class SafeOrigin(sc.Policy):
    """A user's policy of the linear-constraint model: the safe arm, and the mean of what it
    learned of the constraint (to use the third argument of observe)."""

    decision_names = ("origin",)
    safety_models = ("linear_constraint",)

    def __init__(self, setting, *, lam=1.0, n_runs=1, seed=None):
        super().__init__(setting, lam=lam, n_runs=n_runs, seed=seed)
        self.seen = np.zeros(self.n_runs)

    def select(self):
        self.last_decision = np.zeros(self.n_runs, dtype=np.int8)
        return np.tile(self.setting.safe_arm, (self.n_runs, 1))

    def observe(self, arms, rewards, constraint_values):
        self.seen += constraint_values


@pytest.mark.parametrize("cls", [sc.ROFUL, sc.GNOP, sc.SafeTS, SafeOrigin])
def test_check_policy_runs_the_constraint_model(cls):
    from sege_cvx.testing import check_policy

    check_policy(cls, constrained_problem(), stages=30)
    check_policy(cls, constraint_problem(SETS["box"]()), stages=10)


def test_check_policy_refuses_a_policy_on_another_model():
    from sege_cvx.testing import check_policy

    with pytest.raises(AssertionError, match="check_policy: SEGE runs on the stagewise floor"):
        check_policy(sc.SEGE, constrained_problem())
    check_policy(sc.GNOP, stages=5)  # its default problem is of its model


def test_safe_ts_samples_in_the_confidence_ellipsoid_and_solves_the_safe_set_program():
    """SafeTS's star-set scan is the exact solution of its program over the star; on a convex
    set the program's arm meets the estimated safe set and beats the safe arm for theta~."""
    from sege_cvx.policies.directional import sample_parameter

    rng = np.random.default_rng(4)
    L = np.array([[2.0, 0.0], [0.5, 1.5]])
    inv = np.linalg.inv(L)
    theta_hat = np.array([0.3, -0.2])
    for _ in range(200):
        z = rng.standard_normal(4)
        out = np.empty(2)
        sample_parameter(theta_hat, inv, 0.7, z, out)
        offset = out - theta_hat
        assert offset @ (L @ L.T) @ offset <= 0.7 ** 2 * (1 + 1e-12)
    problem = constraint_problem(SETS["box"](), limit=0.25)
    policy = problem.policy("SafeTS", 4, seed=1)
    bandit = problem.bandit(sc.run_seeds(2, 4)[1])
    for _ in range(30):
        arms = policy.select()
        fb = bandit.feedback(arms)
        policy.observe(arms, fb.observed, fb.observed_constraint)
    conf, beta = policy.confidence, policy.radii()
    arms = policy.select()
    width = np.sqrt(np.einsum("ij,ijk,ik->i", arms, np.linalg.inv(conf.V), arms))
    ucb = np.einsum("ij,ij->i", arms, policy.gamma_hat) + beta * width
    assert np.all(ucb <= 0.25) and np.all(np.abs(arms) <= 1.0)
    assert (policy.last_decision != 2).all()  # theta_hat favours leaving the origin here


# ----------------------------------------------------------------------------- Safe-LUCB
@pytest.mark.parametrize("set_name", ["star", "ball", "box", "cvxpy"])
def test_safe_lucb_is_safe_and_exactly_in_the_set(set_name):
    arm_set = SETS[set_name]()
    problem = b_problem(arm_set, limit=0.3)
    n = 2
    policy = problem.policy("Safe-LUCB", n, seed=3, exploration_stages=40, R=1.0)
    bandit = problem.bandit(sc.run_seeds(6, n)[1])
    gamma = -B_THEIRS.T @ problem.theta_star  # B^T theta* with B = -B_theirs
    for t in range(80):
        arms = policy.select()
        assert all(exactly_in(arm_set, x) for x in arms)
        if t < 40:
            # exploration: ||B x|| <= c / S, safe for every theta of norm <= S
            assert np.all(np.linalg.norm(arms @ B_THEIRS.T, axis=1) <= 0.3)
        assert np.all(arms @ gamma <= 0.3)
        policy.observe(arms, bandit.feedback(arms).observed)
    assert policy.decision_counts[:, 0].tolist() == [40, 40]
    assert policy.decision_counts[:, 1].sum() > 0 and policy.solver_fallbacks.sum() == 0


def test_safe_lucb_relaxation_contains_the_confidence_ellipsoid_and_checks_b():
    problem = b_problem(SETS["box"]())
    policy = problem.policy("Safe-LUCB", 1, seed=0, exploration_stages=5)
    rng = np.random.default_rng(0)
    for _ in range(12):
        arms = policy.select()
        policy.observe(arms, rng.normal(size=1))
    corners = policy.vertices()[0]
    conf, beta = policy.confidence, policy.radii()[0]
    root = np.linalg.cholesky(conf.V[0])
    # Points on the ellipsoid's boundary have l1-norm sqrt(d) beta at most in the vertices'
    # coordinates u = V^{1/2}(theta - theta_hat): inside their convex hull.
    values, vectors = np.linalg.eigh(conf.V[0])
    half = (vectors * np.sqrt(values)) @ vectors.T
    for _ in range(100):
        u = rng.normal(size=2)
        theta = conf.theta_hat[0] + np.linalg.solve(root.T, beta * u / np.linalg.norm(u))
        assert np.abs(half @ (theta - conf.theta_hat[0])).sum() <= np.sqrt(2) * beta * (1 + 1e-9)
    assert corners.shape == (4, 2)
    singular = sc.LinearConstraint(0.5, B=[[1.0, 2.0], [2.0, 4.0]])
    p2 = sc.BanditProblem.from_truth(SETS["box"](), theta_star=(0.3, 0.1), safe_arm=(0.0, 0.0),
                                     constraint=singular)
    with pytest.raises(ValueError, match="Safe-LUCB needs B invertible"):
        p2.policy("Safe-LUCB", 1)
    with pytest.raises(TypeError, match="Safe-LUCB runs on a linear constraint <B x"):
        constraint_problem(SETS["box"]()).policy("Safe-LUCB", 1)
    with pytest.raises(TypeError, match=r"^SafeLUCB runs on a linear constraint <B x, theta\*> <= c "
                                        "on the reward's parameter, not on an unknown linear "
                                        "constraint with its own feedback"):
        sc.SafeLUCB(constraint_problem(SETS["box"]()).setting)


def test_check_policy_runs_safe_lucb():
    from sege_cvx.testing import check_policy

    check_policy(sc.SafeLUCB, b_problem(SETS["box"]()), stages=12, exploration_stages=6)


def test_a_constraint_policy_with_a_two_argument_observe_is_told_what_to_take():
    with pytest.raises(TypeError, match=r"TwoArguments.observe must take \(self, arms, rewards, "
                                        r"constraint_values\)"):
        class TwoArguments(SafeOrigin):  # refused when the class is defined
            def observe(self, arms, rewards):
                pass

    # SEGE's c is not a constrained problem's default: there c is the constraint's limit.
    problem = constrained_problem()
    assert all("c" not in cls.defaults(problem) for cls in (sc.ROFUL, sc.GNOP, sc.SafeTS, SafeOrigin))
