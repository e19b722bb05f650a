"""Exact rational arithmetic for the membership decisions the compiled kernels leave open.

The compiled tests (:mod:`sege_cvx.arm_sets.kernels.exact`) decide ``A x <= b`` exactly for data of
ordinary magnitude; a row they cannot decide (data beyond about 1e135 or below 1e-135) is decided
here, on the exact rationals the float64 values are (:class:`fractions.Fraction`).  A convex
hull's membership, a linear feasibility question, is decided here by the simplex method in
rationals where a verified float solve cannot prove it (:func:`convex_weights`).  Both serve
``contains(x, tol=0)`` and construction-time certificates, never a simulation's stages.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from .kernels import exact

_U = 2.0**-53


def _q(v: float) -> Fraction:
    return Fraction(float(v))


def row_violated(A: np.ndarray, b: np.ndarray, j: int, x: np.ndarray) -> bool:
    """Whether ``A[j] x > b[j]`` in exact rationals (finite ``x``)."""
    total = sum((_q(a) * _q(v) for a, v in zip(A[j], x, strict=True)), Fraction(0))
    return total > _q(b[j])


def polytope_contains(rows: tuple, X: np.ndarray) -> np.ndarray:
    """Whether each row of ``X`` satisfies ``A x <= b`` exactly (rows with NaN or inf: False);
    ``rows``: :func:`~sege_cvx.arm_sets.kernels.exact.membership_rows` of ``A`` and ``b``.

    Tier 1 of :mod:`~sege_cvx.arm_sets.kernels.exact` in NumPy first (:func:`_filter_verdicts`), then
    the compiled verdicts (:func:`~sege_cvx.arm_sets.kernels.exact.polytope_verdicts`) for the points
    it leaves open, then for those still :data:`~sege_cvx.arm_sets.kernels.exact.UNDECIDED` every
    row's sign with the exact expansion (:func:`~sege_cvx.arm_sets.kernels.exact.row_signs`), and the
    rows beyond its range in rationals.
    """
    A, b = rows[0], rows[1]
    X = np.ascontiguousarray(X, dtype=np.float64)
    verdicts = _filter_verdicts(rows, X)
    open_ = np.flatnonzero(verdicts == exact.UNDECIDED)
    if open_.size:  # points within rounding of a facet: compiled only where needed
        verdicts[open_] = exact.polytope_verdicts(rows, X[open_])
    out = verdicts == exact.INSIDE
    for i in np.flatnonzero(verdicts == exact.UNDECIDED):
        x = X[i]
        if not np.all(np.isfinite(x)):
            continue
        signs = exact.row_signs(rows, x)
        out[i] = not (np.any(signs == exact.POSITIVE) or any(
            row_violated(A, b, j, x) for j in np.flatnonzero(signs == exact.UNDECIDED)))
    return out


def _filter_verdicts(rows: tuple, X: np.ndarray) -> np.ndarray:
    """Tier 1 (:func:`~sege_cvx.arm_sets.kernels.exact.filter_sign`) on every point at once, with
    NumPy's product: :data:`~sege_cvx.arm_sets.kernels.exact.INSIDE`, ``OUTSIDE`` or ``UNDECIDED`` per
    row of ``X``.  The rounding bound ``(n + 2) u (||a||_1 max_k |x_k| + |b|)`` holds for a sum
    in any order, with or without fused multiply-adds, so the BLAS's order does not matter; a
    row with a single entry ``+-1`` (``l1 = 0``) has an exact sum.  NaN and inf are undecided."""
    A, b, l1 = rows
    with np.errstate(all="ignore"):
        residual = X @ A.T - b
        largest = np.max(np.abs(X), axis=1, initial=0.0)
        largest[~np.all(np.isfinite(X), axis=1)] = np.nan
        bound = exact.filter_factor.py_func(A.shape[1]) * (l1 * largest[:, None] + np.abs(b)) + exact._ABS
    bound[:, l1 == 0.0] = 0.0
    bound[np.isnan(largest)] = np.nan
    inside = (residual < -bound) | ((bound == 0.0) & (residual <= 0.0))
    verdicts = np.full(X.shape[0], exact.UNDECIDED, dtype=np.int8)
    verdicts[np.all(inside, axis=1)] = exact.INSIDE
    verdicts[np.any(residual > bound, axis=1)] = exact.OUTSIDE
    return verdicts


def convex_weights(points: np.ndarray, x: np.ndarray) -> np.ndarray | None:
    """Weights proving ``x`` in the convex hull of the rows of ``points`` in exact arithmetic
    (rounded to float), or ``None`` if ``x`` is not in it.

    A basic solution of ``points^T w = x``, ``sum(w) = 1``, ``w >= 0`` (HiGHS's simplex method)
    names at most ``d + 1`` points whose simplex should contain ``x``; then

    1. a verified float solve on them (:func:`verified_barycentric`) proves it for a point
       strictly inside that simplex, at the cost of a few ``(d + 1) x (d + 1)`` products;
    2. otherwise (a point on a face, or near one) the same points in exact rationals;
    3. the hyperplane through the ``d`` points of largest weight, if it is a facet of the hull
       (every point on one side, in rationals), decides a point near it
       (:func:`_facet_decision`): beyond it,
       outside; on it, in the facet's points' hull; short of it, in the simplex of these points
       and the point farthest from it, if its barycentric coordinates there are nonnegative;
    4. and otherwise (the linear program found no solution, or a point near a lower-dimensional
       face), phase one of the simplex method over all the points in exact rationals
       (:func:`_phase_one`), which decides: slow for thousands of points.
    """
    K, d = points.shape
    x = np.asarray(x, dtype=np.float64)
    xq = [_q(v) for v in x]
    basic = basic_weights(points, x)
    if basic is not None:
        support = np.flatnonzero(basic > 0)
        if support.size == d + 1:
            weights = verified_barycentric(points[support], x)
            if weights is not None:
                return _spread(K, support, weights)
        if support.size:
            exact = _phase_one(points[support], xq)
            if exact is not None:
                return _spread(K, support, [float(v) for v in exact])
        if support.size >= d:  # a point near a facet: the d largest weights name it
            facet = np.sort(support[np.argsort(-basic[support], kind="stable")[:d]])
            decided = _facet_decision(points, xq, facet)
            if decided is not None:
                return None if decided is False else decided
    exact = _phase_one(points, xq)
    return None if exact is None else np.array([float(v) for v in exact])


def _spread(K: int, support: np.ndarray, weights) -> np.ndarray:
    out = np.zeros(K)
    out[support] = weights
    return out


def _facet_decision(points: np.ndarray, x: list[Fraction],
                    support: np.ndarray) -> np.ndarray | bool | None:
    """Decide ``x`` near the hyperplane through the ``d`` points ``support``: weights (inside),
    ``False`` (outside), or ``None`` (not a facet, or undecided).  All in rationals."""
    K, d = points.shape
    P = [[_q(v) for v in p] for p in points]
    base = P[support[0]]
    normal = _null_vector([[P[k][c] - base[c] for c in range(d)] for k in support[1:]], d)
    if normal is None:
        return None
    offset = sum(n * v for n, v in zip(normal, base, strict=True))
    values = [sum(n * v for n, v in zip(normal, p, strict=True)) - offset for p in P]
    if all(v >= 0 for v in values):  # the hull's points below the hyperplane: flip it
        normal, values = [-n for n in normal], [-v for v in values]
        offset = -offset
    if not all(v <= 0 for v in values):
        return None  # not a supporting hyperplane
    side = sum(n * v for n, v in zip(normal, x, strict=True)) - offset
    if side > 0:
        return False  # beyond a facet: outside
    if side == 0:  # on the facet: in the hull of the facet's own points, or not
        on = np.array([k for k in range(K) if values[k] == 0])
        exact = _phase_one(points[on], x)
        return False if exact is None else _spread(K, on, [float(v) for v in exact])
    far = int(min(range(K), key=lambda k: values[k]))  # the point farthest inside
    simplex = [*support, far]
    M = [[P[k][c] for k in simplex] for c in range(d)] + [[Fraction(1)] * (d + 1)]
    weights = _solve(M, [*x, Fraction(1)])
    if weights is None or any(w < 0 for w in weights):
        return None
    return _spread(K, np.array(simplex), [float(w) for w in weights])


def _pivot(rows: list[list[Fraction]], r: int, c: int) -> None:
    """A Gauss-Jordan pivot in place: row ``r`` divided by ``rows[r][c]``, column ``c`` cleared
    from every other row."""
    lead = rows[r][c]
    rows[r] = [v / lead for v in rows[r]]
    for i in range(len(rows)):
        if i != r and rows[i][c] != 0:
            f = rows[i][c]
            rows[i] = [a - f * p for a, p in zip(rows[i], rows[r], strict=True)]


def _null_vector(rows: list[list[Fraction]], d: int) -> list[Fraction] | None:
    """A nonzero rational vector orthogonal to the ``d - 1`` ``rows``, or ``None`` if they are
    dependent (Gaussian elimination to reduced row echelon form)."""
    rows = [list(r) for r in rows]
    pivots = []
    r = 0
    for c in range(d):
        pivot = next((i for i in range(r, len(rows)) if rows[i][c] != 0), None)
        if pivot is None:
            continue
        rows[r], rows[pivot] = rows[pivot], rows[r]
        _pivot(rows, r, c)
        pivots.append(c)
        r += 1
    if r != d - 1:
        return None
    free = next(c for c in range(d) if c not in pivots)
    out = [Fraction(0)] * d
    out[free] = Fraction(1)
    for i, c in enumerate(pivots):
        out[c] = -rows[i][free]
    return out


def _solve(M: list[list[Fraction]], rhs: list[Fraction]) -> list[Fraction] | None:
    """The solution of the square rational system ``M w = rhs``, or ``None`` if singular."""
    n = len(M)
    rows = [list(row) + [v] for row, v in zip(M, rhs, strict=True)]
    for c in range(n):
        pivot = next((i for i in range(c, n) if rows[i][c] != 0), None)
        if pivot is None:
            return None
        rows[c], rows[pivot] = rows[pivot], rows[c]
        _pivot(rows, c, c)
    return [rows[i][n] for i in range(n)]


def basic_weights(points: np.ndarray, x: np.ndarray) -> np.ndarray | None:
    """Float weights ``w >= 0`` with ``points^T w = x``, ``sum(w) = 1`` to the solver's
    tolerance, from a basic solution (at most ``d + 1`` of them nonzero; HiGHS's dual simplex
    method), or ``None`` if it finds none."""
    from scipy.optimize import linprog

    K = points.shape[0]
    result = linprog(np.zeros(K), A_eq=np.vstack([points.T, np.ones(K)]),
                     b_eq=np.append(x, 1.0), bounds=(0, None), method="highs-ds")
    if result.status != 0 or not np.all(np.isfinite(result.x)):
        return None
    return np.maximum(result.x, 0.0)


def verified_barycentric(simplex: np.ndarray, x: np.ndarray) -> np.ndarray | None:
    """Float barycentric coordinates of ``x`` in the simplex of the ``d + 1`` rows of
    ``simplex``, returned only if they are *proven* positive: the exact coordinates ``l`` solve
    ``M l = [x; 1]``, ``M = [simplex^T; 1^T]``, and lie within ``delta`` of the computed ``l~``.

    The bound is Rump's: with ``R`` an approximate inverse and ``G = I - R M``, ``||M^{-1}|| <=
    ||R|| / (1 - ||G||)`` when ``||G|| < 1``, so ``|l - l~| <= ||M^{-1}|| ||M l~ - [x; 1]||``
    (infinity norms).  Every computed product is widened by its rounding bound ``gamma_n |A||B|``
    (any summation order, BLAS's included), so the proof holds in exact arithmetic.  ``None``
    for a singular or ill-conditioned ``M`` or a coordinate within ``delta`` of 0.
    """
    n = simplex.shape[0]
    M = np.vstack([simplex.T, np.ones(n)])
    rhs = np.append(x, 1.0)
    if M.shape != (n, n):
        return None
    with np.errstate(all="ignore"):
        try:
            approx = np.linalg.solve(M, rhs)
            R = np.linalg.inv(M)
        except np.linalg.LinAlgError:
            return None
        g = (n + 2) * _U / (1.0 - (n + 2) * _U)
        up = 1.0 + 4.0 * (n + 2) * _U
        residual = (np.abs(rhs - M @ approx) + g * (np.abs(rhs) + np.abs(M) @ np.abs(approx))) * up
        G = (np.abs(np.eye(n) - R @ M) + g * (np.eye(n) + np.abs(R) @ np.abs(M))) * up
        g_norm = float(np.max(G.sum(axis=1))) * up
        if not g_norm < 0.5:
            return None
        inverse_norm = float(np.max(np.abs(R).sum(axis=1))) * up / (1.0 - g_norm) * up
        delta = inverse_norm * float(np.max(residual)) * up + 1e-300
    if not (np.all(np.isfinite(approx)) and np.isfinite(delta) and np.min(approx) > delta):
        return None
    return approx


def _phase_one(points: np.ndarray, x: list[Fraction]) -> list[Fraction] | None:
    """The simplex method's phase one for ``[points^T; 1^T] w = [x; 1]``, ``w >= 0``: feasible
    weights, or ``None``."""
    K, d = points.shape
    rows = [[_q(points[k, c]) for k in range(K)] + [x[c]] for c in range(d)]
    rows.append([Fraction(1)] * K + [Fraction(1)])
    for row in rows:  # right-hand sides >= 0, so that the artificial basis is feasible
        if row[-1] < 0:
            row[:] = [-v for v in row]
    m = d + 1
    # Tableau columns: K weights, m artificials, right-hand side; the basis starts artificial.
    tableau = [row[:K] + [Fraction(int(i == r)) for i in range(m)] + [row[-1]]
               for r, row in enumerate(rows)]
    basis = [K + r for r in range(m)]
    while True:
        # Minimizing the artificials' sum: a weight's reduced cost is minus its column's sum over
        # the rows whose basic variable is artificial; the first negative one enters (Bland).
        artificial = [r for r in range(m) if basis[r] >= K]
        entering = next((j for j in range(K) if j not in basis
                         and sum(tableau[r][j] for r in artificial) > 0), None)
        if entering is None:
            break
        ratios = [(tableau[r][-1] / tableau[r][entering], basis[r], r)
                  for r in range(m) if tableau[r][entering] > 0]
        _, _, leave = min(ratios)  # the smallest ratio, ties by smallest basic index (Bland)
        _pivot(tableau, leave, entering)
        basis[leave] = entering
    if any(basis[r] >= K and tableau[r][-1] != 0 for r in range(m)):
        return None
    w = [Fraction(0)] * K
    for r in range(m):
        if basis[r] < K:
            w[basis[r]] = tableau[r][-1]
    return w
