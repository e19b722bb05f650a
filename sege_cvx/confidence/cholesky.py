r"""Per-run Cholesky kernels for the regularized least-squares confidence ellipsoid.

Every quantity of the confidence set comes from the lower Cholesky factor ``L`` of
``V = lambda I + sum_k X_k X_k^T`` (eq. (infomat)) by triangular solves:

* ``theta_hat = V^{-1} sum_k X_k Y_k`` (eq. (estimate)): ``L w = s``, ``L^T theta_hat = w``;
* ``||x||_{V^{-1}} = ||L^{-1} x||``: one forward substitution;
* ``lambda_min(V) >= a`` (SEGE's information test, Algorithm 1 line 5) iff ``V - a I`` is
  positive semidefinite, decided by attempting its Cholesky factorization.

``V`` itself is accumulated as a running sum of the observations (never through an
inverse), and ``L`` is refactored from it after every observation (``d^3 / 6`` flops, as
cheap as a rank-one update for the small ``d`` of bandits).  The error of ``L`` is then that
of one backward-stable factorization of the current ``V``, ``O(eps ||V||)``, whatever the
number of updates and however small ``lambda`` was: it neither accumulates with ``t`` nor
grows like ``1 / lambda``, as propagating ``V^{-1}`` by Sherman-Morrison from ``I / lambda``
does.

Each kernel loops over runs and computes every run with the same operations in the same
order, so a run's numbers do not depend on which other runs share its batch.
"""

from __future__ import annotations

import math

import numpy as np

from .._numba import njit


@njit(inline="always")
def factor(A: np.ndarray, shift: float, L: np.ndarray) -> bool:
    """Lower Cholesky factor of ``A - shift I`` into ``L`` (lower triangle of ``A`` read).

    Returns False, leaving ``L`` partly written, if a pivot is not positive (the matrix is not
    numerically positive definite).
    """
    d = A.shape[0]
    for j in range(d):
        s = A[j, j] - shift
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if not s > 0.0:
            return False
        ljj = np.sqrt(s)
        L[j, j] = ljj
        for i in range(j + 1, d):
            s = A[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s / ljj
        for i in range(j):
            L[i, j] = 0.0
    return True


@njit(inline="always")
def solve_lower(L: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """Solve ``L out = b`` (``L`` lower triangular)."""
    d = b.shape[0]
    for i in range(d):
        s = b[i]
        for k in range(i):
            s -= L[i, k] * out[k]
        out[i] = s / L[i, i]


@njit(inline="always")
def solve_lower_transposed(L: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """Solve ``L^T out = b`` (``L`` lower triangular)."""
    d = b.shape[0]
    for i in range(d - 1, -1, -1):
        s = b[i]
        for k in range(i + 1, d):
            s -= L[k, i] * out[k]
        out[i] = s / L[i, i]


@njit(inline="always")
def inverse_norm(L: np.ndarray, x: np.ndarray, work: np.ndarray) -> float:
    """``||x||_{V^{-1}} = ||L^{-1} x||`` for ``V = L L^T`` (``work``: scratch of length d)."""
    solve_lower(L, x, work)
    quad = 0.0
    for k in range(x.shape[0]):
        quad += work[k] * work[k]
    return np.sqrt(quad)


@njit(inline="always")
def observe_one(V, chol, xy_sum, theta_hat, x, y, V_new, L, w) -> bool:
    """Add ``(x, y)`` to one run's ``V``, ``xy_sum``; refactor and re-solve ``theta_hat``.

    ``V_new``, ``L`` and ``w`` are scratch.  Returns False, changing nothing, if ``V + x x^T``
    would not be numerically positive definite.
    """
    d = x.shape[0]
    for a in range(d):
        for b in range(d):
            V_new[a, b] = V[a, b] + x[a] * x[b]  # symmetric: the products commute
    if not factor(V_new, 0.0, L):
        return False
    for a in range(d):
        xy_sum[a] += x[a] * y
        for b in range(d):  # explicit loops: slice assignment is slower on tiny matrices
            V[a, b] = V_new[a, b]
            chol[a, b] = L[a, b]
    solve_lower(L, xy_sum, w)
    solve_lower_transposed(L, w, theta_hat)
    return True


@njit
def observe(V, chol, xy_sum, theta_hat, counts, rows, x, y) -> int:
    """Add observation ``(x_j, y_j)`` to run ``rows[j]`` for every ``j`` (:func:`observe_one`).

    Returns the index ``j`` of the first observation after which ``V`` would not be numerically
    positive definite (that observation is then not added: the run's state is left exactly as
    it was), or -1.
    """
    d = x.shape[1]
    w = np.empty(d)
    L = np.empty((d, d))
    V_new = np.empty((d, d))
    failed = -1
    for j in range(rows.shape[0]):
        i = rows[j]
        if observe_one(V[i], chol[i], xy_sum[i], theta_hat[i], x[j], y[j], V_new, L, w):
            counts[i] += 1
        elif failed < 0:
            failed = j
    return failed


@njit(inline="always")
def lcb_one(x, theta_hat, chol, radius, w) -> float:
    """``<x, theta_hat> - r ||x||_{V^{-1}}`` for one run (``w``: scratch of length d)."""
    dot = 0.0
    for k in range(x.shape[0]):
        dot += x[k] * theta_hat[k]
    return dot - radius * inverse_norm(chol, x, w)


@njit
def lcb_values(x, theta_hat, chol, radius) -> np.ndarray:
    """``LCB_i = <x_i, theta_hat_i> - r_i ||x_i||_{V_i^{-1}}`` per row (:func:`lcb_one`)."""
    n, d = x.shape
    out = np.empty(n)
    w = np.empty(d)
    for i in range(n):
        out[i] = lcb_one(x[i], theta_hat[i], chol[i], radius[i], w)
    return out


@njit
def min_eigenvalue_at_least(V, bound) -> np.ndarray:
    """Whether ``lambda_min(V_i) >= bound``, decided by factoring ``V_i - bound I``, per run.

    The factorization needs positive pivots, so an exact tie ``lambda_min = bound`` counts as
    failing; within rounding (about ``d eps ||V||``) the decision is a floating-point one,
    exactly as it would be with a computed eigenvalue.
    """
    n, d, _ = V.shape
    out = np.empty(n, dtype=np.bool_)
    L = np.empty((d, d))
    for i in range(n):
        out[i] = factor(V[i], bound, L)
    return out


@njit(inline="always")
def inverse_factor_one(L, out, e, col) -> None:
    """``L^{-1}`` of one run into ``out`` (``e``, ``col``: scratch of length d)."""
    d = L.shape[0]
    for j in range(d):
        e[:] = 0.0
        e[j] = 1.0
        solve_lower(L, e, col)
        for k in range(d):
            out[k, j] = col[k]


@njit
def precision_one(L, out, inv, e, col) -> None:
    """``V^{-1} = L^{-T} L^{-1}`` of one run into ``out``, exactly symmetric (``inv``: scratch
    (d, d); ``e``, ``col``: scratch of length d)."""
    d = L.shape[0]
    inverse_factor_one(L, inv, e, col)
    for a in range(d):
        for b in range(a, d):
            acc = 0.0
            for k in range(max(a, b), d):  # L^{-1} is lower triangular
                acc += inv[k, a] * inv[k, b]
            out[a, b] = acc
            out[b, a] = acc


@njit
def precision(chol) -> np.ndarray:
    """``V_i^{-1} = L_i^{-T} L_i^{-1}`` per run (:func:`precision_one`)."""
    n, d, _ = chol.shape
    out = np.empty((n, d, d))
    inv = np.empty((d, d))
    col = np.empty(d)
    e = np.empty(d)
    for i in range(n):
        precision_one(chol[i], out[i], inv, e, col)
    return out


#: Codes of :func:`checked_factor`.
SPD_OK, SPD_NOT_FINITE, SPD_ASYMMETRIC, SPD_NOT_DEFINITE, SPD_SINGULAR = 0, 1, 2, 3, 4


@njit
def checked_factor(A, rtol, sym, L, work) -> int:
    """Validate a symmetric positive definite matrix and factor it: every SPD input of the
    package goes through this one routine.

    ``A`` must be finite and symmetric up to ``rtol`` times its largest entry; ``sym`` receives
    ``(A + A^T) / 2`` (halves first: the sum may overflow) and ``L`` its lower Cholesky factor.
    The factorization is of ``sym`` divided by a power of 4 near its largest entry (exact, and
    so is the square root of the power), so that neither huge nor tiny matrices overflow or
    underflow inside.  Callers invert these matrices, so ``||L^{-1}||_F^2`` (a bound on
    ``||A^{-1}||_max``) must be a float.  ``work``: scratch of shape ``(d + 2, d)``.

    Returns
    -------
    int
        :data:`SPD_OK`, or why ``A`` was rejected: :data:`SPD_NOT_FINITE`,
        :data:`SPD_ASYMMETRIC`, :data:`SPD_NOT_DEFINITE` or :data:`SPD_SINGULAR`.
    """
    d = A.shape[0]
    scale = 0.0
    asym = 0.0
    for a in range(d):
        for b in range(d):
            if not math.isfinite(A[a, b]):
                return SPD_NOT_FINITE
            scale = max(scale, abs(A[a, b]))
            asym = max(asym, abs(A[a, b] - A[b, a]))
    if asym > rtol * max(scale, 1e-300):
        return SPD_ASYMMETRIC
    half = math.frexp(scale)[1] // 2
    unit = work[:d]
    for a in range(d):
        for b in range(d):
            sym[a, b] = 0.5 * A[a, b] + 0.5 * A[b, a]
            unit[a, b] = math.ldexp(sym[a, b], -2 * half)
    if not factor(unit, 0.0, L):
        return SPD_NOT_DEFINITE
    for a in range(d):
        for b in range(a + 1):
            L[a, b] = math.ldexp(L[a, b], half)
    inverse_factor_one(L, unit, work[d], work[d + 1])
    biggest = 0.0
    for a in range(d):
        for b in range(d):
            biggest = max(biggest, abs(unit[a, b]))
    if not math.isfinite(biggest):
        return SPD_SINGULAR
    if biggest == 0.0:
        return SPD_OK
    ssq = 0.0
    for a in range(d):
        for b in range(d):
            ssq += (unit[a, b] / biggest) ** 2
    return SPD_OK if math.isfinite(biggest * biggest * ssq) else SPD_SINGULAR


@njit
def checked_factor_all(A, rtol):
    """:func:`checked_factor` per matrix of ``A`` (shape ``(n, d, d)``): ``(sym, L, codes)``."""
    n, d, _ = A.shape
    sym = np.empty((n, d, d))
    L = np.zeros((n, d, d))
    codes = np.empty(n, dtype=np.int64)
    work = np.empty((d + 2, d))
    for i in range(n):
        codes[i] = checked_factor(A[i], rtol, sym[i], L[i], work)
    return sym, L, codes


@njit(inline="always")
def directional_terms(inv, theta_hat, arms_t, work) -> None:
    """``work[0, k] = <theta_hat, a_k>`` and ``work[1, k] = ||a_k||_{V^{-1}}`` for the columns
    ``a_k`` of ``arms_t`` (shape ``(d, K)``), with ``inv = L^{-1}`` formed once per run.

    ``||a||_{V^{-1}} = ||L^{-1} a||``.  Every loop runs over the arms innermost, so the compiler
    vectorizes it; each arm's sums are still taken in index order.  ``work``: shape ``(3, K)``
    (row 2 is scratch).
    """
    d, K = arms_t.shape
    dot, quad, w = work[0], work[1], work[2]
    for k in range(K):
        dot[k] = 0.0
        quad[k] = 0.0
    for j in range(d):
        tj = theta_hat[j]
        for k in range(K):
            dot[k] += tj * arms_t[j, k]
            w[k] = 0.0
        for m in range(j + 1):  # L^{-1} is lower triangular
            c = inv[j, m]
            for k in range(K):
                w[k] += c * arms_t[m, k]
        for k in range(K):
            quad[k] += w[k] * w[k]
    for k in range(K):
        quad[k] = np.sqrt(quad[k])
