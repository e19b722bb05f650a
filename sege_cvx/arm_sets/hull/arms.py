r"""Exact greedy and LCB arms of a convex hull ``conv{p_1, ..., p_K}``, over its weights, with
certificates.

An arm of the hull is ``x = P^T w`` with weights ``w`` on the simplex (``w >= 0``, ``sum(w) =
1``), *computed* from them (``x_j = sum_k w_k P_kj`` in index order), which rounding can leave
just outside the hull.  The weights define an exact point ``y = P^T w / sum(w)`` of the hull, and
:func:`anchored` proves ``x`` in the hull in exact arithmetic as ``x = beta y + (1 - beta) z``
with ``z`` in a cross-polytope certified inside the hull: at ``beta = 1`` for an arm that is a
point itself (the greedy arm), else after the least contraction ``c + beta (x - c)`` of
:func:`sege_cvx.arm_sets.kernels.pull_in.pull_in_one`'s schedule that the proof accepts
(:func:`pull_into_hull`; ``1 - beta`` about 1e-14 for well-scaled hulls).

* The greedy arm, ``max theta^T x`` (paper eq. (greedy arm)), is the best point, the first of
  ties, with the unit weight vector.
* The LCB arm, ``max f(x) = theta^T x - r ||x||_{V^{-1}}`` (paper eq. (lcb arm)), is found by a
  primal active-set method over the points (simplicial decomposition): a working set ``S`` of
  affinely independent points (at most ``d + 1``) carrying positive weights, and per iteration

  1. the maximizer of ``f`` on the affine hull of ``S``, in closed form (below);
  2. a step of the weights toward it, stopped by the first weight it would make negative (that
     point leaves ``S``), or
  3. at the face's maximizer, the Frank-Wolfe test: the point ``p_k`` that maximizes the
     gradient ``grad^T p_k`` enters ``S`` if it improves on ``grad^T x``; none does at the
     optimum.  At ``y = 0``, where ``f`` is not differentiable, the test is the projection
     ``delta`` of ``g`` onto the hull's tangent cone there (:func:`cone_projection`): ``0`` is
     the maximizer if ``||delta|| <= r``; otherwise ``f`` grows along ``delta`` and the method
     restarts from the convex combination of its generators, where ``f > 0``.

**The face maximizer** is the closed form of :mod:`sege_cvx.arm_sets.polytope.arms` in whitened coordinates
``y = L^{-1} x`` (``V = L L^T``, ``theta^T x = g^T y`` with ``g = L^T theta``): the face is ``c +
span(Q)`` with ``c`` the first point of ``S`` and ``Q`` (rows) an orthonormal basis of the other
points' offsets from it (classical Gram-Schmidt twice, ``M = Q^T R``).  With ``c = c_perp + Q^T
t``, ``h = Q g`` and ``a = ||c_perp||``, ``f = g^T c_perp + h^T v - r sqrt(a^2 + ||v||^2)`` in the
face coordinate ``v = t + R z``; for ``r > ||h||`` its maximizer is ``v = a h / sqrt(r^2 -
||h||^2)`` (``y = 0`` on a face through the origin), otherwise ``f`` grows without bound along
``h`` and the step runs until a weight reaches 0.  The weights of ``y = c + M z`` are ``z`` and
``1 - sum(z)`` for ``c``.

**Certificate.**  For any ``u`` with ``||u|| <= 1`` and any ``x'`` in the hull, ``f(x') <=
theta^T x' - r u^T L^{-1} x' = (L^{-T} grad)^T x' <= max_k (L^{-T} grad)^T p_k`` with ``grad = g -
r u``, and ``r (||u|| - 1) Z`` more if rounding leaves ``||u||`` above 1 (``Z >= max ||L^{-1} x'||``
over the hull).  The method's last ``grad`` is ``g - r y / ||y||`` (the gradient), or at ``y = 0``
``g - delta`` (``u = delta / r``).  An arm is accepted only when this upper bound differs from
``f`` at the arm by at most :data:`GAP_RTOL` times ``||theta|| norm_bound + r Z``, the scale of
the objective's terms over the hull, and its weights are on the simplex.

**Warm start.**  A run keeps its working set and weights from one stage to the next (the hull
does not change, and ``theta_hat`` and ``V`` change little), so a solve usually ends after one
face solve and one Frank-Wolfe test (``O(K d)``).  Should a warm solve not certify, it is repeated
from the greedy point; only if that fails too is :data:`NOT_CERTIFIED` returned.

The geometry a compiled stage receives is the record :class:`HullGeometry`, ``(points,
norm_bound, z_bound, gap_rtol, baseline, table, center, half)`` (:meth:`HullArms.geometry`):
the points, a certified bound on ``max ||x||``
over the hull, a bound on ``||x||_{V^{-1}}`` (0: computed where needed), the accepted gap, for
SEGE the baseline arm's weights and the weights of the exploration's ``2d`` vertices and centre
(rows of ``table``, in the order of
:meth:`~sege_cvx.arm_sets.exploration.Exploration.witness_points`), and the certified
cross-polytope of :func:`anchored`.  SEGE's mix ``(1 - rho) X^S + rho U`` is formed in weight
space (:func:`pull_inside_one`).  A run's warm state is ``(rows, counts, weights, mix)`` of
shapes ``(3, d + 1)``, ``(3,)``, ``(3, d + 1)`` and ``(1, K)``: slots :data:`GREEDY`,
:data:`LCB` (the working set's point indices, increasing, and weights) and :data:`CONE`
(scratch), and the last mix's weights.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..._numba import njit
from ..exploration import drawn_vertex
from ..kernels.pull_in import FIRST_CONTRACTION, MAX_CONTRACTION, spacing
from ..kernels.registry import GeometryKernels, register_geometry
from ..kernels.status import NOT_CERTIFIED, NOT_FINITE, NOT_MEMBER, VERIFIED
from ..lifted import EQUALITY_ROUNDING
from ..polytope.arms import (
    GAP_RTOL,
    inverse_frobenius,
    orthonormalize_row,
    project_out,
)
from ..scaling import scale_to_order_one


class HullGeometry(NamedTuple):
    """A convex hull as compiled code reads it (:mod:`~sege_cvx.arm_sets.kernels.registry` dispatches on this
    class): the points ``P`` (rows), ``max ||x||``, the bound ``z_bound`` on ``||x||_{V^{-1}}`` (0:
    computed per instance), the accepted duality gap, SEGE's baseline weights and exploration table
    (:meth:`HullArms.geometry`), and the certified body ``(center, half)``."""

    points: np.ndarray
    norm_bound: float
    z_bound: float
    gap_rtol: float
    baseline: np.ndarray
    table: np.ndarray
    center: np.ndarray
    half: np.ndarray


#: Slots of a run's warm state (:data:`CONE`: scratch of :func:`cone_projection`).
GREEDY, LCB, CONE = 0, 1, 2
#: The Frank-Wolfe test admits a point only if it improves on ``grad^T x`` by more than this
#: fraction of the certificate's scale (below it, the certificate decides).
ENTER_RTOL = 1e-13

#: A face passes through the origin when its point nearest the origin is this close to it,
#: relative to the face's first point (whitened): rounding level.
ORIGIN_RTOL = 1e-12

_EPS = float(np.finfo(np.float64).eps)
_U = _EPS / 2.0
#: The smallest subnormal: the absolute rounding of a product or sum in the subnormal range.
_SUBNORMAL = 5e-324

# Rows of the scratch ``vecs`` (at least 14 rows of length d) and ``mats`` (2, d, d), indexed by
# row rather than viewed (a view costs atomic reference-count updates; see polytope.arms).
_G, _C, _H, _T, _Z, _Y, _GRAD, _PHAT, _SCALED, _X, _W1, _DIFF, _CPERP, _DELTA = range(14)
_Q, _R = 0, 1


@njit(inline="always")
def _forward(chol, vecs, src, dst) -> float:
    """``vecs[dst] = L^{-1} vecs[src]``; returns its squared norm."""
    d = chol.shape[0]
    norm2 = 0.0
    for i in range(d):
        s = vecs[src, i]
        for c in range(i):
            s -= chol[i, c] * vecs[dst, c]
        s /= chol[i, i]
        vecs[dst, i] = s
        norm2 += s * s
    return norm2


@njit(inline="always")
def _backward(chol, vecs, src, dst) -> None:
    """``vecs[dst] = L^{-T} vecs[src]``."""
    d = chol.shape[0]
    for i in range(d - 1, -1, -1):
        s = vecs[src, i]
        for c in range(i + 1, d):
            s -= chol[c, i] * vecs[dst, c]
        vecs[dst, i] = s / chol[i, i]


@njit(inline="always")
def _arm_from_weights(P, S, weights, slot, m, vecs, dst) -> None:
    """``vecs[dst] = sum_j weights[slot, j] P[S[slot, j]]``, in index order (``S`` increases)."""
    d = P.shape[1]
    for c in range(d):
        vecs[dst, c] = 0.0
    for j in range(m):
        w = weights[slot, j]
        k = S[slot, j]
        for c in range(d):
            vecs[dst, c] += w * P[k, c]


@njit(inline="always")
def sum_tolerance(total_abs: float, K: int) -> float:
    """The rounding bound on ``|sum(w) - 1|`` that the lifted check accepts for ``K`` weights
    (:data:`~sege_cvx.arm_sets.lifted.EQUALITY_ROUNDING` ``(K + 3) eps (sum|w| + 1)``)."""
    return EQUALITY_ROUNDING * (K + 3.0) * _EPS * (total_abs + 1.0)


@njit(inline="always")
def _on_simplex(weights, slot, m, K) -> bool:
    total = 0.0
    for j in range(m):
        w = weights[slot, j]
        if not (w >= 0.0 and math.isfinite(w)):
            return False
        total += w
    return abs(total - 1.0) <= sum_tolerance(total, K)


@njit(inline="always")
def anchored(x, P, idx, w, m, sparse, beta, center, half) -> bool:
    r"""Whether ``x`` lies in ``conv(P)`` exactly, shown by ``x = beta y + alpha z`` with
    ``alpha = 1 - beta`` (exact, ``beta`` in ``[1/2, 1]``), ``y = sum_j w_j p_j / sum_j w_j``
    (weights ``w_j >= 0`` of points ``p_j = P[idx[j]]``, or ``P[j]`` unless ``sparse``) and ``z``
    in the inscribed cross-polytope ``C = {c + t : sum_i |t_i| / h_i <= 1}`` (``center``,
    ``half``), whose vertices were certified in the hull exactly (:class:`HullArms`).

    ``y`` and ``z`` lie in the hull, so does ``x``.  The test, with ``s = sum_j w_j`` and
    ``D_i = sum_j w_j (x_i - beta P_ji - alpha c_i)``: ``sum_i |D_i| / h_i <= alpha s``, the
    computed ``D_i`` widened by their rounding bound (``gamma_{n+3}`` times their terms'
    magnitudes, ``n`` the positive weights) and the sums by theirs.  ``beta = 1``: ``x`` must be
    one of the weighted points itself, bit for bit (a vertex).
    """
    K, d = P.shape
    s, n, last = _weights_sum(w, m, idx, sparse)
    if not (s > 0.0 and 0.5 <= beta <= 1.0):  # 1 - beta is exact there (Sterbenz)
        return False
    if beta == 1.0:
        if n != 1:
            return False
        for i in range(d):
            if x[i] != P[last, i]:
                return False
        return True
    return _gauge(x, P, idx, w, m, sparse, beta, center, half, n) <= (1.0 - beta) * s * (
        1.0 - (n + 2.0) * _U)


@njit(inline="always")
def _weights_sum(w, m, idx, sparse) -> tuple:
    """``(s, n, last)``: the weights' sum, how many are positive and the point of the last one;
    ``s = -1`` if any is negative or not finite."""
    s = 0.0
    n = 0
    last = -1
    for j in range(m):
        wj = w[j]
        if not (wj >= 0.0 and wj < math.inf):
            return -1.0, 0, -1
        if wj > 0.0:
            n += 1
            last = idx[j] if sparse else j
        s += wj
    return s, n, last


@njit(inline="always")
def _gauge(x, P, idx, w, m, sparse, beta, center, half, n) -> float:
    """An upper bound on ``sum_i |D_i| / h_i`` (:func:`anchored`), ``n`` the positive weights:
    the terms actually summed (zero weights add exact zeros) set the rounding bounds."""
    d = P.shape[1]
    alpha = 1.0 - beta
    lhs = 0.0
    for i in range(d):
        total = 0.0
        size = 0.0
        for j in range(m):
            wj = w[j]
            if wj == 0.0:
                continue
            p = P[idx[j] if sparse else j, i]
            e = x[i] - beta * p - alpha * center[i]
            total += wj * e
            size += wj * (abs(e) + abs(x[i]) + abs(p) + alpha * abs(center[i]))
        lhs += (abs(total) + (n + 6.0) * _U * size + (2.0 * n + 6.0) * _SUBNORMAL) / half[i]
    return lhs * (1.0 + 4.0 * (d + n + 4.0) * _U)


@njit(inline="always")
def in_hull(x, P, idx, w, m, sparse, center, half) -> bool:
    """:func:`anchored` for ``beta = 1`` (a vertex) or any contraction of
    :func:`sege_cvx.arm_sets.kernels.pull_in.pull_in_one`'s schedule: whether a point that a
    pull-in may already have moved is certified from the weights it came with."""
    if anchored(x, P, idx, w, m, sparse, 1.0, center, half):
        return True
    limit = _limit(x, center)
    eps = FIRST_CONTRACTION
    while eps <= limit * 10.0:
        if anchored(x, P, idx, w, m, sparse, 1.0 - min(eps, limit), center, half):
            return True
        if not eps < limit:
            break
        eps *= 10.0
    return False


@njit(inline="always")
def _limit(x, center) -> float:
    """:func:`sege_cvx.arm_sets.kernels.pull_in.contraction_limit` of ``x`` toward ``center``
    (at most 1/2)."""
    d = x.shape[0]
    biggest = 0.0
    norm2 = 0.0
    for k in range(d):
        biggest = max(biggest, abs(x[k]), abs(center[k]))
        norm2 += (x[k] - center[k]) ** 2
    return min(0.5, max(MAX_CONTRACTION, 16.0 * spacing(biggest) / max(math.sqrt(norm2), 1e-300)))


@njit(inline="always")
def pull_into_hull(x, P, idx, w, m, sparse, center, half, trial) -> float:
    """Move ``x``, computed from the weights ``w`` of points ``P[idx]`` (or ``P``), exactly into
    the hull: unchanged if it is a weighted point itself, else the least contraction ``c + beta
    (x - c)`` of :func:`sege_cvx.arm_sets.kernels.pull_in.pull_in_one`'s schedule that :func:`anchored`
    certifies with that ``beta``, searched from the first at or above ``x``'s own distance from
    ``y`` in the gauge of ``C`` (the proof needs ``1 - beta`` about that large).  Returns ``beta``
    (1: unchanged), or -1 (``x`` unchanged) if no contraction is certified.  ``trial``:
    scratch."""
    if anchored(x, P, idx, w, m, sparse, 1.0, center, half):
        return 1.0
    s, n, _ = _weights_sum(w, m, idx, sparse)
    if not s > 0.0:
        return -1.0
    d = x.shape[0]
    limit = _limit(x, center)
    needed = _gauge(x, P, idx, w, m, sparse, 1.0, center, half, n) / s
    eps = FIRST_CONTRACTION
    while eps < needed and eps < limit:
        eps *= 10.0
    while eps <= limit * 10.0:
        beta = 1.0 - min(eps, limit)
        for k in range(d):
            trial[k] = center[k] + beta * (x[k] - center[k])
        if anchored(trial, P, idx, w, m, sparse, beta, center, half):
            for k in range(d):
                x[k] = trial[k]
            return beta
        if not eps < limit:
            break
        eps *= 10.0
    return -1.0


@njit
def in_hull_dense(x, P, w, center, half) -> bool:
    """:func:`in_hull` with a dense weight vector ``w`` (shape ``(K,)``)."""
    return in_hull(x, P, np.empty(0, dtype=np.int64), w, P.shape[0], False, center, half)


@njit
def pull_into_hull_all(points, weights, P, center, half, center_weights):
    """:func:`in_hull` or else :func:`pull_into_hull` per row of ``points`` (in place), each
    with its row of dense ``weights`` (shape ``(n, K)``); a moved point's weights become
    ``beta w + alpha w_c`` (``center_weights``: the centre's).  Returns ``ok``."""
    n, d = points.shape
    K = P.shape[0]
    ok = np.zeros(n, dtype=np.bool_)
    idx = np.empty(0, dtype=np.int64)
    trial = np.empty(d)
    for i in range(n):
        x, w = points[i], weights[i]
        if in_hull(x, P, idx, w, K, False, center, half):
            ok[i] = True
            continue
        beta = pull_into_hull(x, P, idx, w, K, False, center, half, trial)
        if beta > 0.0:
            ok[i] = True
            for k in range(K):
                w[k] = beta * w[k] + (1.0 - beta) * center_weights[k]
    return ok


@njit
def _basis(P, chol, S, slot, first, n, mats, vecs) -> bool:
    """Rows ``Q[:n]``: an orthonormal basis of the whitened columns ``L^{-1} (p_{S_j} - o)``,
    ``j = first .. first + n - 1``, with ``o = p_{S_0}`` (``first = 1``: a face's directions,
    ``vecs[_C] = L^{-1} o``) or ``o = 0`` (``first = 0``: a cone's generators); ``M = Q^T R``,
    ``R`` upper triangular, by classical Gram-Schmidt twice.  False if the columns are
    numerically dependent."""
    d = P.shape[1]
    anchor = S[slot, 0]
    if first == 1:
        for c in range(d):
            vecs[_DIFF, c] = P[anchor, c]
        _forward(chol, vecs, _DIFF, _C)
    for j in range(n):
        k = S[slot, j + first]
        for c in range(d):
            vecs[_DIFF, c] = P[k, c] - P[anchor, c] if first == 1 else P[k, c]
        norm2 = _forward(chol, vecs, _DIFF, _W1)
        for c in range(d):
            mats[_Q, j, c] = vecs[_W1, c]
        if not orthonormalize_row(mats, j, norm2):
            return False
    return True


@njit
def cone_projection(P, chol, S, weights, mats, vecs, max_iter) -> int:
    """``delta = sum_j beta_j q_{S_j}``, the projection of ``g = vecs[_G]`` onto the cone of the
    whitened points ``q_k = L^{-1} p_k`` (nonnegative least squares, Lawson & Hanson's active-set
    method), into ``vecs[_DELTA]``; the generators and ``beta`` in slot :data:`CONE` of ``S``
    and ``weights``.  Returns their number (at most ``d``; -1 if the method did not end).

    At ``y = 0``, a point of the hull, the cone is its tangent cone, and by Moreau's
    decomposition ``g - delta`` is in the polar cone: ``u = delta / r`` certifies ``0`` as the
    maximizer when ``||delta|| <= r``; otherwise ``f`` increases along ``delta``."""
    K, d = P.shape
    g_norm = 0.0
    for c in range(d):
        g_norm += vecs[_G, c] * vecs[_G, c]
    g_norm = math.sqrt(g_norm)
    q_max = 0.0
    for k in range(K):
        for c in range(d):
            vecs[_DIFF, c] = P[k, c]
        q_max = max(q_max, math.sqrt(_forward(chol, vecs, _DIFF, _W1)))
    tol = ENTER_RTOL * g_norm * q_max
    n = 0
    for c in range(d):
        vecs[_DELTA, c] = 0.0
    for _ in range(max_iter):
        # The dual: q_k^T (g - delta) = p_k^T L^{-T} (g - delta); the best generator enters.
        for c in range(d):
            vecs[_W1, c] = vecs[_G, c] - vecs[_DELTA, c]
        _backward(chol, vecs, _W1, _PHAT)
        best = tol
        enter = -1
        j = 0
        for k in range(K):
            if j < n and S[CONE, j] == k:
                j += 1
                continue
            s = 0.0
            for c in range(d):
                s += vecs[_PHAT, c] * P[k, c]
            if s > best:
                best = s
                enter = k
        if enter < 0 or n == d:
            return n
        pos = 0
        while pos < n and S[CONE, pos] < enter:
            pos += 1
        for j in range(n, pos, -1):
            S[CONE, j] = S[CONE, j - 1]
            weights[CONE, j] = weights[CONE, j - 1]
        S[CONE, pos] = enter
        weights[CONE, pos] = 0.0
        n += 1
        while True:  # least squares on the passive set, kept feasible (beta >= 0)
            if not _basis(P, chol, S, CONE, 0, n, mats, vecs):
                return -1
            for i in range(n):
                h = 0.0
                for c in range(d):
                    h += mats[_Q, i, c] * vecs[_G, c]
                vecs[_H, i] = h
            _solve_upper(mats, vecs, n, _H)
            alpha = 1.0
            block = -1
            for i in range(n):
                step = vecs[_Z, i] - weights[CONE, i]
                if vecs[_Z, i] <= 0.0 and step < 0.0 and weights[CONE, i] / -step < alpha:
                    alpha = weights[CONE, i] / -step
                    block = i
            if block < 0:
                for i in range(n):
                    weights[CONE, i] = vecs[_Z, i]
                break
            if S[CONE, block] == enter and alpha == 0.0:
                n = _remove(S, weights, CONE, n, block)
                return n  # rounding: the entering generator cannot improve; converged
            for i in range(n - 1, -1, -1):
                step = vecs[_Z, i] - weights[CONE, i]
                weights[CONE, i] = max(weights[CONE, i] + alpha * step, 0.0)
                if i == block or weights[CONE, i] == 0.0:
                    n = _remove(S, weights, CONE, n, i)
            if n == 0:
                break
        # delta = Q^T (Q g) on the passive set (its projection), from the basis just built.
        for c in range(d):
            s = 0.0
            for i in range(n):
                s += vecs[_H, i] * mats[_Q, i, c]
            vecs[_DELTA, c] = s if n > 0 else 0.0
    return -1


@njit(inline="always")
def _solve_upper(mats, vecs, n, row) -> None:
    """``vecs[_Z, :n] = R^{-1} vecs[row, :n]``."""
    for i in range(n - 1, -1, -1):
        s = vecs[row, i]
        for j in range(i + 1, n):
            s -= mats[_R, i, j] * vecs[_Z, j]
        vecs[_Z, i] = s / mats[_R, i, i]


@njit(inline="always")
def _weight_step(vecs, weights, slot, j, total, bounded) -> float:
    """Component ``j`` of the weights' direction: ``w*_j - w_j`` toward the face's maximizer
    (``w* = (1 - sum z, z)``), or along the ray ``(-sum z, z)``; ``z = vecs[_Z]``."""
    if bounded:
        return (1.0 - total if j == 0 else vecs[_Z, j - 1]) - weights[slot, j]
    return -total if j == 0 else vecs[_Z, j - 1]


@njit(inline="always")
def _remove(S, weights, slot, m, j) -> int:
    for i in range(j, m - 1):
        S[slot, i] = S[slot, i + 1]
        weights[slot, i] = weights[slot, i + 1]
    return m - 1


@njit
def solve_weights(P, chol, r, S, weights, slot, m, mats, vecs, scale) -> int:
    """The active-set method (module docstring) from the working set ``S[slot, :m]`` with
    weights ``weights[slot, :m]`` (positive, summing to 1) for ``theta = vecs[_SCALED]``;
    returns the final working-set size (``S`` and the weights updated, ``vecs[_GRAD]`` the last
    (super)gradient), or -1 if it did not end (``4 (K + d) + 20`` iterations for ``K`` points in
    ``d`` dimensions).  ``scale``: the certificate's, for the Frank-Wolfe test."""
    K, d = P.shape
    max_iter = 4 * (K + d) + 20
    for a in range(d):  # g = L^T theta
        s = 0.0
        for c in range(a, d):
            s += chol[c, a] * vecs[_SCALED, c]
        vecs[_G, a] = s
    escaped = False
    entered = -1  # the position of the point the Frank-Wolfe test just added
    for _ in range(max_iter):
        if not _basis(P, chol, S, slot, 1, m - 1, mats, vecs):
            if entered < 0:
                return -1
            # It entered on a rounding-level gain (a point of the face's own affine hull, which
            # the test can admit by 1e-13): without it the point was the face's maximizer, and
            # the certificate decides.
            return _remove(S, weights, slot, m, entered)
        entered = -1
        n = m - 1
        h_norm2 = 0.0
        for j in range(n):  # h = Q g
            h = 0.0
            for c in range(d):
                h += mats[_Q, j, c] * vecs[_G, c]
            vecs[_H, j] = h
            h_norm2 += h * h
        # c_perp, the face's point nearest the origin: c - Q^T Q c (t = Q c), orthogonalized
        # twice.  Once leaves a component along the face of eps ||c||, which for a face passing
        # near the origin (||c_perp|| << ||c||) turns the direction of y, hence u, and the
        # certificate.
        c_norm2 = 0.0
        for c in range(d):
            c_norm2 += vecs[_C, c] * vecs[_C, c]
        project_out(mats, vecs, _C, _T, _CPERP, n)
        a2 = project_out(mats, vecs, _CPERP, _W1, _CPERP, n)
        for j in range(n):
            vecs[_T, j] += vecs[_W1, j]
        a = math.sqrt(a2)
        h_norm = math.sqrt(h_norm2)
        bounded = r > h_norm
        if n > 0:
            if bounded:
                factor = a / (math.sqrt(r - h_norm) * math.sqrt(r + h_norm))  # no underflow
                for j in range(n):  # v - t, v = a h / sqrt(r^2 - ||h||^2)
                    vecs[_W1, j] = factor * vecs[_H, j] - vecs[_T, j]
                _solve_upper(mats, vecs, n, _W1)
            else:
                _solve_upper(mats, vecs, n, _H)
            # The weights' direction dw (:func:`_weight_step`): toward w* = (1 - sum z, z) when
            # bounded, else along (-sum z, z); the first weight to reach 0 blocks.
            total = 0.0
            for j in range(n):
                total += vecs[_Z, j]
            alpha = 1.0 if bounded else math.inf
            block = -1
            for j in range(m):
                dw = _weight_step(vecs, weights, slot, j, total, bounded)
                if dw < 0.0 and weights[slot, j] / -dw < alpha:
                    alpha = weights[slot, j] / -dw
                    block = j
            if block < 0:
                if not bounded:
                    return -1
                # The ratio test passed at alpha = 1, so a negative target weight is rounding
                # (a ratio of 1 - 1e-17 rounds to 1): it is 0.
                weights[slot, 0] = max(1.0 - total, 0.0)
                for j in range(n):
                    weights[slot, j + 1] = max(vecs[_Z, j], 0.0)
            else:
                # Every point whose weight the step takes to 0 leaves (the blocking one and
                # ties); a point that just entered at weight 0 and is not decreasing stays.
                for j in range(m - 1, -1, -1):
                    dw = _weight_step(vecs, weights, slot, j, total, bounded)
                    weights[slot, j] = max(weights[slot, j] + alpha * dw, 0.0)
                    if j == block or (dw < 0.0 and weights[slot, j] == 0.0):
                        m = _remove(S, weights, slot, m, j)
                continue
        # At the face's maximizer: the Frank-Wolfe test.
        _arm_from_weights(P, S, weights, slot, m, vecs, _X)
        if r > 0.0 and not a > ORIGIN_RTOL * math.sqrt(c_norm2):
            # y = 0 (a face through the origin, a at rounding level): f is not differentiable
            # there, and the tangent cone's projection decides (cone_projection).
            if escaped:
                return m  # back at 0 after leaving it (rounding): the certificate decides
            n = cone_projection(P, chol, S, weights, mats, vecs, max_iter)
            if n < 0:
                return -1
            delta_norm = 0.0
            for c in range(d):
                vecs[_GRAD, c] = vecs[_G, c] - vecs[_DELTA, c]
                delta_norm += vecs[_DELTA, c] * vecs[_DELTA, c]
            if n == 0 or not math.sqrt(delta_norm) > r:
                return m  # 0 is the maximizer, certified with u = delta / r
            # f grows along delta: restart from the generators' convex combination, where f > 0.
            total = 0.0
            for j in range(n):
                total += weights[CONE, j]
            for j in range(n):
                S[slot, j] = S[CONE, j]
                weights[slot, j] = weights[CONE, j] / total
            m = n
            escaped = True
            continue
        # The gradient g - r u, u = y / ||y|| = Q^T h / r + c_perp sqrt(r^2 - ||h||^2) / (a r).
        across = math.sqrt(r - h_norm) * math.sqrt(r + h_norm) / a if r > 0.0 else 0.0
        for c in range(d):
            s = vecs[_G, c] - across * vecs[_CPERP, c]
            if r > 0.0:
                for j in range(m - 1):
                    s -= vecs[_H, j] * mats[_Q, j, c]
            vecs[_GRAD, c] = s
        _backward(chol, vecs, _GRAD, _PHAT)
        current = 0.0
        for c in range(d):
            current += vecs[_PHAT, c] * vecs[_X, c]
        enter, best = _best_point(P, vecs, _PHAT)
        if not best - current > ENTER_RTOL * scale or m == d + 1:
            return m
        pos = 0
        while pos < m and S[slot, pos] < enter:
            pos += 1
        if pos < m and S[slot, pos] == enter:
            return m  # already in S: rounding; the certificate decides
        for j in range(m, pos, -1):
            S[slot, j] = S[slot, j - 1]
            weights[slot, j] = weights[slot, j - 1]
        S[slot, pos] = enter
        weights[slot, pos] = 0.0
        entered = pos
        m += 1
    return -1


@njit
def certified(P, chol, r, S, weights, slot, m, norm_bound, z_bound, gap_rtol, vecs) -> bool:
    """Whether the arm ``vecs[_X]`` with whitened ``vecs[_Y]`` and the method's last
    (super)gradient ``vecs[_GRAD]`` is within ``gap_rtol`` of optimal for ``theta =
    vecs[_SCALED]`` (module docstring), its weights on the simplex."""
    K, d = P.shape
    if not _on_simplex(weights, slot, m, K):
        return False
    # ||u|| = ||g - grad|| / r.
    u_norm2 = 0.0
    for c in range(d):
        u_norm2 += (vecs[_G, c] - vecs[_GRAD, c]) ** 2
    _backward(chol, vecs, _GRAD, _PHAT)
    upper = _best_point(P, vecs, _PHAT)[1]
    if r > 0.0 and not z_bound > 0.0:
        z_bound = norm_bound * inverse_frobenius(chol, vecs, _W1)
    if r > 0.0:
        excess = math.sqrt(u_norm2) / r - 1.0
        if excess > 0.0:
            upper += r * excess * z_bound
    linear = 0.0
    theta_norm = 0.0
    y_norm = 0.0
    for c in range(d):
        linear += vecs[_SCALED, c] * vecs[_X, c]
        theta_norm += vecs[_SCALED, c] * vecs[_SCALED, c]
        y_norm += vecs[_Y, c] * vecs[_Y, c]
    y_norm = math.sqrt(y_norm)
    gap = upper - (linear - r * y_norm)
    # The objective's scale over the hull: |theta^T x| <= ||theta|| norm_bound and
    # r ||L^{-1} x|| <= r Z.  (Relative to r ||L^{-1} x|| at the arm instead, an arm at or near
    # 0 -- theta = 0, a face through or near the origin -- could never certify: its weights
    # put x there only to the rounding of the points, and u = y / ||y|| is then as inexact.)
    scale = math.sqrt(theta_norm) * norm_bound + (r * z_bound if r > 0.0 else 0.0)
    # A gap below -tolerance is impossible for a point of the hull: the data are not sound.
    return gap_rtol >= 0.0 and math.isfinite(gap) and abs(gap) <= gap_rtol * scale


@njit(inline="always")
def _best_point(P, vecs, row) -> tuple:
    """The first ``k`` maximizing ``vecs[row]^T p_k`` and that maximum (-1 and -inf if none is
    comparable)."""
    K, d = P.shape
    best = -math.inf
    index = -1
    for k in range(K):
        s = 0.0
        for c in range(d):
            s += vecs[row, c] * P[k, c]
        if s > best:
            best = s
            index = k
    return index, best


@njit(inline="always")
def _valid_warm_start(S, weights, m, K, d) -> bool:
    """Whether slot :data:`LCB` holds a working set the method can start from: ``1 <= m <= d +
    1`` points, indices increasing within ``[0, K)``, finite nonnegative weights (the state is
    the run's public state: it is checked, not trusted)."""
    if not 1 <= m <= d + 1:
        return False
    for j in range(m):
        k = S[LCB, j]
        w = weights[LCB, j]
        if not (0 <= k < K and (j == 0 or S[LCB, j - 1] < k) and w >= 0.0 and math.isfinite(w)):
            return False
    return True


@njit
def greedy_one(geometry, theta, S, counts, weights, mix, out, mats, vecs) -> int:
    """The greedy arm (paper eq. (greedy arm)): the best point, its unit weights in slot
    :data:`GREEDY`."""
    P = geometry.points
    d = P.shape[1]
    if not math.isfinite(scale_to_order_one(theta, 0.0, vecs, _SCALED)):
        counts[GREEDY] = 0
        return NOT_FINITE
    k = _best_point(P, vecs, _SCALED)[0]
    if k < 0:
        counts[GREEDY] = 0
        return NOT_FINITE
    S[GREEDY, 0] = k
    weights[GREEDY, 0] = 1.0
    counts[GREEDY] = 1
    for c in range(d):
        out[c] = P[k, c]
    return VERIFIED


@njit(inline="always")
def lcb_one(geometry, theta, chol, r, warm, out, mats, vecs) -> int:
    """The certified LCB arm (paper eq. (lcb arm)) from the Cholesky factor ``chol`` of ``V``,
    warm started from slot :data:`LCB` of the run's ``warm = (rows, counts, weights, mix)`` (its
    working set and weights, updated), proven in the hull (:func:`pull_into_hull`)."""
    S, counts, weights, _ = warm
    return _lcb(geometry, theta, chol, r, S, counts, weights, out, mats, vecs, True)


@njit(inline="always")
def lcb_weights_one(geometry, theta, chol, r, warm, out, mats, vecs) -> int:
    """:func:`lcb_one` for SEGE's stages, which play the LCB arm only inside the mix
    ``(1 - rho) X^S + rho U``: the arm as computed from its weights, not yet proven in the hull;
    :func:`pull_inside_one` proves the mix from those weights."""
    S, counts, weights, _ = warm
    return _lcb(geometry, theta, chol, r, S, counts, weights, out, mats, vecs, False)


@njit
def _lcb(geometry, theta, chol, r, S, counts, weights, out, mats, vecs, pull) -> int:
    """:func:`lcb_one` (``pull``: proven in the hull) or :func:`lcb_weights_one`."""
    P, norm_bound = geometry.points, geometry.norm_bound
    z_bound, gap_rtol = geometry.z_bound, geometry.gap_rtol
    K, d = P.shape
    rs = scale_to_order_one(theta, r, vecs, _SCALED)
    if not math.isfinite(rs):
        counts[LCB] = 0
        return NOT_FINITE
    theta_norm = 0.0
    for c in range(d):
        theta_norm += vecs[_SCALED, c] * vecs[_SCALED, c]
    scale = math.sqrt(theta_norm) * norm_bound
    warm = _valid_warm_start(S, weights, counts[LCB], K, d)
    for attempt in range(2 if warm else 1):  # warm start, then cold from the greedy point
        if attempt == 0 and warm:
            m = counts[LCB]
        else:
            S[LCB, 0] = _best_point(P, vecs, _SCALED)[0]
            if S[LCB, 0] < 0:  # no point's value is comparable (overflow)
                break
            weights[LCB, 0] = 1.0
            m = 1
        m = solve_weights(P, chol, rs, S, weights, LCB, m, mats, vecs, scale)
        if m > 0:
            _arm_from_weights(P, S, weights, LCB, m, vecs, _X)
            _forward(chol, vecs, _X, _Y)
            if certified(P, chol, rs, S, weights, LCB, m, norm_bound, z_bound, gap_rtol, vecs):
                counts[LCB] = m
                for c in range(d):
                    out[c] = vecs[_X, c]
                # The arm as computed from its weights may miss the hull by rounding: moved in.
                if not pull or pull_into_hull(out, P, S[LCB], weights[LCB], m, True,
                                              geometry.center, geometry.half, vecs[_W1]) > 0.0:
                    return VERIFIED
                return NOT_MEMBER
    counts[LCB] = 0  # the next solve starts cold
    return NOT_CERTIFIED


@njit
def pull_inside_one(geometry, x, warm, use_lcb, rho, g, safe, trial) -> bool:
    """Prove SEGE's mix ``x = (1 - rho) X^S + rho U`` (paper eq. (safe exp arm)) in the hull, or
    form it anew in weight space and move it in; False if neither can be done.

    The mix as computed is proven by :func:`anchored` with ``beta = 1 - rho``: its anchor is the
    LCB arm's weights (slot :data:`LCB` of ``warm``) or the baseline arm ``safe`` itself (proven
    in the hull when the policy was built), and ``U`` lies inside the certified cross-polytope
    by a margin (the hull's exploration is that body shrunk by 2^-20).  Otherwise (a tiny
    ``rho``, or an exploration of the user's outside the body): ``w = (1 - rho) w^S + rho w^U``
    (into ``warm``'s last array), ``w^S`` the LCB arm's weights or the baseline's, ``w^U`` the
    weights of the exploration vertex that the normal draw ``g`` selects (as
    :meth:`~sege_cvx.arm_sets.exploration.Exploration.vertex_indices`), ``x = P^T w / sum(w)``,
    moved exactly into the hull from those weights (:func:`pull_into_hull`).  ``trial``:
    scratch of length d."""
    P, baseline, table = geometry.points, geometry.baseline, geometry.table
    center, half = geometry.center, geometry.half
    S, counts, weights, mix = warm[0], warm[1], warm[2], warm[3]
    K, d = P.shape
    beta = 1.0 - rho
    if use_lcb:
        if anchored(x, P, S[LCB], weights[LCB], counts[LCB], True, beta, center, half):
            return True
    else:
        one = mix[0]
        one[0] = 1.0
        if anchored(x, safe.reshape((1, d)), S[LCB], one, 1, False, beta, center, half):
            return True
    vertex = drawn_vertex(g)
    w = mix[0]
    for c in range(d):
        x[c] = 0.0
    total = 0.0
    m = counts[LCB]
    j = 0
    for p in range(K):
        safe = 0.0
        if use_lcb:
            if j < m and S[LCB, j] == p:
                safe = weights[LCB, j]
                j += 1
        else:
            safe = baseline[p]
        wp = (1.0 - rho) * safe + rho * table[vertex, p]
        w[p] = wp
        total += wp
        if wp != 0.0:
            for c in range(d):
                x[c] += wp * P[p, c]
    if not total > 0.0:
        return False
    for c in range(d):
        x[c] /= total
    return pull_into_hull(x, P, S[LCB], w, K, False, center, half, trial) > 0.0


@njit(inline="always")
def _hull_residual(P, x, u, r) -> bool:
    """``r = [x - P^T u, sum(u) - 1]`` (the hull's equalities, in their order); whether finite."""
    K, d = P.shape
    finite = True
    for j in range(d):
        s = x[j]
        for k in range(K):
            s -= P[k, j] * u[k]
        r[j] = s
        finite = finite and math.isfinite(s)
    s = 0.0
    for k in range(K):
        s += u[k]
    r[d] = s - 1.0
    return finite and math.isfinite(r[d])


@njit(inline="always")
def _within(x, u, r, tol, abs_A, abs_beta, rounding) -> bool:
    """``|r_i| <= tol + rounding_i (|A_i| |z| + |beta_i|)`` for every row, ``z = [x, u]``
    (:meth:`~sege_cvx.arm_sets.lifted.LiftedMembership._eq_tolerance`)."""
    d = x.shape[0]
    for i in range(r.shape[0]):
        t = abs_beta[i]
        for c in range(d):
            t += abs_A[i, c] * abs(x[c])
        for k in range(u.shape[0]):
            t += abs_A[i, d + k] * abs(u[k])
        if not abs(r[i]) <= tol + rounding[i] * t:
            return False
    return True


@njit
def certify_pair(P, x, u, tol, pinv, abs_A, abs_beta, rounding) -> tuple:
    """:meth:`~sege_cvx.arm_sets.lifted.LiftedMembership.certify` of the pair ``(x, u)`` for the
    hull's constraints ``x == P^T u``, ``sum(u) == 1``, ``u >= 0``, compiled: the same repair
    (at most two least-squares corrections ``u -= pinv r`` while the equalities miss their
    rounding bound), then the equalities within ``tol`` plus that bound and ``-u <= tol``.
    ``pinv``, ``abs_A``, ``abs_beta`` and ``rounding`` are the lifted check's own arrays.
    Returns ``(holds, repaired u)``."""
    K, d = P.shape
    u = u.copy()
    r = np.empty(d + 1)
    for c in range(d):
        if not math.isfinite(x[c]):
            return False, u
    for k in range(K):
        if not math.isfinite(u[k]):
            return False, u
    for _ in range(2):
        if not _hull_residual(P, x, u, r) or _within(x, u, r, 0.0, abs_A, abs_beta, rounding):
            break
        for k in range(K):
            s = 0.0
            for i in range(d + 1):
                s += pinv[k, i] * r[i]
            u[k] -= s
    for k in range(K):
        if not (math.isfinite(u[k]) and -u[k] <= tol):
            return False, u
    return _hull_residual(P, x, u, r) and _within(x, u, r, tol, abs_A, abs_beta, rounding), u


def empty_warm_state(n: int, K: int, d: int) -> tuple[np.ndarray, ...]:
    """Cold warm-start state of ``n`` runs: empty working sets (``(rows, counts, weights,
    mix)``, shapes ``(n, 3, d + 1)``, ``(n, 3)``, ``(n, 3, d + 1)``, ``(n, 1, K)``; ``mix``: the
    weights of SEGE's last mix, :func:`pull_inside_one`)."""
    return (np.zeros((n, 3, d + 1), dtype=np.int64), np.zeros((n, 3), dtype=np.int64),
            np.zeros((n, 3, d + 1)), np.zeros((n, 1, K)))


@njit
def _cold_all(geometry, thetas, chols, radii, lcb) -> tuple:
    """:func:`greedy_one` or :func:`lcb_one` per row from a cold start: arms, dense weights
    ``(n, K)`` and status codes."""
    P = geometry.points
    K, d = P.shape
    n = thetas.shape[0]
    S = np.zeros((3, d + 1), dtype=np.int64)
    counts = np.zeros(3, dtype=np.int64)
    weights = np.zeros((3, d + 1))
    unused = np.zeros((0, 0))
    arms = np.full((n, d), np.nan)
    dense = np.full((n, K), np.nan)
    status = np.empty(n, dtype=np.int64)
    mats = np.empty((2, d, d))
    vecs = np.empty((14, d))
    slot = LCB if lcb else GREEDY
    for i in range(n):
        counts[:] = 0
        if lcb:
            status[i] = lcb_one(geometry, thetas[i], chols[i], radii[i],
                                (S, counts, weights, unused), arms[i], mats, vecs)
        else:
            status[i] = greedy_one(geometry, thetas[i], S, counts, weights, unused, arms[i],
                                   mats, vecs)
        if status[i] == VERIFIED:
            dense[i] = 0.0
            for j in range(counts[slot]):
                dense[i, S[slot, j]] = weights[slot, j]
        else:
            arms[i] = np.nan
    return arms, dense, status


def greedy_all(geometry: tuple, thetas: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`greedy_one` per row of ``thetas``: arms, weights ``(n, K)`` and status codes."""
    n = thetas.shape[0]
    return _cold_all(geometry, thetas, np.empty((n, 0, 0)), np.empty(n), False)


def lcb_all(geometry: tuple, thetas: np.ndarray, chols: np.ndarray,
            radii: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`lcb_one` per row (Cholesky factors ``chols``, radii ``radii``), each from a cold
    start: arms, weights ``(n, K)`` and status codes."""
    return _cold_all(geometry, thetas, chols, radii, True)


class HullArms:
    """A convex hull's data for the compiled arms.

    Parameters
    ----------
    points : ndarray, shape (K, d)
    norm_bound : float
        Certified ``max ||x||`` over the hull.
    body : tuple of ndarray
        ``(center, half)``: the cross-polytope ``{c + t : sum_i |t_i| / h_i <= 1}``, certified
        inside the hull in exact arithmetic, from which :func:`anchored` certifies arms.
    gap_rtol : float, default :data:`GAP_RTOL`
        The certificate's accepted relative duality gap (a negative value certifies nothing:
        every LCB arm then falls back, which the tests use).
    """

    def __init__(self, points: np.ndarray, norm_bound: float,
                 body: tuple[np.ndarray, np.ndarray], gap_rtol: float = GAP_RTOL) -> None:
        self.points = np.ascontiguousarray(points, dtype=np.float64)
        self.norm_bound = float(norm_bound)
        self.body = tuple(np.ascontiguousarray(v, dtype=np.float64) for v in body)
        self.gap_rtol = float(gap_rtol)

    def geometry(self, lam: float | None = None, anchors=None) -> HullGeometry:
        """The record the compiled arms receive (:class:`HullGeometry`).

        ``z_bound`` as :meth:`~sege_cvx.arm_sets.polytope.arms.PolytopeArms.geometry`.
        ``anchors`` (:class:`~sege_cvx.arm_sets.kernels.registry.Anchors`): SEGE's baseline
        weights ``(K,)`` and exploration table ``(2d + 1, K)`` (the rows of
        :meth:`~sege_cvx.arm_sets.exploration.Exploration.witness_table`); empty without them
        (the arms alone do not need them).
        """
        K, d = self.points.shape
        z_bound = 0.0 if lam is None else self.norm_bound / math.sqrt(lam) * (1.0 + 1e-6)
        if anchors is None:
            baseline, table = np.zeros(K), np.zeros((2 * d + 1, K))
        else:
            baseline = np.ascontiguousarray(anchors.safe_witness, dtype=np.float64)
            table = np.ascontiguousarray(anchors.exploration.witness_table(), dtype=np.float64)
            if baseline.shape != (K,) or table.shape != (2 * d + 1, K):
                raise ValueError(f"hull witnesses must have shapes ({K},) and ({2 * d + 1}, {K}), "
                                 f"got {baseline.shape} and {table.shape}")
        return HullGeometry(self.points, self.norm_bound, z_bound, self.gap_rtol, baseline, table,
                            *self.body)

    def warm_state(self, n: int) -> tuple[np.ndarray, ...]:
        """The cold warm-start state of ``n`` runs (:func:`empty_warm_state`)."""
        return empty_warm_state(n, *self.points.shape)

    def checked_lcb_arm(self, theta_hat: object, V: object, radius: object) -> None:
        """No single-call shortcut: the general path validates and solves."""
        return None


# --- the stage's arms (the geometry registry: sege_cvx.arm_sets.kernels.registry) ----------------

@njit(inline="always")
def _stage_greedy(geometry, theta, warm, out, mats, vecs):
    rows, counts, weights, mix = warm
    return greedy_one(geometry, theta, rows, counts, weights, mix, out, mats, vecs)


# Not inlined: its solve over the weights is inlined here, and inlined once more into the
# stage loop it made the hull's stages slower (CHANGELOG).  SEGE plays the LCB arm only inside
# its mix, which _stage_pull_inside proves.
@njit
def _stage_lcb(geometry, theta, chol, r, warm, out, mats, vecs):
    return lcb_weights_one(geometry, theta, chol, r, warm, out, mats, vecs)


@njit(inline="always")
def _stage_pull_inside(geometry, x, warm, use_lcb, rho, g, safe, offset, trial):
    return pull_inside_one(geometry, x, warm, use_lcb, rho, g, safe, trial)


# No pull_in: a point's membership in the hull is decided through the weights of a mix.
register_geometry(HullGeometry, GeometryKernels(
    greedy=_stage_greedy, lcb=_stage_lcb, pull_inside=_stage_pull_inside))
