"""How many of the arms that SEGE, CLUCB and ROFUL play, and that the public methods return,
lie outside the arm set in exact arithmetic?

Every arm is read as the exact rational number its float64 value is (``fractions.Fraction``),
and so is the user's own data (a polytope's ``A`` and ``b`` as given, a hull's points, a box's
bounds): no float test decides anything here.  A polytope's arm is outside when some row has
``A_j x > b_j``; a hull's when some facet inequality of the hull of the points, computed exactly
from them (every d-subset of points whose hyperplane has all points on one side), fails.  The
float values only pre-sort the rows: a row whose float residual exceeds ``1e-9`` of its terms'
magnitude is decided by its sign (rounding is ``1e-15`` of it), every other row in rationals.

Sets (each one random draw, seeded): a random polytope; one with redundant (repeated and
scaled) rows; one with near-parallel facets; integer rows ``x >= 0, sum(x) <= 2``; rows scaled
by ``1e6`` and ``1e-6``; a polytope far from the origin (centres ``1e2`` and ``1e5``); a box; the
convex hull of random points in the plane and in space, and a hull far from the origin.  On each,
``--stages`` stages of ``--runs`` runs of every policy, through the step API
(``select``/``observe``), and the public ``greedy_arm`` and ``lcb_arm`` on random instances.

Run from the repository root::

    python benchmarks/measure_exact_membership.py            # about a minute
    python benchmarks/measure_exact_membership.py --quick    # a smoke test (CI)
"""

from __future__ import annotations

import argparse
import itertools
import time
from fractions import Fraction
from functools import partial

import numpy as np

import sege_cvx as sc

#: Rows whose float residual is beyond this fraction of the magnitude of their terms are decided
#: by its sign (float rounding is about 1e-15 of that magnitude); the others in rationals.
PRESORT = 1e-9


def exact_violation(A: np.ndarray, b: np.ndarray, x: np.ndarray) -> Fraction:
    """``max_j (A_j x - b_j)`` in exact rationals (positive: ``x`` is outside)."""
    worst = None
    for j in range(A.shape[0]):
        s = sum((Fraction(float(a)) * Fraction(float(v)) for a, v in zip(A[j], x, strict=True)),
                Fraction(0)) - Fraction(float(b[j]))
        worst = s if worst is None or s > worst else worst
    return worst


def outside_count(A: np.ndarray, b: np.ndarray, X: np.ndarray) -> tuple[int, float]:
    """How many rows of ``X`` violate ``A x <= b`` exactly, and the largest violation."""
    X = np.asarray(X, dtype=np.float64).reshape(-1, A.shape[1])
    res = X @ A.T - b
    mag = np.abs(X) @ np.abs(A).T + np.abs(b)
    clear_out = (res > PRESORT * mag).any(axis=1)
    clear_in = (res < -PRESORT * mag).all(axis=1)
    count, worst = int(clear_out.sum()), float(np.max(res[clear_out], initial=0.0))
    for i in np.flatnonzero(~clear_out & ~clear_in):
        v = exact_violation(A, b, X[i])
        if v > 0:
            count += 1
            worst = max(worst, float(v))
    return count, worst


def exact_facets(points: np.ndarray) -> tuple[np.ndarray, np.ndarray, list]:
    """The facet inequalities ``n^T x <= c`` of ``conv(points)``, exactly: every ``d``-subset of
    points whose hyperplane (rational normal) has all points on one side.  Returns float copies
    (for the pre-sort) and the exact rows ``(n, c)``."""
    K, d = points.shape
    P = [[Fraction(float(v)) for v in p] for p in points]
    rows = []
    for subset in itertools.combinations(range(K), d):
        base = P[subset[0]]
        M = [[P[k][c] - base[c] for c in range(d)] for k in subset[1:]]
        normal = _null_vector(M, d)
        if normal is None:
            continue
        c = sum(n * v for n, v in zip(normal, base, strict=True))
        values = [sum(n * v for n, v in zip(normal, p, strict=True)) for p in P]
        if all(v <= c for v in values):
            rows.append((normal, c))
        elif all(v >= c for v in values):
            rows.append(([-n for n in normal], -c))
    A = np.array([[float(n) for n in r[0]] for r in rows])
    b = np.array([float(r[1]) for r in rows])
    return A, b, rows


def _null_vector(M: list, d: int) -> list | None:
    """A nonzero rational vector orthogonal to the ``d - 1`` rows of ``M`` (None if they are
    dependent): cofactors of the ``(d-1) x d`` matrix."""
    if d == 1:
        return [Fraction(1)]
    out = []
    for j in range(d):
        minor = [[row[c] for c in range(d) if c != j] for row in M]
        out.append((-1) ** j * _det(minor))
    return out if any(out) else None


def _det(M: list) -> Fraction:
    n = len(M)
    if n == 1:
        return M[0][0]
    if n == 2:
        return M[0][0] * M[1][1] - M[0][1] * M[1][0]
    return sum((-1) ** j * M[0][j] * _det([row[:j] + row[j + 1:] for row in M[1:]])
               for j in range(n))


def hull_outside_count(rows: list, A: np.ndarray, b: np.ndarray, X: np.ndarray) -> tuple[int, float]:
    """:func:`outside_count` against the exact facet rows of a hull."""
    X = np.asarray(X, dtype=np.float64).reshape(-1, A.shape[1])
    res = X @ A.T - b
    mag = np.abs(X) @ np.abs(A).T + np.abs(b)
    clear_out = (res > PRESORT * mag).any(axis=1)
    clear_in = (res < -PRESORT * mag).all(axis=1)
    count, worst = int(clear_out.sum()), float(np.max(res[clear_out], initial=0.0))
    for i in np.flatnonzero(~clear_out & ~clear_in):
        x = [Fraction(float(v)) for v in X[i]]
        excess = max(sum(n * v for n, v in zip(normal, x, strict=True)) - c for normal, c in rows)
        if excess > 0:
            count += 1
            worst = max(worst, float(excess))
    return count, worst


# ----------------------------------------------------------------------------- the sets
def unit_rows(A: np.ndarray) -> np.ndarray:
    return A / np.linalg.norm(A, axis=1, keepdims=True)


def random_polytope(rng, d=3, m=10, offset=0.0):
    A = unit_rows(rng.standard_normal((m, d)))
    b = rng.uniform(0.5, 1.5, m)
    return A, b + A @ np.full(d, offset)


def polytope_sets(rng):
    d = 3
    out = {}
    out["random"] = random_polytope(rng)
    A, b = random_polytope(rng)
    out["redundant"] = (np.vstack([A, A[:3], 3.0 * A[3:6]]), np.concatenate([b, b[:3], 3.0 * b[3:6]]))
    A, b = random_polytope(rng, m=8)
    tilt = unit_rows(A[:4] + 1e-7 * rng.standard_normal((4, d)))
    out["near-parallel"] = (np.vstack([A, tilt]), np.concatenate([b, b[:4] + 1e-8]))
    out["integer"] = (np.vstack([-np.eye(d), np.ones((1, d))]), np.array([0.0, 0.0, 0.0, 2.0]))
    A, b = random_polytope(rng)
    s = np.where(np.arange(A.shape[0]) % 2 == 0, 1e6, 1e-6)
    out["scaled 1e+-6"] = (A * s[:, None], b * s)
    out["far 1e2"] = random_polytope(rng, offset=1e2)
    out["far 1e5"] = random_polytope(rng, offset=1e5)
    return out


def problem_for(arm_set, rng, baseline=None):
    """``theta*`` (norm 0.8), a baseline arm (given, or a random point of the exploration's
    body, strictly inside), its exact reward (positive: CLUCB's budget needs it), and a threshold
    below it by 20 % of the rewards' range."""
    expl = arm_set.exploration()
    x0 = (expl.center + 0.5 * expl.B @ rng.uniform(-1, 1, arm_set.dim) / np.sqrt(arm_set.dim)
          if baseline is None else baseline)
    theta = rng.standard_normal(arm_set.dim)
    theta *= 0.8 / np.linalg.norm(theta)
    if theta @ x0 < 0:
        theta = -theta
    b0 = float(x0 @ theta)
    spread = float(np.abs(theta).sum() * arm_set.diameter_bound())
    return theta, x0, b0, b0 - 0.2 * spread


def played_arms(policy, theta, stages, noise_sd, seed):
    rng = np.random.default_rng(seed)
    arms = []
    for _ in range(stages):
        x = np.atleast_2d(policy.select())
        arms.append(x.copy())
        y = x @ theta + noise_sd * rng.standard_normal(x.shape[0])
        policy.observe(x if policy.n_runs > 1 else x[0], y if policy.n_runs > 1 else y[0])
    return np.vstack(arms)


def public_arms(arm_set, rng, n):
    d = arm_set.dim
    thetas = rng.standard_normal((n, d))
    greedy = arm_set.greedy_arm(thetas)
    lcb = []
    for i in range(n):
        M = rng.standard_normal((d, d))
        V = M @ M.T + 0.1 * np.eye(d)
        lcb.append(arm_set.lcb_arm(thetas[i], V, rng.uniform(0.1, 3.0)))
    return greedy, np.vstack(lcb)


def measure(name, arm_set, counter, rng, args, baseline=None):
    theta, x0, b0, b = problem_for(arm_set, rng, baseline)
    rows = []
    def setting():
        return sc.SafeSetting(arm_set, x0, S=1.0, noise_sd=args.noise,
                              safety=sc.RewardFloor(b0, b))

    makers = {
        "SEGE": lambda: sc.SEGE(setting(), c=1e-3, seed=1, n_runs=args.runs),
        "CLUCB": lambda: sc.CLUCB(setting(), n_arms=64, n_runs=args.runs),
        "ROFUL": lambda: sc.StagewiseROFUL(setting(), n_directions=64, n_runs=args.runs),
    }
    for policy_name, make in makers.items():
        try:
            policy = make()  # the setting refused (ValueError) counts as the policy's refusal
        except ValueError as exc:
            rows.append((name, policy_name, 0, 0, f"refused: {str(exc)[:60]}"))
            continue
        arms = played_arms(policy, theta, args.stages, args.noise, 2)
        n_out, worst = counter(arms)
        rows.append((name, policy_name, len(arms), n_out, f"{worst:.2g}"))
    greedy, lcb = public_arms(arm_set, rng, args.public)
    for method, arms in (("greedy_arm", greedy), ("lcb_arm", lcb)):
        n_out, worst = counter(arms)
        rows.append((name, method, len(arms), n_out, f"{worst:.2g}"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--stages", type=int, default=300)
    parser.add_argument("--public", type=int, default=200, help="instances of greedy_arm, lcb_arm")
    parser.add_argument("--noise", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="a smoke test: 2 sets, few stages")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.stages, args.public = 2, 20, 10
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    rows = []
    polys = polytope_sets(rng)
    if args.quick:
        polys = dict(list(polys.items())[:1])
    for name, (A, b) in polys.items():
        P = sc.Polytope(A, b)
        rows += measure(f"polytope: {name}", P, lambda X, A=A, b=b: outside_count(A, b, X), rng,
                        args)
    box = sc.Box([0.1, -0.3, 0.2], [0.7, 0.9, 1.3])
    Ab = np.vstack([np.eye(3), -np.eye(3)])
    bb = np.concatenate([box.upper, -box.lower])
    rows += measure("box", box, lambda X: outside_count(Ab, bb, X), rng, args)
    hulls = {"hull 2-D": rng.uniform(0, 1, (7, 2)), "hull 3-D": rng.uniform(0, 1, (9, 3)),
             "hull 2-D far 1e3": 1e3 + rng.uniform(0, 1, (7, 2))}
    if args.quick:
        hulls = dict(list(hulls.items())[:1])
    for name, points in hulls.items():
        H = sc.ConvexHull(points)
        A, b, exact = exact_facets(points)
        count = partial(hull_outside_count, exact, A, b)
        rows += measure(name, H, count, rng, args)
        if not args.quick:  # the baseline at a vertex: ROFUL's segments run along edges
            vertex = points[np.argmax(points.sum(axis=1))]
            rows += measure(f"{name}, x0 a vertex", H, count, rng, args, baseline=vertex)
    print(f"{'set':<24} {'arms from':<11} {'arms':>7} {'outside':>8}  max excess")
    for row in rows:
        print(f"{row[0]:<24} {row[1]:<11} {row[2]:>7} {row[3]:>8}  {row[4]}")
    total = sum(r[3] for r in rows)
    print(f"\n{total} arms outside in all ({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
