"""Lifted arm sets (constraints with auxiliary variables) and ConvexHull: every arm certified with
a witness, SEGE and CLUCB on them, and the refusals."""

import copy
import pickle

import cloudpickle
import cvxpy as cp
import numpy as np
import pytest
from problems import floor_setting

import sege_cvx as sc
from sege_cvx.arm_sets.discretization import discretize_with_witnesses
from sege_cvx.arm_sets.exploration import Exploration
from sege_cvx.conic import SolverFailure
from sege_cvx.conic.compiled import ConicSolution

THETA = np.array([0.6, 0.8])
#: The square [0, 2]^2 with an interior point given twice: duplicates and interior points.
SQUARE = np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0], [2.0, 2.0], [1.0, 1.0], [1.0, 1.0]])


def hull_by_weights(x):
    w = cp.Variable(len(SQUARE))
    return [x == SQUARE.T @ w, w >= 0, cp.sum(w) == 1]


def l1_epigraph(x):
    """The l1 ball of radius 1.5 about (1, 1), through its epigraph variable t."""
    t = cp.Variable()
    return [cp.norm1(x - 1.0) <= t, t <= 1.5]


def minkowski(x):
    """The disk of radius 1 about (1, 1) plus the box [-0.5, 0.5]^2."""
    y, z = cp.Variable(2), cp.Variable(2)
    return [x == y + z, cp.norm(y - 1.0) <= 1, z >= -0.5, z <= 0.5]


def exactly_inside(name, xs):
    """Independent closed-form membership, at tol 0, of the sets above."""
    xs = np.atleast_2d(xs)
    if name in ("hull", "ConvexHull"):
        return np.all((xs >= 0.0) & (xs <= 2.0), axis=1)
    if name == "epigraph":
        return np.abs(xs - 1.0).sum(axis=1) <= 1.5
    gap = np.maximum(np.abs(xs - 1.0) - 0.5, 0.0)  # Minkowski: distance to the box <= 1
    return np.sqrt((gap**2).sum(axis=1)) <= 1.0


FUNCS = {"hull": hull_by_weights, "epigraph": l1_epigraph, "minkowski": minkowski}
SETS = {}


def arm_set(name):
    """Built once per session: construction solves a few programs."""
    if name not in SETS:
        SETS[name] = sc.ConvexHull(SQUARE) if name == "ConvexHull" else sc.ConvexArmSet(2, FUNCS[name])
    return SETS[name]


NAMES = ["hull", "epigraph", "minkowski", "ConvexHull"]
WITNESS_DIM = {"hull": 6, "epigraph": 1, "minkowski": 4, "ConvexHull": 6}


def direct(name, objective):
    """Solve ``max objective(x)`` over the set with cvxpy directly."""
    x = cp.Variable(2)
    cons = hull_by_weights(x) if name == "ConvexHull" else FUNCS[name](x)
    problem = cp.Problem(cp.Maximize(objective(x)), cons)
    problem.solve(solver=cp.CLARABEL)
    return x.value, problem.value


@pytest.mark.parametrize("name", NAMES)
def test_construction_certifies_an_exploration_with_witnesses(name):
    s = arm_set(name)
    expl = s.exploration()
    assert s.witness_dim == WITNESS_DIM[name]
    assert expl.kind == "cross" and expl.witnesses.shape == (4, s.witness_dim)
    assert s.certify_exploration(expl)
    assert exactly_inside(name, expl.vertices()).all() and exactly_inside(name, expl.center).all()


@pytest.mark.parametrize("name", NAMES)
def test_greedy_and_lcb_arms_match_a_direct_solve_and_carry_their_witnesses(name):
    s = arm_set(name)
    thetas = np.random.default_rng(3).standard_normal((6, 2))
    greedy = s.greedy_arm_batch(thetas)
    V = np.array([[2.0, 0.5], [0.5, 1.0]])
    chol = np.linalg.cholesky(V)
    P = np.linalg.inv(chol).T  # ||x||_{V^{-1}} = ||P^T x||
    lcb = s.lcb_arm_batch(thetas, np.repeat(chol[None], 6, 0), np.full(6, 0.7))
    for result in (greedy, lcb):
        assert result.ok.all() and result.witnesses.shape == (6, s.witness_dim)
        assert exactly_inside(name, result.arms).all()
        # The witnesses certify the arms as they are: nothing moves.
        again, ws, ok = s.pull_inside(result.arms, result.witnesses, return_witnesses=True)
        assert ok.all() and np.array_equal(again, result.arms)
    for i, theta in enumerate(thetas):
        _, best = direct(name, lambda x, th=theta: th @ x)
        assert greedy.arms[i] @ theta == pytest.approx(best, abs=1e-7)
        _, best = direct(name, lambda x, th=theta: th @ x - 0.7 * cp.norm(P.T @ x))
        got = lcb.arms[i] @ theta - 0.7 * np.linalg.norm(P.T @ lcb.arms[i])
        assert got == pytest.approx(best, abs=1e-7)


def test_pinned_arms():
    # Greedy arms of the epigraph (l1 ball of radius 1.5 about (1, 1)) and of the Minkowski sum.
    np.testing.assert_allclose(arm_set("epigraph").greedy_arm([1.0, 0.2]), [2.5, 1.0], atol=1e-9)
    s = arm_set("minkowski")
    u = np.array([3.0, 4.0]) / 5.0
    np.testing.assert_allclose(s.greedy_arm([3.0, 4.0]), 1.0 + u + 0.5, atol=1e-7)
    np.testing.assert_array_equal(arm_set("ConvexHull").greedy_arm([[1.0, -0.5], [-1, -1]]),
                                  [[2.0, 0.0], [0.0, 0.0]])


@pytest.mark.parametrize("name", NAMES)
def test_contains_decides_by_a_solve_and_certifies_the_witness(name):
    s = arm_set(name)
    rng = np.random.default_rng(4)
    points = rng.uniform(-1.0, 3.0, (30, 2))
    truth = exactly_inside(name, points)
    # Away from the boundary by more than the solver's tolerance, the verdicts are exact.
    far = np.array([abs(float(exactly_inside(name, p + 1e-6 * d).all()) - t) == 0
                    for p, t in zip(points, truth, strict=True) for d in np.eye(2)]).reshape(30, 2)
    keep = far.all(axis=1)
    np.testing.assert_array_equal(s.contains(points[keep], tol=0.0), truth[keep])
    assert not s.contains([50.0, 1.0]) and not s.contains([1.0, -0.8], tol=1e-9)


@pytest.mark.parametrize("name", NAMES)
def test_sege_clucb_and_roful_play_only_certified_arms(name):
    s = arm_set(name)
    policy = sc.SEGE(floor_setting(s, [1.0, 1.0], 1.4, 0.6, noise_sd=0.3), c=0.01, n_runs=2, seed=1)
    setting = floor_setting(s, [1.0, 1.0], 1.4, 1.2, noise_sd=0.3)
    clucb = sc.CLUCB(setting, n_arms=12, n_runs=2)
    roful = sc.StagewiseROFUL(setting, n_directions=12, n_runs=2)
    assert policy.setting.safe_witness.shape == (s.witness_dim,)
    assert clucb.arm_witnesses.shape == (12, s.witness_dim)
    for pol in (policy, clucb, roful):
        bandit = sc.LinearBandit(THETA, 0.3, sc.run_seeds(5, 2)[1])
        played = []
        for _ in range(200):
            x = pol.select()
            _, y = bandit.pull(x)
            pol.observe(x, y)
            played.append(x)
        played = np.concatenate(played)
        assert exactly_inside(name, played).all()  # independent test, tol 0
        assert s.contains(played, tol=1e-7).all()  # the set's own, decided by a solve
    assert policy.solver_fallbacks.sum() == 0 and roful.solver_fallbacks.sum() == 0
    assert policy.decision_counts[:, 0].sum() > 0 and policy.decision_counts[:, 1:].sum() > 0
    assert roful.decision_counts[:, :2].min() > 0  # full and scaled steps, off the baseline


def test_equalities_hold_to_their_rounding_bound_only():
    # x = P^T w, sum(w) = 1 at an interior point: a residual of 1e-12 is far beyond the rounding
    # bound (a few ulps of the terms, ~1e-15 here), so the pair fails until the witness is
    # repaired onto the equalities for this x.
    lifted = arm_set("ConvexHull")._lifted
    w = np.full(6, 1.0 / 6.0)
    x = SQUARE.T @ w
    assert lifted.holds(x, w, 0.0)
    assert not lifted.holds(x + 1e-12, w, 0.0)
    good, repaired = lifted.certify(x + 1e-12, w, 0.0)
    assert good and 0 < np.max(np.abs(repaired - w)) < 1e-11


def test_exploration_arms_carry_their_vertex_witness():
    expl = arm_set("epigraph").exploration()
    g = np.random.default_rng(0).standard_normal((50, 2))
    idx = expl.vertex_indices(g)
    np.testing.assert_array_equal(expl.points(g), expl.vertices()[idx])
    np.testing.assert_array_equal(expl.witness_points(g), expl.witnesses[idx])
    assert expl.vertex_indices(np.zeros((1, 2)))[0] == 4  # 2d: the centre's row
    np.testing.assert_array_equal(expl.witness_points(np.zeros((1, 2)))[0], expl.center_witness)


def test_convex_combinations_of_certified_arms_carry_the_combined_witnesses():
    # What ROFUL does: (1 - tau) x0 + tau p_j with (1 - tau) w0 + tau w_j.
    s = arm_set("hull")
    greedy = s.greedy_arm_batch(np.random.default_rng(2).standard_normal((20, 2)))
    policy = sc.SEGE(floor_setting(s, [0.5, 0.5], 1.0, 0.8, noise_sd=0.3))
    tau = np.linspace(0.0, 1.0, 20)[:, None]
    points = (1.0 - tau) * policy.setting.safe_arm + tau * greedy.arms
    ws = (1.0 - tau) * policy.setting.safe_witness + tau * greedy.witnesses
    moved, ok = s.pull_inside(points, ws)
    assert ok.all() and np.max(np.abs(moved - points)) < 1e-12


def test_a_failed_or_unverifiable_solve_is_never_played(monkeypatch):
    s = sc.ConvexArmSet(2, l1_epigraph)
    outside = ConicSolution(x=np.array([3.0, 1.0]), status="Solved", tier=0, solve_seconds=0.0,
                            wall_seconds=0.0, iterations=1, aux=np.array([1.5]))
    monkeypatch.setattr(s._lcb_program, "solve", lambda *a: outside)
    # Clarabel's path (the set's compiled cone program is its "closed_form").
    result = s.lcb_arm_batch(np.ones((1, 2)), np.eye(2)[None], np.ones(1), "solver")
    assert not result.ok[0] and result.status == ["NotMember"] and np.isnan(result.witnesses).all()
    with pytest.raises(SolverFailure, match="outside"):
        s.lcb_arm(np.ones(2), np.eye(2), 1.0, method="solver")
    # The Clarabel path (SEGE's compiled stages on this set solve their own programs).
    policy = sc.SEGE(floor_setting(s, [1.0, 1.0], 1.4, 1.2, noise_sd=0.3), c=1e9, n_runs=2, seed=0,
                     lcb_method="solver")
    for _ in range(5):
        x = policy.select()
        assert exactly_inside("epigraph", x).all()
        policy.observe(x, x @ THETA)
    assert policy.solver_fallbacks.tolist() == [5, 5]
    assert policy.fallback_reasons == {"NotMember": 10}


@pytest.mark.parametrize("name", ["epigraph", "ConvexHull"])
def test_lifted_sets_pickle_and_give_the_same_arms(name):
    s = sc.ConvexHull(SQUARE) if name == "ConvexHull" else sc.ConvexArmSet(2, FUNCS[name])
    thetas = np.random.default_rng(1).standard_normal((4, 2))

    def exercise(a):
        return (a.greedy_arm_batch(thetas), a.lcb_arm_batch(thetas, np.repeat(np.eye(2)[None], 4, 0),
                                                             np.full(4, 0.5)),
                a.contains(np.array([[1.0, 1.2], [2.4, 0.0]])))

    before = exercise(s)
    for loaded in (pickle.loads(pickle.dumps(s)), cloudpickle.loads(cloudpickle.dumps(s)),
                   copy.deepcopy(s)):
        assert not set(loaded._UNPICKLED_CACHES) & set(loaded.__dict__)
        after = exercise(loaded)
        for got, want in zip(after[:2], before[:2], strict=True):
            np.testing.assert_array_equal(got.arms, want.arms)
            np.testing.assert_array_equal(got.witnesses, want.witnesses)
        np.testing.assert_array_equal(after[2], before[2])


def weighted_columns(x):
    """x = W c with a matrix auxiliary variable: the witness is W flattened column-major."""
    W = cp.Variable((2, 3))
    return [x == W @ np.array([0.5, 0.3, 0.2]), W[0, :] <= np.array([1.0, 2.0, 3.0]), W >= -1,
            W[1, :] <= 1]


def test_a_matrix_auxiliary_variable_is_a_column_major_witness():
    s = sc.ConvexArmSet(2, weighted_columns)
    result = s.greedy_arm_batch(np.array([[1.0, 1.0], [1.0, -1.0]]))
    assert s.witness_dim == 6 and result.ok.all()
    np.testing.assert_allclose(result.arms, [[1.7, 1.0], [1.7, -1.0]], atol=1e-8)
    np.testing.assert_allclose(result.witnesses, [[1, 1, 2, 1, 3, 1], [1, -1, 2, -1, 3, -1]],
                               atol=1e-7)


def boolean_choice(x):
    b = cp.Variable(boolean=True)
    return [x >= 0, x <= 1 + b]


def integer_choice(x):
    k = cp.Variable(integer=True)
    return [x >= 0, x <= k, k <= 2]


SHARED = cp.Variable()


def shared_aux(x):
    return [cp.norm1(x) <= SHARED, SHARED <= 1]


def complex_aux(x):
    z = cp.Variable(complex=True)
    return [cp.abs(x) <= 1, cp.abs(z) <= 1]


def sparse_aux(x):
    M = cp.Variable((2, 2), sparsity=[(0, 1), (0, 1)])
    return [cp.abs(x) <= 1, cp.sum(M) <= 1]


def unvalued_parameter(x):
    return [cp.abs(x - cp.Parameter(2)) <= 1]


@pytest.mark.parametrize(("fn", "match"), [
    (boolean_choice, "must be convex: variable .* is boolean"),
    (integer_choice, "must be convex: variable .* is integer"),
    (shared_aux, "shared by every call"),
    (complex_aux, "is complex: arms and their witnesses are real"),
    (sparse_aux, "declared sparsity: state it as constraints"),
    (unvalued_parameter, "Parameter .* has no value"),
])
def test_unsupported_auxiliary_variables_are_refused(fn, match):
    with pytest.raises(ValueError, match=match):
        sc.ConvexArmSet(2, fn)


def test_a_user_exploration_on_a_lifted_set_needs_witnesses():
    s = arm_set("epigraph")
    bare = Exploration(np.ones(2), 0.5 * np.eye(2), "cross")
    with pytest.raises(ValueError, match="needs the witnesses"):
        sc.SEGE(floor_setting(s, [1.0, 1.0], 1.4, 1.2, noise_sd=0.3), exploration=bare)
    verts, ws, ok = s.pull_inside(bare.vertices(), return_witnesses=True)
    _, wc, _ = s.pull_inside(bare.center[None], return_witnesses=True)
    assert ok.all() and np.array_equal(verts, bare.vertices())
    given = Exploration(bare.center, bare.B, "cross", ws, wc[0])
    policy = sc.SEGE(floor_setting(s, [1.0, 1.0], 1.4, 1.2, noise_sd=0.3), exploration=given)
    assert policy.exploration is given


# ----------------------------------------------------------------- ConvexHull
def test_convex_hull_greedy_arm_is_the_best_point_exactly():
    rng = np.random.default_rng(7)
    points = rng.standard_normal((40, 3))
    hull = sc.ConvexHull(points)
    thetas = rng.standard_normal((200, 3))
    result = hull.greedy_arm_batch(thetas)
    values = sum(thetas[:, None, k] * points[None, :, k] for k in range(3))  # in index order
    best = np.argmax(values, axis=1)
    np.testing.assert_array_equal(result.arms, points[best])
    np.testing.assert_array_equal(result.witnesses, np.eye(40)[best])
    np.testing.assert_array_equal(hull.support(thetas), values.max(axis=1))
    lo, hi = hull.bounding_box()
    np.testing.assert_array_equal(lo, points.min(axis=0))
    np.testing.assert_array_equal(hi, points.max(axis=0))
    assert hull.norm_bound() >= np.linalg.norm(points, axis=1).max()
    dists = np.linalg.norm(points[:, None] - points[None], axis=2)
    assert dists.max() <= hull.diameter_bound() <= dists.max() * (1 + 1e-14)


def test_convex_hull_with_interior_and_duplicate_points():
    hull = arm_set("ConvexHull")
    assert repr(hull) == "ConvexHull(6 points in dimension 2)"
    assert hull.norm_bound() == pytest.approx(np.sqrt(8.0), rel=1e-14)
    assert hull.diameter_bound() == pytest.approx(np.sqrt(8.0), rel=1e-14)
    arms, ws = discretize_with_witnesses(hull, 8)
    # CLUCB's arms are exact vertices of the square.
    assert all(any(np.array_equal(a, p) for p in SQUARE[:4]) for a in arms)


@pytest.mark.parametrize(("points", "match"), [
    ([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0], [3.0, 3.0]], "affine subspace of dimension 1"),
    ([[1.0, 1.0]] * 5, "affine subspace of dimension 0"),
    ([[0.0, 0.0], [1.0, 0.0]], "at least d \\+ 1 = 3 points"),
    ([[0.0, np.nan], [1.0, 0.0], [0.0, 1.0]], "finite"),
    ([0.0, 1.0, 2.0], "\\(K, d\\) array"),
])
def test_degenerate_convex_hulls_are_refused(points, match):
    with pytest.raises(ValueError, match=match):
        sc.ConvexHull(points)


# ----------------------------------------------------------------- lifted sets as users write them
HULL_POINTS = np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0], [2.0, 2.0], [1.0, 1.5]])


def hull_by_constraint(x):
    w = cp.Variable(5)
    return [x == HULL_POINTS.T @ w, w >= 0, cp.sum(w) == 1]


def hull_by_attribute(x):
    w = cp.Variable(5, nonneg=True)
    return [x == HULL_POINTS.T @ w, cp.sum(w) == 1]


def epigraph_by_constraint(x):  # the README's epigraph example
    t = cp.Variable()
    return [cp.norm1(x - 1.0) <= t, t <= 1.0, t >= 0]


def epigraph_by_attribute(x):
    t = cp.Variable(nonneg=True)
    return [cp.norm1(x - 1.0) <= t, t <= 1.0]


@pytest.mark.parametrize(("plain", "attributed"), [(hull_by_constraint, hull_by_attribute),
                                                   (epigraph_by_constraint, epigraph_by_attribute)])
def test_an_attribute_is_the_constraint_it_means(plain, attributed):
    a, b = sc.ConvexArmSet(2, plain), sc.ConvexArmSet(2, attributed)
    assert a.witness_dim == b.witness_dim
    rng = np.random.default_rng(1)
    thetas = rng.standard_normal((30, 2))
    np.testing.assert_allclose(b.greedy_arm(thetas), a.greedy_arm(thetas), atol=1e-7)
    points = rng.uniform(-0.5, 2.5, (40, 2))
    np.testing.assert_array_equal(b.contains(points, tol=1e-7), a.contains(points, tol=1e-7))
    # Both sides of the boundary are told apart, and SEGE plays certified arms only.
    assert b.contains(points, tol=1e-7).any() and not b.contains(points, tol=1e-7).all()
    policy = sc.SEGE(floor_setting(b, [1.0, 1.0], 1.2, 0.9, noise_sd=0.3), c=0.01, n_runs=2, seed=0)
    _, noise = sc.run_seeds(3, 2)
    sc.simulate(policy, sc.LinearBandit([0.6, 0.8], 0.3, noise, threshold=0.9), 40)
    assert policy.solver_fallbacks.sum() == 0


def _square_of(attribute):
    """A set in R^2 whose shape depends on ``attribute`` being enforced."""
    def constraints(x):
        if attribute == "nonpos":  # x = -u, u <= 0: the simplex
            u = cp.Variable(2, nonpos=True)
            return [x == -u, cp.sum(x) <= 1]
        if attribute == "neg":
            u = cp.Variable(2, neg=True)
            return [x == -u, cp.sum(x) <= 1]
        if attribute == "pos":  # the closure of u > 0
            u = cp.Variable(2, pos=True)
            return [x == u, cp.sum(x) <= 1]
        if attribute == "bounds":  # [0, 1] x [-inf, 0.5] cut by x_2 >= -1: a box
            u = cp.Variable(2, bounds=[0.0, [1.0, 0.5]])
            return [x[0] == u[0], x[1] <= u[1], x[1] >= -1.0]
        if attribute == "symmetric":  # S_01 = S_10 <= 0.5 bounds x_1
            S = cp.Variable((2, 2), symmetric=True)
            return [x == cp.hstack([S[0, 1], S[1, 1]]), S[1, 0] <= 0.5, cp.abs(x) <= 1]
        if attribute == "diag":  # S_01 = 0 bounds x_1
            S = cp.Variable((2, 2), diag=True)
            return [x == cp.hstack([S[0, 0], S[1, 1]]), S[0, 0] + S[0, 1] <= 0.5,
                    cp.abs(S) <= 1]
        if attribute == "PSD":  # x x^T <= S, tr S <= 1: the unit disk
            S = cp.Variable((2, 2), PSD=True)
            return [cp.bmat([[S, cp.reshape(x, (2, 1), order="F")],
                             [cp.reshape(x, (1, 2), order="F"), np.ones((1, 1))]]) >> 0,
                    cp.trace(S) <= 1]
        if attribute == "NSD":
            S = cp.Variable((2, 2), NSD=True)
            return [cp.bmat([[-S, cp.reshape(x, (2, 1), order="F")],
                             [cp.reshape(x, (1, 2), order="F"), np.ones((1, 1))]]) >> 0,
                    cp.trace(-S) <= 1]
        raise ValueError(attribute)
    return constraints


#: Per attribute: a point inside, and a point inside only if the attribute were dropped.
ATTRIBUTE_CASES = {
    "nonpos": ([0.2, 0.3], [-0.2, 0.3]), "neg": ([0.2, 0.3], [0.3, -0.2]),
    "pos": ([0.2, 0.3], [-0.2, 0.3]), "bounds": ([0.5, 0.4], [1.2, 0.0]),
    "symmetric": ([0.4, 0.0], [0.8, 0.0]), "diag": ([0.4, 0.5], [0.8, 0.5]),
    "PSD": ([0.5, 0.5], [0.8, 0.8]), "NSD": ([0.5, 0.5], [0.8, 0.8]),
}


@pytest.mark.parametrize("attribute", list(ATTRIBUTE_CASES))
def test_every_attribute_of_an_auxiliary_variable_is_certified(attribute):
    s = sc.ConvexArmSet(2, _square_of(attribute))
    inside, outside = ATTRIBUTE_CASES[attribute]
    assert s.contains(inside, tol=0.0) and not s.contains(outside, tol=1e-6)
    # Solver arms are certified with the witness they came with (contains() of a boundary
    # point would re-solve for one, within the solver's tolerance).
    result = s.greedy_arm_batch(np.random.default_rng(2).standard_normal((10, 2)))
    assert result.ok.all() and s.contains(result.arms, tol=1e-7).all()


def test_a_parameter_stands_for_its_value_when_the_set_is_built():
    center = cp.Parameter(2, value=[1.0, 1.0])
    s = sc.ConvexArmSet(2, lambda x: [cp.norm(x - center) <= 1])
    center.value = [5.0, 5.0]  # later: not the set's business
    np.testing.assert_allclose(s.greedy_arm([1.0, 0.0]), [2.0, 1.0], atol=1e-7)
    assert s.contains([1.5, 1.5]) and not s.contains([5.0, 5.0])
