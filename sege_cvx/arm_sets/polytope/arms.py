r"""Exact greedy and LCB arms of a polytope ``P = {x : A x <= b}``, with certificates.

Both arms maximize a concave function over ``P``:

* the greedy arm, ``max theta^T x`` (a linear program), and
* the LCB arm, ``max f(x) = theta^T x - r ||x||_{V^{-1}}`` (paper eq. (lcb arm), a second-order
  cone program),

the first being the second with ``r = 0``.  One primal active-set method solves both
(Nocedal & Wright, *Numerical Optimization*, 16.5): a working set ``W`` of constraints held
at equality, a feasible point ``x`` on that face, and per iteration

1. the maximizer of ``f`` on the face's affine hull ``{A_W x = b_W}``, in closed form (below);
2. a step toward it, stopped by the first constraint it would cross (added to ``W``), or
3. at the face's maximizer, its multipliers ``mu`` (``grad f = A_W^T mu``): all ``>= 0`` is
   optimal (the KKT conditions, sufficient for a concave objective); else the row of the most
   negative one leaves ``W`` (Bland's rule, the smallest row, after a step of length 0).

**The face maximizer** is a closed form in whitened coordinates ``z = L^{-1} x``
(``V = L L^T``), where ``||x||_{V^{-1}} = ||z||`` and ``theta^T x = g^T z``, ``g = L^T theta``.
With ``Q`` an orthonormal basis of the rows of ``C = A_W L`` (``C^T = Q^T R``, classical
Gram-Schmidt twice, which avoids squaring the conditioning as ``A_W V A_W^T`` would), the face is
``z0 + null(C)``, ``z0 = Q^T R^{-T} b_W`` its point nearest the origin, and ``f = g^T z0 +
g_N^T n - r sqrt(||z0||^2 + ||n||^2)`` with ``g_N`` the component of ``g`` in ``null(C)``.  For
``r > ||g_N||`` the maximizer is ``n = ||z0|| g_N / sqrt(r^2 - ||g_N||^2)`` (``z = 0`` on a face
through the origin); otherwise ``f`` grows without bound along ``g_N`` and the step is a ray.
The linear program (``r = 0``, no whitening) is the ray case until the face is a vertex: the
method is then the simplex method, warm started from the previous vertex.

**Certificate.**  For any ``y >= 0`` and ``x'`` in ``P``, ``theta^T x' = y^T A x' + (theta -
A^T y)^T x' <= b^T y + ||u|| ||L^{-1} x'||`` with ``u = L^T (theta - A^T y)``, so

    ``f(x') <= b^T y + max(||u|| - r, 0) * Z``,  ``Z >= max_{x' in P} ||L^{-1} x'||``

(only needed when rounding leaves ``||u||`` above ``r``).  ``Z = ||L^{-1} c|| + ||L^{-1}||
R``, relative to the interior point ``c`` with ``R >= max_{x' in P} ||x' - c||``: far from the
origin, where ``V`` is ill-conditioned along the arms' common direction, the bound ``||L^{-1}||
max ||x'||`` would multiply the rounding of ``||u||`` by the arms' distance from 0, and no
certificate would pass (46 % of SEGE's LCB arms failed on a polytope centred at 1e5).  With
``y`` the final multipliers clipped at 0, a computed arm is accepted only when this upper bound
exceeds ``f`` at the arm (after its exact pull-in) by at most :data:`GAP_RTOL` times
``||theta|| norm_bound + r ||L^{-1} x|| + sum_i |b_i y_i|``, the scale of the terms of the
duality gap.  Membership is decided exactly against the user's own rows (``tol=0``,
:mod:`sege_cvx.arm_sets.kernels.exact`), after the pull-in toward the set's certified interior point.

**Warm start.**  A run keeps its working set and arm from one stage to the next (the set does
not change, and ``theta_hat`` and ``V`` change little), so a solve usually ends after one face
solve and a sign test; for the linear program at a vertex it also keeps ``A_W^{-1}``, so that
the check is one ``d x d`` mat-vec.  Should a warm solve not certify, the solve is repeated from
the interior point with an empty working set; only if that fails too is
:data:`NOT_CERTIFIED` returned.

The geometry a compiled stage receives is the record :class:`PolytopeGeometry`, ``(A, b,
center, norm_bound, radius, z_bound, gap_rtol, member_A, member_b, member_l1)``
(:meth:`PolytopeArms.geometry`): rows of unit norm,
the certified interior point ``c`` (the pull-in's centre and the cold start), certified bounds
on ``max ||x||`` and on ``max ||x - c||`` over ``P``, a bound on ``||L^{-1}|| max ||x - c||`` (0:
computed where needed), the accepted gap (:data:`GAP_RTOL`), and the inequalities as the user
gave them, which membership is decided against (:func:`~sege_cvx.arm_sets.kernels.exact.membership_rows`,
:func:`~sege_cvx.arm_sets.kernels.exact.in_polytope`).  A run's warm
state is ``(rows, counts, points, inverse)`` of shapes ``(2, d)``, ``(2,)``, ``(2, d)`` and
``(d, d)``: slots :data:`GREEDY` and :data:`LCB`.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..._numba import njit
from ..kernels.exact import in_polytope
from ..kernels.pull_in import pull_in_one
from ..kernels.registry import GeometryKernels, register_geometry
from ..kernels.status import NOT_CERTIFIED, NOT_FINITE, NOT_MEMBER, VERIFIED
from ..scaling import scale_to_order_one


class PolytopeGeometry(NamedTuple):
    """A polytope as compiled code reads it (:mod:`~sege_cvx.arm_sets.kernels.registry` dispatches on this
    class): the unit rows ``A x <= b`` the solves use, the certified interior point, ``max ||x||`` and
    ``max ||x - center||``, the bound ``z_bound`` on ``||x - center||_{V^{-1}}`` (0: computed per
    instance), the accepted duality gap, and the user's rows as
    :func:`~sege_cvx.arm_sets.kernels.exact.membership_rows` gives them (every arm is verified
    against these)."""

    A: np.ndarray
    b: np.ndarray
    center: np.ndarray
    norm_bound: float
    radius: float
    z_bound: float
    gap_rtol: float
    member_A: np.ndarray
    member_b: np.ndarray
    member_l1: np.ndarray


#: Slots of a run's warm state.
GREEDY, LCB = 0, 1
#: Accepted duality gap, relative to the scale of its terms (see the module docstring).
GAP_RTOL = 1e-10
#: A row ``a_i`` blocks a step ``p`` only if ``a_i^T p > BLOCK_TOL ||p||`` (rows have unit norm):
#: rows nearly parallel to the face would make the working set numerically dependent.
BLOCK_TOL = 1e-11
#: The working set's rows count as dependent when Gram-Schmidt leaves less than this fraction
#: of a row's norm.
RANK_TOL = 1e-10
#: A projected gradient below this fraction of the gradient is zero (the linear program is
#: then stationary on its face).
STATIONARY_RTOL = 1e-13
#: A step toward the face maximizer shorter than this, relative to the points' norms, is
#: rounding: the point is already the maximizer.
STEP_RTOL = 1e-14
#: Slacks below this (relative to ``max(1, |b_i|)``) are ties at 0 (degenerate vertices).
SLACK_TOL = 1e-14

# Rows of the scratch ``vecs`` (at least 13, d) and ``mats`` (2, d, d).  The kernels index scratch by row
# rather than take views of it: a view costs two atomic reference-count updates, which at a few
# hundred flops per solve would be most of its time.
_G, _GN, _T, _ZF, _XF, _P, _U, _QTG, _SCALED, _MU, _X, _W1, _W2 = range(13)
_Q, _R = 0, 1


@njit(inline="always")
def _face_basis(A, W, slot, start, k, chol, whiten, mats) -> bool:
    """Rows ``Q[:k]`` (``mats[0]``): an orthonormal basis of the rows of ``C = A_W L``
    (``C^T = Q^T R``, ``R = mats[1]`` upper triangular), by classical Gram-Schmidt applied twice;
    rows before ``start`` are kept from the previous call (the working set's first rows did not
    change).  ``W = rows[slot]``.  False if the rows are numerically dependent."""
    d = A.shape[1]
    for j in range(start, k):
        row = W[slot, j]
        norm2 = 0.0
        for a in range(d):  # c_j = L^T a_row
            if whiten:
                s = 0.0
                for c in range(a, d):
                    s += chol[c, a] * A[row, c]
            else:
                s = A[row, a]
            mats[_Q, j, a] = s
            norm2 += s * s
        if not orthonormalize_row(mats, j, norm2):
            return False
    return True


@njit(inline="always")
def project_out(mats, vecs, src, coef, dst, k) -> float:
    """``vecs[coef, :k] = Q[:k] vecs[src]`` and ``vecs[dst] = vecs[src] - Q[:k]^T vecs[coef, :k]``
    (``Q = mats[0]``, orthonormal rows; ``dst`` may be ``src``): the part of ``vecs[src]``
    orthogonal to the rows.  Returns its squared norm."""
    d = mats.shape[2]
    for j in range(k):
        s = 0.0
        for c in range(d):
            s += mats[_Q, j, c] * vecs[src, c]
        vecs[coef, j] = s
    norm2 = 0.0
    for c in range(d):
        s = vecs[src, c]
        for j in range(k):
            s -= vecs[coef, j] * mats[_Q, j, c]
        vecs[dst, c] = s
        norm2 += s * s
    return norm2


@njit(inline="always")
def orthonormalize_row(mats, j, norm2) -> bool:
    """Row ``Q[j]`` of ``mats[0]`` made orthonormal to the rows ``Q[:j]`` by classical
    Gram-Schmidt applied twice, its coefficients into ``R[:j, j]`` and its remaining norm into
    ``R[j, j]`` (``R = mats[1]``, upper triangular); False if less than :data:`RANK_TOL` of its
    norm ``sqrt(norm2)`` before remains (numerically dependent)."""
    d = mats.shape[2]
    for i in range(j):
        mats[_R, i, j] = 0.0
    for _ in range(2):
        for i in range(j):
            h = 0.0
            for c in range(d):
                h += mats[_Q, i, c] * mats[_Q, j, c]
            mats[_R, i, j] += h
            for c in range(d):
                mats[_Q, j, c] -= h * mats[_Q, i, c]
    rjj = 0.0
    for c in range(d):
        rjj += mats[_Q, j, c] * mats[_Q, j, c]
    rjj = math.sqrt(rjj)
    if not rjj > RANK_TOL * math.sqrt(norm2):
        return False
    mats[_R, j, j] = rjj
    for c in range(d):
        mats[_Q, j, c] /= rjj
    return True


@njit(inline="always")
def _unwhiten(chol, whiten, vecs, src, dst) -> None:
    """``vecs[dst] = L vecs[src]``, or a copy without whitening."""
    d = vecs.shape[1]
    for a in range(d):
        if whiten:
            s = 0.0
            for c in range(a + 1):
                s += chol[a, c] * vecs[src, c]
            vecs[dst, a] = s
        else:
            vecs[dst, a] = vecs[src, a]


@njit(inline="always")
def _in_working_set(W, slot, k, row) -> bool:
    for j in range(k):
        if W[slot, j] == row:
            return True
    return False


@njit(inline="always")
def _refine_onto_face(A, b, chol, W, slot, k, mats, vecs) -> None:
    """One step of iterative refinement of ``x = vecs[_X]`` onto its face ``A_W x = b_W``.

    ``x = L z`` carries the rounding of ``z`` amplified by ``L``'s conditioning (up to
    ``eps kappa(L) ||x||`` off the face), which the certificate's complementary slackness would
    then charge; the residual ``A_W x - b_W``, computed from ``x`` itself, is removed by the
    face's own correction ``L Q^T R^{-T} res`` (the least ``||.||_{V^{-1}}`` step onto the face),
    also subtracted from ``z = vecs[_ZF]``.  Uses ``vecs[_T]`` and ``vecs[_U]``."""
    d = A.shape[1]
    for j in range(k):
        row = W[slot, j]
        s = -b[row]
        for c in range(d):
            s += A[row, c] * vecs[_X, c]
        for i in range(j):
            s -= mats[_R, i, j] * vecs[_T, i]
        vecs[_T, j] = s / mats[_R, j, j]
    for c in range(d):
        s = 0.0
        for j in range(k):
            s += vecs[_T, j] * mats[_Q, j, c]
        vecs[_U, c] = s
        vecs[_ZF, c] -= s
    for a in range(d):
        s = 0.0
        for c in range(a + 1):
            s += chol[a, c] * vecs[_U, c]
        vecs[_X, a] -= s


@njit
def solve_active_set(A, b, chol, whiten, r, W, slot, k, mats, vecs) -> int:
    """Maximize ``theta^T x - r ||L^{-1} x||`` over ``A x <= b`` from the feasible point ``x`` with
    the ``k`` rows ``W[slot, :k]`` active there (the module docstring's method).

    ``theta`` is ``vecs[_SCALED]`` and ``x`` is ``vecs[_X]``.  On success returns the final
    working set's size ``k`` (rows in ``W[slot, :k]``, multipliers in ``vecs[_MU, :k]``, the
    maximizer in ``vecs[_X]``); -1 if the rows became dependent, a ray met no row (the polytope
    is bounded: only rounding can cause it) or ``4 (m + d) + 20`` iterations passed (``m``
    rows in ``d`` dimensions).
    ``whiten=False`` takes ``L = I`` (the linear program, with ``r = 0``).
    ``mats``: scratch (2, d, d); ``vecs``: scratch (13, d).
    """
    m, d = A.shape
    max_iter = 4 * (m + d) + 20
    g_norm = 0.0
    for a in range(d):  # g = L^T theta
        if whiten:
            s = 0.0
            for c in range(a, d):
                s += chol[c, a] * vecs[_SCALED, c]
        else:
            s = vecs[_SCALED, a]
        vecs[_G, a] = s
        g_norm += s * s
    g_norm = math.sqrt(g_norm)
    degenerate = False
    start = 0  # rows of the basis still to compute
    for _ in range(max_iter):
        if not _face_basis(A, W, slot, start, k, chol, whiten, mats):
            return -1
        start = k
        # g_N = g - Q^T Q g, the gradient's component along the face.
        gn_norm = math.sqrt(project_out(mats, vecs, _G, _QTG, _GN, k))
        # z0 = Q^T t with R^T t = b_W: the face's point nearest the origin, ||z0|| = ||t||.
        t_norm = 0.0
        for j in range(k):
            s = b[W[slot, j]]
            for i in range(j):
                s -= mats[_R, i, j] * vecs[_T, i]
            vecs[_T, j] = s / mats[_R, j, j]
            t_norm += vecs[_T, j] * vecs[_T, j]
        t_norm = math.sqrt(t_norm)
        # The step: toward the face maximizer (bounded), along g_N (ray), or none (stationary).
        ray = False
        stationary = False
        if r > gn_norm:
            scale = t_norm / (math.sqrt(r - gn_norm) * math.sqrt(r + gn_norm))  # no underflow
            for c in range(d):
                s = scale * vecs[_GN, c]
                for j in range(k):
                    s += vecs[_T, j] * mats[_Q, j, c]
                vecs[_ZF, c] = s
            _unwhiten(chol, whiten, vecs, _ZF, _XF)
            for c in range(d):
                vecs[_P, c] = vecs[_XF, c] - vecs[_X, c]
        elif gn_norm <= STATIONARY_RTOL * g_norm:
            stationary = True
            for c in range(d):
                vecs[_P, c] = 0.0
        else:
            ray = True
            _unwhiten(chol, whiten, vecs, _GN, _P)
        p_norm = 0.0
        x_norm = 0.0
        for c in range(d):
            p_norm += vecs[_P, c] * vecs[_P, c]
            x_norm += vecs[_X, c] * vecs[_X, c] + vecs[_XF, c] * vecs[_XF, c]
        p_norm = math.sqrt(p_norm)
        # Already at the face maximizer, the step is rounding (as at a vertex): its direction
        # would let a row dependent on the working set block it.
        at_maximizer = not ray and p_norm <= STEP_RTOL * math.sqrt(x_norm)
        # Ratio test: the first row the step would cross (ties: the smallest row).
        best = np.inf if ray else 1.0
        block = -1
        if p_norm > 0.0 and k < d and not at_maximizer:
            for i in range(m):
                ap = 0.0
                for c in range(d):
                    ap += A[i, c] * vecs[_P, c]
                if ap > BLOCK_TOL * p_norm:
                    ax = 0.0
                    for c in range(d):
                        ax += A[i, c] * vecs[_X, c]
                    slack = b[i] - ax
                    if slack < SLACK_TOL * max(1.0, abs(b[i])):
                        slack = 0.0
                    ratio = slack / ap
                    if ratio < best and not _in_working_set(W, slot, k, i):
                        best = ratio
                        block = i
        if block >= 0:
            for c in range(d):
                vecs[_X, c] += best * vecs[_P, c]
            W[slot, k] = block
            k += 1
            degenerate = best == 0.0
            continue
        if ray:
            return -1
        if not stationary:
            for c in range(d):
                vecs[_X, c] = vecs[_XF, c]
            if whiten and k > 0:
                _refine_onto_face(A, b, chol, W, slot, k, mats, vecs)
        elif k == d:  # a vertex: its point from the rows themselves, not the path to it
            for c in range(d):
                s = 0.0
                for j in range(k):
                    s += vecs[_T, j] * mats[_Q, j, c]
                vecs[_ZF, c] = s
            _unwhiten(chol, whiten, vecs, _ZF, _X)
        # Multipliers: R mu = Q (g - r z / ||z||), the gradient at the face maximizer.
        z_norm = 0.0
        if r > 0.0 and not stationary:
            for c in range(d):
                z_norm += vecs[_ZF, c] * vecs[_ZF, c]
            z_norm = math.sqrt(z_norm)
        for c in range(d):
            vecs[_U, c] = vecs[_G, c] - r * vecs[_ZF, c] / z_norm if z_norm > 0.0 else vecs[_G, c]
        for j in range(k):
            s = 0.0
            for c in range(d):
                s += mats[_Q, j, c] * vecs[_U, c]
            vecs[_QTG, j] = s
        for j in range(k - 1, -1, -1):
            s = vecs[_QTG, j]
            for i in range(j + 1, k):
                s -= mats[_R, j, i] * vecs[_MU, i]
            vecs[_MU, j] = s / mats[_R, j, j]
        leave = -1
        for j in range(k):
            if vecs[_MU, j] < 0.0:
                if leave < 0 or (W[slot, j] < W[slot, leave] if degenerate
                                 else vecs[_MU, j] < vecs[_MU, leave]):
                    leave = j
        if leave < 0:
            return k
        for j in range(leave, k - 1):
            W[slot, j] = W[slot, j + 1]
        k -= 1
        start = leave
        degenerate = False
    return -1


@njit
def inverse_frobenius(chol, vecs, row) -> float:
    """``||L^{-1}||_F`` (an upper bound on ``||L^{-1}||_2``) by ``d`` forward substitutions in
    ``vecs[row]``."""
    d = chol.shape[0]
    total = 0.0
    for e in range(d):
        for i in range(e, d):
            s = 1.0 if i == e else 0.0
            for c in range(e, i):
                s -= chol[i, c] * vecs[row, c]
            vecs[row, i] = s / chol[i, i]
            total += vecs[row, i] * vecs[row, i]
    return math.sqrt(total)


@njit
def certified(A, b, chol, whiten, r, W, slot, k, center, norm_bound, radius, z_bound, gap_rtol,
              vecs) -> bool:
    """Whether the arm ``vecs[_X]`` (in ``P``) is within ``gap_rtol`` of optimal for ``theta =
    vecs[_SCALED]`` (module docstring), with ``y`` the multipliers ``vecs[_MU, :k]`` of rows
    ``W[slot, :k]`` clipped at 0.  ``Z = ||L^{-1} center|| + z_bound``, ``z_bound`` a bound on
    ``||L^{-1} (x - center)||`` over ``P``, or 0 to compute ``||L^{-1}||_F radius`` where
    needed.  Uses ``vecs[_W1]``, ``vecs[_W2]``."""
    d = A.shape[1]
    dual = 0.0
    dual_scale = 0.0
    for c in range(d):
        vecs[_W1, c] = vecs[_SCALED, c]
    for j in range(k):
        row = W[slot, j]
        y = max(vecs[_MU, j], 0.0)
        dual += b[row] * y
        dual_scale += abs(b[row] * y)
        for c in range(d):
            vecs[_W1, c] -= A[row, c] * y
    u_norm = 0.0
    for a in range(d):
        if whiten:
            s = 0.0
            for c in range(a, d):
                s += chol[c, a] * vecs[_W1, c]
        else:
            s = vecs[_W1, a]
        u_norm += s * s
    u_norm = math.sqrt(u_norm)
    # f(x) = theta^T x - r ||L^{-1} x||.
    linear = 0.0
    theta_norm = 0.0
    for c in range(d):
        linear += vecs[_SCALED, c] * vecs[_X, c]
        theta_norm += vecs[_SCALED, c] * vecs[_SCALED, c]
    theta_norm = math.sqrt(theta_norm)
    x_norm = 0.0
    if r > 0.0:
        for i in range(d):
            s = vecs[_X, i]
            if whiten:
                for c in range(i):
                    s -= chol[i, c] * vecs[_W2, c]
                s /= chol[i, i]
            vecs[_W2, i] = s
            x_norm += s * s
        x_norm = math.sqrt(x_norm)
    value = linear - r * x_norm
    excess = u_norm - r
    upper = dual
    if excess > 0.0:
        # Z bounds ||L^{-1} x'|| over P relative to the interior point (module docstring).
        if not whiten:
            z_bound = radius
        elif not z_bound > 0.0:
            z_bound = radius * inverse_frobenius(chol, vecs, _W2)
        centre2 = 0.0
        for i in range(d):
            s = center[i]
            if whiten:
                for c in range(i):
                    s -= chol[i, c] * vecs[_W2, c]
                s /= chol[i, i]
            vecs[_W2, i] = s
            centre2 += s * s
        upper += excess * (math.sqrt(centre2) * (1.0 + 1e-6) + z_bound)
    gap = upper - value
    scale = theta_norm * norm_bound + r * x_norm + dual_scale
    # A gap below -tolerance is impossible for a point of P: the data are not what they claim.
    return gap_rtol >= 0.0 and math.isfinite(gap) and abs(gap) <= gap_rtol * scale


@njit(inline="always")
def _valid_working_set(W, slot, k, m, d) -> bool:
    """``0 <= k <= d`` rows, each within ``[0, m)`` (dependent rows are caught by the face
    basis)."""
    if not 0 <= k <= d:
        return False
    for j in range(k):
        if not 0 <= W[slot, j] < m:
            return False
    return True


@njit(inline="always")
def _vertex_still_optimal(A, b, member, W, inverse, points, slot, center, norm_bound, radius,
                          gap_rtol, vecs) -> bool:
    """The linear program's warm check: at the stored vertex ``A_W x = b_W`` (its verified arm
    ``points[slot]``, the inverse of ``A_W`` in ``inverse``), whether ``mu = A_W^{-T} theta`` is
    certified (:func:`certified` with ``L = I``, ``r = 0``), leaving ``mu`` and the arm in
    ``vecs[_MU]`` and ``vecs[_X]``.  The stored point is checked to lie in ``P`` again, exactly
    (``member``, the user's rows): the warm state is the run's public state, and a point from
    elsewhere must not pass as the vertex."""
    d = A.shape[1]
    for j in range(d):
        s = 0.0
        for c in range(d):
            s += inverse[c, j] * vecs[_SCALED, c]
        vecs[_MU, j] = s
        vecs[_X, j] = points[slot, j]
    if not in_polytope(vecs[_X], member):
        return False
    return certified(A, b, inverse, False, 0.0, W, slot, d, center, norm_bound, radius, 0.0,
                     gap_rtol, vecs)


@njit
def _store_inverse(mats, inverse) -> None:
    """``inverse = A_W^{-1} = Q^T R^{-T}`` from the working set's basis (``A_W = R^T Q``)."""
    d = inverse.shape[0]
    for c in range(d):
        # Row c of Q^T R^{-T} is (R^{-1} q_c)^T, q_c = column c of Q (solve R y = Q[:, c]).
        for j in range(d - 1, -1, -1):
            s = mats[_Q, j, c]
            for i in range(j + 1, d):
                s -= mats[_R, j, i] * inverse[c, i]
            inverse[c, j] = s / mats[_R, j, j]


@njit
def _arm_one(A, b, center, norm_bound, radius, z_bound, gap_rtol, member, theta, chol, whiten, r,
            W, counts, points, inverse, slot, out, mats, vecs) -> int:
    """The certified arm of one instance into ``out``, warm started from slot ``slot`` of the
    run's state (``W[slot]``, ``counts[slot]``, ``points[slot]``: the working set and the arm of
    the previous solve; for the linear program, ``inverse``: ``A_W^{-1}`` at a vertex), which it
    updates; returns its status (:mod:`sege_cvx.arm_sets.kernels.status`).

    ``(theta, r)`` are first scaled by a power of two near ``max(|theta_i|, r)`` (exact; the arm
    is unchanged).  ``member``: the user's rows ``(A, b)``, against which the arm is verified
    exactly (:func:`~sege_cvx.arm_sets.kernels.exact.membership_rows`).  ``mats``: scratch (2, d, d);
    ``vecs``: scratch (13, d).
    """
    m, d = A.shape
    rs = scale_to_order_one(theta, r, vecs, _SCALED)
    if not math.isfinite(rs):
        counts[slot] = 0
        return NOT_FINITE
    # The linear program at a vertex: the previous arm stays optimal unless a multiplier changed
    # sign (one d x d mat-vec), the common case.
    # The warm state is the run's public state: checked, not trusted (rows index A).
    warm = _valid_working_set(W, slot, counts[slot], m, d)
    if not warm:
        counts[slot] = 0
        for c in range(d):
            points[slot, c] = center[c]
    if not whiten and warm and counts[slot] == d and _vertex_still_optimal(
            A, b, member, W, inverse, points, slot, center, norm_bound, radius, gap_rtol, vecs):
        for c in range(d):
            out[c] = vecs[_X, c]
        return VERIFIED
    status = NOT_CERTIFIED
    for attempt in range(2):  # warm start, then cold from the interior point
        k = counts[slot] if attempt == 0 else 0
        for c in range(d):
            vecs[_X, c] = points[slot, c] if attempt == 0 else center[c]
        k = solve_active_set(A, b, chol, whiten, rs, W, slot, k, mats, vecs)
        if k < 0:
            status = NOT_CERTIFIED
            continue
        finite = True
        for c in range(d):
            out[c] = vecs[_X, c]
            finite = finite and math.isfinite(out[c])
        if not finite:
            status = NOT_FINITE
            continue
        if not pull_in_one(out, center, in_polytope, member, vecs[_W1], vecs[_W2]):
            status = NOT_MEMBER
            continue
        for c in range(d):
            vecs[_X, c] = out[c]
        if not certified(A, b, chol, whiten, rs, W, slot, k, center, norm_bound, radius, z_bound,
                         gap_rtol, vecs):
            status = NOT_CERTIFIED
            continue
        counts[slot] = k
        for c in range(d):
            points[slot, c] = out[c]
        if not whiten and k == d:
            _store_inverse(mats, inverse)
        return VERIFIED
    counts[slot] = 0  # the next solve starts cold
    for c in range(d):
        points[slot, c] = center[c]
    return status


@njit(inline="always")
def greedy_one(geometry, theta, warm, out, mats, vecs) -> int:
    """The certified greedy arm (paper eq. (greedy arm): ``max theta^T x``), warm slot
    :data:`GREEDY` of the run's ``warm = (rows, counts, points, inverse)``."""
    g = geometry
    W, counts, points, inverse = warm
    return _arm_one(g.A, g.b, g.center, g.norm_bound, g.radius, g.z_bound, g.gap_rtol,
                    (g.member_A, g.member_b, g.member_l1), theta, inverse, False, 0.0, W, counts,
                    points, inverse, GREEDY, out, mats, vecs)


@njit(inline="always")
def lcb_one(geometry, theta, chol, r, warm, out, mats, vecs) -> int:
    """The certified LCB arm (paper eq. (lcb arm)) from the Cholesky factor ``chol`` of ``V``,
    warm slot :data:`LCB` of the run's ``warm = (rows, counts, points, inverse)``."""
    g = geometry
    W, counts, points, inverse = warm
    return _arm_one(g.A, g.b, g.center, g.norm_bound, g.radius, g.z_bound, g.gap_rtol,
                    (g.member_A, g.member_b, g.member_l1), theta, chol, True, r, W, counts,
                    points, inverse, LCB, out, mats, vecs)


@njit(inline="always")
def pull_inside_one(geometry, x, offset, trial) -> bool:
    """Move ``x`` exactly into ``P`` (:func:`sege_cvx.arm_sets.kernels.pull_in.pull_in_one`
    toward the centre)."""
    return pull_in_one(x, geometry.center, in_polytope,
                       (geometry.member_A, geometry.member_b, geometry.member_l1), offset, trial)


def empty_warm_state(n: int, center: np.ndarray) -> tuple[np.ndarray, ...]:
    """Cold warm-start state of ``n`` runs: no working rows, points at the interior ``center``
    (``(rows, counts, points, inverse)``, shapes ``(n, 2, d)``, ``(n, 2)``, ``(n, 2, d)``,
    ``(n, d, d)``)."""
    d = center.shape[0]
    points = np.empty((n, 2, d))
    points[:] = center
    return (np.zeros((n, 2, d), dtype=np.int64), np.zeros((n, 2), dtype=np.int64), points,
            np.zeros((n, d, d)))


@njit
def _cold_all(geometry, thetas, chols, radii, slot) -> tuple:
    """:func:`_arm_one` per row from a cold start (slot :data:`GREEDY`: the greedy arm, ``chols``
    and ``radii`` unused; slot :data:`LCB`: the LCB arm): arms and status codes."""
    g = geometry
    n, d = thetas.shape
    lcb = slot == LCB
    W = np.zeros((2, d), dtype=np.int64)
    counts = np.zeros(2, dtype=np.int64)
    points = np.empty((2, d))
    inverse = np.empty((d, d))
    arms = np.empty((n, d))
    status = np.empty(n, dtype=np.int64)
    mats = np.empty((2, d, d))
    vecs = np.empty((13, d))
    for i in range(n):
        counts[:] = 0
        for c in range(d):  # not points[slot] = center: numba would compile its shape error
            points[slot, c] = g.center[c]
        status[i] = _arm_one(g.A, g.b, g.center, g.norm_bound, g.radius, g.z_bound, g.gap_rtol,
                             (g.member_A, g.member_b, g.member_l1),
                             thetas[i], chols[i] if lcb else inverse, lcb,
                             radii[i] if lcb else 0.0, W, counts, points, inverse, slot, arms[i],
                             mats, vecs)
        if status[i] != VERIFIED:
            arms[i] = np.nan  # not the scratch a failed solve left
    return arms, status


def greedy_all(geometry: tuple, thetas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`greedy_one` per row of ``thetas``, each from a cold start: arms and status codes."""
    n = thetas.shape[0]
    return _cold_all(geometry, thetas, np.empty((n, 0, 0)), np.empty(n), GREEDY)


def lcb_all(geometry: tuple, thetas: np.ndarray, chols: np.ndarray,
            radii: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`lcb_one` per row (Cholesky factors ``chols``, radii ``radii``), each from a cold
    start: arms and status codes."""
    return _cold_all(geometry, thetas, chols, radii, LCB)


@njit
def _within_all(geometry, thetas, cuts, limit, start):
    g = geometry
    n, d = thetas.shape
    m = g.A.shape[0]
    arms = np.empty((n, d))
    status = np.empty(n, dtype=np.int64)
    rows, rhs = np.empty((m + cuts.shape[1], d)), np.empty(m + cuts.shape[1])
    W, mats, vecs = np.zeros((1, d), dtype=np.int64), np.empty((2, d, d)), np.empty((13, d))
    for i in range(n):
        status[i] = _greedy_within(g.A, g.b, g.center, g.norm_bound, g.radius, g.gap_rtol,
                                   (g.member_A, g.member_b, g.member_l1), thetas[i], cuts[i],
                                   limit, start, rows, rhs, W, arms[i], mats, vecs)
        if status[i] != VERIFIED:
            arms[i] = np.nan
    return arms, status


def greedy_within_all(geometry: tuple, thetas: np.ndarray, cuts: np.ndarray, limit: float,
                      start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`greedy_within_one` per row of ``thetas`` (shape ``(n, d)``) with its own cuts
    (``cuts[i]``, shape ``(n, k, d)``) and the common ``limit``, from the feasible ``start``:
    arms (NaN where not :data:`~sege_cvx.arm_sets.kernels.status.VERIFIED`) and status codes."""
    return _within_all(geometry, np.ascontiguousarray(thetas, dtype=np.float64),
                       np.ascontiguousarray(cuts, dtype=np.float64), float(limit),
                       np.ascontiguousarray(start, dtype=np.float64))


class PolytopeArms:
    """A polytope's data for the compiled arms, computed once.

    Parameters
    ----------
    A : ndarray, shape (m, d)
        Rows of unit norm.
    b : ndarray, shape (m,)
    center : ndarray, shape (d,)
        A certified interior point (the pull-in's centre and the cold start).
    norm_bound : float
        Certified ``max ||x||`` over the polytope.
    radius : float
        Certified ``max ||x - center||`` over the polytope.
    member : tuple of ndarray
        :func:`~sege_cvx.arm_sets.kernels.exact.membership_rows` of ``A`` and ``b`` as the user gave
        them: every arm is verified against these, exactly.
    gap_rtol : float, default :data:`GAP_RTOL`
        The certificate's accepted relative duality gap (a negative value certifies nothing:
        every arm then falls back, which the tests use).
    """

    def __init__(self, A: np.ndarray, b: np.ndarray, center: np.ndarray, norm_bound: float,
                 radius: float, member: tuple[np.ndarray, ...], gap_rtol: float = GAP_RTOL) -> None:
        self.A = np.ascontiguousarray(A, dtype=np.float64)
        self.b = np.ascontiguousarray(b, dtype=np.float64)
        self.member = tuple(np.ascontiguousarray(v, dtype=np.float64) for v in member)
        self.center = np.ascontiguousarray(center, dtype=np.float64)
        self.norm_bound = float(norm_bound)
        self.radius = float(radius)
        self.gap_rtol = float(gap_rtol)

    def geometry(self, lam: float | None = None, anchors=None) -> PolytopeGeometry:
        """The record compiled stages receive (:class:`PolytopeGeometry`); ``anchors`` unused
        (a polytope certifies any point, :func:`pull_inside_one`).

        ``z_bound`` bounds ``||x - center||_{V^{-1}}`` over the polytope for every ``V >= lam I``
        (SEGE's information matrices): ``radius / sqrt(lam)``, widened by 1e-6 against rounding
        in ``V``; without ``lam`` it is 0 (computed per instance from ``L``; see
        :func:`certified`).
        """
        z_bound = 0.0 if lam is None else self.radius / math.sqrt(lam) * (1.0 + 1e-6)
        return PolytopeGeometry(self.A, self.b, self.center, self.norm_bound, self.radius, z_bound,
                                self.gap_rtol, *self.member)

    def warm_state(self, n: int) -> tuple[np.ndarray, ...]:
        """The cold warm-start state of ``n`` runs (:func:`empty_warm_state`)."""
        return empty_warm_state(n, self.center)

    def checked_lcb_arm(self, theta_hat: object, V: object, radius: object) -> None:
        """No single-call shortcut: the general path validates and solves."""
        return None


@njit
def _greedy_within(A, b, center, norm_bound, radius, gap_rtol, member, theta, cuts, limit, start,
                   rows, rhs, W, out, mats, vecs) -> int:
    """The certified greedy arm over ``P`` cut by ``cuts x <= limit`` into ``out``; returns its
    status (:func:`greedy_within_one`).

    The rows ``A x <= b`` and the cuts, scaled to unit norm, are stacked into the scratch
    ``rows``, ``rhs``; the simplex method (:func:`solve_active_set` with ``r = 0``) starts from
    the feasible point ``start`` with no active row.  The arm is moved exactly into ``P`` (not
    into the cuts: the caller checks those against its own data) and certified against the
    stacked rows: the bound ``||x'|| <= ||center|| + radius`` over ``P`` holds over any part of
    it.
    """
    m, d = A.shape
    for i in range(m):
        rhs[i] = b[i]
        for c in range(d):
            rows[i, c] = A[i, c]
    for j in range(cuts.shape[0]):
        norm = 0.0
        for c in range(d):
            norm += cuts[j, c] * cuts[j, c]
        norm = math.sqrt(norm)
        scale = 1.0 / norm if norm > 0.0 else 0.0  # a zero cut never blocks a step
        for c in range(d):
            rows[m + j, c] = cuts[j, c] * scale
        rhs[m + j] = limit * scale if norm > 0.0 else limit
    rs = scale_to_order_one(theta, 0.0, vecs, _SCALED)
    if not math.isfinite(rs):
        return NOT_FINITE
    for c in range(d):
        vecs[_X, c] = start[c]
    chol = mats[_R]  # not read: the linear program is not whitened
    k = solve_active_set(rows, rhs, chol, False, 0.0, W, 0, 0, mats, vecs)
    if k < 0:
        return NOT_CERTIFIED
    for c in range(d):
        out[c] = vecs[_X, c]
        if not math.isfinite(out[c]):
            return NOT_FINITE
    if not pull_in_one(out, center, in_polytope, member, vecs[_W1], vecs[_W2]):
        return NOT_MEMBER
    for c in range(d):
        vecs[_X, c] = out[c]
    if not certified(rows, rhs, chol, False, 0.0, W, 0, k, center, norm_bound, radius, 0.0,
                     gap_rtol, vecs):
        return NOT_CERTIFIED
    return VERIFIED


@njit(inline="always")
def greedy_within_one(geometry, theta, cuts, limit, start, out, work) -> int:
    """The greedy arm over the polytope cut by the half-spaces ``cuts x <= limit``
    (:func:`~sege_cvx.arm_sets.kernels.registry.greedy_arm_within`): a linear program, solved
    from ``start`` by the simplex method, the arm moved exactly into ``P`` and certified
    optimal by its duality gap (:func:`_greedy_within`).  ``work``: :func:`within_scratch_of`."""
    g = geometry
    rows, rhs, W, mats, vecs = work
    return _greedy_within(g.A, g.b, g.center, g.norm_bound, g.radius, g.gap_rtol,
                          (g.member_A, g.member_b, g.member_l1), theta, cuts, limit, start, rows,
                          rhs, W, out, mats, vecs)


@njit(inline="always")
def within_start_of(geometry, n_cuts):
    """A program's start (:func:`~sege_cvx.arm_sets.kernels.registry.within_start`): the origin,
    the safe arm, which meets every cut."""
    return np.zeros(geometry.A.shape[1])


@njit(inline="always")
def within_scratch_of(geometry, n_cuts):
    """:func:`greedy_within_one`'s scratch for ``n_cuts`` cuts: the stacked rows and right-hand
    sides, the working set, and the solve's ``mats`` and ``vecs``."""
    m, d = geometry.A.shape
    return (np.empty((m + n_cuts, d)), np.empty(m + n_cuts), np.zeros((1, d), dtype=np.int64),
            np.empty((2, d, d)), np.empty((13, d)))


# --- the stage's arms (the geometry registry: sege_cvx.arm_sets.kernels.registry) ----------------

@njit(inline="always")
def _stage_pull_inside(geometry, x, warm, use_lcb, rho, g, safe, offset, trial):
    """SEGE's mix by the set's own pull-in (:func:`pull_inside_one`)."""
    return pull_inside_one(geometry, x, offset, trial)


@njit(inline="always")
def radial_one(geometry, u, h, caps, grads):
    """The polytope's extent along ``u``, ``min b_i / <a_i, u>`` over the rows with
    ``<a_i, u> > 0``, and its pieces ``b_i / <a_i, u>``, the gradient of whose log is
    ``-a_i / <a_i, u>`` (norm ``1 / <a_i, u>``: the rows are unit), those within a factor
    ``1 + h (|grad_i| + |grad_0|)`` of the least
    (:func:`~sege_cvx.arm_sets.kernels.registry.radial_extent`)."""
    A, b = geometry.A, geometry.b
    m, d = A.shape
    first, low, low_dot = -1, np.inf, 0.0
    for i in range(m):
        dot = 0.0
        for j in range(d):
            dot += A[i, j] * u[j]
        if dot > 0.0 and b[i] / dot < low:
            first, low, low_dot = i, b[i] / dot, dot
    if first < 0 or not low > 0.0:  # unbounded along u, or the origin on a face it leaves
        return 0.0, 0
    caps[0] = low
    for j in range(d):
        grads[0, j] = -A[first, j] / low_dot
    k = 1
    for i in range(m):
        if k == caps.shape[0]:
            break
        if i == first:
            continue
        dot = 0.0
        for j in range(d):
            dot += A[i, j] * u[j]
        if dot > 0.0 and b[i] / dot <= low * (1.0 + h * (1.0 / dot + 1.0 / low_dot)):
            caps[k] = b[i] / dot
            for j in range(d):
                grads[k, j] = -A[i, j] / dot
            k += 1
    return low, k


register_geometry(PolytopeGeometry, GeometryKernels(
    greedy=greedy_one, lcb=lcb_one, pull_in=pull_inside_one, pull_inside=_stage_pull_inside,
    radial=radial_one, within=greedy_within_one, within_scratch=within_scratch_of,
    within_start=within_start_of))
