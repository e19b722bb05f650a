"""Safe-LUCB's compiled stages on polytopes and boxes (the ``2d`` linear programs a stage solved
by the simplex method over the set cut by the estimated safe set's half-spaces, certified) and on
sets of second-order cones (the same programs by the interior-point method, every arm proven in
the set with its witness), checked against HiGHS and against the Clarabel path
(``method="solver"``)."""

from __future__ import annotations

from fractions import Fraction

import cvxpy as cp
import numpy as np
import pytest
from _exact import polytope_excess
from _same_runs import assert_same_simulations, simulate_on_threads
from problems import b_problem
from scipy.optimize import linprog

import sege_cvx as sc
from sege_cvx.arm_sets.kernels.status import VERIFIED
from sege_cvx.arm_sets.polytope import arms as polytope_arms
from sege_cvx.experiments import safe_lucb2019


def test_cut_programs_agree_with_highs_and_their_arms_lie_in_the_polytope_exactly():
    rng = np.random.default_rng(0)
    worst, solved = 0.0, 0
    for _ in range(12):
        d = int(rng.integers(2, 7))
        m = int(rng.integers(d + 1, 3 * d + 2))
        # Random rows and a bounding box around the origin (bounded; the origin inside).
        A = np.vstack([rng.normal(size=(m, d)), np.eye(d), -np.eye(d)])
        b = rng.uniform(0.5, 2.0, A.shape[0])
        polytope = sc.Polytope(A, b)
        n, k = 10, 2 * d
        thetas = rng.normal(size=(n, d))
        cuts = rng.normal(size=(n, k, d)) * rng.uniform(0.1, 3.0, (n, 1, 1))
        arms, status = polytope_arms.greedy_within_all(polytope.compiled_arms.geometry(), thetas,
                                                       cuts, 0.5, np.zeros(d))
        assert (status == VERIFIED).all()
        for theta, cut, arm in zip(thetas, cuts, arms, strict=True):
            reference = linprog(-theta, A_ub=np.vstack([A, cut]), b_ub=np.r_[b, np.full(k, 0.5)],
                                bounds=[(None, None)] * d, method="highs")
            assert reference.status == 0
            worst = max(worst, abs(theta @ arm + reference.fun) / max(1.0, abs(reference.fun)))
            assert polytope_excess(A, b, arm) <= 0  # the user's rows, in rationals
            # The cuts as solved (rows scaled to unit norm): met up to that rounding.
            assert np.max(cut @ arm - 0.5) <= 1e-12
            solved += 1
    assert solved == 120
    assert worst <= 1e-9  # certified to a relative gap of 1e-10 (measured: about 1e-13)


def _stepped(policy, other, problem, stages):
    """Both policies stage by stage on the same noise; the largest arm difference."""
    rng = np.random.default_rng(5)
    theta, worst = problem.theta_star, 0.0
    for _ in range(stages):
        x, y = policy.select(), other.select()
        assert (policy.last_decision == other.last_decision).all()
        worst = max(worst, float(np.abs(x - y).max()))
        noise = 0.01 * rng.standard_normal(policy.n_runs)
        policy.observe(x, x @ theta + noise)
        other.observe(y, y @ theta + noise)
    return worst


def test_compiled_stages_agree_with_clarabel_on_the_authors_problem():
    problem = safe_lucb2019.problem()
    compiled = problem.policy("Safe-LUCB", 3, seed=0, exploration_stages=30)
    solver = problem.policy("Safe-LUCB", 3, seed=0, exploration_stages=30, method="solver")
    assert compiled.compiled_stages and not solver.compiled_stages
    assert compiled.summary(None, [])["compiled"] and not solver.summary(None, [])["compiled"]
    worst = _stepped(compiled, solver, problem, 150)
    assert 0.0 < worst <= 1e-6  # Clarabel's tolerance; measured about 3e-9
    assert compiled.decision_counts[:, 1].tolist() == [120, 120, 120]
    assert compiled.solver_fallbacks.sum() == 0 and solver.solver_fallbacks.sum() == 0


def test_compiled_arms_are_safe_and_exactly_in_the_box():
    problem = safe_lucb2019.problem()
    n = 4
    policy = problem.policy("Safe-LUCB", n, seed=2, exploration_stages=50)
    result = sc.simulate(policy, problem.bandit(sc.run_seeds(3, n)[1]), 400)
    assert result.stats.total_violations.sum() == 0
    assert policy.decision_counts.tolist() == [[50, 350, 0]] * n
    # Every optimistic arm: in the box in rationals, and under each vertex's bound as played.
    arms, bounds = [], policy.vertices() @ policy.B
    for _ in range(30):
        x = policy.select()
        arms.append(x)
        assert (np.einsum("ikj,ij->ik", bounds, x).max(axis=1) <= policy.margin).all()
        policy.observe(x, x @ problem.theta_star)
        bounds = policy.vertices() @ policy.B
    box = problem.arm_set
    for x in np.concatenate(arms):
        assert all(Fraction(float(lo)) <= Fraction(float(v)) <= Fraction(float(hi))
                   for lo, v, hi in zip(box.lower, x, box.upper, strict=True))


def _in_epigraph(x) -> bool:
    """``exists t: ||x||_1 <= t <= 1.5, ||x|| <= 1.2``, in rationals."""
    a, b = Fraction(float(x[0])), Fraction(float(x[1]))
    return abs(a) + abs(b) <= Fraction(3, 2) and a * a + b * b <= Fraction(36, 25)


def _epigraph(x):
    """An auxiliary variable of the user's: each exploring arm's witness solved in the stage."""
    t = cp.Variable()
    return [cp.norm1(x) <= t, t <= 1.5, cp.norm(x) <= 1.2]


def test_compiled_stages_on_a_cone_set_agree_with_clarabel_and_lie_in_it_exactly():
    problem = b_problem(sc.ConvexArmSet(2, _epigraph, compiled=True))
    compiled = problem.policy("Safe-LUCB", 3, seed=0, exploration_stages=20)
    solver = problem.policy("Safe-LUCB", 3, seed=0, exploration_stages=20, method="solver")
    assert compiled.compiled_stages and not solver.compiled_stages
    # The cuts 1e-8 inside c and Clarabel's tolerance: measured 1.7e-6 (2.6e-6 on a ball cut
    # by a half-space).
    assert _stepped(compiled, solver, problem, 60) <= 1e-5
    assert compiled.decision_counts[:, 1].tolist() == [40, 40, 40]
    assert compiled.solver_fallbacks.sum() == 0 and solver.solver_fallbacks.sum() == 0
    # Every arm, exploring and optimistic: in the set in rationals (the user's own data), and
    # an optimistic one under each vertex's bound as played.
    policy = problem.policy("Safe-LUCB", 2, seed=1, exploration_stages=10)
    for _ in range(30):
        bounds = policy.vertices() @ policy.B if policy.t >= 10 else None
        x = policy.select()
        assert all(_in_epigraph(row) for row in x)
        if bounds is not None:
            assert (np.einsum("ikj,ij->ik", bounds, x).max(axis=1) <= policy.margin).all()
        policy.observe(x, x @ problem.theta_star)
    assert policy.decision_counts.tolist() == [[10, 20, 0]] * 2
    # Each run's programs warm started from its own previous solutions: the same on one thread
    # and two, and stage by stage through the step API.
    seeds = sc.run_seeds(6, 3)
    runs = [simulate_on_threads(problem.policy("Safe-LUCB", 3, seed=seeds[0],
                                               exploration_stages=10),
                                problem.bandit(seeds[1]), 40, threads, traces=True)
            for threads in (1, 2)]
    assert_same_simulations(*runs)
    stepped, bandit = problem.policy("Safe-LUCB", 3, seed=seeds[0], exploration_stages=10), \
        problem.bandit(seeds[1])
    for t in range(40):
        x = stepped.select()
        feedback = bandit.feedback(x)
        np.testing.assert_array_equal(feedback.mean, runs[0].expected_reward[t])
        stepped.observe(x, feedback.observed)


def test_an_uncertified_program_plays_the_safe_arm_and_is_counted():
    problem = b_problem(sc.Box([-1.0, -1.0], [1.0, 1.0]))
    box = problem.arm_set
    arms = box.compiled_arms
    box.__dict__["compiled_arms"] = polytope_arms.PolytopeArms(
        arms.A, arms.b, arms.center, arms.norm_bound, arms.radius, arms.member, gap_rtol=-1.0)
    policy = problem.policy("Safe-LUCB", 2, seed=0, exploration_stages=5)
    result = sc.simulate(policy, problem.bandit(sc.run_seeds(1, 2)[1]), 12)
    assert policy.decision_counts.tolist() == [[5, 0, 7]] * 2
    assert policy.solver_fallbacks.tolist() == [7, 7]
    assert policy.fallback_reasons == {"NotCertified": 14}
    assert result.stats.total_violations.sum() == 0


def test_method_is_validated_and_other_sets_use_clarabel():
    problem = safe_lucb2019.problem()
    with pytest.raises(ValueError, match=r"method must be one of \('auto', 'solver'\), got 'lp'"):
        problem.policy("Safe-LUCB", 1, method="lp")
    ball = b_problem(sc.Ellipsoid([0.0, 0.0], np.eye(2)))
    assert not ball.policy("Safe-LUCB", 1).compiled_stages
