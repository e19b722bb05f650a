"""The compiled evaluation of cvxpy constraints (arm_sets.evaluation) and the pull-in's search
from a start (pull_in.least_contraction): the same numbers and the same decisions as cvxpy's
own evaluation and as the schedule tried from its first contraction."""

import cvxpy as cp
import numpy as np
import pytest

import sege_cvx as sc
from sege_cvx.arm_sets.evaluation import ConstraintEvaluator, compile_expression
from sege_cvx.arm_sets.kernels import pull_in


def _expressions(x, u):
    c = np.array([1.0, -0.5, 0.25])
    Q = np.array([[2.0, 0.3, 0.0], [0.3, 1.0, 0.1], [0.0, 0.1, 0.5]])
    return [
        cp.pnorm(x - c, 1.5) - 1,
        cp.norm(x, 2) + cp.norm1(u) - 3,
        cp.quad_form(x, Q) - u[0],
        cp.log_sum_exp(x) + cp.sum_squares(u) - 2,
        cp.maximum(x[0] + 2 * x[1], -x[2]) - cp.abs(u[1]),
        cp.norm_inf(cp.hstack([x, u])) - 1,
        cp.sum(cp.multiply(c, x)) - cp.geo_mean(cp.hstack([u[0] + 2, u[1] + 2])),
        x[1:] @ np.ones(2) - 0.5,
    ]


def test_compiled_expressions_equal_cvxpy_bitwise():
    x, u = cp.Variable(3), cp.Variable(2)
    slots = {x.id: 0, u.id: 1}
    rng = np.random.default_rng(0)
    for expr in _expressions(x, u):
        f = compile_expression(expr, slots)
        assert f is not None, expr
        for _ in range(50):
            xv, uv = rng.standard_normal(3), rng.standard_normal(2)
            x.save_value(xv)
            u.save_value(uv)
            with np.errstate(invalid="ignore"):  # geo_mean of negative entries: NaN, both ways
                expect = np.asarray(expr.value)
                got = np.asarray(f((xv, uv)))
            assert got.shape == expect.shape
            assert np.array_equal(got, expect, equal_nan=True), expr


def test_atoms_with_their_own_evaluation_and_cones_go_to_cvxpy():
    X = cp.Variable((2, 2))
    x = cp.Variable(2)
    assert compile_expression(cp.lambda_max(X) - 1, {X.id: 0}) is None
    assert compile_expression(cp.pnorm(x, 2), {}) is None  # an unknown variable
    evaluator = ConstraintEvaluator([cp.SOC(1 - x[0], x[1:]), cp.norm(x) <= 2], [x])
    assert len(evaluator.others) == 1 and len(evaluator.inequalities) == 1
    assert evaluator.inequalities_hold((np.array([0.5, 0.4]),), 0.0)
    assert not evaluator.inequalities_hold((np.array([0.5, 0.6]),), 0.0)  # the cone fails
    assert np.isnan(evaluator.contraction_start((np.array([0.5, 0.6]),), []))


def test_contraction_start_is_conservative_and_nan_safe():
    x = cp.Variable(2)
    evaluator = ConstraintEvaluator([cp.pnorm(x - 1, 1.5) <= 1, x[0] <= 1.9], [x])
    center = evaluator.margins((np.ones(2),))
    rng = np.random.default_rng(1)
    for _ in range(200):
        g = rng.standard_normal(2)
        point = 1 + (1 + 10 ** rng.uniform(-12, -3)) * g / np.linalg.norm(g, 1.5)
        start = evaluator.contraction_start((point,), center)
        assert 0 < start < 1
        moved = 1 + (1 - start * (1 + 1e-9)) * (point - 1)
        assert evaluator.inequalities_hold((moved,), 1e-15)
    assert evaluator.contraction_start((np.ones(2),), center) == 0.0
    assert np.isnan(evaluator.contraction_start((np.array([np.nan, 1.0]),), center))


@pytest.mark.parametrize("start", [0.0, 1e-12, 3e-9, 1e-3])
def test_search_from_a_start_finds_the_schedules_contraction(start):
    limit = pull_in.MAX_CONTRACTION
    schedule = pull_in.contractions(limit)
    assert schedule[0] == pull_in.FIRST_CONTRACTION and schedule[-1] == limit
    for threshold in [*schedule, 0.0, 2e-10, 1.0]:  # passes from `threshold` on (monotone)
        tried = []

        def trial(eps, tried=tried, threshold=threshold):
            tried.append(eps)
            return eps if eps >= threshold else None

        linear = next((eps for eps in schedule if eps >= threshold), None)
        assert pull_in.least_contraction(trial, limit, start) == linear
        assert len(tried) == len(set(tried))  # each contraction tried at most once
        if start == 0.0:
            assert tried == schedule[:len(tried)]  # the schedule itself, in order


def test_pull_in_with_and_without_the_start_agree():
    # An exponential-cone set (a set of second-order cones is proven by its cone rows instead,
    # arm_sets.cone): log(sum(exp(x))) <= 1, whose boundary moves with x + c 1 by c.
    arm_set = sc.ConvexArmSet(3, lambda x: [cp.log_sum_exp(x) <= 1, x >= -4])
    assert arm_set._cone_arms is None
    rng = np.random.default_rng(2)
    g = rng.uniform(-1.0, 1.0, (300, 3))
    lse = np.log(np.exp(g).sum(axis=1, keepdims=True))
    points = g + (1.0 - lse) + 10 ** rng.uniform(-13, -6, (300, 1))
    assert not arm_set.contains(points, tol=0.0).any()
    fast, ok = arm_set.pull_inside(points)
    slow = points.copy()
    arm_set._contraction_start = lambda x: 0.0  # the schedule from its first contraction
    ok_slow = arm_set._pull_in(slow)
    assert ok.all() and ok_slow.all()
    assert np.array_equal(fast, slow)
    assert arm_set.contains(fast, tol=0.0).all()


def test_equalities_of_a_plain_set_are_checked_as_cvxpy_does():
    # An equality that holds in exact arithmetic but not to the last bit (found by a helper):
    # cvxpy's violation() is 1.1e-16 here, so the point is outside at tol=0 and inside at 1e-15.
    def fn(x):
        return [cp.norm(x) <= 1, cp.sum(x) == x[2] + x[1] + x[0]]

    arm_set = sc.ConvexArmSet(3, fn)
    point = np.array([0.1, 0.2, 0.3])
    x = cp.Variable(3)
    cons = fn(x)
    x.value = point
    expect = all(np.all(c.violation() <= 0.0) for c in cons)
    assert bool(arm_set.contains(point, tol=0.0)) == expect
    assert arm_set.contains(point, tol=1e-15)


def test_an_uncompilable_equality_keeps_its_repair_and_rounding_bound():
    # A term with a zero-size index cannot be compiled: cvxpy evaluates it, and it is still an
    # equality of the lifted set (repaired, with its rounding allowance).
    P = np.array([[1.0, 0], [0, 1], [-1, 0], [0, -1], [0.7, 0.7], [-0.3, 0.9]])

    def hull(x):
        w = cp.Variable(6, nonneg=True)
        return [x == P.T @ w + cp.sum(w[0:0]), cp.sum(w) == 1]

    arm_set = sc.ConvexArmSet(2, hull)
    assert len(arm_set._lifted.evaluator.equalities) == 2
    assert arm_set.contains([0.3, 0.2])


def test_constraints_are_checked_in_their_order():
    # The first constraint fails: the second, whose numeric raises on this point, is not reached.
    def fn(x):
        e = 1e10 * x[0] - 1e10 * x[0] + x[1]  # x[1]; NaN once 1e10 x[0] overflows
        M = cp.reshape(cp.hstack([e, x[1], x[2], x[3]]), (2, 2), order="F")
        return [cp.SOC(cp.Constant(1.0), x), cp.sigma_max(M) <= 5]

    arm_set = sc.ConvexArmSet(4, fn)
    assert not arm_set.contains([1e300, 0, 0, 0])
    assert not arm_set.pull_inside(np.array([[1e300, 0, 0, 0]]))[1][0]


def test_points_outside_an_atoms_domain_are_outside():
    # cvxpy's violation() says inv_pos(-1) <= 2 holds (-1 <= 2); the set is [0.5, 3].
    arm_set = sc.ConvexArmSet(1, lambda x: [cp.inv_pos(x) <= 2, x <= 3])
    assert not arm_set.contains([-1.0], tol=0.0)
    assert arm_set.contains([[0.5], [1.0], [3.0]], tol=0.0).all()
    lifted = sc.ConvexArmSet(1, lambda x: [cp.quad_over_lin(x, (t := cp.Variable())) <= 1,
                                           t <= 1, x >= -1])
    # (x, t) = (0.5, -1): 0.25 / -1 <= 1 holds numerically, but t >= 0 is the atom's domain.
    assert not lifted._lifted.holds(np.array([0.5]), np.array([-1.0]), 0.0)
    assert lifted._lifted.holds(np.array([0.5]), np.array([1.0]), 0.0)
