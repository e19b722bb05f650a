r"""A compiled primal-dual interior-point method for small second-order cone programs.

Solves, in numba, with no Python per call,

.. math::

    \min_z\ c^T z \quad\text{s.t.}\quad G z + s = h,\ s \in K, \qquad A z = b,

where ``K`` is a product of blocks, each one nonnegative row (``s_i >= 0``) or one second-order
cone ``{(s_0, s_1) : ||s_1|| <= s_0}``.  It is the method of CVXOPT's ``coneqp`` (Vandenberghe,
"The CVXOPT linear and quadratic cone program solvers", 2010) for a linear objective:
Nesterov-Todd scaling ``W`` (``W zd = W^{-1} s = lambda``), Mehrotra's predictor-corrector,
the Newton system reduced to ``H dz + A^T dy = r`` with ``H = G^T W^{-2} G`` factored by
Cholesky (in a minimum-degree order where the set's auxiliary variables make ``H`` sparse,
:func:`elimination_order`; the equalities by their Schur complement) and one step of iterative
refinement, and coneqp's start (least-squares points shifted into the cone).  The programs it
serves are feasible and bounded with a strictly feasible point (an arm set's programs), so it
has no infeasibility detection: a solve that does not meet its tolerances within
:data:`MAX_ITER` iterations reports :data:`NOT_CONVERGED`, and its caller falls back.

**Warm starts** (:func:`solve_into`'s ``start``: a learner's next program, whose data moved by
one observation) are first given to the *active-set polish* (:func:`_polish`): each cone's
state read from the last solution (a nonnegative row active or not; a second-order cone's
slack inside it, zero, or on its face with the dual ``alpha J s`` on the opposite face), then
Newton's method on the optimality conditions with the states fixed, a state corrected where
the new point leaves a cone, and the point held to the interior-point method's stopping test
with every slack and dual checked in its cone.  Where it fails, the interior-point method
runs from the warm point, then cold.  The record keeps the share of recent polishes that
failed: where nearly all do (the start is far from the next solution's active set, as
SafeTS's samples in ten dimensions), the polish is skipped, and tried again every
:data:`POLISH_PROBE`-th solve.

**Data layout** (:class:`ConeBlocks`).  ``G`` is stored by block: block ``j`` holds rows
``rows[j]:rows[j+1]`` of ``G`` over its columns ``cols[col_ptr[j]:col_ptr[j+1]]``, as a dense
row-major array at ``values[val_ptr[j]:val_ptr[j+1]]``; the compiled code reads the structure
packed into one integer array (:func:`pack`).  A block's part of ``H`` is then
``G_j^T W_j^{-2} G_j`` over its own columns: the work per iteration is the sum over blocks of
rows x columns^2, and one Cholesky factorization, over the factor's pattern where
:func:`pack` found one that saves enough.  The values a solve reads are the workspace's copy
(:func:`workspace`), so that a caller may write a block of its own (an LCB program's
confidence cone) per solve while the structure is shared between threads.

The scratch vectors are rows of one array indexed by row (``V[row, i]``), and the matrices
rows of another: numba updates an array's reference count, atomically, whenever a function
(inlined or not) binds it, and with a dozen arrays per helper those updates were nine tenths of
a solve's time at this size.  The helpers are compiled once and called, not inlined: inlining
them made the first compilation 3.4 times longer (42 s against 12.5 s for a loop of solves) and
the solves no faster.
Everything runs in IEEE arithmetic (no ``fastmath``): a solve is a deterministic function of
its data.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .._numba import njit

#: Iterations before a solve gives up (:data:`NOT_CONVERGED`).
MAX_ITER = 40
#: Stop when the primal and dual residuals are below ``FEAS_TOL`` (relative to the data) and
#: the duality gap below ``GAP_TOL`` (relative to ``max(1, |c^T z|)``): two orders of
#: magnitude below the 1e-7 agreement with Clarabel asked of an arm's objective (tighter
#: cost 10-15 % more iterations and changed objectives by 1e-11).
FEAS_TOL = 1e-9
GAP_TOL = 1e-10
#: Where rounding stops the iterates short of those (their residuals grow again once the gap
#: is far below them), the best iterate is returned if its residuals and relative gap are all
#: below ``REDUCED_TOL`` (Clarabel's reduced tolerance): :data:`REDUCED`.
REDUCED_TOL = 1e-8
#: An iterate whose largest residual or relative gap exceeds the best one's this many times
#: ends the iteration.
DIVERGED = 1e3
#: Fraction of the step to the cone's boundary taken.
STEP = 0.99
#: Static regularization of ``H``, relative to its largest diagonal entry.
REGULARIZATION = 1e-14
#: A warm start (:func:`solve_into`'s ``start``) moves the previous solution's ``s`` and ``zd``
#: this far into their cones (relative to each's largest entry) along ``e``.  Measured on 1,000
#: consecutive LCB programs of a learner (the three sets of ``bench_conic_arms.py``, d = 3 and
#: 10): 7-9 iterations from 1e-2, 1e-3 or 1e-4 against 12-17 cold, none failing.
WARM_SHIFT = 1e-3
#: A warm start first tries the active-set polish (:func:`_polish`): Newton's method on the
#: optimality conditions with each cone's state (slack zero, on the cone's face, or inside)
#: read from the previous solution, at most :data:`POLISH_ITER` steps, on Newton systems of at
#: most ``POLISH_MAX`` unknowns (a dense LU: beyond that an interior-point iteration is
#: cheaper).  Its point is accepted only if it meets the interior-point method's stopping test
#: with every slack and dual in its cone.
POLISH_MAX = 96
POLISH_ITER = 6
#: Times the polish may correct its states (a row or cone that became active or inactive).
POLISH_UPDATES = 2
#: The polish stops when its residual falls below this (relative, as the stopping test's) or
#: stops decreasing.
POLISH_TOL = 1e-13
#: The proximal term's weight on ``x`` in the polish's Newton matrix, relative to its largest
#: entry (:func:`_polish_jacobian`).
POLISH_PROXIMAL = 1e-9
#: An inactive row's or cone's slack may end this far outside its cone, relative to the
#: block's own magnitude (rounding in ``h - G x``; :func:`_update_states`).
POLISH_SLACK = 1e-12
#: A pivot below this, relative to the Newton matrix's largest entry, ends the polish (a
#: degenerate active set: the interior-point method takes over).
POLISH_PIVOT = 1e-13
#: A warm start is polished while fewer than this share of its record's recent polishes
#: failed (an average with weight :data:`POLISH_WEIGHT` on the latest: nine failures in a row
#: from none), else given to the warm interior-point method at once, with a polish again
#: every :data:`POLISH_PROBE`-th solve.  On SafeTS's programs at d = 10 (a sample ``theta_hat
#: + beta L^{-T} eta`` a stage) 85-95 % of polishes failed on the l1.5 ball and the lifted set
#: of ``bench_conic_arms.py``, each failure costing a few Newton steps of 70-odd unknowns; on
#: the ball with cuts 95 % succeed, and at d = 3 about half, where a polish is cheap.
POLISH_FAILING = 0.9
POLISH_WEIGHT = 0.25
POLISH_PROBE = 8
#: ``H`` is factored in its sparse elimination order (:func:`elimination_order`) where that
#: takes this many times fewer multiply-adds than the dense factorization: indirect indices
#: cost about twice the dense loop's per multiply-add (measured on the sets of
#: ``bench_conic_arms.py``: a ball with cuts and a lifted set, 0.4-1 times the dense count,
#: solved 4-20 % slower sparse; the l1.5 ball, 0.02-0.12 times, 8-60 % faster).
SPARSE_GAIN = 4
#: Steps of iterative refinement per Newton solve, once the relative gap is below
#: :data:`REFINE_BELOW` (earlier, the Newton directions need no such accuracy).
REFINEMENTS = 1
REFINE_BELOW = 1e-5

#: Status codes of :func:`solve`: the first two leave a solution in ``z``.
SOLVED, REDUCED, NOT_CONVERGED, NUMERICAL = 0, 1, 2, 3

# Rows of the scratch ``work.V``: of length m (cone rows) ...
(_S, _ZD, _RZ, _RC, _DS, _DZ, _LAM, _T1, _T2, _U, _WU, _Q, _T, _Q2, _E3, _ES, _EZ, _W, _H,
 # ... per block ...
 _ETA,
 # ... one block's scaled rows (rows x columns) ...
 _GH,
 # ... of length n (variables) ...
 _X, _DX, _RX, _R1, _E1, _EX, _C,
 # ... of length p (equalities) ...
 _Y, _DY, _RY, _R2, _E2, _EY, _B,
 # ... the active-set polish's (of length up to POLISH_MAX) ...
 _PF, _PD, _PM, _PKIND, _POFF, _PIDX,
 # ... and the last solve's iteration count (in column 0).
 _INFO) = range(42)
_ROWS = 42
#: The row of ``work.V`` that holds ``c`` for :func:`solve_into`.
C_ROW = _C


class ConeBlocks(NamedTuple):
    """The structure of ``G`` by cone block (see the module docstring).

    Attributes
    ----------
    kind : ndarray of int64, shape (nb,)
        0 a nonnegative row, 1 a second-order cone.
    rows : ndarray of int64, shape (nb + 1,)
        Block ``j``'s rows of ``G`` (and of ``h`` and ``s``).
    col_ptr : ndarray of int64, shape (nb + 1,)
    cols : ndarray of int64
        Block ``j``'s columns, increasing.
    val_ptr : ndarray of int64, shape (nb + 1,)
    values : ndarray of float64
        Block ``j``'s dense rows over its columns, row-major (copied into each workspace).
    """

    kind: np.ndarray
    rows: np.ndarray
    col_ptr: np.ndarray
    cols: np.ndarray
    val_ptr: np.ndarray
    values: np.ndarray


def pack(blocks: ConeBlocks) -> np.ndarray:
    """The structure as :func:`solve` reads it: ``[nb, kind, rows, col_ptr, val_ptr, cols]``,
    then how ``H`` is factored: ``[nv, sparse, order, position, pattern_ptr, pattern]``, the
    elimination order of :func:`elimination_order` where it saves :data:`SPARSE_GAIN` times
    the multiply-adds of the dense factorization (``sparse = 1``), else the variables' own
    order, densely."""
    order, position, pattern_ptr, pattern = elimination_order(blocks)
    nv = order.shape[0]
    sparse = SPARSE_GAIN * sum(int(k) * int(k) / 2 + int(k) for k in np.diff(pattern_ptr)) \
        <= nv**3 / 6
    if not sparse:  # the dense factorization of H's lower triangle, in the variables' order
        order = position = np.arange(nv)
        pattern_ptr, pattern = np.zeros(nv + 1, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.ascontiguousarray(np.concatenate([
        [blocks.kind.shape[0]], blocks.kind, blocks.rows, blocks.col_ptr, blocks.val_ptr,
        blocks.cols, [nv, int(sparse)], order, position, pattern_ptr, pattern]).astype(np.int64))


def elimination_order(blocks: ConeBlocks) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                   np.ndarray]:
    """The order in which :func:`_factor` eliminates the variables of ``H = G^T W^{-2} G``, and
    the pattern of its Cholesky factor: a minimum-degree order (the variable of fewest
    neighbours first, the lowest index among equals) of the graph in which each block joins
    all of its columns, as ``H``'s nonzeros do whatever ``W``.

    A set's auxiliary variables (the second-order form of a p-norm, a lifted set's) each touch
    a few small cones: eliminated first, they fill in little, where the dense factorization of
    ``n`` variables costs ``n^3 / 6`` (at d = 10, the l1.5 ball's 42 variables: 12,348
    multiply-adds against 428 in this order).  The same order serves a program over a prefix of
    the blocks and of the variables (the greedy program without the LCB's cone and its ``tau``):
    the factor's pattern of a subgraph, eliminated in the induced order, lies inside the
    whole's, whose entries outside the prefix are skipped.

    Returns
    -------
    order : ndarray of int64, shape (nv,)
        The variables ``0..nv-1`` (``nv`` one past the largest column of a block; a variable
        in none has no neighbours) in the order eliminated.
    position : ndarray of int64, shape (nv,)
        Each variable's place in ``order``.
    pattern_ptr, pattern : ndarray of int64
        Variable ``k``'s column of the factor below its diagonal:
        ``pattern[pattern_ptr[k]:pattern_ptr[k+1]]``, the variables in their elimination order.
    """
    nb = int(blocks.kind.shape[0])
    nv = int(blocks.cols.max()) + 1 if blocks.cols.size else 0
    adjacent = np.zeros((nv, nv), dtype=bool)
    for j in range(nb):
        cols = blocks.cols[blocks.col_ptr[j]:blocks.col_ptr[j + 1]]
        adjacent[np.ix_(cols, cols)] = True
    np.fill_diagonal(adjacent, False)
    alive = np.ones(nv, dtype=bool)
    order, columns = [], []
    for _ in range(nv):
        degree = np.where(alive, (adjacent & alive).sum(axis=1), nv + 1)
        k = int(np.argmin(degree))
        neighbours = np.flatnonzero(adjacent[k] & alive)
        adjacent[np.ix_(neighbours, neighbours)] = True  # the fill: they become one clique
        np.fill_diagonal(adjacent, False)
        alive[k] = False
        order.append(k)
        columns.append(neighbours)
    order = np.array(order, dtype=np.int64)
    position = np.empty(nv, dtype=np.int64)
    position[order] = np.arange(nv)
    below = [None] * nv
    for k, neighbours in zip(order, columns, strict=True):
        below[k] = neighbours[np.argsort(position[neighbours])]
    pattern_ptr = np.zeros(nv + 1, dtype=np.int64)
    pattern_ptr[1:] = np.cumsum([len(b) for b in below])
    pattern = np.concatenate(below).astype(np.int64) if nv else np.zeros(0, dtype=np.int64)
    return order, position, pattern_ptr, pattern


class SOCPWork(NamedTuple):
    """Scratch of :func:`solve` (:func:`workspace`): the vectors ``V`` (by row, see the
    module; the last solve's iteration count in ``V[-1, 0]``), the matrices ``M`` (``H`` in
    rows ``0:n``, ``H^{-1} A^T`` by rows in ``n:n+p``, the equalities' Schur complement in
    ``n+p:n+2p``) and the values of ``G`` the solves read."""

    V: np.ndarray
    M: np.ndarray
    values: np.ndarray


def workspace(blocks: ConeBlocks, n: int, p: int) -> SOCPWork:
    """Scratch for :func:`solve` over ``blocks`` (all of them) with at most ``n`` variables and
    ``p`` equalities; ``values`` a copy of the blocks'."""
    V, M = scratch_shapes(blocks, n, p)
    return SOCPWork(np.zeros(V), np.zeros(M), blocks.values.copy())


def scratch_shapes(blocks: ConeBlocks, n: int, p: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """The shapes of :class:`SOCPWork`'s ``V`` and ``M`` for at most ``n`` variables and ``p``
    equalities over ``blocks``."""
    nb = int(blocks.kind.shape[0])
    m = int(blocks.rows[-1])
    largest = max([int(blocks.rows[j + 1] - blocks.rows[j])
                   * int(blocks.col_ptr[j + 1] - blocks.col_ptr[j]) for j in range(nb)] + [1])
    polish = min(n + p + m, POLISH_MAX)  # the polish's Newton system, in M's top left
    return (_ROWS, max(m, n, p, nb, largest, polish)), (max(n + 2 * p, polish), max(n, 1, polish))


@njit
def _kind(st, j):
    return st[1 + j]


@njit
def _row(st, j):
    return st[1 + st[0] + j]


@njit
def _cptr(st, j):
    return st[2 + 2 * st[0] + j]


@njit
def _vptr(st, j):
    return st[3 + 3 * st[0] + j]


@njit
def _col(st, k):
    return st[4 + 4 * st[0] + k]


@njit
def _sym(st):
    """Where :func:`pack`'s factorization record starts: ``st[_sym(st)]`` is ``nv``, then the
    ``sparse`` flag, ``order``, ``position``, ``pattern_ptr`` and ``pattern``."""
    return 4 + 4 * st[0] + _cptr(st, st[0])


@njit
def _g_times(st, vals, nb, V, src, dst) -> None:
    """``V[dst] = G V[src]``."""
    for j in range(nb):
        r0, r1 = _row(st, j), _row(st, j + 1)
        c0, c1 = _cptr(st, j), _cptr(st, j + 1)
        k = c1 - c0
        v0 = _vptr(st, j)
        for i in range(r1 - r0):
            acc = 0.0
            for a in range(k):
                acc += vals[v0 + i * k + a] * V[src, _col(st, c0 + a)]
            V[dst, r0 + i] = acc


@njit
def _gt_add(st, vals, nb, V, src, dst) -> None:
    """``V[dst] += G^T V[src]``."""
    for j in range(nb):
        r0, r1 = _row(st, j), _row(st, j + 1)
        c0, c1 = _cptr(st, j), _cptr(st, j + 1)
        k = c1 - c0
        v0 = _vptr(st, j)
        for a in range(k):
            acc = 0.0
            for i in range(r1 - r0):
                acc += vals[v0 + i * k + a] * V[src, r0 + i]
            V[dst, _col(st, c0 + a)] += acc


@njit
def _dual_residual(st, vals, nb, n, A, p, V) -> None:
    """``V[_RX] = c + A^T y + G^T zd`` (the stationarity residual of both methods)."""
    for k in range(n):
        V[_RX, k] = V[_C, k]
    _gt_add(st, vals, nb, V, _ZD, _RX)
    for i in range(p):
        for k in range(n):
            V[_RX, k] += A[i, k] * V[_Y, i]


@njit
def _max_step(st, nb, V, v, dv) -> float:
    """The largest ``alpha`` (1e30 for none) with ``V[v] + alpha V[dv]`` in the cone, for
    ``V[v]`` in its interior.  For a second-order cone ``f(a) = (v_0 + a d_0)^2 - ||v_1 + a
    d_1||^2 = qa a^2 + 2 qb a + qc``, ``qc > 0``: the step ends at its least positive root,
    ``qc / (-qb + sqrt(qb^2 - qa qc))`` (the stable form), which exists when ``qa < 0``, or
    ``qb < 0`` and ``qb^2 >= qa qc``."""
    alpha = 1e30
    for j in range(nb):
        r0, r1 = _row(st, j), _row(st, j + 1)
        if _kind(st, j) == 0:
            if V[dv, r0] < 0.0:
                alpha = min(alpha, -V[v, r0] / V[dv, r0])
            continue
        qa = V[dv, r0] * V[dv, r0]
        qb = V[v, r0] * V[dv, r0]
        qc = V[v, r0] * V[v, r0]
        for i in range(r0 + 1, r1):
            qa -= V[dv, i] * V[dv, i]
            qb -= V[v, i] * V[dv, i]
            qc -= V[v, i] * V[v, i]
        if not qc > 0.0:
            return 0.0
        if qa < 0.0 or qb < 0.0:
            disc = qb * qb - qa * qc
            if disc >= 0.0:
                alpha = min(alpha, qc / (-qb + math.sqrt(disc)))
    return alpha


@njit
def _apply_w(st, nb, V, src, dst, inverse) -> None:
    """``V[dst] = W V[src]`` (``W^{-1}`` if ``inverse``); ``dst`` other than ``src``.  Per
    cone ``W = eta [[w_0, w_1^T], [w_1, I + w_1 w_1^T / (1 + w_0)]]`` and ``W^{-1}`` the same
    with ``-w_1`` and ``1 / eta`` (``w = V[_W]``, ``w_0^2 - ||w_1||^2 = 1``, ``eta =
    V[_ETA, j]``); per nonnegative row ``W = w``."""
    for j in range(nb):
        r0, r1 = _row(st, j), _row(st, j + 1)
        if _kind(st, j) == 0:
            if inverse:
                V[dst, r0] = V[src, r0] / V[_W, r0]
            else:
                V[dst, r0] = V[src, r0] * V[_W, r0]
            continue
        a = 0.0
        for i in range(r0 + 1, r1):
            a += V[_W, i] * V[src, i]
        w0 = V[_W, r0]
        if inverse:
            e = 1.0 / V[_ETA, j]
            V[dst, r0] = (w0 * V[src, r0] - a) * e
            f = -V[src, r0] + a / (1.0 + w0)
        else:
            e = V[_ETA, j]
            V[dst, r0] = (w0 * V[src, r0] + a) * e
            f = V[src, r0] + a / (1.0 + w0)
        for i in range(r0 + 1, r1):
            V[dst, i] = (V[src, i] + f * V[_W, i]) * e


@njit
def _nt_scaling(st, nb, V) -> bool:
    """The Nesterov-Todd scaling of ``(s, zd)`` into ``V[_W]`` and ``V[_ETA]``, and ``lambda =
    W zd`` into ``V[_LAM]``: per nonnegative row ``w = sqrt(s / zd)``; per cone, with ``sbar``
    and ``zbar`` of unit ``J``-norm and ``gamma = sqrt((1 + sbar^T zbar) / 2)``, ``w = (sbar +
    J zbar) / (2 gamma)`` and ``eta = (s^T J s / zd^T J zd)^(1/4)``.  False if a point has left
    the cone's interior."""
    for j in range(nb):
        r0, r1 = _row(st, j), _row(st, j + 1)
        s0, z0 = V[_S, r0], V[_ZD, r0]
        if _kind(st, j) == 0:
            if not (s0 > 0.0 and z0 > 0.0):
                return False
            V[_W, r0] = math.sqrt(s0 / z0)
            V[_LAM, r0] = math.sqrt(s0 * z0)
            continue
        ss, zz, dot = s0 * s0, z0 * z0, s0 * z0
        for i in range(r0 + 1, r1):
            ss -= V[_S, i] * V[_S, i]
            zz -= V[_ZD, i] * V[_ZD, i]
            dot += V[_S, i] * V[_ZD, i]
        if not (ss > 0.0 and zz > 0.0 and s0 > 0.0 and z0 > 0.0):
            return False
        sn, zn = math.sqrt(ss), math.sqrt(zz)
        gamma2 = 2.0 * math.sqrt(0.5 * (1.0 + dot / (sn * zn)))
        V[_W, r0] = (s0 / sn + z0 / zn) / gamma2
        for i in range(r0 + 1, r1):
            V[_W, i] = (V[_S, i] / sn - V[_ZD, i] / zn) / gamma2
        V[_ETA, j] = math.sqrt(sn / zn)
    _apply_w(st, nb, V, _ZD, _LAM, False)
    return True


@njit
def _jordan(st, nb, V, a, b, dst) -> None:
    """``V[dst] = V[a] o V[b]``, the cones' Jordan product (per cone ``(a^T b, a_0 b_1 + b_0
    a_1)``)."""
    for j in range(nb):
        r0, r1 = _row(st, j), _row(st, j + 1)
        if _kind(st, j) == 0:
            V[dst, r0] = V[a, r0] * V[b, r0]
            continue
        acc = 0.0
        for i in range(r0, r1):
            acc += V[a, i] * V[b, i]
        for i in range(r0 + 1, r1):
            V[dst, i] = V[a, r0] * V[b, i] + V[b, r0] * V[a, i]
        V[dst, r0] = acc


@njit
def _jordan_solve(st, nb, V, lam, r, dst) -> None:
    """``V[dst]`` with ``V[lam] o V[dst] = V[r]``."""
    for j in range(nb):
        r0, r1 = _row(st, j), _row(st, j + 1)
        l0 = V[lam, r0]
        if _kind(st, j) == 0:
            V[dst, r0] = V[r, r0] / l0
            continue
        det, lr = l0 * l0, 0.0
        for i in range(r0 + 1, r1):
            det -= V[lam, i] * V[lam, i]
            lr += V[lam, i] * V[r, i]
        u0 = (l0 * V[r, r0] - lr) / det
        V[dst, r0] = u0
        for i in range(r0 + 1, r1):
            V[dst, i] = (V[r, i] - u0 * V[lam, i]) / l0


@njit
def _cholesky(M, r0, n) -> bool:
    """The lower Cholesky factor of ``M[r0:r0+n, :n]`` in place (its lower triangle is read);
    False if not positive definite."""
    for j in range(n):
        acc = M[r0 + j, j]
        for k in range(j):
            acc -= M[r0 + j, k] * M[r0 + j, k]
        if not acc > 0.0:
            return False
        d = math.sqrt(acc)
        M[r0 + j, j] = d
        for i in range(j + 1, n):
            acc = M[r0 + i, j]
            for k in range(j):
                acc -= M[r0 + i, k] * M[r0 + j, k]
            M[r0 + i, j] = acc / d
    return True


@njit
def _chol_solve(M, r0, n, X, row) -> None:
    """``X[row, :n] = (L L^T)^{-1} X[row, :n]``, ``L = M[r0:r0+n, :n]``."""
    for i in range(n):
        acc = X[row, i]
        for k in range(i):
            acc -= M[r0 + i, k] * X[row, k]
        X[row, i] = acc / M[r0 + i, i]
    for i in range(n - 1, -1, -1):
        acc = X[row, i]
        for k in range(i + 1, n):
            acc -= M[r0 + k, i] * X[row, k]
        X[row, i] = acc / M[r0 + i, i]


@njit
def _h_cholesky(st, M, n) -> bool:
    """The Cholesky factor of ``H`` (its variables below ``n``) in place; False if not positive
    definite.  Where :func:`pack`'s record is dense, :func:`_cholesky` of ``H``'s lower
    triangle.  Where it is sparse, ``H = U^T U`` in its elimination order over the factor's
    pattern only: ``M[k, a]`` holds ``U``'s entry of variables ``k`` and ``a``, ``a``
    eliminated after ``k`` (``M[k, k]`` the diagonal), so that each step reads and writes
    along rows; a variable below ``n`` in no block comes after the order, alone."""
    o = _sym(st)
    nv = st[o]
    if st[o + 1] == 0:  # dense: H's lower triangle in the variables' order, L L^T
        return _cholesky(M, 0, n)
    ptr, pat = o + 2 + 2 * nv, o + 3 + 3 * nv
    for step in range(nv):
        k = st[o + 2 + step]
        if k >= n:
            continue
        acc = M[k, k]
        if not acc > 0.0:
            return False
        d = math.sqrt(acc)
        M[k, k] = d
        t0, t1 = st[ptr + k], st[ptr + k + 1]
        for t in range(t0, t1):
            a = st[pat + t]
            if a < n:
                M[k, a] /= d
        # The rest's update over the row's own pattern, in elimination order: each pair (b, a)
        # with b eliminated no later than a is stored at M[b, a].
        for t in range(t0, t1):
            b = st[pat + t]
            if b >= n:
                continue
            ub = M[k, b]
            for u in range(t, t1):
                a = st[pat + u]
                if a < n:
                    M[b, a] -= M[k, a] * ub
    for k in range(nv, n):
        if not M[k, k] > 0.0:
            return False
        M[k, k] = math.sqrt(M[k, k])
    return True


@njit
def _h_solve(st, M, n, X, row) -> None:
    """``X[row, :n] = H^{-1} X[row, :n]`` by :func:`_h_cholesky`'s factor."""
    o = _sym(st)
    nv = st[o]
    if st[o + 1] == 0:
        _chol_solve(M, 0, n, X, row)
        return
    ptr, pat = o + 2 + 2 * nv, o + 3 + 3 * nv
    for step in range(nv):  # U^T y = x
        k = st[o + 2 + step]
        if k >= n:
            continue
        yk = X[row, k] / M[k, k]
        X[row, k] = yk
        for t in range(st[ptr + k], st[ptr + k + 1]):
            a = st[pat + t]
            if a < n:
                X[row, a] -= M[k, a] * yk
    for k in range(nv, n):
        X[row, k] /= M[k, k] * M[k, k]
    for step in range(nv - 1, -1, -1):  # U x = y
        k = st[o + 2 + step]
        if k >= n:
            continue
        acc = X[row, k]
        for t in range(st[ptr + k], st[ptr + k + 1]):
            a = st[pat + t]
            if a < n:
                acc -= M[k, a] * X[row, a]
        X[row, k] = acc / M[k, k]


@njit
def _factor(st, vals, nb, n, A, p, V, M) -> bool:
    """Factor the reduced Newton system at the scaling in ``V``: ``H = G^T W^{-2} G``
    (regularized by :data:`REGULARIZATION`; factored in ``M[:n]``) and, with equalities,
    ``A H^{-1} A^T`` (factored in ``M[n+p:]``; ``H^{-1} A^T`` by rows in ``M[n:n+p]``)."""
    o = _sym(st)
    nv, sparse = st[o], st[o + 1] == 1
    pos, ptr, pat = o + 2 + nv, o + 2 + 2 * nv, o + 3 + 3 * nv
    # Zeros where H is assembled: the factor's pattern (it holds H's), or the lower triangle;
    # the rest of M is not read.
    for k in range(n):
        if sparse:
            M[k, k] = 0.0
            if k < nv:
                for t in range(st[ptr + k], st[ptr + k + 1]):
                    if st[pat + t] < n:
                        M[k, st[pat + t]] = 0.0
        else:
            for a in range(k + 1):
                M[k, a] = 0.0
    for j in range(nb):
        r0, r1 = _row(st, j), _row(st, j + 1)
        c0, c1 = _cptr(st, j), _cptr(st, j + 1)
        q, k, v0 = r1 - r0, c1 - c0, _vptr(st, j)
        # V[_GH] = W_j^{-1} G_j (rows x columns, row-major).
        if _kind(st, j) == 0:
            inv = 1.0 / V[_W, r0]
            for a in range(k):
                V[_GH, a] = vals[v0 + a] * inv
        else:
            w0, e = V[_W, r0], 1.0 / V[_ETA, j]
            for a in range(k):
                acc = 0.0
                for i in range(1, q):
                    acc += V[_W, r0 + i] * vals[v0 + i * k + a]
                g0 = vals[v0 + a]
                V[_GH, a] = (w0 * g0 - acc) * e
                f = -g0 + acc / (1.0 + w0)
                for i in range(1, q):
                    V[_GH, i * k + a] = (vals[v0 + i * k + a] + f * V[_W, r0 + i]) * e
        for a in range(k):
            ca = _col(st, c0 + a)
            for bb in range(a + 1):
                acc = 0.0
                for i in range(q):
                    acc += V[_GH, i * k + a] * V[_GH, i * k + bb]
                cb = _col(st, c0 + bb)
                if not sparse:  # the lower triangle: columns increase, ca >= cb
                    M[ca, cb] += acc
                elif st[pos + ca] <= st[pos + cb]:  # in the earlier-eliminated variable's row
                    M[ca, cb] += acc
                else:
                    M[cb, ca] += acc
    biggest = 1.0
    for i in range(n):
        biggest = max(biggest, M[i, i])
    for i in range(n):
        M[i, i] += REGULARIZATION * biggest
    if not _h_cholesky(st, M, n):
        return False
    if p == 0:
        return True
    for i in range(p):
        for k in range(n):
            M[n + i, k] = A[i, k]
        _h_solve(st, M, n, M, n + i)
    for i in range(p):
        for k in range(i + 1):
            acc = 0.0
            for c in range(n):
                acc += A[i, c] * M[n + k, c]
            M[n + p + i, k] = acc
    return _cholesky(M, n + p, p)


@njit
def _reduced_solve(st, vals, nb, n, A, p, V, M, u, r1, r2, r3, dx, dy, ds, dz) -> None:
    """One solve of the Newton system (:func:`_kkt_solve`) by :func:`_factor`'s factors, for
    ``V[u] = lambda \\ rc`` given; the arguments name rows of ``V``."""
    m = _row(st, nb)
    _apply_w(st, nb, V, u, _WU, False)
    for i in range(m):
        V[_Q, i] = V[r3, i] - V[_WU, i]
    _apply_w(st, nb, V, _Q, _T, True)
    _apply_w(st, nb, V, _T, _Q2, True)
    for k in range(n):
        V[dx, k] = V[r1, k]
    _gt_add(st, vals, nb, V, _Q2, dx)
    _h_solve(st, M, n, V, dx)
    if p > 0:
        for i in range(p):
            acc = -V[r2, i]
            for k in range(n):
                acc += A[i, k] * V[dx, k]
            V[dy, i] = acc
        _chol_solve(M, n + p, p, V, dy)
        for i in range(p):
            for k in range(n):
                V[dx, k] -= M[n + i, k] * V[dy, i]
    _g_times(st, vals, nb, V, dx, _T)
    for i in range(m):
        V[_T, i] -= V[_Q, i]
    _apply_w(st, nb, V, _T, dz, True)
    for i in range(m):
        V[ds, i] = V[u, i] - V[dz, i]


@njit
def _kkt_solve(st, vals, nb, n, A, p, V, M, r1, r2, r3, rc, dx, dy, ds, dz, refine) -> None:
    """Solve the Newton system for ``(dx, dy, ds, dz)`` (rows of ``V``)::

        G^T dz + A^T dy = r1,   A dx = r2,   G dx + ds = r3,   lambda o (W^{-1} ds + W dz) = rc,

    leaving ``ds`` and ``dz`` scaled (``W^{-1} ds`` and ``W dz``).  With ``u = lambda \\ rc``
    and ``q = r3 - W u``: ``H dx + A^T dy = r1 + G^T W^{-2} q``, ``W dz = W^{-1} (G dx - q)``
    and ``W^{-1} ds = u - W dz``; then, if ``refine``, :data:`REFINEMENTS` steps of iterative
    refinement on the three linear equations (``H`` is ill-conditioned near the optimum, where ``W`` is)."""
    m = _row(st, nb)
    _jordan_solve(st, nb, V, _LAM, rc, _U)
    _reduced_solve(st, vals, nb, n, A, p, V, M, _U, r1, r2, r3, dx, dy, ds, dz)
    for _ in range(REFINEMENTS if refine else 0):
        # e1 = r1 - G^T W^{-1} dz - A^T dy,  e2 = r2 - A dx,  e3 = r3 - G dx - W ds.
        _apply_w(st, nb, V, dz, _ES, True)
        for k in range(n):
            V[_E1, k] = 0.0
        _gt_add(st, vals, nb, V, _ES, _E1)
        for k in range(n):
            acc = V[r1, k] - V[_E1, k]
            for i in range(p):
                acc -= A[i, k] * V[dy, i]
            V[_E1, k] = acc
        for i in range(p):
            acc = V[r2, i]
            for k in range(n):
                acc -= A[i, k] * V[dx, k]
            V[_E2, i] = acc
        _g_times(st, vals, nb, V, dx, _E3)
        _apply_w(st, nb, V, ds, _ES, False)
        for i in range(m):
            V[_E3, i] = V[r3, i] - V[_E3, i] - V[_ES, i]
            V[_U, i] = 0.0
        _reduced_solve(st, vals, nb, n, A, p, V, M, _U, _E1, _E2, _E3, _EX, _EY, _ES, _EZ)
        for k in range(n):
            V[dx, k] += V[_EX, k]
        for i in range(p):
            V[dy, i] += V[_EY, i]
        for i in range(m):
            V[ds, i] += V[_ES, i]
            V[dz, i] += V[_EZ, i]


@njit
def _shift_into_cone(st, nb, V, v) -> None:
    """``V[v] += (1 - lambda_min) e`` where its least eigenvalue ``lambda_min <= 0``."""
    low = 1e300
    for j in range(nb):
        r0, r1 = _row(st, j), _row(st, j + 1)
        if _kind(st, j) == 0:
            low = min(low, V[v, r0])
        else:
            acc = 0.0
            for i in range(r0 + 1, r1):
                acc += V[v, i] * V[v, i]
            low = min(low, V[v, r0] - math.sqrt(acc))
    if low <= 0.0:
        for j in range(nb):
            V[v, _row(st, j)] += 1.0 - low


#: The warm-start record's header: whether it holds a solution, the share of recent polishes
#: that failed, the solves since the last polish; then ``x, s, zd, y``.
_VALID, _FAILING, _SINCE, _START_HEAD = 0, 1, 2, 3


def start_size(blocks: ConeBlocks, n: int, p: int) -> int:
    """The length of :func:`solve_into`'s ``start`` for programs over ``blocks`` (at most) with at
    most ``n`` variables and ``p`` equalities (:func:`start_length`)."""
    return start_length(n, int(blocks.rows[-1]), p)


@njit
def start_length(n, m, p) -> int:
    """The length of a warm-start record for ``n`` variables, ``m`` cone rows and ``p``
    equalities: its header (:data:`_START_HEAD`), then ``x, s, zd, y``; all zeros is an empty
    record."""
    return _START_HEAD + n + 2 * m + p


@njit
def iterations(V) -> int:
    """The iterations the last :func:`solve_into` with scratch ``V`` took: the polish's Newton
    steps (each residual it evaluated), and where it failed the interior-point method's
    iterations, warm and, if that was repeated cold, cold."""
    return int(V[_INFO, 0]) + 1


@njit
def polished(V) -> bool:
    """Whether the last :func:`solve_into` with scratch ``V`` ended in the active-set polish
    (:func:`_polish`)."""
    return V[_INFO, 1] == 1.0


@njit
def _load_start(start, n, m, p, V) -> None:
    """``x, s, zd, y`` from ``start`` (:func:`start_length`'s layout)."""
    for k in range(n):
        V[_X, k] = start[_START_HEAD + k]
    for i in range(m):
        V[_S, i] = start[_START_HEAD + n + i]
        V[_ZD, i] = start[_START_HEAD + n + m + i]
    for i in range(p):
        V[_Y, i] = start[_START_HEAD + n + 2 * m + i]


@njit
def _save_start(start, n, m, p, V) -> None:
    start[_VALID] = 1.0
    for k in range(n):
        start[_START_HEAD + k] = V[_X, k]
    for i in range(m):
        start[_START_HEAD + n + i] = V[_S, i]
        start[_START_HEAD + n + m + i] = V[_ZD, i]
    for i in range(p):
        start[_START_HEAD + n + 2 * m + i] = V[_Y, i]


# Cone states of the polish (``V[_PKIND, j]``): a nonnegative row inactive (its dual zero) or
# active (its slack zero); a second-order cone whose slack is inside it (dual zero), zero (its
# dual anywhere in the cone) or on its face with the dual ``alpha J s`` on the opposite face.
_OFF, _ON, _FREE, _ZERO, _FACE = 0, 1, 2, 3, 4


@njit
def _classify(st, nb, V) -> None:
    """Each cone's state at the point ``(s, zd)`` in ``V`` into ``V[_PKIND]``: in each
    complementary pair of eigenvalues (``s``'s least with ``zd``'s largest, ``s``'s largest with
    ``zd``'s least), relative to the largest slack and the largest dual, the smaller one is taken
    for zero."""
    m = _row(st, nb)
    ns, nz = 1e-300, 1e-300
    for i in range(m):
        ns = max(ns, abs(V[_S, i]))
        nz = max(nz, abs(V[_ZD, i]))
    for j in range(nb):
        r0, r1 = _row(st, j), _row(st, j + 1)
        s0, z0 = V[_S, r0], V[_ZD, r0]
        if _kind(st, j) == 0:
            V[_PKIND, j] = _ON if s0 / ns <= z0 / nz else _OFF
            continue
        sn, zn = 0.0, 0.0
        for i in range(r0 + 1, r1):
            sn += V[_S, i] * V[_S, i]
            zn += V[_ZD, i] * V[_ZD, i]
        sn, zn = math.sqrt(sn), math.sqrt(zn)
        if (s0 + sn) / ns <= (z0 - zn) / nz:
            V[_PKIND, j] = _ZERO
        elif (s0 - sn) / ns <= (z0 + zn) / nz and s0 > 0.0:
            V[_PKIND, j] = _FACE
        else:
            V[_PKIND, j] = _FREE


@njit
def _assign(st, nb, n, p, V) -> int:
    """The offsets of each cone's unknowns in the polish's system (after ``x`` and ``y``) into
    ``V[_POFF]`` and their values, from the duals ``V[_ZD]``, into ``V[_PM]`` (a face's
    ``alpha = zd_0 / s_0``); returns the system's size."""
    size = n + p
    for j in range(nb):
        r0, r1 = _row(st, j), _row(st, j + 1)
        state = int(V[_PKIND, j])
        V[_POFF, j] = size
        if state == _ON:
            V[_PM, size] = V[_ZD, r0]
            size += 1
        elif state == _ZERO:
            for i in range(r0, r1):
                V[_PM, size + i - r0] = V[_ZD, i]
            size += r1 - r0
        elif state == _FACE:
            s0 = V[_S, r0]
            V[_PM, size] = V[_ZD, r0] / s0 if s0 > 0.0 else 0.0
            size += 1
    return size


@njit
def _polish_residual(st, vals, nb, n, p, h, A, b, V, scales) -> float:
    """At the unknowns in ``V[_PM]``: ``x``, ``y``, ``s = h - G x`` and ``zd`` (by each cone's
    state) into their rows, the optimality conditions' residual ``F`` into ``V[_PF]``
    (stationarity ``c + A^T y + G^T zd``, ``A x - b``, then per cone: an active row's slack, a
    zero cone's slacks, a face's ``(s_0^2 - ||s_1||^2) / 2``); returns its largest entry
    relative to ``scales = (1 + |c|, 1 + |b|, 1 + |h|)`` (a face's as its distance
    ``s_0 - ||s_1||``)."""
    m = _row(st, nb)
    for k in range(n):
        V[_X, k] = V[_PM, k]
    for i in range(p):
        V[_Y, i] = V[_PM, n + i]
    _g_times(st, vals, nb, V, _X, _S)
    for i in range(m):
        V[_S, i] = h[i] - V[_S, i]
    worst = 0.0
    for j in range(nb):
        r0, r1 = _row(st, j), _row(st, j + 1)
        state, off = int(V[_PKIND, j]), int(V[_POFF, j])
        if state == _ON:
            V[_ZD, r0] = V[_PM, off]
            V[_PF, off] = V[_S, r0]
            worst = max(worst, abs(V[_S, r0]) / scales[2])
        elif state == _ZERO:
            for i in range(r0, r1):
                V[_ZD, i] = V[_PM, off + i - r0]
                V[_PF, off + i - r0] = V[_S, i]
                worst = max(worst, abs(V[_S, i]) / scales[2])
        elif state == _FACE:
            alpha, s0 = V[_PM, off], V[_S, r0]
            V[_ZD, r0] = alpha * s0
            phi = s0 * s0
            for i in range(r0 + 1, r1):
                V[_ZD, i] = -alpha * V[_S, i]
                phi -= V[_S, i] * V[_S, i]
            V[_PF, off] = 0.5 * phi
            worst = max(worst, abs(0.5 * phi) / max(abs(s0), 1e-300) / scales[2])
        else:
            for i in range(r0, r1):
                V[_ZD, i] = 0.0
    _dual_residual(st, vals, nb, n, A, p, V)
    for k in range(n):
        V[_PF, k] = V[_RX, k]
        worst = max(worst, abs(V[_RX, k]) / scales[0])
    for i in range(p):
        acc = -b[i]
        for k in range(n):
            acc += A[i, k] * V[_X, k]
        V[_PF, n + i] = acc
        worst = max(worst, abs(acc) / scales[1])
    return worst


@njit
def _polish_jacobian(st, vals, nb, n, p, size, A, V, M) -> None:
    """The Jacobian of :func:`_polish_residual`'s ``F`` in the unknowns, into ``M[:size,
    :size]``: the stationarity rows hold ``-alpha G_j^T J G_j`` per face (``J = diag(1, -1, ...,
    -1)``), ``A^T``, an active row's ``g_i``, a zero cone's ``G_j^T`` and a face's ``G_j^T J
    s_j``; the conditions' rows ``A``, ``-g_i^T``, ``-G_j`` and ``-(J s_j)^T G_j``."""
    for i in range(size):
        for k in range(size):
            M[i, k] = 0.0
    for i in range(p):
        for k in range(n):
            M[k, n + i] = A[i, k]
            M[n + i, k] = A[i, k]
    for j in range(nb):
        state = int(V[_PKIND, j])
        if state == _OFF or state == _FREE:
            continue
        off = int(V[_POFF, j])
        r0, r1 = _row(st, j), _row(st, j + 1)
        c0, c1 = _cptr(st, j), _cptr(st, j + 1)
        k, v0 = c1 - c0, _vptr(st, j)
        if state == _ON or state == _ZERO:
            for i in range(r1 - r0):
                for a in range(k):
                    g = vals[v0 + i * k + a]
                    ca = _col(st, c0 + a)
                    M[ca, off + i] = g
                    M[off + i, ca] = -g
            continue
        alpha = V[_PM, off]
        for a in range(k):
            ca = _col(st, c0 + a)
            acc = V[_S, r0] * vals[v0 + a]
            for i in range(1, r1 - r0):
                acc -= V[_S, r0 + i] * vals[v0 + i * k + a]
            M[ca, off] = acc
            M[off, ca] = -acc
            for bb in range(k):
                hab = vals[v0 + a] * vals[v0 + bb]
                for i in range(1, r1 - r0):
                    hab -= vals[v0 + i * k + a] * vals[v0 + i * k + bb]
                M[ca, _col(st, c0 + bb)] -= alpha * hab
    # A proximal term on x: the auxiliary variables that no active row or face holds (a
    # solution's are not unique there) stay where they are instead of making M singular.
    big = 0.0
    for i in range(size):
        for k in range(size):
            big = max(big, abs(M[i, k]))
    for k in range(n):
        M[k, k] += POLISH_PROXIMAL * big


@njit
def _lu_solve(M, size, V, rhs, out) -> bool:
    """``V[out] = M^{-1} V[rhs]`` over the first ``size`` entries by Gaussian elimination with
    partial pivoting (``M`` overwritten), each elimination over the pivot row's nonzeros alone
    (the polish's systems are sparse: a row of a nonnegative cone has a few entries); False at
    a pivot below :data:`POLISH_PIVOT` times ``M``'s largest entry."""
    big = 0.0
    for i in range(size):
        V[out, i] = V[rhs, i]
        for k in range(size):
            big = max(big, abs(M[i, k]))
    floor = POLISH_PIVOT * big
    for col in range(size):
        piv, top = col, abs(M[col, col])
        for r in range(col + 1, size):
            if abs(M[r, col]) > top:
                piv, top = r, abs(M[r, col])
        if not top > floor:
            return False
        if piv != col:
            for k in range(col, size):
                M[piv, k], M[col, k] = M[col, k], M[piv, k]
            V[out, piv], V[out, col] = V[out, col], V[out, piv]
        count = 0
        for k in range(col + 1, size):
            if M[col, k] != 0.0:
                V[_PIDX, count] = k
                count += 1
        inv = 1.0 / M[col, col]
        for r in range(col + 1, size):
            f = M[r, col]
            if f != 0.0:
                f *= inv
                for q in range(count):
                    k = int(V[_PIDX, q])
                    M[r, k] -= f * M[col, k]
                V[out, r] -= f * V[out, col]
    for i in range(size - 1, -1, -1):
        acc = V[out, i]
        for k in range(i + 1, size):
            acc -= M[i, k] * V[out, k]
        V[out, i] = acc / M[i, i]
    return True


@njit
def _newton(st, vals, nb, n, p, size, h, A, b, V, M, scales) -> bool:
    """Newton's method on :func:`_polish_residual`'s conditions from the unknowns in ``V[_PM]``:
    True when the residual is below :data:`POLISH_TOL`, or below :data:`FEAS_TOL` where
    rounding stops it decreasing; ``V``'s rows ``x, y, s, zd`` then hold the point.  From the
    third step on, a step that does not halve the residual ends it (the start is not where
    Newton's method converges fast: SafeTS's samples in ten dimensions, which the
    interior-point method then solves for less)."""
    last, first = 1e300, 1e300
    for it in range(POLISH_ITER + 1):
        V[_INFO, 0] += 1.0
        worst = _polish_residual(st, vals, nb, n, p, h, A, b, V, scales)
        if not math.isfinite(worst) or worst > DIVERGED * first:
            return False
        if worst <= POLISH_TOL or (worst <= FEAS_TOL and worst > 0.25 * last):
            return True
        if it == POLISH_ITER or (it >= 2 and worst > 0.5 * last):
            return worst <= FEAS_TOL
        last = worst
        if it == 0:
            first = worst
        _polish_jacobian(st, vals, nb, n, p, size, A, V, M)
        if not _lu_solve(M, size, V, _PF, _PD):
            return False
        for i in range(size):
            V[_PM, i] -= V[_PD, i]
    return False


@njit
def _update_states(st, vals, nb, h, V) -> int:
    """After a Newton solve: a row or cone whose slack left its cone by more than rounding
    (:data:`POLISH_SLACK` of the block's own magnitude, ``|h_i| + sum_a |G_ia x_a|``) joins the
    active set (a nonnegative row, or a cone's face with ``alpha = 0``), one whose dual left
    its cone leaves it (``alpha < 0`` or an active row's dual below 0); returns how many changed,
    or -1 where no such change applies (a zero cone's dual outside the cone, a face on the
    cone's negative half).  The allowance is the block's own: one relative to the largest
    right-hand side let a point 5e-7 outside a cut through, where a row far away had ``h =
    1e3``."""
    changed = 0
    for j in range(nb):
        r0, r1 = _row(st, j), _row(st, j + 1)
        state = int(V[_PKIND, j])
        tol = 0.0
        if state == _OFF or state == _FREE:
            c0, k, v0 = _cptr(st, j), _cptr(st, j + 1) - _cptr(st, j), _vptr(st, j)
            for i in range(r1 - r0):
                mag = abs(h[r0 + i])
                for a in range(k):
                    mag += abs(vals[v0 + i * k + a] * V[_X, _col(st, c0 + a)])
                tol = max(tol, mag)
            tol = POLISH_SLACK * (1.0 + tol)
        if state == _OFF:
            if not V[_S, r0] >= -tol:
                V[_PKIND, j] = _ON
                V[_ZD, r0] = 0.0
                changed += 1
            continue
        if state == _ON:
            if not V[_ZD, r0] >= 0.0:
                V[_PKIND, j] = _OFF
                V[_ZD, r0] = 0.0
                changed += 1
            continue
        sn, zn = 0.0, 0.0
        for i in range(r0 + 1, r1):
            sn += V[_S, i] * V[_S, i]
            zn += V[_ZD, i] * V[_ZD, i]
        if state == _FREE:
            if not V[_S, r0] - math.sqrt(sn) >= -tol:
                if not V[_S, r0] > 0.0:
                    return -1
                V[_PKIND, j] = _FACE
                for i in range(r0, r1):
                    V[_ZD, i] = 0.0
                changed += 1
        elif state == _ZERO:
            if not V[_ZD, r0] >= math.sqrt(zn):
                return -1
        elif not V[_S, r0] >= 0.0:
            return -1
        elif not V[_ZD, r0] >= 0.0:  # alpha < 0: the slack leaves the face
            V[_PKIND, j] = _FREE
            for i in range(r0, r1):
                V[_ZD, i] = 0.0
            changed += 1
    return changed


@njit
def _polish(st, vals, nb, n, h, A, b, z, V, M) -> int:
    """The active-set polish of a warm start (the point in ``V``'s rows ``x, s, zd, y``):
    Newton's method on the optimality conditions with each cone's state fixed
    (:func:`_classify`), the states corrected where the point leaves a cone (at most
    :data:`POLISH_UPDATES` times: :func:`_update_states`), then the interior-point method's
    stopping test (:data:`FEAS_TOL`, :data:`GAP_TOL`) with every inactive slack in its cone to
    rounding (:data:`POLISH_SLACK`), every dual exactly (``alpha >= 0``, an active row's dual
    ``>= 0``, a zero cone's dual in the cone; the active slacks are zero to the residual's
    tolerance), from finite data only.  :data:`SOLVED` with ``x`` in ``z`` and the solution in ``V``'s
    rows, else :data:`NOT_CONVERGED` (a degenerate system, too large a system, states that
    keep changing); ``V[_INFO, 0]`` counts its Newton systems' residuals less one."""
    p = A.shape[0]
    m = _row(st, nb)
    V[_INFO, 0] = -1.0
    # Every datum finite (numba's max() passes over a NaN, which the tests below would miss):
    # else the interior-point method decides, as it would cold.
    for k in range(n):
        if not (math.isfinite(V[_C, k]) and math.isfinite(V[_X, k])):
            return NOT_CONVERGED
    for i in range(m):
        if not (math.isfinite(h[i]) and math.isfinite(V[_S, i]) and math.isfinite(V[_ZD, i])):
            return NOT_CONVERGED
    for i in range(p):
        if not (math.isfinite(b[i]) and math.isfinite(V[_Y, i])):
            return NOT_CONVERGED
    scales = np.ones(3)
    for k in range(n):
        scales[0] = max(scales[0], 1.0 + abs(V[_C, k]))
    for i in range(p):
        scales[1] = max(scales[1], 1.0 + abs(b[i]))
    for i in range(m):
        scales[2] = max(scales[2], 1.0 + abs(h[i]))
    _classify(st, nb, V)
    for update in range(POLISH_UPDATES + 1):
        size = _assign(st, nb, n, p, V)
        if size > POLISH_MAX or size > M.shape[0] or size > M.shape[1] or size > V.shape[1]:
            return NOT_CONVERGED
        for k in range(n):
            V[_PM, k] = V[_X, k]
        for i in range(p):
            V[_PM, n + i] = V[_Y, i]
        if not _newton(st, vals, nb, n, p, size, h, A, b, V, M, scales):
            return NOT_CONVERGED
        changed = _update_states(st, vals, nb, h, V)
        if changed == 0:
            break
        if changed < 0 or update == POLISH_UPDATES:
            return NOT_CONVERGED
    gap, pcost = 0.0, 0.0
    for i in range(m):
        gap += V[_S, i] * V[_ZD, i]
    for k in range(n):
        pcost += V[_C, k] * V[_X, k]
    if not (math.isfinite(pcost) and abs(gap) <= GAP_TOL * max(1.0, abs(pcost))):
        return NOT_CONVERGED
    for k in range(n):
        z[k] = V[_X, k]
    return SOLVED


@njit
def solve(st, nb, n, c, h, A, b, z, work) -> int:
    """Minimize ``c^T z`` over ``G z + s = h, s in K, A z = b``: the first ``nb`` blocks of the
    structure ``st`` (:func:`pack`; values ``work.values``), the first ``n`` variables and ``p =
    A.shape[0]`` equalities (``A`` may have more columns).  The solution into ``z[:n]``;
    returns :data:`SOLVED` or :data:`REDUCED` (a solution in ``z``), :data:`NOT_CONVERGED` or
    :data:`NUMERICAL`.  ``work``: :func:`workspace`; a solve depends on its data alone."""
    V = work.V
    for k in range(n):
        V[_C, k] = c[k]
    return solve_into(st, nb, n, h, A, b, z, V, work.M, work.values, np.empty(0))


@njit
def solve_into(st, nb, n, h, A, b, z, V, M, vals, start) -> int:
    """:func:`solve` with ``c`` already in ``V[C_ROW]`` and the workspace's arrays passed
    apart (for compiled callers that keep them in their own state); ``z`` receives the best
    iterate.

    ``start``: empty, or a caller's warm-start record (:func:`start_length`) that carries a
    solution from one solve to the next of a program whose data move little between them (a
    learner's consecutive stages).  A record holding a solution starts the method from its
    point, first by the active-set polish (:func:`_polish`), then, if that fails, by the method
    from that point moved :data:`WARM_SHIFT` into the cones' interiors instead of coneqp's
    start; while nearly all the record's recent polishes failed (:data:`POLISH_FAILING`), the
    polish is skipped, but for every :data:`POLISH_PROBE`-th solve.  A warm solve that does
    not end :data:`SOLVED` is repeated cold, so the status means what it means cold, and a
    solved point is recorded (the record emptied otherwise).  The answer is held to the same
    stopping test either way."""
    p = A.shape[0]
    m = _row(st, nb)
    V[_INFO, 1] = 0.0
    if start.shape[0] > 0:
        status, tried = NOT_CONVERGED, 0.0
        if start[_VALID] == 1.0:
            if start[_FAILING] < POLISH_FAILING or start[_SINCE] + 1.0 >= POLISH_PROBE:
                _load_start(start, n, m, p, V)
                status = _polish(st, vals, nb, n, h, A, b, z, V, M)
                failed = 0.0 if status == SOLVED else 1.0
                start[_FAILING] += POLISH_WEIGHT * (failed - start[_FAILING])
                start[_SINCE] = 0.0
                V[_INFO, 1] = 1.0 - failed
                tried = V[_INFO, 0] + 1.0
            else:
                start[_SINCE] += 1.0
            if status != SOLVED:
                _load_start(start, n, m, p, V)
                status = _iterate(st, nb, n, h, A, b, z, V, M, vals, True)
                tried += V[_INFO, 0] + 1.0
        if status != SOLVED:
            status = _iterate(st, nb, n, h, A, b, z, V, M, vals, False)
            tried += V[_INFO, 0] + 1.0
        V[_INFO, 0] = tried - 1.0
        if status == SOLVED:
            _save_start(start, n, m, p, V)
        else:
            start[_VALID] = 0.0
        return status
    return _iterate(st, nb, n, h, A, b, z, V, M, vals, False)


@njit
def _iterate(st, nb, n, h, A, b, z, V, M, vals, warm) -> int:
    """The method from coneqp's start, or (``warm``) from the point in ``V``'s rows ``x, s, zd,
    y`` moved :data:`WARM_SHIFT` into the cones; on :data:`SOLVED` those rows hold the solution."""
    m = _row(st, nb)
    best = 1e300
    p = A.shape[0]
    cnorm, hnorm, bnorm = 0.0, 0.0, 0.0
    for k in range(n):
        cnorm = max(cnorm, abs(V[_C, k]))
    for i in range(m):
        V[_H, i] = h[i]
        hnorm = max(hnorm, abs(h[i]))
        V[_W, i] = 0.0
        V[_LAM, i] = 0.0
        V[_RC, i] = 0.0
        V[_RZ, i] = 0.0
    for i in range(p):
        V[_B, i] = b[i]
        bnorm = max(bnorm, abs(b[i]))
    if warm:
        s_big, z_big = 0.0, 0.0
        for i in range(m):
            s_big = max(s_big, abs(V[_S, i]))
            z_big = max(z_big, abs(V[_ZD, i]))
        for j in range(nb):
            V[_S, _row(st, j)] += WARM_SHIFT * s_big
            V[_ZD, _row(st, j)] += WARM_SHIFT * z_big
    else:
        # coneqp's start: at W = I (lambda = e), x minimizes ||G x - h|| over A x = b and the
        # dual zd minimizes ||zd|| over G^T zd + A^T y = -c; both shifted into the cone.
        for j in range(nb):
            V[_W, _row(st, j)] = 1.0
            V[_LAM, _row(st, j)] = 1.0
            V[_ETA, j] = 1.0
        if not _factor(st, vals, nb, n, A, p, V, M):
            return NUMERICAL
        for k in range(n):
            V[_R1, k] = 0.0
        _kkt_solve(st, vals, nb, n, A, p, V, M, _R1, _B, _H, _RC, _X, _Y, _DS, _DZ, True)
        for i in range(m):
            V[_S, i] = -V[_DZ, i]
        for k in range(n):
            V[_R1, k] = -V[_C, k]
        for i in range(p):
            V[_R2, i] = 0.0
        _kkt_solve(st, vals, nb, n, A, p, V, M, _R1, _R2, _RZ, _RC, _DX, _Y, _DS, _ZD, True)
    _shift_into_cone(st, nb, V, _S)
    _shift_into_cone(st, nb, V, _ZD)
    for it in range(MAX_ITER):
        V[_INFO, 0] = it
        # Residuals rx = c + A^T y + G^T zd, ry = A x - b, rz = s + G x - h.
        _dual_residual(st, vals, nb, n, A, p, V)
        _g_times(st, vals, nb, V, _X, _RZ)
        pres, eq, dres, gap, pcost = 0.0, 0.0, 0.0, 0.0, 0.0
        for i in range(m):
            V[_RZ, i] += V[_S, i] - V[_H, i]
            pres = max(pres, abs(V[_RZ, i]))
            gap += V[_S, i] * V[_ZD, i]
        for i in range(p):
            acc = -V[_B, i]
            for k in range(n):
                acc += A[i, k] * V[_X, k]
            V[_RY, i] = acc
            eq = max(eq, abs(acc))
        for k in range(n):
            dres = max(dres, abs(V[_RX, k]))
            pcost += V[_C, k] * V[_X, k]
        pres = max(pres / (1.0 + hnorm), eq / (1.0 + bnorm))
        dres /= 1.0 + cnorm
        if not math.isfinite(gap + pres + dres):
            break
        rgap = gap / max(1.0, abs(pcost))
        merit = max(pres, dres, rgap)
        if merit < best:
            best = merit
            for k in range(n):
                z[k] = V[_X, k]
        if pres <= FEAS_TOL and dres <= FEAS_TOL and rgap <= GAP_TOL:
            return SOLVED
        if merit > DIVERGED * best:
            break
        mu = gap / nb
        if not (_nt_scaling(st, nb, V) and _factor(st, vals, nb, n, A, p, V, M)):
            break
        for k in range(n):
            V[_R1, k] = -V[_RX, k]
        for i in range(p):
            V[_R2, i] = -V[_RY, i]
        for i in range(m):
            V[_RZ, i] = -V[_RZ, i]
        # The predictor (rc = -lambda o lambda), then the corrector with Mehrotra's term and
        # sigma mu e, sigma = (1 - predictor's step)^3.
        _jordan(st, nb, V, _LAM, _LAM, _T1)
        for i in range(m):
            V[_RC, i] = -V[_T1, i]
        _kkt_solve(st, vals, nb, n, A, p, V, M, _R1, _R2, _RZ, _RC, _DX, _DY, _DS, _DZ,
                   rgap < REFINE_BELOW)
        step = min(1.0, _max_step(st, nb, V, _LAM, _DS), _max_step(st, nb, V, _LAM, _DZ))
        sigma = (1.0 - step) ** 3
        _jordan(st, nb, V, _DS, _DZ, _T2)
        for i in range(m):
            V[_RC, i] = -V[_T1, i] - V[_T2, i]
        for j in range(nb):
            V[_RC, _row(st, j)] += sigma * mu
        _kkt_solve(st, vals, nb, n, A, p, V, M, _R1, _R2, _RZ, _RC, _DX, _DY, _DS, _DZ,
                   rgap < REFINE_BELOW)
        step = min(1.0, STEP * min(_max_step(st, nb, V, _LAM, _DS),
                                   _max_step(st, nb, V, _LAM, _DZ)))
        # Unscale (ds <- W ds, dz <- W^{-1} dz) and step.
        _apply_w(st, nb, V, _DS, _T1, False)
        _apply_w(st, nb, V, _DZ, _T2, True)
        for i in range(m):
            V[_S, i] += step * V[_T1, i]
            V[_ZD, i] += step * V[_T2, i]
        for k in range(n):
            V[_X, k] += step * V[_DX, k]
        for i in range(p):
            V[_Y, i] += step * V[_DY, i]
    if best <= REDUCED_TOL:
        return REDUCED
    return NOT_CONVERGED if math.isfinite(best) and best < 1e300 else NUMERICAL
