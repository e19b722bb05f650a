"""Compiled cone programs (sege_cvx.conic.socp) and the certified arms of second-order-cone sets
(sege_cvx.arm_sets.cone): against Clarabel, in exact rationals, and inside SEGE's stage loop."""

from __future__ import annotations

import copy
import warnings
from fractions import Fraction

import cvxpy as cp
import numpy as np
import pytest
from _exact import q
from _same_runs import assert_same_simulations, simulate_on_threads
from problems import assert_certified

import sege_cvx as sc
from sege_cvx.arm_sets.discretization import sphere_directions
from sege_cvx.arm_sets.kernels.status import VERIFIED
from sege_cvx.confidence import cholesky
from sege_cvx.conic import socp
from sege_cvx.conic.cone_form import UnsupportedCone, blocks_from_rows, cone_form

F = np.array([[1.0, 0.5, 0.0], [0.0, 1.0, -0.3]])


def demand(x):
    """A power budget, a joint limit and a line-flow limit (the issue's cone set)."""
    return [cp.norm(x) <= 1, x[0] + x[1] <= 0.9, cp.norm(F @ x) <= 0.8]


def epigraph(x):
    t = cp.Variable()
    return [cp.norm1(x) <= t, t <= 1.5, cp.norm(x) <= 1.2]


SETS = {
    "demand": (3, demand),
    "pnorm": (3, lambda x: [cp.pnorm(x, 1.5) <= 1]),
    "pnorm6": (6, lambda x: [cp.pnorm(x, 1.5) <= 1]),
    "quad": (4, lambda x: [cp.quad_form(x, np.diag([1.0, 2.0, 3.0, 0.5])) <= 1]),
    "ball_cut": (5, lambda x: [cp.norm(x) <= 1, x[0] - 2 * x[1] <= 0.3, x >= -0.8]),
    "epigraph": (2, epigraph),
}


def _set(name):
    d, f = SETS[name]
    return sc.ConvexArmSet(d, f, compiled=True)


@pytest.mark.parametrize("name", list(SETS))
def test_compiled_arms_match_clarabel(name):
    arm_set = _set(name)
    arms = arm_set.compiled_arms
    assert arms is not None
    d = arm_set.dim
    rng = np.random.default_rng(7)
    n = 40
    thetas = rng.normal(size=(n, d)) * rng.choice([1e-3, 1.0, 50.0], size=(n, 1))
    solves = arms.greedy_all(thetas)
    greedy, codes = solves.arms, solves.codes
    assert (codes == VERIFIED).all()
    solved = arm_set.greedy_arm_batch(thetas)
    assert solved.ok.all()
    f_c, f_s = np.einsum("ij,ij->i", greedy, thetas), np.einsum("ij,ij->i", solved.arms, thetas)
    scale = np.abs(thetas).max(axis=1) * arm_set.norm_bound()
    assert np.all(np.abs(f_c - f_s) <= 1e-7 * np.maximum(scale, np.abs(f_s)))
    # LCB arms: V with a spread of eigenvalues, radii from 0 to large.
    chols = np.empty((n, d, d))
    for i in range(n):
        B = rng.normal(size=(d, d))
        chols[i] = np.linalg.cholesky(B @ B.T + 0.5 * np.eye(d))
    radii = rng.choice([0.0, 0.1, 1.0, 5.0], size=n)
    solves = arms.lcb_all(thetas, chols, radii)
    lcb, pairs, codes = solves.arms, solves.pairs, solves.codes
    assert (codes == VERIFIED).all()
    ref = arm_set.lcb_arm_batch(thetas, chols, radii, "solver")
    assert ref.ok.all()
    v_c = cholesky.lcb_values(lcb, thetas, chols, radii)
    v_s = cholesky.lcb_values(ref.arms, thetas, chols, radii)
    # The compiled arm is at least as good as Clarabel's, up to 1e-7 of the objective's scale.
    lcb_scale = scale + radii * np.linalg.norm(np.linalg.inv(chols), axis=(1, 2)) * arm_set.norm_bound()
    assert np.all(np.abs(v_c - v_s) <= 1e-7 * lcb_scale)
    assert arms.certify(pairs).all()


def test_certified_arms_are_in_the_set_exactly():
    """Every certified arm of the cone set satisfies the user's own norms and half-space in
    rationals (squares of exact sums against the float data as given)."""
    arm_set = _set("demand")
    arms = arm_set.compiled_arms
    rng = np.random.default_rng(3)
    n = 300
    thetas = rng.normal(size=(n, 3))
    chols = np.repeat(np.linalg.cholesky(np.diag([3.0, 1.0, 0.2]))[None], n, axis=0)
    points = np.vstack([arms.greedy_all(thetas)[0],
                        arms.lcb_all(thetas, chols, rng.uniform(0, 2, size=n))[0]])
    assert np.isfinite(points).all()
    bound_09, bound_08 = q(0.9), q(0.8)
    Fq = [[q(v) for v in row] for row in F]
    on_boundary = 0
    for x in points:
        xq = [q(v) for v in x]
        assert sum(v * v for v in xq) <= 1
        assert xq[0] + xq[1] <= bound_09
        flow = [sum((a * v for a, v in zip(row, xq, strict=True)), Fraction(0)) for row in Fq]
        assert sum(v * v for v in flow) <= bound_08 * bound_08
        on_boundary += sum(v * v for v in xq) > Fraction(1) - Fraction(1, 10**9)
    assert on_boundary > 50  # the test reaches the cone's boundary, where rounding matters


def _in_demand_set(x) -> bool:
    """``x`` in the demand set, in rationals against the user's own F, 0.9 and 0.8."""
    xq = [q(v) for v in x]
    flow = [sum((q(a) * v for a, v in zip(row, xq, strict=True)), Fraction(0)) for row in F]
    return (sum(v * v for v in xq) <= 1 and xq[0] + xq[1] <= q(0.9)
            and sum(v * v for v in flow) <= q(0.8) * q(0.8))


def test_compiled_pull_in_and_cut_programs_of_a_cone_set_are_exact():
    # The demand set has auxiliary variables (cvxpy's for ||F x||): each point's witness is
    # solved by the compiled method, the pair certified or contracted toward the interior pair.
    arm_set = _set("demand")
    arms = arm_set.compiled_arms
    assert arms.form.n > arm_set.dim
    rng = np.random.default_rng(3)
    boundary = arms.greedy_all(rng.normal(size=(40, 3))).arms
    inside = 0.3 * boundary
    points = np.vstack([inside, boundary, boundary * (1 + 1e-9), boundary * (1 + 1e-3)])
    moved, ok = arms.pull_in_all(points)
    assert ok[:120].all() and not ok[120:].any()
    np.testing.assert_array_equal(moved[:40], inside)  # proven where they are
    np.testing.assert_array_equal(moved[120:], points[120:])  # too far out: left as given
    assert np.abs(moved[40:120] - points[40:120]).max() < 1e-7
    assert all(_in_demand_set(x) for x in moved[:120])
    # As ConeArms.pull_in: contains(tol=0) proves every point moved in.
    assert arm_set.contains(moved[:120], tol=0).all()
    # Safe-LUCB's programs: max <theta, x> over the set cut by 2d half-spaces <= c.
    x, theta = cp.Variable(3), cp.Parameter(3)
    worst = 0.0
    for _ in range(4):
        cuts = rng.normal(size=(6, 3))
        thetas = rng.normal(size=(10, 3))
        found, codes = arms.greedy_within_all(thetas, cuts, 0.3)
        assert (codes == VERIFIED).all()
        problem = cp.Problem(cp.Maximize(theta @ x), [*demand(x), cuts @ x <= 0.3])
        for row, arm in zip(thetas, found, strict=True):
            theta.value = row
            problem.solve(solver=cp.CLARABEL)
            worst = max(worst, abs(problem.value - row @ arm) / max(1.0, abs(problem.value)))
        assert all(_in_demand_set(a) for a in found)
        assert (found @ cuts.T <= 0.3).all()
    # The cuts 1e-8 inside c, Clarabel's tolerance: measured 1.0e-8.
    assert worst <= 5e-8, worst


def test_clarabel_arms_of_a_cone_set_are_in_it_exactly():
    # Without compiled=True: Clarabel's arms, moved in by the pull-in until contains(tol=0)
    # proves them.  With the float evaluation as the membership test, 2 of these 2,000 greedy
    # arms lay outside the set in rationals.
    arm_set = sc.ConvexArmSet(3, demand)
    rng = np.random.default_rng(0)
    batch = arm_set.greedy_arm_batch(rng.normal(size=(2000, 3)))
    assert batch.ok.all()
    assert all(_in_demand_set(x) for x in batch.arms)
    assert arm_set.contains(batch.arms, tol=0.0).all()  # what it returns, contains proves
    near = sum(np.linalg.norm(x) > 1 - 1e-7 for x in batch.arms)
    assert near > 500  # on the ball's boundary, where the float test let arms slip out


def test_exact_membership_of_a_cone_set_at_its_boundary():
    arm_set = sc.ConvexArmSet(3, demand)
    x = np.array([0.5, 0.4, 0.6])  # on the face x1 + x2 <= 0.9: fl(0.5) + fl(0.4) = fl(0.9)
    assert q(x[0]) + q(x[1]) == q(0.9) and _in_demand_set(x)
    assert arm_set.contains(x, tol=0.0)  # the face's slack is 0 exactly: proven in rationals
    outside = x.copy()
    outside[0] = np.nextafter(outside[0], 1.0)  # one ulp further
    assert not _in_demand_set(outside) and not arm_set.contains(outside, tol=0.0)
    ball = np.array([0.6, 0.0, 0.8])  # 0.36 + 0.64 = 1 in rationals? (0.6 and 0.8 are not)
    assert bool(arm_set.contains(ball, tol=0.0)) <= _in_demand_set(ball)
    # A point proven in is in: never True where rationals say outside.
    rng = np.random.default_rng(5)
    g = rng.normal(size=(200, 3))
    pts = g / np.linalg.norm(g, axis=1, keepdims=True) * (1 + rng.uniform(-1e-12, 1e-12, (200, 1)))
    claimed = arm_set.contains(pts, tol=0.0)
    assert all(_in_demand_set(x) for x in pts[claimed])


def test_pull_inside_on_a_cone_set_returns_points_contains_proves():
    arm_set = sc.ConvexArmSet(3, lambda x: [cp.pnorm(x - 1, 1.5) <= 1])
    rng = np.random.default_rng(2)
    g = rng.standard_normal((100, 3))
    points = 1 + (1 + 10 ** rng.uniform(-13, -6, (100, 1))) * g / np.linalg.norm(
        g, 1.5, axis=1, keepdims=True)
    moved, ok = arm_set.pull_inside(points)
    assert ok.all() and arm_set.contains(moved, tol=0.0).all()
    scale = np.abs(moved - arm_set._cone_arms.center[:3]).max()
    assert np.abs(moved - points).max() <= 1e-5 * scale + 1e-6  # moved by the schedule only


def test_certify_refuses_a_point_outside_by_an_ulp():
    arm_set = _set("ball_cut")
    arms = arm_set.compiled_arms
    theta = np.array([0.3, 0.1, 0.7, -0.2, 0.5])
    solves = arms.greedy_all(theta[None])
    pairs, codes = solves.pairs, solves.codes
    assert codes[0] == VERIFIED
    pair = pairs[0].copy()
    assert arms.certify(pair[None])[0]
    # Scaled out until it leaves the unit ball in rationals: certify must say no.
    scale = 1.0
    while sum(q(v) ** 2 for v in pair[:5] * scale) <= 1:
        scale = np.nextafter(scale, 2.0)
    outside = pair.copy()
    outside[:5] *= scale
    assert not arms.certify(outside[None])[0]


def test_unsupported_cones_keep_the_solver_path():
    with pytest.raises(UnsupportedCone, match="exponential"):
        cone_form(2, lambda x: [cp.log_sum_exp(x) <= 1])
    arm_set = sc.ConvexArmSet(2, lambda x: [cp.log_sum_exp(x) <= 1, x >= -2], compiled=True)
    assert arm_set.compiled_arms is None


def test_solve_reports_failure_without_a_point():
    form = cone_form(2, lambda x: [cp.norm(x) <= 1])
    work = socp.workspace(form.blocks, form.n, 0)
    z = np.full(form.n, 7.0)
    # A NaN objective cannot converge: the status says so, and z is not written.
    status = socp.solve(socp.pack(form.blocks), form.n_blocks, form.n, np.full(form.n, np.nan),
                        form.h, form.A, form.b, z, work)
    assert status in (socp.NOT_CONVERGED, socp.NUMERICAL)
    assert (z == 7.0).all()


def _arrow_blocks(k: int, d: int) -> socp.ConeBlocks:
    """``k`` three-row cones, cone ``i`` over the columns ``(i, k + i % d)``, then one cone over
    the ``d`` last columns: an arrow, as a p-norm's second-order form makes."""
    groups = [[i, k + i % d] for i in range(k)] + [list(range(k, k + d))]
    rows, kinds = [3] * k + [d + 1], [1] * (k + 1)
    G = np.zeros((sum(rows), k + d))
    r = 0
    for cols, size in zip(groups, rows, strict=True):
        G[r:r + size, cols] = 1.0
        r += size
    return blocks_from_rows(G, rows, kinds)


def _pattern_h(blocks: socp.ConeBlocks, n: int, rng) -> np.ndarray:
    """A positive definite ``H`` with ``G^T W^{-2} G``'s pattern over the blocks whose columns
    lie below ``n``, and a diagonal for the variables in none."""
    H = np.diag(rng.uniform(0.5, 2.0, size=n))
    for j in range(blocks.kind.size):
        cols = blocks.cols[blocks.col_ptr[j]:blocks.col_ptr[j + 1]]
        if cols.max() < n:
            B = rng.normal(size=(len(cols) + 1, len(cols)))
            H[np.ix_(cols, cols)] += B.T @ B
    return H


@pytest.mark.parametrize("k, d, sparse", [(12, 4, True), (3, 3, False)])
def test_h_is_factored_in_its_elimination_order_and_solves_as_numpy_does(k, d, sparse):
    blocks = _arrow_blocks(k, d)
    st = socp.pack(blocks)
    order, position, ptr, pattern = socp.elimination_order(blocks)
    nv = k + d
    assert sorted(order) == list(range(nv)) and (position[order] == np.arange(nv)).all()
    # Each column's pattern is sorted by elimination and holds the fill: the neighbours of a
    # variable when it goes form a clique, so a later column holds the rest of the earlier's.
    for v in range(nv):
        below = pattern[ptr[v]:ptr[v + 1]]
        assert (np.diff(position[below]) > 0).all() and (position[below] > position[v]).all()
        if len(below) > 1:
            first = below[0]
            assert set(below[1:]) <= set(pattern[ptr[first]:ptr[first + 1]])
    # The cones' auxiliaries go first and fill in nothing (sparse); the small set stays dense.
    assert bool(st[socp._sym(st) + 1]) is sparse
    if sparse:
        assert set(order[:k]) == set(range(k)) and all(ptr[v + 1] - ptr[v] == 1 for v in range(k))
    rng = np.random.default_rng(3)
    # All variables; a prefix without the last (the greedy program without the LCB's tau and
    # its cone); and one variable beyond every block (a diagonal alone).
    for n in (nv, nv - 1, nv + 1):
        H = _pattern_h(blocks, n, rng)
        M = np.full((n + 2, n + 2), np.nan)  # stale scratch outside the pattern is never read
        if sparse:  # H's entries in the earlier-eliminated variable's row, the fill at zero
            pos = np.r_[position, np.arange(nv, n)] if n > nv else position
            for a in range(n):
                for b in range(n):
                    if pos[a] <= pos[b] and (H[a, b] != 0.0 or a == b
                                             or (a < nv and b in pattern[ptr[a]:ptr[a + 1]])):
                        M[a, b] = H[a, b]
        else:  # the lower triangle
            M[:n, :n] = np.tril(H)
        assert socp._h_cholesky(st, M, n)
        X = np.full((2, n + 2), np.nan)
        r = rng.normal(size=n)
        X[1, :n] = r
        socp._h_solve(st, M, n, X, 1)
        expected = np.linalg.solve(H, r)
        assert np.allclose(X[1, :n], expected, rtol=1e-12, atol=1e-12 * abs(expected).max())
        assert np.isnan(X[0]).all() and np.isnan(X[1, n:]).all()


def _learner_programs(d, T, seed):
    """``T`` consecutive (theta_hat, chol(V), r) of a learner playing random arms of norm 0.5."""
    rng = np.random.default_rng(seed)
    theta = np.linspace(0.5, 0.3, d)
    V, b, rows = np.eye(d), np.zeros(d), []
    for t in range(1, T + 31):
        a = rng.normal(size=d)
        a *= 0.5 / np.linalg.norm(a)
        V += np.outer(a, a)
        b += (a @ theta + 0.1 * rng.normal()) * a
        if t > 30:
            rows.append((np.linalg.solve(V, b), np.linalg.cholesky(V),
                         0.1 * np.sqrt(2 * np.log(t) + d)))
    return tuple(np.array(x) for x in zip(*rows, strict=True))


POLISHED_SHARE = {"demand": 0.95, "pnorm": 0.9, "epigraph": 0.9}


@pytest.mark.parametrize("name", ["demand", "pnorm", "epigraph"])
def test_warm_started_solves_agree_with_cold_ones_in_fewer_iterations(name):
    arm_set = _set(name)
    arms = arm_set.compiled_arms
    thetas, chols, radii = _learner_programs(arm_set.dim, 150, 1)
    for program in ("greedy", "LCB"):
        if program == "greedy":
            cold, warm = (arms.greedy_all(thetas, warm=w) for w in (False, True))
            gap = np.abs(np.einsum("ij,ij->i", cold.arms - warm.arms, thetas))
        else:
            cold, warm = (arms.lcb_all(thetas, chols, radii, warm=w) for w in (False, True))
            gap = np.abs(cholesky.lcb_values(cold.arms, thetas, chols, radii)
                         - cholesky.lcb_values(warm.arms, thetas, chols, radii))
        assert (cold.codes == VERIFIED).all() and (warm.codes == VERIFIED).all()
        # Both meet the method's stopping test (relative gap 1e-10); measured: at most 5.4e-10.
        assert gap.max() < 5e-9, (program, gap.max())
        # A learner's next program is the previous one's active set moved a little: the
        # polish solves it.  Measured: 98.7-100 % of the warm starts, in 2.1-4.6 Newton
        # residuals a solve on average, against 10.8-16.8 iterations cold.
        assert not cold.polished.any()
        assert warm.polished[1:].mean() >= POLISHED_SHARE[name], (program, warm.polished.mean())
        assert warm.iterations.mean() < 0.4 * cold.iterations.mean(), program
    # Cold solves do not depend on the order of the rows.
    again = arms.lcb_all(thetas[::-1], chols[::-1], radii[::-1])
    np.testing.assert_array_equal(again.arms[::-1], cold.arms)


def test_the_polish_follows_faces_that_change_and_refuses_a_wrong_start():
    """Greedy arms of the demand set for directions turning once around a circle: the optimum
    moves over the ball's face, the cut's and the line-flow cone's, so that warm starts meet
    rows and cones that join or leave the active set; and a start from the opposite direction,
    where every state is wrong.  Each answer is the cold solve's."""
    arms = _set("demand").compiled_arms
    angles = np.linspace(0.0, 2 * np.pi, 721)
    thetas = np.c_[np.cos(angles), np.sin(angles), 0.3 * np.sin(3 * angles)]
    cold, warm = (arms.greedy_all(thetas, warm=w) for w in (False, True))
    assert (warm.codes == VERIFIED).all()
    gap = np.abs(np.einsum("ij,ij->i", cold.arms - warm.arms, thetas))
    assert gap.max() < 5e-9, gap.max()
    # Measured: 714 of the 720 warm starts polished; the other 6 (where the face changes by
    # more than the polish's two corrections) solved by the interior-point method.
    assert 0.9 < warm.polished[1:].mean() < 1.0, warm.polished.mean()
    flipped = np.repeat(thetas[:40:2], 2, axis=0) * np.tile([1.0, -1.0], 20)[:, None]
    cold, warm = (arms.greedy_all(flipped, warm=w) for w in (False, True))
    assert (warm.codes == VERIFIED).all()
    assert np.abs(np.einsum("ij,ij->i", cold.arms - warm.arms, flipped)).max() < 5e-9
    assert not warm.polished[1::2].any() and not warm.polished[2::2].any()


def test_a_run_whose_polishes_keep_failing_skips_the_polish_but_for_a_probe():
    """Directions flipped at every solve: every start is wrong and every polish fails.  Once
    the record's share of failed polishes passes ``POLISH_FAILING`` (after nine), the polish
    is skipped, but for every ``POLISH_PROBE``-th solve, and the warm interior-point method
    solves the program (SafeTS's programs at d = 10 on the l1.5 ball, where 85-95 % of
    polishes failed).  Every answer is still a cold solve's."""
    from sege_cvx.arm_sets.cone import arms as cone_arms

    arms = _set("demand").compiled_arms
    angles = np.linspace(0.0, 2 * np.pi, 41)[:40]
    thetas = np.c_[np.cos(angles), np.sin(angles), 0.3 * np.sin(3 * angles)]
    thetas *= np.tile([1.0, -1.0], 20)[:, None]
    cold = arms.greedy_all(thetas)
    state = tuple(a[0] for a in arms.warm_state(1))
    record, attempted, found = state[0][cone_arms.GREEDY_START], [], []
    for k, theta in enumerate(thetas):
        since = record[2]
        x, _, status, _, polished = cone_arms._all(arms._plain, theta[None], np.zeros((1, 1, 1)),
                                                   np.zeros(1), state, False, True)
        assert status[0] == VERIFIED and not polished[0]
        if k > 0 and record[2] == 0.0:
            attempted.append(k)
        assert record[2] in (0.0, since + 1.0)
        found.append(x[0])
    assert socp.POLISH_PROBE == 8 and record[1] > socp.POLISH_FAILING
    assert attempted == [1, 2, 3, 4, 5, 6, 7, 8, 9, 17, 25, 33], attempted
    gap = np.einsum("ij,ij->i", cold.arms - np.array(found), thetas)
    assert np.abs(gap).max() < 5e-9, gap


@pytest.mark.parametrize("far, clip", [(1e3, 5e-7), (1e4, 5e-6)])
def test_the_polish_takes_no_point_outside_a_row_it_took_for_inactive(far, clip):
    """A cut a hair inside the ball's point at 45 degrees, and a row far away (``x_0 <= far``):
    the warm start from 40 degrees has the cut inactive, and Newton's point on the ball lies
    ``clip`` outside it.  Before: accepted (slacks were allowed ``1e-9 (1 + max |h|)``), the
    arm then contracted 6e-7 of its objective away, or at ``far = 1e4`` not certified at all.
    Found by an adversarial pass."""
    arm_set = sc.ConvexArmSet(2, lambda x: [cp.norm(x) <= 1, x[0] + x[1] <= np.sqrt(2) - clip,
                                            x[0] <= far], compiled=True)
    angles = np.deg2rad([40.0, 45.0])
    thetas = np.c_[np.cos(angles), np.sin(angles)]
    cold, warm = (arm_set.compiled_arms.greedy_all(thetas, warm=w) for w in (False, True))
    assert (warm.codes == VERIFIED).all()
    best = (np.sqrt(2) - clip) / np.sqrt(2)  # on the cut
    for solves in (cold, warm):
        assert abs(solves.arms[1] @ thetas[1] - best) < 1e-10, solves.arms[1] @ thetas[1] - best


def test_the_polish_leaves_data_that_are_not_finite_to_the_interior_point_method():
    """A NaN objective, or one a subnormal theta's power-of-two scale makes infinite, after a
    polished solve: the status is the cold solve's (numba's max() passes over a NaN, so the
    polish's tests took the previous arm for the answer).  Found by an adversarial pass."""
    arms = _set("demand").compiled_arms
    base = np.array([0.5, 0.4, 0.3])
    for odd in (np.full(3, np.nan), np.array([0.0, -1e-310, 0.0])):
        thetas = np.array([base, 1.01 * base, odd])
        cold, warm = (arms.greedy_all(thetas, warm=w) for w in (False, True))
        assert warm.polished[1] and not warm.polished[2]
        assert warm.codes[2] == cold.codes[2] != VERIFIED


def test_the_pull_in_tries_its_last_contraction():
    """A point 1e-9 outside a strip's face, 5e-4 from the interior pair: only the schedule's
    last contraction, 1e-5, proves it (ten products of 1e-15 by 10 passed over it)."""
    arm_set = sc.ConvexArmSet(2, lambda x: [cp.norm(x) <= 1, x[0] <= 0.5, x[0] >= 0.499],
                              compiled=True)
    arms = arm_set.compiled_arms
    point = np.array([[0.5 + 1e-9, np.sqrt(0.75) - 1e-3]])
    moved, ok = arms.pull_in_all(point)
    assert ok[0] and q(moved[0, 0]) <= Fraction(1, 2) and q(moved[0, 0]) >= q(0.499)
    # Moved by the contraction 1e-5 toward the interior pair, not more.
    step = np.abs(moved[0] - point[0]) / np.abs(point[0] - arms.center[:2])
    assert step.max() < 1.0001e-5, step


def _demand_problem():
    theta = np.array([0.5, 0.4, 0.3])
    return sc.BanditProblem.from_truth(_set("demand"), theta_star=theta,
                                       safe_arm=np.array([0.1, 0.1, 0.1]), S=1.0, noise_sd=0.1,
                                       threshold_fraction=0.5, name="demand")


def test_sege_stages_on_a_cone_set_are_compiled_and_match_the_solver():
    problem = _demand_problem()
    n, T = 4, 300
    compiled = problem.policy("SEGE", n, seed=3)
    assert compiled.compiled_stages
    fast = sc.simulate(compiled, problem.bandit(sc.run_seeds(5, n)[1]), T, traces=True)
    solver = problem.policy("SEGE", n, seed=3, lcb_method="solver")
    assert not solver.compiled_stages
    slow = sc.simulate(solver, problem.bandit(sc.run_seeds(5, n)[1]), T, traces=True)
    assert fast.stats.total_violations.sum() == 0
    assert compiled.solver_fallbacks.sum() == 0
    # The same decisions; rewards equal to the solvers' agreement (1e-6 of an arm).
    np.testing.assert_array_equal(fast.decisions, slow.decisions)
    np.testing.assert_allclose(fast.expected_reward, slow.expected_reward, rtol=0, atol=1e-6)


def test_sege_on_a_cone_set_is_the_same_on_one_thread_and_two():
    problem = _demand_problem()
    n, T = 3, 200
    seeds = sc.run_seeds(9, n)
    batch = simulate_on_threads(problem.policy("SEGE", n, seed=seeds[0]),
                                problem.bandit(seeds[1]), T, 2, traces=True)
    one = simulate_on_threads(problem.policy("SEGE", n, seed=seeds[0]),
                              problem.bandit(seeds[1]), T, 1, traces=True)
    assert_same_simulations(batch, one)


@pytest.mark.parametrize("name", ["demand", "epigraph"])
def test_the_compiled_lcb_arm_is_the_sets_fast_path_and_cross_checks(name):
    arm_set = _set(name)
    assert arm_set.has_closed_form_lcb
    d = arm_set.dim
    rng = np.random.default_rng(11)
    thetas = rng.normal(size=(25, d))
    V = np.eye(d) * 2.0 + 0.3
    arm_set.lcb_arm(thetas, np.repeat(V[None], 25, axis=0), 0.8, cross_check=True)
    # A lifted set's arms come with the user's witness (here t of the epigraph), each pair
    # verified by the set's own check at tol=0.
    batch = arm_set.lcb_arm_batch(thetas, np.repeat(np.linalg.cholesky(V)[None], 25, axis=0),
                                  np.full(25, 0.8), "closed_form")
    assert batch.ok.all() and batch.witnesses.shape == (25, arm_set.witness_dim)
    assert set(batch.status) == {"closed_form"}
    if arm_set.witness_dim:
        assert all(arm_set._certify_pair(x, u, 0.0)[0]
                   for x, u in zip(batch.arms, batch.witnesses, strict=True))
    else:
        assert arm_set.contains(batch.arms, tol=0).all()


def test_compiled_is_opt_in_and_part_of_the_fingerprint():
    plain = sc.ConvexArmSet(3, demand)
    fast = sc.ConvexArmSet(3, demand, compiled=True)
    assert plain.compiled_arms is None and not plain.has_closed_form_lcb
    assert fast.compiled_arms is not None and fast.has_closed_form_lcb
    assert "compiled" not in plain.fingerprint_data()
    assert fast.fingerprint_data()["compiled"] is True
    assert repr(fast) == "ConvexArmSet(dim=3, constraints=demand, compiled=True)"
    with pytest.raises(TypeError, match="compiled must be True or False, got 1"):
        sc.ConvexArmSet(3, demand, compiled=1)


def test_greedy_arms_of_a_hull_written_by_weights_are_proven():
    # x = P^T w, sum(w) = 1, w >= 0: a degenerate witness program, whose solves meet the
    # equalities only to about 1e-7; the witness is moved onto them before the proof.  Without
    # that, arms 663 and 830 of these 1,022 could not be proven at any contraction.
    rng = np.random.default_rng([0, 5])
    g = rng.standard_normal((20, 5))
    points = 1.0 + rng.uniform(0.5, 1.0, (20, 1)) * g / np.linalg.norm(g, axis=1, keepdims=True)

    def by_weights(x):
        w = cp.Variable(20, nonneg=True)
        return [x == points.T @ w, cp.sum(w) == 1]

    arm_set = sc.ConvexArmSet(5, by_weights)
    batch = arm_set.greedy_arm_batch(sphere_directions(5, 1022))
    assert batch.ok.all()
    hull = sc.ConvexHull(points)
    assert hull.contains(batch.arms, tol=0.0).all()  # the hull's own exact test agrees


# ----------------------------------------------------------------------------- SafeTS
def _demand_constraint_problem(compiled):
    gamma, theta = np.array([0.7, 0.5, 0.1]), np.array([0.5, 0.4, 0.3])
    constraint = sc.LinearConstraint(0.3, gamma_star=gamma / np.linalg.norm(gamma), noise_sd=0.1)
    return sc.BanditProblem.from_truth(sc.ConvexArmSet(3, demand, compiled=compiled),
                                       theta_star=theta / np.linalg.norm(theta),
                                       safe_arm=np.zeros(3), S=1.0, noise_sd=0.1,
                                       constraint=constraint, name="demand-constraint")


def test_safe_ts_solves_its_program_in_the_stages_on_a_compiled_cone_set():
    fast_problem, slow_problem = _demand_constraint_problem(True), _demand_constraint_problem(False)
    n, T = 3, 60
    seeds = sc.run_seeds(4, n)
    compiled = fast_problem.policy("SafeTS", n, seed=seeds[0])
    assert compiled.compiled_stages
    result = sc.simulate(compiled, fast_problem.bandit(seeds[1]), T, traces=True)
    stepped = fast_problem.policy("SafeTS", n, seed=seeds[0])
    solver = slow_problem.policy("SafeTS", n, seed=seeds[0])
    assert not solver.compiled_stages
    bandits = fast_problem.bandit(seeds[1]), slow_problem.bandit(seeds[1])
    gamma = np.array(fast_problem.constraint.gamma_star)
    rewards = np.empty((T, n))
    d, gaps = 3, []
    for t in range(T):
        # Each run's sample theta~ = theta_hat + beta L^{-T} z[:d] / ||z||, from a copy of its
        # generator (SafeTS draws d + 2 normals a stage).
        draws = [copy.deepcopy(rng).standard_normal(d + 2) for rng in stepped.rngs]
        beta, chol = stepped.radii(), stepped.confidence.chol
        samples = [stepped.confidence.theta_hat[i] + beta[i] * np.linalg.solve(
            chol[i].T, z[:d] / np.linalg.norm(z)) for i, z in enumerate(draws)]
        arms, other = stepped.select(), solver.select()
        for i, sample in enumerate(samples):
            if stepped.last_decision[i] != 2:
                gaps.append(abs(sample @ (arms[i] - other[i])) / abs(sample @ other[i]))
        assert all(_in_demand_set(x) for x in arms)  # in rationals, the user's own data
        assert_certified(stepped, arms, gamma, 0.3)  # its bound at most c as played
        assert np.array_equal(stepped.last_decision, solver.last_decision)
        for policy, x, bandit in ((stepped, arms, bandits[0]), (solver, other, bandits[1])):
            feedback = bandit.feedback(x)
            policy.observe(x, feedback.observed, feedback.observed_constraint)
            if policy is stepped:
                rewards[t] = feedback.mean
        # Clarabel's policy then takes the compiled one's state: both solve the same instances.
        for name in ("V", "chol", "xy_sum", "theta_hat"):
            getattr(solver.confidence, name)[:] = getattr(stepped.confidence, name)
        solver.gamma_hat[:], solver._xz_sum[:] = stepped.gamma_hat, stepped._xz_sum
    # The compiled stages are the step API's, bit for bit.  On the same instances the compiled
    # arm's objective for the sample is within 2e-8 (relative) of Clarabel's: its bound is
    # 1e-8 inside c (measured: 1.02e-8 at most over 180 arms).  The arms themselves differ by
    # up to 4e-6 where the objective is flat along a face, within Clarabel's tolerance.
    assert np.array_equal(rewards, result.expected_reward)
    assert np.array_equal(stepped.decision_counts, compiled.decision_counts)
    assert len(gaps) > 100 and max(gaps) <= 2e-8, max(gaps)
    assert compiled.decision_counts[:, 1].sum() > T  # the bound is active: scaled steps
    assert compiled.solver_fallbacks.sum() == 0 and compiled.fallback_reasons == {}


def test_an_exact_second_order_form_does_not_warn_and_an_approximate_one_does():
    """cvxpy 1.9 warns whenever it writes a rational power by second-order cones ("geo_mean is
    being approximated (error: 0.00e+00) ...  Consider using approx=False to use power cones"):
    at d = 10 the l1.5 ball's construction, its Clarabel LCB programs and its fingerprint all
    did, advising the power cones the compiled programs do not solve.  With error 0 the form
    is exact and nothing warns; a p that only a rational approximates still does."""
    d = 10
    theta = 0.3 * np.linspace(0.5, 0.3, d)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        arm_set = sc.ConvexArmSet(d, lambda x: [cp.pnorm(x, 1.5) <= 1], compiled=True)
        problem = sc.BanditProblem.from_truth(arm_set, theta_star=theta,
                                              safe_arm=np.r_[0.05, np.zeros(d - 1)], S=1.0,
                                              noise_sd=0.1, threshold_fraction=0.5)
        seeds = sc.run_seeds(0, 2)
        policy = problem.policy("SEGE", 2, seeds[0], lcb_method="solver")
        sc.simulate(policy, problem.bandit(seeds[1]), 5)
        arm_set.fingerprint_data()
        arm_set.constrained_support(theta, np.ones(d), 0.1)
    if tuple(int(v) for v in cp.__version__.split(".")[:2]) >= (1, 9):
        with pytest.warns(UserWarning, match=r"approximated \(error: [1-9]"):
            sc.ConvexArmSet(3, lambda x: [cp.pnorm(x, np.pi / 2) <= 1], compiled=True)
