"""Certified active-set arms of polyhedral sets (sege_cvx.arm_sets.polytope.arms; the arms of a
convex hull, over its weights, are cross-checked in test_hull_arms.py).

Cross-checked against Clarabel at tight tolerances on 1,000 random instances per set type
(greedy linear programs and LCB second-order cone programs, d = 2 to 20), including degenerate
vertices, faces through the origin and sets that do not contain 0; then the warm start, the
certificate's fallback, and SEGE's compiled stages on these sets (bitwise equal to the step API,
alone or in a batch, before and after a pickle).
"""

import itertools
import pickle
import warnings

import cvxpy as cp
import numpy as np
import pytest
from _same_runs import assert_same_simulations, simulate_on_threads
from _ulps import assert_close_ulps
from problems import floor_setting

import sege_cvx as sc
from sege_cvx.arm_sets.kernels.status import NOT_CERTIFIED, VERIFIED
from sege_cvx.arm_sets.polytope import arms as polytope_arms
from sege_cvx.conic.errors import SolverFailure
from sege_cvx.problems.examples import polytope_problem, treatment_mix_problem

#: Clarabel settings of the reference solves: far tighter than its defaults (about 1e-8).  At
#: these it reports ``optimal`` for most programs, agreeing with the certified arms to about
#: 1e-11; the rest end ``optimal_inaccurate`` (values up to 2e-9 off, either way, its point up
#: to 1e-9 outside the set).
TIGHT = dict(tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12, tol_ktratio=1e-8,
             max_iter=500)
#: Agreement asked of the objectives, relative to the magnitude of their terms.
AGREE = 1e-9


def random_polytope(kind: str, d: int, rng: np.random.Generator) -> sc.Polytope:
    """One polytope of each kind the tests cover."""
    if kind == "box":
        lower = rng.uniform(-1.0, 0.5, d)
        return sc.Box(lower, lower + rng.uniform(0.5, 2.0, d))
    if kind == "cut cube":  # [0, 1]^d and 4d random cuts through its middle region
        normals = rng.standard_normal((4 * d, d))
        offsets = normals @ np.full(d, 0.5) + 0.3 * np.linalg.norm(normals, axis=1) * rng.uniform(
            0.2, 1.0, 4 * d)
        A = np.vstack([np.eye(d), -np.eye(d), normals])
        return sc.Polytope(A, np.concatenate([np.ones(d), np.zeros(d), offsets]))
    if kind == "treatment mix":  # doses and a budget: 0 is a vertex (faces through the origin)
        upper = rng.uniform(0.5, 1.0, d)
        A = np.vstack([np.eye(d), -np.eye(d), np.ones(d)])
        return sc.Polytope(A, np.concatenate([upper, np.zeros(d), [0.6 * upper.sum()]]))
    if kind == "degenerate vertex":  # 2d facets through the vertex (1, ..., 1)
        normals = np.abs(rng.standard_normal((2 * d, d))) + 0.1
        A = np.vstack([normals, -np.eye(d)])
        return sc.Polytope(A, np.concatenate([normals @ np.ones(d), np.zeros(d)]))
    if kind == "cone at the origin":  # 3d facets through 0, capped: 0 is a degenerate vertex
        g = rng.standard_normal((2 * d, d))
        normals = g - (g.sum(axis=1, keepdims=True) / d + 0.5)  # normals . 1 = -d / 2 < 0
        A = np.vstack([-np.eye(d), normals, np.ones(d)])
        return sc.Polytope(A, np.concatenate([np.zeros(3 * d), [1.0]]))
    if kind == "away from the origin":  # 0 outside the set
        normals = rng.standard_normal((3 * d, d))
        center = np.full(d, 3.0)
        A = np.vstack([np.eye(d), -np.eye(d), normals])
        b = np.concatenate([center + 1.0, -(center - 1.0),
                            normals @ center + 0.8 * np.linalg.norm(normals, axis=1)])
        return sc.Polytope(A, b)
    raise ValueError(kind)


KINDS = ["box", "cut cube", "treatment mix", "degenerate vertex", "cone at the origin",
         "away from the origin"]
DIMS = (2, 3, 5, 10, 20)
SETS_PER_DIM = 4
INSTANCES_PER_SET = 50  # 5 dims x 4 sets x 50 = 1,000 instances per kind and program


def _halfspaces(arm_set):
    geometry = arm_set.compiled_arms.geometry()
    return geometry[0], geometry[1]


def _spd(rng, d):
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    return (q * np.logspace(-1.0, 2.0, d)) @ q.T


@pytest.mark.parametrize("kind", KINDS)
def test_certified_arms_agree_with_clarabel(kind):
    rng = np.random.default_rng(KINDS.index(kind))
    count = accurate = compared = no_reference = 0
    for d in DIMS:
        for _ in range(SETS_PER_DIM):
            arm_set = random_polytope(kind, d, rng)
            A, b = _halfspaces(arm_set)
            x = cp.Variable(d)
            theta = cp.Parameter(d)
            M = cp.Parameter((d, d))
            lp = cp.Problem(cp.Maximize(theta @ x), [A @ x <= b])
            socp = cp.Problem(cp.Maximize(theta @ x - cp.norm(M @ x)), [A @ x <= b])
            thetas = rng.standard_normal((INSTANCES_PER_SET, d))
            # A third of the estimates point nearly along a facet normal (near-degenerate LPs).
            thetas[::3] = A[rng.integers(0, A.shape[0], len(thetas[::3]))] + 1e-9 * thetas[::3]
            Vs = np.array([_spd(rng, d) for _ in range(INSTANCES_PER_SET)])
            chols = np.linalg.cholesky(Vs)
            # Radii from below to above ||theta||_V (LCB arms in the interior, on faces, at 0).
            radii = rng.uniform(0.0, 2.0, INSTANCES_PER_SET) * np.sqrt(
                np.einsum("ni,nij,nj->n", thetas, Vs, thetas))
            arms, codes = polytope_arms.greedy_all(arm_set.compiled_arms.geometry(), thetas)
            lcb, lcb_codes = polytope_arms.lcb_all(arm_set.compiled_arms.geometry(), thetas,
                                                   chols, radii)
            assert np.all(codes == VERIFIED) and np.all(lcb_codes == VERIFIED), (kind, d)
            assert arm_set.contains(arms, tol=0.0).all() and arm_set.contains(lcb, tol=0.0).all()
            for i in range(INSTANCES_PER_SET):
                theta.value = thetas[i]
                L_inv = np.linalg.inv(chols[i])
                M.value = radii[i] * L_inv
                norm_term = radii[i] * np.linalg.norm(L_inv @ lcb[i])
                values = (thetas[i] @ arms[i], thetas[i] @ lcb[i] - norm_term)
                # The objective's scale: its terms' magnitudes (the LCB is a difference of two).
                scales = (max(1.0, abs(values[0])),
                          max(1.0, abs(thetas[i] @ lcb[i]) + norm_term))
                for program, ours, scale in zip((lp, socp), values, scales, strict=True):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", UserWarning)  # "may be inaccurate"
                        try:
                            program.solve(solver=cp.CLARABEL, **TIGHT)
                        except cp.SolverError:
                            no_reference += 1
                            continue
                    # Never below Clarabel's point, moved exactly into the set.
                    inside, _, ok = arm_set.pull_inside(x.value[None], return_witnesses=True)
                    if ok[0]:
                        reference = thetas[i] @ inside[0]
                        if program is socp:
                            reference -= radii[i] * np.linalg.norm(L_inv @ inside[0])
                        assert ours >= reference - AGREE * scale, (kind, d, i, ours, reference)
                        compared += 1
                    if program.status == cp.OPTIMAL:
                        assert abs(ours - program.value) <= AGREE * scale, (kind, d, i, ours,
                                                                            program.value)
                        accurate += 1
                count += 1
    # 1,000 instances of each program.  Clarabel fails on a few (NumericalError) and is not
    # accurate on some (its point may then be an ulp-scale distance outside the set, with a value
    # above ours); most references are accurate enough for both sides.
    assert count == 1000 and no_reference <= 20 and compared >= 1950 and accurate >= 1000, (
        count, no_reference, compared, accurate)


def test_the_public_methods_use_the_certified_arms_and_cross_check_with_the_solver():
    problem = treatment_mix_problem()
    tm = problem.arm_set
    rng = np.random.default_rng(3)
    for _ in range(20):
        theta, V, r = rng.standard_normal(3), _spd(rng, 3), float(rng.uniform(0.0, 3.0))
        arm = tm.lcb_arm(theta, V, r)  # "auto": the certified active set
        np.testing.assert_array_equal(arm, tm.lcb_arm(theta, V, r, method="closed_form"))
        solved = tm.lcb_arm(theta, V, r, method="solver")
        assert np.abs(arm - solved).max() <= 1e-5 * max(1.0, np.abs(solved).max())
        tm.lcb_arm(theta, V, r, cross_check=True)  # raises CrossCheckError on disagreement
        box = sc.Box([0.0, -1.0, 0.5], [1.0, 1.0, 2.0])
        box.lcb_arm(theta, V, r, cross_check=True)
        greedy = tm.greedy_arm(theta)
        assert tm.contains(greedy, tol=0.0)
        # Two ways of summing a 3-term dot product: within 2 d ulps of ||theta|| ||greedy||.
        assert_close_ulps(theta @ greedy, tm.support(theta), 6,
                          scale=np.linalg.norm(theta) * np.linalg.norm(greedy))


def _uncertifiable(arm_set):
    """``arm_set`` whose compiled certificates accept nothing (a negative gap bound)."""
    arms = arm_set.compiled_arms
    arm_set.__dict__["compiled_arms"] = polytope_arms.PolytopeArms(
        arms.A, arms.b, arms.center, arms.norm_bound, arms.radius, arms.member, gap_rtol=-1.0)
    return arm_set


def test_an_uncertified_arm_is_solved_on_clarabel_or_reported():
    tm = _uncertifiable(treatment_mix_problem().arm_set)
    theta, V = np.array([0.4, 0.7, 0.5]), np.eye(3) * 20.0
    arms, codes = polytope_arms.lcb_all(tm.compiled_arms.geometry(), theta[None],
                                        np.linalg.cholesky(V)[None], np.array([1.0]))
    assert codes[0] == NOT_CERTIFIED
    with pytest.raises(SolverFailure, match="NotCertified"):
        tm.lcb_arm(theta, V, 1.0, method="closed_form")
    batch = tm.lcb_arm_batch(theta[None], np.linalg.cholesky(V)[None], np.array([1.0]))
    assert batch.ok[0] and batch.status[0] in ("Solved", "AlmostSolved")
    np.testing.assert_allclose(batch.arms[0], tm.lcb_arm(theta, V, 1.0, method="solver"))
    greedy = tm.greedy_arm_batch(theta[None])
    assert greedy.ok[0] and greedy.status[0] in ("Solved", "AlmostSolved")


def test_sege_never_plays_an_uncertified_arm_and_counts_each_fallback():
    problem = treatment_mix_problem()
    _uncertifiable(problem.arm_set)  # in place: the problem's setting plays it
    policy = problem.policy("SEGE", 3, 1, c=1e-6)
    assert policy.compiled_stages
    _, noise = sc.run_seeds(2, 3)
    result = sc.simulate(policy, problem.bandit(noise), 200, traces=True)
    # Neither arm is ever certified: no stage exploits, every safe arm is the baseline.
    assert set(np.unique(result.decisions)) == {sc.policies.sege.EXPLORE_BASELINE}
    # One LCB fallback per stage, one greedy fallback per stage whose information test passed.
    assert policy.fallback_reasons["NotCertified"] == policy.solver_fallbacks.sum() >= 3 * 200
    assert result.stats.violations.sum() == 0


def test_a_corrupted_warm_start_still_gives_the_optimal_vertex():
    tm = treatment_mix_problem().arm_set
    geometry = tm.compiled_arms.geometry()
    theta = np.array([0.4, 0.7, 0.5])
    arms, _ = polytope_arms.greedy_all(geometry, theta[None])
    d = 3
    W = np.zeros((2, d), dtype=np.int64)
    counts = np.zeros(2, dtype=np.int64)
    points = np.tile(geometry[2], (2, 1))
    for rows, inverse in [([3, 4, 5], np.zeros((d, d))),  # the vertex 0, a wrong inverse
                          ([3, 4, 5], -np.eye(d)),  # the vertex 0 with its true inverse
                          ([0, 0, 1], np.eye(d))]:  # dependent rows
        W[0], counts[0], points[0] = rows, d, 0.0
        out = np.empty(d)
        code = polytope_arms.greedy_one(geometry, theta, (W, counts, points, inverse.copy()), out,
                                        np.empty((2, d, d)), np.empty((14, d)))
        assert code == VERIFIED
        # The same vertex through another working-set order and pull-in: the rows' Gram-Schmidt
        # rounds differently (a few ulps times the rows' conditioning, here below 4) and the
        # pull-in may contract by 1e-15 or 1e-14 of ||x - center|| <= 2: 128 ulps of 1.
        assert_close_ulps(out, arms[0], 128, scale=1.0)


POLYHEDRA = {
    "box": lambda: (sc.Box([0.0, 0.0, 0.0], [1.0, 1.0, 1.0]), [0.5, 0.5, 0.5], 0.5, 0.3, 5e-3),
    "polytope": lambda: (polytope_problem().arm_set, [0.4, 0.5, 0.4], 0.59, 0.47, 2e-3),
    "treatment mix": lambda: (treatment_mix_problem().arm_set, [0.6, 0.2, 0.2], 0.48, 0.384,
                              2e-3),
    # The cube's corners, two duplicates and points inside: its arms come from the weights.
    "convex hull": lambda: (sc.ConvexHull(np.vstack([
        np.array(list(itertools.product([0.0, 1.0], repeat=3))), [[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]],
        np.random.default_rng(5).uniform(0.2, 0.8, (6, 3))])), [0.5, 0.5, 0.5], 0.5, 0.3, 5e-3),
}
THETA = np.array([0.4, 0.7, 0.5])


def _sege(name, n_runs, seeds, fused=True):
    arm_set, x0, b0, b, c = POLYHEDRA[name]()
    cls = sc.SEGE if fused else StepByStepSEGE
    return cls(floor_setting(arm_set, x0, b0, b, noise_sd=0.3), c=c, n_runs=n_runs, seed=seeds)


def _bandit(policy, noise_seeds):
    """The bandit of ``THETA`` with noise 0.3 scoring ``policy``'s threshold."""
    return sc.LinearBandit(THETA, 0.3, noise_seeds, threshold=policy.setting.safety.threshold)


class StepByStepSEGE(sc.SEGE):
    """SEGE without its fused loop: the engine steps it through select/observe."""

    compiled_stages = False


@pytest.mark.parametrize("name", list(POLYHEDRA))
@pytest.mark.parametrize("threads", [1, 2])
def test_compiled_stages_equal_select_observe_bitwise_on_polyhedra(name, threads):
    policy_seeds, noise_seeds = sc.run_seeds(11, 4)
    results = []
    for fused in (True, False):
        policy = _sege(name, 4, policy_seeds, fused)
        results.append((policy, simulate_on_threads(
            policy, _bandit(policy, noise_seeds), 1500, threads, traces=True)))
    (fused, a), (stepped, b) = results
    assert_same_simulations(a, b)
    for mine, theirs in zip(fused.warm_start, stepped.warm_start, strict=True):
        np.testing.assert_array_equal(mine, theirs)
    np.testing.assert_array_equal(fused.confidence.V, stepped.confidence.V)
    assert fused.solver_fallbacks.sum() == 0
    # Both decisions of the rule and the LCB arm's warm start are exercised.
    assert {1, 2} <= set(np.unique(a.decisions)) and fused.warm_start[1][:, 1].max() > 0


@pytest.mark.parametrize("name", list(POLYHEDRA))
def test_a_run_is_the_same_alone_in_a_batch_and_after_a_pickle(name):
    policy_seeds, noise_seeds = sc.run_seeds(12, 5)
    batch = _sege(name, 5, policy_seeds)
    whole = sc.simulate(batch, _bandit(batch, noise_seeds), 800, traces=True)
    alone = _sege(name, 1, policy_seeds[3:4])
    bandit = _bandit(alone, noise_seeds[3:4])
    rewards = []
    for t in range(800):
        if t == 400:  # the warm start travels with the policy
            alone = pickle.loads(pickle.dumps(alone))
            assert alone.warm_start[1][0].max() > 0
        x = alone.select()
        mean, y = bandit.pull(x)
        alone.observe(x, y[0])
        rewards.append(mean[0])
    np.testing.assert_array_equal(np.array(rewards), whole.expected_reward[:, 3])
    for mine, theirs in zip(alone.warm_start, batch.warm_start, strict=True):
        np.testing.assert_array_equal(mine[0], theirs[3])


def test_vertex_bounds_are_the_exact_diameter_and_distances_up_to_their_margin():
    d = 5
    simplex = sc.Polytope(np.vstack([-np.eye(d), np.ones((1, d))]), np.r_[np.zeros(d), 1.0])
    # The vertices 0, e_1, ..., e_5: diameter sqrt(2), where the box's diagonal is sqrt(5).
    assert np.sqrt(2.0) <= simplex.diameter_bound() <= np.sqrt(2.0) * (1.0 + 2e-6)
    assert sc.ArmSet.diameter_bound(simplex) >= np.sqrt(5.0)
    point = np.full(d, 0.1)
    farthest = np.linalg.norm(np.eye(d)[0] - point)
    assert farthest <= simplex.distance_bound(point) <= farthest * (1.0 + 2e-6)
    # Random polytopes: never below the largest distance between points found in the set.
    rng = np.random.default_rng(5)
    for kind in KINDS:
        arm_set = random_polytope(kind, 4, rng)
        if isinstance(arm_set, sc.Box):
            continue
        arms = arm_set.greedy_arm(rng.standard_normal((400, 4)))
        gaps = np.linalg.norm(arms[:, None] - arms[None], axis=2)
        assert gaps.max() <= arm_set.diameter_bound() <= sc.ArmSet.diameter_bound(arm_set)
        assert arm_set._vertices is not None, kind
    # Beyond VERTEX_MAX_DIM the vertices are not enumerated: the box's diagonal.
    big = random_polytope("cut cube", 10, rng)
    assert big._vertices is None
    assert big.diameter_bound() == sc.ArmSet.diameter_bound(big)


def test_ill_conditioned_and_badly_scaled_instances_are_still_certified():
    """kappa(V) up to 1e10, sets scaled by 1e-4 to 1e4, estimates from 1e-6 to 1e6 (and 0), radii
    0 to 30 ||theta||: every arm certified and exactly in the set.  (Without the refinement of
    the face point, one LCB arm in ten failed its certificate at kappa(V) >= 1e8.)"""
    rng = np.random.default_rng(8)
    count = 0
    for trial in range(60):
        d = int(rng.choice([2, 3, 5, 8]))
        base = random_polytope(KINDS[trial % len(KINDS)], d, rng)
        A, b = _halfspaces(base)
        arm_set = sc.Polytope(A, b * 10.0 ** rng.uniform(-4, 4))
        n = 20
        thetas = rng.standard_normal((n, d)) * 10.0 ** rng.uniform(-6, 6, (n, 1))
        thetas[0] = 0.0
        chols = np.empty((n, d, d))
        for i in range(n):
            q, _ = np.linalg.qr(rng.standard_normal((d, d)))
            V = (q * np.logspace(0.0, rng.uniform(0, 10), d)) @ q.T
            chols[i] = np.linalg.cholesky(0.5 * (V + V.T))
        radii = (rng.uniform(0, 3, n) * rng.choice([0.0, 1.0, 10.0], n)
                 * np.linalg.norm(thetas, axis=1))
        geometry = arm_set.compiled_arms.geometry()
        arms, codes = polytope_arms.greedy_all(geometry, thetas)
        lcb, lcb_codes = polytope_arms.lcb_all(geometry, thetas, chols, radii)
        assert np.all(codes == VERIFIED) and np.all(lcb_codes == VERIFIED)
        assert arm_set.contains(arms, tol=0.0).all() and arm_set.contains(lcb, tol=0.0).all()
        count += n
    assert count == 1200
