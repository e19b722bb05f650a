""""Exactly in the set" checked in exact rationals against the user's own data (issue 27).

Every arm SEGE, CLUCB and ROFUL play, and every arm the public ``greedy_arm`` and ``lcb_arm``
return, on random, redundant, near-parallel, integer, scaled and far polytopes, on boxes and on
convex hulls, is read as the exact rational its float64 value is (``fractions.Fraction``) and
checked against ``A`` and ``b`` as given (a hull: against its exact facets).  ``contains(x,
tol=0)`` is compared with exact arithmetic on points within a few ulps of the boundary.  Then
what construction may no longer do (hang on an 8-D polytope, accept a threshold a few ulps below
``b0``), and the messages of the issue.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _exact import hull_facets, in_hull, nudged, outside_hull, outside_polytope, polytope_excess, q
from problems import floor_setting

import sege_cvx as sc
from sege_cvx.arm_sets import rational
from sege_cvx.arm_sets.kernels import exact
from sege_cvx.arm_sets.polytope.sets import VERTEX_BUDGET, max_vertex_count
from sege_cvx.experiments.spec import SpecError, StudySpec
from sege_cvx.setting import margin_floor


def unit_rows(A):
    return A / np.linalg.norm(A, axis=1, keepdims=True)


def random_polytope(rng, d=3, m=10, offset=0.0):
    A = unit_rows(rng.standard_normal((m, d)))
    b = rng.uniform(0.5, 1.5, m)
    return A, b + A @ np.full(d, offset)


def polytopes():
    """The issue's kinds of polytope, as ``A, b`` given by a user."""
    rng = np.random.default_rng(27)
    out = {"random": random_polytope(rng)}
    A, b = random_polytope(rng)
    out["redundant"] = (np.vstack([A, A[:3], 3.0 * A[3:6]]), np.r_[b, b[:3], 3.0 * b[3:6]])
    A, b = random_polytope(rng, m=8)
    tilt = unit_rows(A[:4] + 1e-7 * rng.standard_normal((4, 3)))
    out["near-parallel"] = (np.vstack([A, tilt]), np.r_[b, b[:4] + 1e-8])
    out["integer"] = (np.vstack([-np.eye(3), np.ones((1, 3))]), np.array([0.0, 0.0, 0.0, 2.0]))
    A, b = random_polytope(rng)
    s = np.where(np.arange(A.shape[0]) % 2 == 0, 1e6, 1e-6)
    out["scaled"] = (A * s[:, None], b * s)
    out["far 1e2"] = random_polytope(rng, offset=1e2)
    out["far 1e5"] = random_polytope(rng, offset=1e5)
    return out


POLYTOPES = polytopes()


def play(policy, theta, stages, seed=2):
    """Every arm ``policy`` plays in ``stages`` stages (the step API), shape ``(stages * n, d)``."""
    rng = np.random.default_rng(seed)
    arms = []
    for _ in range(stages):
        x = np.atleast_2d(policy.select())
        arms.append(x.copy())
        y = x @ theta + 0.05 * rng.standard_normal(x.shape[0])
        policy.observe(x, y)
    return np.vstack(arms)


def problem_on(arm_set, rng, baseline=None):
    """theta* (norm 0.8), a baseline arm inside (or given), its exact reward b0 > 0, and b."""
    expl = arm_set.exploration()
    x0 = (expl.center + 0.5 * expl.B @ rng.uniform(-1, 1, arm_set.dim) / np.sqrt(arm_set.dim)
          if baseline is None else baseline)
    theta = rng.standard_normal(arm_set.dim)
    theta *= 0.8 / np.linalg.norm(theta)
    theta = theta if theta @ x0 > 0 else -theta
    b0 = float(x0 @ theta)
    return theta, x0, b0, b0 - 0.2 * float(np.abs(theta).sum() * arm_set.diameter_bound())


def all_arms(arm_set, rng, baseline=None, stages=60, runs=6):
    """The arms SEGE, CLUCB and ROFUL play on ``arm_set``, and the public methods return."""
    theta, x0, b0, b = problem_on(arm_set, rng, baseline)
    setting = floor_setting(arm_set, x0, b0, b, noise_sd=0.05)
    out = {
        # c small: SEGE exploits (plays greedy arms) within these stages.
        "SEGE": play(sc.SEGE(setting, c=1e-4, seed=1, n_runs=runs), theta, stages),
        "CLUCB": play(sc.CLUCB(setting, n_arms=48, n_runs=runs), theta, stages),
        "ROFUL": play(sc.StagewiseROFUL(setting, n_directions=48, n_runs=runs), theta, stages),
    }
    d = arm_set.dim
    thetas = rng.standard_normal((40, d))
    out["greedy_arm"] = arm_set.greedy_arm(thetas)
    lcb = []
    for t in thetas:
        M = rng.standard_normal((d, d))
        lcb.append(arm_set.lcb_arm(t, M @ M.T + 0.1 * np.eye(d), rng.uniform(0.1, 3.0)))
    out["lcb_arm"] = np.array(lcb)
    return out


@pytest.mark.parametrize("kind", sorted(POLYTOPES))
def test_every_arm_is_in_the_polytope_exactly(kind):
    A, b = POLYTOPES[kind]
    rng = np.random.default_rng(sorted(POLYTOPES).index(kind))
    for source, arms in all_arms(sc.Polytope(A, b), rng).items():
        assert outside_polytope(A, b, arms) == [], (kind, source)


def test_every_arm_is_in_the_box_exactly():
    box = sc.Box([0.1, -0.3, 0.2], [0.7, 0.9, 1.3])
    A, b = np.vstack([np.eye(3), -np.eye(3)]), np.r_[box.upper, -box.lower]
    for source, arms in all_arms(box, np.random.default_rng(3)).items():
        assert outside_polytope(A, b, arms) == [], source


@pytest.mark.parametrize("points, at_vertex", [
    (np.random.default_rng(4).uniform(0, 1, (7, 2)), False),
    (np.random.default_rng(5).uniform(0, 1, (9, 3)), True),
    (1e3 + np.random.default_rng(6).uniform(0, 1, (7, 2)), True),
], ids=["2-D", "3-D, baseline a vertex", "2-D far from 0, baseline a vertex"])
def test_every_arm_is_in_the_hull_exactly(points, at_vertex):
    hull = sc.ConvexHull(points)
    facets = hull_facets(points)
    # A baseline at a vertex: ROFUL's segments then run along the hull's edges.
    baseline = points[np.argmax(points.sum(axis=1))] if at_vertex else None
    for source, arms in all_arms(hull, np.random.default_rng(7), baseline).items():
        assert outside_hull(facets, arms) == [], source


# --------------------------------------------------------------------------- contains, exactly
@pytest.mark.parametrize("kind", ["random", "integer", "scaled", "far 1e2"])
def test_contains_is_exact_next_to_the_boundary(kind):
    A, b = POLYTOPES[kind]
    P = sc.Polytope(A, b)
    rng = np.random.default_rng(11)
    # Interior rays from the Chebyshev centre to the facets, ends moved by up to 4 ulps.
    d = A.shape[1]
    points = []
    for _ in range(600):
        u = rng.standard_normal(d)
        rate = A @ u
        t = np.min((b - A @ P.chebyshev_center)[rate > 0] / rate[rate > 0])
        x = nudged(P.chebyshev_center + t * u, rng, 5)
        points.append(x)
    points = np.array(points)
    truth = np.array([polytope_excess(A, b, x) <= 0 for x in points])
    assert 0 < truth.sum() < len(truth)  # both sides are exercised
    np.testing.assert_array_equal(P.contains(points, tol=0.0), truth)
    # contains' first step, the float test in NumPy, decides only what is true, and (beyond
    # rounding) decides: points 1e-6 of the way in or out.
    c = P.chebyshev_center
    for X in (points, c + (1.0 - 1e-6) * (points - c), c + (1.0 + 1e-6) * (points - c)):
        verdicts = rational._filter_verdicts(P._member_rows, X)
        truth = np.array([polytope_excess(A, b, x) <= 0 for x in X])
        assert truth[verdicts == exact.INSIDE].all() and not truth[verdicts == exact.OUTSIDE].any()
        if X is not points:
            assert (verdicts != exact.UNDECIDED).all()
    # Integer rows such as x >= 0, sum(x) <= 2 have points exactly on them: in the set.
    if kind == "integer":
        assert P.contains([0.0, 0.5, 1.5], tol=0.0)
        assert not P.contains([0.0, 0.5, np.nextafter(1.5, 2.0)], tol=0.0)


def test_the_exact_sign_kernel_agrees_with_rationals():
    """dot_sign against Fraction on rows and points built to cancel to 0 or a few ulps, and on
    data beyond the compiled range (then the rationals decide)."""
    rng = np.random.default_rng(12)
    for trial in range(3000):
        d = int(rng.integers(1, 6))
        a = rng.standard_normal(d) * 10.0 ** rng.integers(-8, 9, d)
        x = rng.standard_normal(d) * 10.0 ** rng.integers(-8, 9, d)
        bj = float(sum(q(u) * q(v) for u, v in zip(a, x, strict=True)))  # the value, rounded
        bj = np.nextafter(bj, np.inf) if trial % 3 == 1 else bj
        bj = np.nextafter(bj, -np.inf) if trial % 3 == 2 else bj
        value = sum(q(u) * q(v) for u, v in zip(a, x, strict=True)) - q(bj)
        expected = (value > 0) - (value < 0)
        got = exact.row_signs(exact.membership_rows(a[None], [bj]), x)[0]
        assert got == expected, (a, x, bj)
    # Products beyond 2^+-960 (1e10 * 1e295): the kernels cannot tell; rationals decide.
    A, x = np.array([[1e10, 1.0]]), np.array([1e295, 1e-300])
    rows = exact.membership_rows(A, [1e305])
    assert exact.row_signs(rows, x)[0] == exact.UNDECIDED
    assert polytope_excess(A, [1e305], x) > 0
    assert not rational.polytope_contains(rows, x[None])[0]
    # A row of 1e-300 is scaled by a power of two: the same inequality, in the kernels' range.
    rows = exact.membership_rows(np.array([[1e-300, 0.0]]), [1e-300])
    assert exact.row_signs(rows, np.array([1.0, 5.0]))[0] == exact.ZERO
    P = sc.Polytope(np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]]), np.ones(4))
    assert P.contains([1.0, 1.0], tol=0.0) and not P.contains([1.0, np.nextafter(1.0, 2.0)], tol=0.0)


def test_rows_of_tiny_scale_work():
    """Rows multiplied by 1e-300 describe the same set: arms certified, none outside (they fell
    back NotMember: products below 2^-960; found by review)."""
    s = 1e-300
    A = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0], [1.0, 1.0]]) * s
    b = np.array([1.0, 1.0, 1.0, 1.0, 1.5]) * s
    P = sc.Polytope(A, b)
    # The vertex (1, 0.5) lies on x + y <= 1.5 within the float test's rounding: it comes back
    # pulled in by about 1e-15 of its length, proven inside.
    arm = P.greedy_arm([0.6, 0.3])
    np.testing.assert_allclose(arm, [1.0, 0.5], rtol=4e-15, atol=0)
    assert outside_polytope(A, b, arm[None]) == [] and P.contains(arm, tol=0.0)
    policy = sc.SEGE(floor_setting(P, [0.2, 0.1], 0.15, 0.05, noise_sd=0.1), n_runs=4, seed=0)
    arms = play(policy, np.array([0.5, 0.4]), 100)
    assert policy.solver_fallbacks.sum() == 0 and outside_polytope(A, b, arms) == []


def test_a_value_below_the_compensated_sums_reach_is_decided_by_the_expansion():
    """1e-20 * 1 + 1e20 * 1 - 1e20 = 1e-20 > 0: the float sum and the compensated sum (whose
    bound is about 1e-31 of 2e20) cannot tell; the exact expansion can (found by review)."""
    A = np.array([[1e-20, 1e20], [1.0, 0.0], [-1.0, 0.0], [0.0, -1.0]])
    b = np.array([1e20, 1.0, 0.0, 0.0])
    P = sc.Polytope(A, b)
    assert polytope_excess(A, b, [1.0, 1.0]) > 0
    assert not P.contains([1.0, 1.0], tol=0.0)
    moved, ok = P.pull_inside(np.array([[1.0, 1.0]]))
    assert ok[0] and outside_polytope(A, b, moved) == []
    rows = exact.membership_rows(A, b)
    assert exact.polytope_verdicts(rows, np.array([[1.0, 1.0]]))[0] == exact.UNDECIDED
    assert exact.row_signs(rows, np.array([1.0, 1.0]))[0] == exact.POSITIVE


def test_contains_of_a_hull_is_exact_next_to_its_boundary():
    rng = np.random.default_rng(13)
    points = rng.uniform(0, 1, (6, 2))
    hull = sc.ConvexHull(points)
    xs = []
    for _ in range(150):  # points on edges between vertices, moved by up to 3 ulps
        i, j = rng.choice(len(points), 2, replace=False)
        xs.append(nudged(points[i] + rng.uniform() * (points[j] - points[i]), rng, 4))
    assert_contains_is_exact(hull, points, np.array(xs))


def test_contains_of_a_hull_is_exact_next_to_its_facets_in_3d():
    """Facet centroids (computed in floats: just inside or just outside), moved by up to 2 ulps,
    on a 3-D hull of points on the sphere: decided against the exact facets."""
    from scipy.spatial import ConvexHull as Qhull

    rng = np.random.default_rng(16)
    points = rng.standard_normal((14, 3))
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    hull = sc.ConvexHull(points)
    xs = np.array([nudged(points[simplex].mean(axis=0), rng, 3)
                   for simplex in Qhull(points).simplices])
    assert_contains_is_exact(hull, points, xs)


def assert_contains_is_exact(hull, points, xs):
    """``hull.contains(xs, tol=0)`` is the exact answer, with points on both sides."""
    facets = hull_facets(points)
    truth = np.array([in_hull(facets, x) for x in xs])
    assert 0 < truth.sum() < len(truth)
    np.testing.assert_array_equal(hull.contains(xs, tol=0.0), truth)


def test_a_hull_contains_its_own_points():
    assert sc.ConvexHull([[0.1, 0.1], [0.7, 0.2], [0.3, 0.9]]).contains(
        [[0.1, 0.1], [0.7, 0.2], [0.3, 0.9]], tol=0.0).all()
    rng = np.random.default_rng(14)
    for _ in range(40):  # triangles with one-decimal coordinates
        points = np.round(rng.uniform(0, 1, (3, 2)), 1)
        if abs(np.linalg.det(np.c_[points, np.ones(3)])) < 0.02:
            continue
        hull = sc.ConvexHull(points)
        assert hull.contains(points, tol=0.0).all(), points
    # ROFUL, which needs the baseline's exact reward, accepts a baseline at a vertex, unmoved.
    hull = sc.ConvexHull([[0.1, 0.1], [0.7, 0.2], [0.3, 0.9]])
    policy = sc.StagewiseROFUL(floor_setting(hull, [0.3, 0.9], 0.72, 0.5, noise_sd=0.1))
    assert policy.setting.safe_shift == 0.0
    sege = sc.SEGE(floor_setting(hull, [0.3, 0.9], 0.72, 0.5, noise_sd=0.1))
    assert sege.setting.safe_shift == 0.0 and sege.setting.safety.baseline_reward == 0.72


@pytest.mark.parametrize("offset", [1e2, 1e5])
def test_far_from_the_origin_the_certificates_pass(offset):
    """The built-in polytope moved by (t, t, t): before the certificate's bound was taken relative
    to the interior point, 25 % (1e4) and 47 % (1e5) of SEGE's stages fell back "NotCertified"
    (benchmarks/measure_far_from_origin.py)."""
    from sege_cvx.problems.examples import polytope_problem

    base = polytope_problem()
    o = np.full(3, offset)
    P = sc.Polytope(base.arm_set.A_given, base.arm_set.b_given + base.arm_set.A_given @ o)
    x0, theta = np.asarray(base.setting.safe_arm) + o, np.asarray(base.theta_star)
    b0 = float(x0 @ theta)
    # c = 2e-3: the polytope example's c before its default doubled (the runs this was measured on).
    policy = sc.SEGE(floor_setting(P, x0, b0, b0 - 0.1, noise_sd=0.5), c=2e-3, n_runs=8, seed=1)
    sc.simulate(policy, sc.LinearBandit(theta, 0.5, sc.run_seeds(0, 8)[1], threshold=b0 - 0.1),
                400)
    assert policy.solver_fallbacks.sum() == 0, policy.fallback_reasons


# --------------------------------------------------------------------------- construction
def test_an_8d_polytope_builds_without_enumerating_forever():
    rng = np.random.default_rng(1)
    A = unit_rows(rng.standard_normal((24, 8)))
    P = sc.Polytope(A, rng.uniform(0.3, 1.5, 24))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # enumerated, within the budget: no fallback
        policy = sc.SEGE(floor_setting(P, P.chebyshev_center, 1.0, 0.5))
    assert P._vertices is not None and len(P._vertices) == 1667
    assert policy.rho_bar > 0 and P.diameter_bound() < sc.ArmSet.diameter_bound(P)


def test_beyond_the_vertex_budget_the_box_bound_is_used_and_said_in_one_line():
    rng = np.random.default_rng(2)
    d = 10
    A = np.vstack([np.eye(d), -np.eye(d), unit_rows(rng.standard_normal((20, d)))])
    b = np.r_[np.ones(2 * d), rng.uniform(0.5, 1.0, 20)]
    assert max_vertex_count(A.shape[0], d) > VERTEX_BUDGET
    P = sc.Polytope(A, b)
    with pytest.warns(RuntimeWarning) as caught:
        bound = P.diameter_bound()
    (message,) = [str(w.message) for w in caught]
    assert "\n" not in message and "beyond the budget" in message
    assert bound == sc.ArmSet.diameter_bound(P)


@pytest.mark.parametrize("m, d, expected", [(4, 2, 4), (8, 3, 12), (6, 3, 8), (24, 8, 5814)])
def test_max_vertex_count_is_the_upper_bound_theorem(m, d, expected):
    assert max_vertex_count(m, d) == expected


# --------------------------------------------------------------------------- the safety margin
@pytest.mark.parametrize("policy", [sc.SEGE, sc.CLUCB, sc.StagewiseROFUL])
def test_a_threshold_a_few_ulps_below_b0_is_refused_in_one_line(policy):
    # The setting refuses it, once for every policy; each policy runs on the suggestion.
    disk, b0 = sc.Ball([1.0, 1.0], 1.0), 2.24
    b = float(b0 - 4 * np.spacing(b0))
    with pytest.raises(ValueError, match="margin lost to rounding") as info:
        policy(floor_setting(disk, [1.2, 1.9], b0, b))
    message = str(info.value)
    assert "\n" not in message and repr(b) in message and "2.24" in message
    largest = float(message.rsplit("use threshold <= ", 1)[1])
    policy(floor_setting(disk, [1.2, 1.9], b0, largest))  # the suggestion is accepted


def test_at_the_smallest_margin_no_arm_is_below_the_threshold():
    """The paper's disk with b0 - b just above the floor: every arm SEGE and ROFUL play has an
    exact reward <x, theta*> >= b (at 4 ulps, every run of SEGE violated)."""
    disk, x0, b0, theta = sc.Ball([1.0, 1.0], 1.0), [1.2, 1.9], 2.24, np.array([0.6, 0.8])
    b = b0 - margin_floor(disk, 1.0, b0) * (1.0 + 1e-9)
    for make in (lambda: sc.SEGE(floor_setting(disk, x0, b0, b), n_runs=10, seed=3),
                 lambda: sc.StagewiseROFUL(floor_setting(disk, x0, b0, b), n_runs=10)):
        arms = play(make(), theta, 200)
        worst = min(sum(q(v) * q(t) for v, t in zip(x, theta, strict=True)) for x in arms)
        assert worst >= q(b), float(worst - q(b))


# --------------------------------------------------------------------------- messages
def test_duplicate_problems_are_named_in_one_short_line():
    with pytest.raises(SpecError) as info:
        StudySpec.from_dict(dict(seed=0, runs=1, horizon=10, problems=[{"name": "paper"}] * 20_000,
                                 algorithms=[{"name": "SEGE"}]))
    message = str(info.value)
    assert len(message) < 200 and "problems[0] and problems[1]" in message


def test_a_key_caught_by_a_toml_table_is_pointed_at(tmp_path):
    spec = tmp_path / "study.toml"
    spec.write_text('seed = 0\nruns = 1\nhorizon = 10\n[[problems]]\nname = "paper"\n'
                    'algorithms = "SEGE"\n')
    with pytest.raises(SpecError, match=r"in the last \[\[problems\]\] table"):
        StudySpec.from_toml(spec)


@pytest.mark.parametrize("width", [np.spacing(1.0), 1e-300, 1e-12])
def test_box_and_polytope_agree_on_a_degenerate_width(width):
    lower, upper = np.zeros(2), np.array([1.0, width])
    A = np.vstack([np.eye(2), -np.eye(2)])
    with pytest.raises(ValueError) as polytope_error:
        sc.Polytope(A, np.r_[upper, -lower])
    with pytest.raises(ValueError) as box_error:
        sc.Box(lower, upper)
    for error in (polytope_error, box_error):
        assert "\n" not in str(error.value)


def test_a_polytope_beyond_the_solver_scale_is_not_called_unbounded():
    A = np.vstack([np.eye(2), -np.eye(2)])
    with pytest.raises(ValueError) as info:
        sc.Polytope(A, 1e150 * np.array([2.0, 2.0, -1.0, -1.0]))
    message = str(info.value)
    assert "unbounded" not in message and "rescale" in message and "\n" not in message


def test_a_hull_far_from_the_origin_names_the_failure():
    points = 1e12 + np.random.default_rng(15).uniform(0, 1, (5, 2))
    try:
        hull = sc.ConvexHull(points)
    except ValueError as exc:
        assert "None" not in str(exc) and "\n" not in str(exc), str(exc)
    else:
        assert hull.contains(points, tol=0.0).all()
