r"""Compiled, certified greedy and LCB arms of a set given by cone rows (a second-order-cone set).

A :class:`~sege_cvx.arm_sets.generic.ConvexArmSet` whose canonical form uses only the zero,
nonnegative and second-order cones (:func:`~sege_cvx.conic.cone_form.cone_form`) is
``X = {x : exists u, A z = b, h - G z in K}``, ``z = (x, u)``.  Its arms are computed inside
the compiled stage loop by the interior-point method of :mod:`sege_cvx.conic.socp`:

* the greedy arm (paper eq. (greedy arm)): ``min -theta^T x`` over the rows;
* the LCB arm (paper eq. (lcb arm)): ``min -theta^T x + tau`` over the rows and the confidence
  cone ``||M x|| <= tau``, ``M = r L^{-1}`` (``V = L L^T``), one more second-order block whose
  values the stage writes into the run's copy;

``theta`` and ``r`` scaled together by a power of two (exact: the maximizer is unchanged).

**Certified exactly.**  An arm is played only with its witness ``u``, the pair proven to satisfy
every row in exact arithmetic (:func:`certify`):

* the equalities: ``u`` is first moved onto them by ``u += R (b - A z)`` (``R`` a right inverse
  of ``A``'s witness columns); what remains, ``rho = b - A z``, is bounded rigorously
  (each row's float value plus ``(k + 4) u`` times the sum of its terms' magnitudes, Higham 3.1,
  and 2^-1000 for products in the subnormal range),
  and an exact witness ``u + delta`` with ``A (x, u + delta) = b`` exists with ``||delta||_inf
  <= kappa ||rho||_inf``: ``kappa = ||R||_inf / (1 - ||A_u R - I||_inf)``, computed in rationals
  when the set is compiled;
* every nonnegative row and every cone row's slack ``s = h - G z`` is bounded the same way, each
  bound widened by its witness columns' l1 norm times ``||delta||_inf``: a row holds if its
  slack exceeds its bound; a cone ``||s_1|| <= s_0`` holds if ``(s_0 - e_0)^2`` exceeds ``sum
  (|s_i| + e_i)^2``, both rounded toward failing.

A pair that fails is contracted toward a certified interior pair ``z_c`` (the exploration
centre and its max-margin witness) by the schedule of :mod:`~sege_cvx.arm_sets.kernels.pull_in`
until it passes.  SEGE's mix ``(1 - rho) X^S + rho U`` is certified with the same combination
of witnesses: the LCB arm's (or the baseline's) and the drawn exploration vertex's
(:func:`pull_inside_one`); its exploration must be the set's cross-polytope.

The rows are cvxpy's canonical form of the user's constraints: a norm's matrix and a half-space's
data enter it as the user gave them, so a certified arm satisfies the user's norms and
half-spaces exactly; a quadratic form enters through a factor cvxpy computes.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import NamedTuple

import numpy as np

from ..._numba import njit
from ...conic import socp
from ...conic.cone_form import ConeForm, UnsupportedCone, blocks_from_rows
from ...conic.errors import SolverFailure
from ...conic.programs import cone_witness_program, margin_constraints, solve_once
from ..exploration import drawn_vertex
from ..kernels.pull_in import FIRST_CONTRACTION, MAX_CONTRACTION
from ..kernels.registry import GeometryKernels, register_geometry
from ..kernels.status import NOT_CERTIFIED, NOT_FINITE, NOT_MEMBER, VERIFIED
from ..scaling import order_one_exponent

_U = 2.0**-53
#: An absolute allowance for products in the subnormal range, whose rounding is absolute (up
#: to 2^-1075 each), far below any term of a well-scaled set.
_UNDERFLOW = 2.0**-1000
#: Slots of a run's pairs (``warm[0]``): the greedy arm's, the LCB arm's, SEGE's mix's; then
#: the greedy and LCB programs' warm starts (:func:`~sege_cvx.conic.socp.solve_into`'s
#: ``start``: a run's consecutive programs differ by one observation).
GREEDY, LCB, MIX, GREEDY_START, LCB_START = 0, 1, 2, 3, 4


class ConeGeometry(NamedTuple):
    """A cone set as compiled code reads it (:mod:`~sege_cvx.arm_sets.kernels.registry`
    dispatches on this class).

    ``structure``: :func:`~sege_cvx.conic.socp.pack` of the set's blocks followed by the LCB
    program's confidence cone, ``values`` theirs (the cone's zero: each run writes its own);
    ``n_set`` the set's blocks, ``n`` the length of ``z``; ``h``
    the right-hand sides (zeros for the confidence cone), ``A`` and ``b`` the equalities (``A``
    with a zero column for ``tau``); the certificate's data: per row the l1 norm of ``G``'s row,
    of its witness columns and its number of terms, per equality the same, ``R`` and ``kappa``;
    the interior pair ``center`` and its least margin; SEGE's baseline pair and the pairs of the exploration's
    vertices and centre (``table``, rows as
    :meth:`~sege_cvx.arm_sets.exploration.Exploration.witness_table`); the safe-set program's
    structure (the set's blocks and the bound's cone over ``x``) and right-hand sides
    (:func:`safe_set_one`); the solver's scratch shapes ``(V rows, V columns, M rows, M
    columns)``, which cover both programs; the witness program of a point
    (:func:`pull_in_one`: its structure, values and right-hand sides over ``(u, t)``, the set
    rows' ``x`` columns ``witness_Gx``, its equalities, its scratch shapes); Safe-LUCB's
    program over the set cut by ``2 d`` half-spaces (:func:`greedy_within_one`: structure,
    right-hand sides, scratch shapes)."""

    structure: np.ndarray
    values: np.ndarray
    n_set: int
    n: int
    dim: int
    h: np.ndarray
    A: np.ndarray
    b: np.ndarray
    row_l1: np.ndarray
    row_aux_l1: np.ndarray
    row_terms: np.ndarray
    eq_l1: np.ndarray
    R: np.ndarray
    kappa: float
    center: np.ndarray
    center_margin: float
    baseline: np.ndarray
    table: np.ndarray
    safe_structure: np.ndarray
    safe_h: np.ndarray
    shapes: np.ndarray
    witness_structure: np.ndarray
    witness_values: np.ndarray
    witness_h: np.ndarray
    witness_Gx: np.ndarray
    witness_A: np.ndarray
    witness_shapes: np.ndarray
    within_structure: np.ndarray
    within_h: np.ndarray
    within_shapes: np.ndarray


#: The safe-set program's limit, relative to ``c``: a solve meets its rows to about 1e-9 and
#: the pull-in moves the arm by a contraction of 1e-15 or so, which together must leave the
#: arm's bound at most ``c`` when it is checked (:func:`safe_set_one`).
SAFE_SET_SLACK = 1e-8

#: Safe-LUCB's cuts, relative to their limit: as :data:`SAFE_SET_SLACK`, so that the arm meets
#: them where it is played without the scaling that would lose its witness
#: (:func:`greedy_within_one`).
WITHIN_SLACK = 1e-8

#: The compiled witness program's bound on ``||u||_inf``, relative to ``1 + ||h||_inf`` (it makes
#: the program bounded; Clarabel's program uses 1e6, which the compiled method, without
#: Clarabel's equilibration, does not converge with).
WITNESS_BOUND = 1e3

#: Margin a max-margin witness solve is trusted to reach (Clarabel's accuracy, with room):
#: where :meth:`ConeArms.pull_in`'s search for a contraction starts.
WITNESS_ACCURACY = 1e-9


# --------------------------------------------------------------------------- certificate
@njit
def _repair(geometry, z, V, row) -> None:
    """``u += R (b - A z)``: the witness moved onto the equalities (``V[row]``: scratch)."""
    A, b, R = geometry.A, geometry.b, geometry.R
    p, d, n = A.shape[0], geometry.dim, geometry.n
    for i in range(p):
        acc = b[i]
        for k in range(n):
            acc -= A[i, k] * z[k]
        V[row, i] = acc
    for k in range(n - d):
        acc = 0.0
        for i in range(p):
            acc += R[k, i] * V[row, i]
        z[d + k] += acc


@njit
def certify(geometry, z) -> bool:
    """Whether the pair ``z = (x, u)`` satisfies every row exactly (the module docstring)."""
    A, b, h = geometry.A, geometry.b, geometry.h
    st, vals = geometry.structure, geometry.values
    n, p = geometry.n, A.shape[0]
    zmax = 0.0
    for k in range(n):
        if not math.isfinite(z[k]):
            return False
        zmax = max(zmax, abs(z[k]))
    delta = 0.0
    for i in range(p):
        acc = b[i]
        for k in range(n):
            acc -= A[i, k] * z[k]
        bound = ((geometry.eq_l1[i] * zmax + abs(b[i])) * ((n + 4) * _U) + _UNDERFLOW) * (
            1.0 + 8 * _U)
        delta = max(delta, abs(acc) + bound)
    delta = delta * geometry.kappa * (1.0 + 8 * _U)
    if not math.isfinite(delta):
        return False
    for j in range(geometry.n_set):
        r0, r1 = socp._row(st, j), socp._row(st, j + 1)
        c0, c1 = socp._cptr(st, j), socp._cptr(st, j + 1)
        k, v0 = c1 - c0, socp._vptr(st, j)
        t0, e0 = 0.0, 0.0
        sq = 0.0
        for i in range(r1 - r0):
            s = h[r0 + i]
            for a in range(k):
                s -= vals[v0 + i * k + a] * z[socp._col(st, c0 + a)]
            e = ((geometry.row_l1[r0 + i] * zmax + abs(h[r0 + i]))
                 * ((geometry.row_terms[r0 + i] + 4) * _U)
                 + geometry.row_aux_l1[r0 + i] * delta + _UNDERFLOW) * (1.0 + 8 * _U)
            if i == 0:
                t0, e0 = s, e
            else:
                v = (abs(s) + e) * (1.0 + 4 * _U)
                sq += v * v
        if socp._kind(st, j) == 0:
            if not t0 >= e0:
                return False
        else:
            if not t0 > e0:
                return False
            lo = (t0 - e0) * (1.0 - 4 * _U)
            if not lo * lo * (1.0 - 4 * _U) >= sq * (1.0 + 4 * (r1 - r0 + 4) * _U) + 1e-300:
                return False
    return True


@njit
def _pull_in_pair(geometry, z, V, row, trial, start=0.0) -> bool:
    """Move the pair ``z`` (repaired) into the set by the least contraction toward
    ``geometry.center`` that :func:`certify` accepts, from ``z`` itself (``start = 0``) or from
    the first contraction of the schedule (1e-15, 1e-14, ...) at or above ``start``; False,
    ``z`` unchanged, if none up to :data:`~sege_cvx.arm_sets.kernels.pull_in.MAX_CONTRACTION`
    does (``trial``: scratch of length n, ``V[row]``: scratch)."""
    n = geometry.n
    _repair(geometry, z, V, row)
    if start <= 0.0 and certify(geometry, z):
        return True
    center = geometry.center
    eps = FIRST_CONTRACTION
    while eps < start:
        eps *= 10.0
    # As pull_in_one's schedule: the last contraction is the limit itself (ten products of
    # 1e-15 by 10 make 1.0000000000000004e-05, which ``eps <= 1e-5`` never tried).
    while eps <= MAX_CONTRACTION * 10.0:
        factor = 1.0 - min(eps, MAX_CONTRACTION)
        for k in range(n):
            trial[k] = center[k] + factor * (z[k] - center[k])
        _repair(geometry, trial, V, row)
        if certify(geometry, trial):
            for k in range(n):
                z[k] = trial[k]
            return True
        if not eps < MAX_CONTRACTION:
            break
        eps *= 10.0
    return False


# --------------------------------------------------------------------------- arms
@njit(inline="always")
def _power_of_two_scale(v) -> float:
    """``2^-e`` for ``2^e`` near ``v >= 0`` (:func:`~sege_cvx.arm_sets.scaling.order_one_exponent`:
    1 for data of order one, and for zero or non-finite ``v``)."""
    if not math.isfinite(v):
        return 1.0
    return math.ldexp(1.0, -order_one_exponent(v))


@njit
def _finish(geometry, status, pairs, slot, V, M, out) -> int:
    """Certify the solve's pair in ``pairs[slot]`` (moved in if needed); its ``x`` into
    ``out``."""
    if status != socp.SOLVED and status != socp.REDUCED:
        return NOT_CERTIFIED
    z = pairs[slot]
    for k in range(geometry.n):
        if not math.isfinite(z[k]):
            return NOT_FINITE
    if not _pull_in_pair(geometry, z, V, socp._T1, pairs[MIX]):
        return NOT_MEMBER
    for k in range(geometry.dim):
        out[k] = z[k]
    return VERIFIED


@njit
def _greedy_objective(V, theta, n) -> None:
    """``c = -theta * 2^-e`` over ``z``'s first ``d`` entries (zeros after, up to ``n``) into the
    solver's row :data:`~sege_cvx.conic.socp.C_ROW`: ``max theta^T x``, scaled by a power of two
    (exact: the maximizer is unchanged)."""
    d = theta.shape[0]
    big = 0.0
    for a in range(d):
        big = max(big, abs(theta[a]))
    scale = _power_of_two_scale(big)
    c = socp.C_ROW
    for a in range(n + 1):
        V[c, a] = 0.0
    for a in range(d):
        V[c, a] = -theta[a] * scale


@njit
def greedy_one(geometry, theta, warm, out) -> int:
    """The certified greedy arm into ``out`` (its pair in ``warm``'s slot :data:`GREEDY`)."""
    pairs, V, M, vals = warm
    d, n = geometry.dim, geometry.n
    big = 0.0
    for k in range(d):
        big = max(big, abs(theta[k]))
    scale = _power_of_two_scale(big)
    c = socp.C_ROW
    for k in range(n):
        V[c, k] = 0.0
    for k in range(d):
        V[c, k] = -theta[k] * scale
    status = socp.solve_into(geometry.structure, geometry.n_set, n, geometry.h, geometry.A,
                             geometry.b, pairs[GREEDY], V, M, vals, pairs[GREEDY_START])
    return _finish(geometry, status, pairs, GREEDY, V, M, out)


@njit
def lcb_one(geometry, theta, chol, r, warm, out) -> int:
    """The certified LCB arm into ``out`` (its pair in ``warm``'s slot :data:`LCB`)."""
    pairs, V, M, vals = warm
    d, n = geometry.dim, geometry.n
    st = geometry.structure
    j = geometry.n_set
    v0, k = socp._vptr(st, j), d + 1
    # L^{-1} (forward substitution) into M[:d, :d]; M is the solve's scratch, rewritten later.
    linv = 0.0
    for a in range(d):
        for i in range(d):
            if i < a:
                M[i, a] = 0.0
                continue
            acc = 1.0 if i == a else 0.0
            for m in range(a, i):
                acc -= chol[i, m] * M[m, a]
            M[i, a] = acc / chol[i, i]
            linv = max(linv, abs(M[i, a]))
    big = 0.0
    for a in range(d):
        big = max(big, abs(theta[a]))
    scale = _power_of_two_scale(max(big, r * linv))
    rs = r * scale
    # The confidence block's rows, s = (tau, M x) with M = r L^{-1}: G = -[[0, 1], [M, 0]] over
    # the columns (x, tau).
    for a in range(k):
        vals[v0 + a] = 0.0
    vals[v0 + d] = -1.0
    for i in range(d):
        for a in range(d):
            vals[v0 + (1 + i) * k + a] = -rs * M[i, a]
        vals[v0 + (1 + i) * k + d] = 0.0
    c = socp.C_ROW
    for a in range(n + 1):
        V[c, a] = 0.0
    for a in range(d):
        V[c, a] = -theta[a] * scale
    V[c, n] = 1.0
    status = socp.solve_into(st, j + 1, n + 1, geometry.h, geometry.A, geometry.b,
                             pairs[LCB], V, M, vals, pairs[LCB_START])
    return _finish(geometry, status, pairs, LCB, V, M, out)


@njit
def pull_inside_one(geometry, x, warm, use_lcb, rho) -> bool:
    """Prove SEGE's mix ``x = (1 - rho) X^S + rho U`` (paper eq. (safe exp arm)) in the set with
    the witness ``(1 - rho) u^S + rho u^U``: ``u^S`` the LCB arm's (``use_lcb``) or the
    baseline's, ``u^U`` the drawn exploration vertex's (the row of ``geometry.table`` whose
    point equals ``U``, found by the caller: ``warm[0][MIX]`` holds ``U``'s pair on entry); moved
    in toward the interior pair if needed.  False if it cannot be."""
    pairs, V, M, vals = warm
    d, n = geometry.dim, geometry.n
    z, safe = pairs[MIX], pairs[LCB] if use_lcb else geometry.baseline
    for k in range(d):
        z[k] = x[k]
    for k in range(d, n):
        z[k] = (1.0 - rho) * safe[k] + rho * z[k]
    if not _pull_in_pair(geometry, z, V, socp._T1, pairs[GREEDY]):
        return False
    for k in range(d):
        x[k] = z[k]
    return True


@njit
def safe_set_one(geometry, theta, gamma, inv, beta, margin, start, out, work) -> int:
    """The certified best arm for ``theta`` over the estimated safe set (SafeTS's program,
    :mod:`sege_cvx.policies.safe_ts`): ``max theta^T x`` over the set's rows and the bound's
    cone ``<gamma_hat, x> + beta ||L^{-1} x|| <= c'``, ``c' = (1 - SAFE_SET_SLACK) c`` (``inv =
    L^{-1}``), the cone's rows divided by ``c'`` so that its right-hand side is the record's
    ``(1, 0, ..., 0)``: ``s = (1 - <gamma_hat, x> / c', beta L^{-1} x / c')``.  Its pair in
    slot :data:`GREEDY` of ``work = (pairs, V, M, vals)`` (:func:`safe_set_scratch_of`), the arm
    certified in the set exactly (moved in if needed) into ``out``; the bound is the caller's to
    check at the point played.  Warm started from ``start`` (:func:`safe_set_start_of`, the
    run's previous solution: the sample moves by its own noise from one stage to the next, but
    that noise shrinks as ``V`` grows, and the active-set polish verifies what it returns)."""
    pairs, V, M, vals = work
    d, n = geometry.dim, geometry.n
    st = geometry.safe_structure
    j = geometry.n_set
    v0 = socp._vptr(st, j)
    limit = margin * (1.0 - SAFE_SET_SLACK)
    for a in range(d):
        vals[v0 + a] = gamma[a] / limit
    for i in range(d):
        for a in range(d):
            vals[v0 + (1 + i) * d + a] = -(beta * inv[i, a]) / limit
    _greedy_objective(V, theta, n)
    status = socp.solve_into(st, j + 1, n, geometry.safe_h, geometry.A, geometry.b,
                             pairs[GREEDY], V, M, vals, start)
    return _finish(geometry, status, pairs, GREEDY, V, M, out)


@njit
def pull_in_one(geometry, x) -> bool:
    """Move any point ``x`` exactly into the set: its witness ``u`` of largest margin ``t``
    solved by the interior-point method (the program of
    :func:`~sege_cvx.conic.programs.cone_witness_program`: ``max t`` over ``(u, t)``, every
    cone's slack ``t`` inside it at ``(x, u)``, ``t <= 1``, ``||u||_inf`` bounded; none where the
    set has no auxiliary variables), then the pair certified, else contracted toward the interior
    pair until it is (:func:`_pull_in_pair`; a contraction keeps a witness).  False, ``x``
    unchanged, if the solve fails or no contraction up to the limit is proven.  Scratch is
    allocated per call: it serves points that are not a program's solution (Safe-LUCB's
    exploration arms, the rays of ROFUL and GNOP)."""
    d, n = geometry.dim, geometry.n
    shapes = geometry.witness_shapes
    V = np.zeros((shapes[0], shapes[1]))
    start = 0.0
    z, trial = np.zeros(n + 1), np.zeros(n + 1)
    for a in range(d):
        if not math.isfinite(x[a]):
            return False
        z[a] = x[a]
    if n > d:
        st, A = geometry.witness_structure, geometry.witness_A
        k, p = n - d, A.shape[0]
        m = geometry.witness_Gx.shape[0]
        h = geometry.witness_h.copy()
        for i in range(m):
            acc = h[i]
            for a in range(d):
                acc -= geometry.witness_Gx[i, a] * x[a]
            h[i] = acc
        b = np.empty(p)
        for i in range(p):
            acc = geometry.b[i]
            for a in range(d):
                acc -= geometry.A[i, a] * x[a]
            b[i] = acc
        for a in range(k + 1):
            V[socp.C_ROW, a] = 0.0
        V[socp.C_ROW, k] = -1.0
        u = np.zeros(k + 1)
        status = socp.solve_into(st, st[0], k + 1, h, A, b, u,
                                 V, np.zeros((shapes[2], shapes[3])), geometry.witness_values,
                                 np.empty(0))
        if status != socp.SOLVED and status != socp.REDUCED:
            return False
        for a in range(k):
            z[d + a] = u[a]
        # As ConeArms.pull_in: a margin below a witness solve's accuracy is not trusted, and the
        # contraction starts where the margin, concave along the segment to the interior pair,
        # reaches it (so that ``contains`` proves the point as well).
        t = min(u[k], 0.0)
        if u[k] < WITNESS_ACCURACY:
            start = (WITNESS_ACCURACY - t) / (geometry.center_margin - t)
    if not _pull_in_pair(geometry, z, V, socp._T1, trial, start):
        return False
    for a in range(d):
        x[a] = z[a]
    return True


@njit
def greedy_within_one(geometry, theta, cuts, limit, start, out, work) -> int:
    """The certified greedy arm over the set cut by ``cuts x <= (1 - WITHIN_SLACK) limit``
    (``2 d`` rows: Safe-LUCB's estimated safe set), ``limit > 0``, into ``out``: the cuts are
    nonnegative rows of their own divided by that limit (right-hand sides 1).  Warm started from
    ``start`` (:func:`within_start_of`, the program's previous solution: Safe-LUCB's vertices
    move by one observation a stage).  Its pair in slot :data:`GREEDY` of ``work = (pairs, V,
    M, vals)`` (:func:`within_scratch_of`); the cuts are the caller's to check at the point it
    plays."""
    pairs, V, M, vals = work
    d, n = geometry.dim, geometry.n
    st = geometry.within_structure
    j = geometry.n_set
    n_cuts = cuts.shape[0]
    if n_cuts != st[0] - j or not limit > 0.0:
        return NOT_CERTIFIED
    v0 = socp._vptr(st, j)
    bound = limit * (1.0 - WITHIN_SLACK)
    for r in range(n_cuts):
        for a in range(d):
            vals[v0 + r * d + a] = cuts[r, a] / bound
    _greedy_objective(V, theta, n)
    status = socp.solve_into(st, st[0], n, geometry.within_h, geometry.A, geometry.b,
                             pairs[GREEDY], V, M, vals, start)
    return _finish(geometry, status, pairs, GREEDY, V, M, out)


@njit(inline="always")
def within_start_of(geometry, n_cuts):
    """A program's empty warm-start record (:func:`~sege_cvx.conic.socp.solve_into`'s
    ``start``; :func:`greedy_within_one`)."""
    st = geometry.within_structure
    return np.zeros(socp.start_length(geometry.n, socp._row(st, st[0]), geometry.A.shape[0]))


@njit(inline="always")
def within_scratch_of(geometry, n_cuts):
    """:func:`greedy_within_one`'s scratch (``n_cuts`` must be the ``2 d`` it was built for)."""
    shapes = geometry.within_shapes
    st = geometry.within_structure
    values = np.zeros(socp._vptr(st, st[0]))
    set_values = socp._vptr(st, geometry.n_set)  # the set's blocks, then the cuts (per solve)
    values[:set_values] = geometry.values[:set_values]
    return (np.zeros((3, geometry.n + 1)), np.zeros((shapes[0], shapes[1])),
            np.zeros((shapes[2], shapes[3])), values)


@njit(inline="always")
def safe_set_start_of(geometry):
    """:func:`safe_set_one`'s empty warm-start record (:func:`~sege_cvx.conic.socp.solve_into`'s
    ``start``)."""
    st = geometry.safe_structure
    return np.zeros(socp.start_length(geometry.n, socp._row(st, st[0]), geometry.A.shape[0]))


@njit(inline="always")
def safe_set_scratch_of(geometry):
    """:func:`safe_set_one`'s scratch: the pairs, the solver's ``V`` and ``M``, and a copy of
    the blocks' values (the bound's block rewritten per solve)."""
    shapes = geometry.shapes
    return (np.zeros((3, geometry.n + 1)), np.zeros((shapes[0], shapes[1])),
            np.zeros((shapes[2], shapes[3])), geometry.values.copy())


# --- Python entry points (tests, cross-checks) ------------------------------------------------

@njit
def _all(geometry, thetas, chols, radii, warm, lcb, warm_started) -> tuple:
    n_rows, d = thetas.shape
    arms = np.full((n_rows, d), np.nan)
    pairs = np.full((n_rows, geometry.n), np.nan)
    status = np.empty(n_rows, dtype=np.int64)
    iterations = np.empty(n_rows, dtype=np.int64)
    polished = np.zeros(n_rows, dtype=np.bool_)
    for i in range(n_rows):
        if not warm_started:
            warm[0][GREEDY_START, 0] = 0.0
            warm[0][LCB_START, 0] = 0.0
        if lcb:
            status[i] = lcb_one(geometry, thetas[i], chols[i], radii[i], warm, arms[i])
        else:
            status[i] = greedy_one(geometry, thetas[i], warm, arms[i])
        iterations[i] = socp.iterations(warm[1])
        polished[i] = socp.polished(warm[1])
        if status[i] == VERIFIED:
            pairs[i] = warm[0][LCB if lcb else GREEDY, :geometry.n]
        else:
            arms[i] = np.nan
    return arms, pairs, status, iterations, polished


@njit
def _pull_in_rows(geometry, points) -> np.ndarray:
    ok = np.empty(points.shape[0], dtype=np.bool_)
    for i in range(points.shape[0]):
        ok[i] = pull_in_one(geometry, points[i])
    return ok


@njit
def _within_rows(geometry, thetas, cuts, limit) -> tuple:
    arms = np.full(thetas.shape, np.nan)
    codes = np.empty(thetas.shape[0], dtype=np.int64)
    work = within_scratch_of(geometry, cuts.shape[0])
    for i in range(thetas.shape[0]):
        start = within_start_of(geometry, cuts.shape[0])  # each cold
        codes[i] = greedy_within_one(geometry, thetas[i], cuts, limit, start, arms[i], work)
        if codes[i] != VERIFIED:
            arms[i] = np.nan
    return arms, codes


@njit
def _certify_all(geometry, pairs) -> np.ndarray:
    out = np.empty(pairs.shape[0], dtype=np.bool_)
    for i in range(pairs.shape[0]):
        out[i] = certify(geometry, pairs[i])
    return out


class ConeSolves(NamedTuple):
    """Compiled solves of a batch of programs (:meth:`ConeArms.greedy_all`,
    :meth:`ConeArms.lcb_all`): per row the certified arm (NaN where none), its pair ``(x, u)``
    (NaN where none), the status code (:mod:`~sege_cvx.arm_sets.kernels.status`), the
    iterations the solve took (:func:`~sege_cvx.conic.socp.iterations`) and whether the
    active-set polish of its warm start solved it (:func:`~sege_cvx.conic.socp.polished`)."""

    arms: np.ndarray
    pairs: np.ndarray
    codes: np.ndarray
    iterations: np.ndarray
    polished: np.ndarray


class ConeArms:
    """A cone set's data for the compiled arms (:class:`ConeGeometry`), computed once.

    Parameters
    ----------
    form : ConeForm
        The set's rows (:func:`~sege_cvx.conic.cone_form.cone_form`).

    Attributes
    ----------
    center : ndarray, shape (n + 1,)
        The pull-in's interior pair: the pair ``(x, u)`` of largest margin in every cone
        (:func:`~sege_cvx.conic.programs.margin_constraints`), certified (and a zero for the
        LCB program's ``tau``).
    center_margin : float
        Its least margin.

    Raises
    ------
    UnsupportedCone
        The equalities do not determine a correction of the witness (their witness columns are
        not of full row rank), or the interior pair cannot be certified.
    """

    def __init__(self, form: ConeForm) -> None:
        self.form = form
        d, n, p = form.dim, form.n, form.A.shape[0]
        G = form.dense_G()
        m = G.shape[0]
        self._G = G
        # The LCB program's confidence cone over (x, tau): one more block, its values per run.
        lcb_G = np.zeros((d + 1, n + 1))
        lcb_G[:, :d] = 1.0  # a placeholder pattern: the block's columns are x and tau
        lcb_G[:, n] = 1.0
        set_blocks = form.blocks
        self.blocks = _joined(set_blocks, blocks_from_rows(lcb_G, [d + 1], [1]), m)
        self.structure = socp.pack(self.blocks)
        self.h = np.r_[form.h, np.zeros(d + 1)]
        # SafeTS's program over the estimated safe set: the bound's cone over x, its right-hand
        # side (1, 0, ..., 0) (safe_set_one divides its rows by c).
        safe = blocks_from_rows(np.ones((d + 1, d)), [d + 1], [1])
        self.safe_structure = socp.pack(_joined(set_blocks, safe, m))
        self.safe_h = np.r_[form.h, 1.0, np.zeros(d)]
        shapes = socp.scratch_shapes(self.blocks, n + 1, p)
        self.shapes = np.array([*shapes[0], *shapes[1]], dtype=np.int64)
        self._witness_record(G)
        # Safe-LUCB's program: the set's blocks and 2d cuts over x, one nonnegative row each,
        # their right-hand sides 1 (greedy_within_one divides them by their limit).
        cuts = blocks_from_rows(np.ones((2 * d, d)), [1] * (2 * d), [0] * (2 * d))
        within = _joined(set_blocks, cuts, m)
        self.within_structure = socp.pack(within)
        self.within_h = np.r_[form.h, np.ones(2 * d)]
        shapes = socp.scratch_shapes(within, n, p)
        self.within_shapes = np.array([*shapes[0], *shapes[1]], dtype=np.int64)
        self.A = np.zeros((p, n + 1))
        self.A[:, :n] = form.A
        up = np.inf
        self.row_l1 = np.array([np.nextafter(math.fsum(np.abs(row)), up) for row in G])
        self.row_aux_l1 = np.array([np.nextafter(math.fsum(np.abs(row[d:])), up) for row in G])
        self.row_terms = np.count_nonzero(G, axis=1).astype(np.float64) + 1.0
        self.eq_l1 = np.array([np.nextafter(math.fsum(np.abs(row)), up) for row in form.A])
        self.R, self.kappa = _right_inverse(form.A[:, d:])
        self._witness_program = cone_witness_program(form) if n > d else None
        interior = _interior_pair(form)
        self.center = np.r_[interior, 0.0]
        self.center_margin = self._margin(interior)
        self.n_vals = int(self.blocks.values.size)
        self._plain = self._record(np.zeros(n + 1), np.zeros((2 * d + 1, n + 1)))
        if not _certify_all(self._plain, self.center[None, :n])[0]:
            raise UnsupportedCone("the interior point's witness could not be certified")

    def _witness_record(self, G: np.ndarray) -> None:
        """The witness program of a point over ``(u, t)`` (:func:`pull_in_one`), as
        :func:`~sege_cvx.conic.programs.cone_witness_program` states it: each set block's slack
        ``t`` inside its cone (``t`` in its first row), ``t <= 1``, ``-bound <= u <= bound``."""
        form = self.form
        d, n, p = form.dim, form.n, form.A.shape[0]
        k, m = n - d, G.shape[0]
        blk = form.blocks
        self.witness_Gx = np.ascontiguousarray(G[:, :d])
        if k == 0:  # no witness to solve for: the pull-in certifies x itself
            self.witness_structure = socp.pack(blk)
            self.witness_values = blk.values
            self.witness_h = form.h.copy()
            self.witness_A = np.zeros((p, 1))
            shapes = socp.scratch_shapes(blk, 1, p)
            self.witness_shapes = np.array([*shapes[0], *shapes[1]], dtype=np.int64)
            return
        bound = WITNESS_BOUND * (1.0 + float(abs(form.h).max(initial=0.0)))
        Gw = np.zeros((m + 1 + 2 * k, k + 1))
        Gw[:m, :k] = G[:, d:]
        Gw[blk.rows[:-1], k] = 1.0  # s = h - G z - t e: the margin in each block's first row
        Gw[m, k] = 1.0
        Gw[m + 1:m + 1 + k, :k] = np.eye(k)
        Gw[m + 1 + k:, :k] = -np.eye(k)
        sizes = [int(blk.rows[j + 1] - blk.rows[j]) for j in range(form.n_blocks)]
        blocks = blocks_from_rows(Gw, sizes + [1] * (1 + 2 * k),
                                  [int(v) for v in blk.kind] + [0] * (1 + 2 * k))
        self.witness_structure = socp.pack(blocks)
        self.witness_values = blocks.values
        self.witness_h = np.r_[form.h, 1.0, np.full(2 * k, bound)]
        self.witness_A = np.zeros((p, k + 1))
        self.witness_A[:, :k] = form.A[:, d:]
        shapes = socp.scratch_shapes(blocks, k + 1, p)
        self.witness_shapes = np.array([max(a, b) for a, b in zip(
            [*shapes[0], *shapes[1]], socp.scratch_shapes(blk, 1, p)[0] + (1, 1), strict=True)],
            dtype=np.int64)

    def witness(self, x: np.ndarray) -> tuple[np.ndarray, float]:
        """``(z, t)``: ``z = (x, u)`` with ``u`` the max-margin witness of ``x`` (length
        ``n + 1``: a zero for the LCB program's ``tau``) and ``t`` that margin, from one Clarabel
        solve of the rows with ``x`` fixed (:func:`~sege_cvx.conic.programs.cone_witness_program`;
        ``u = 0`` and ``t = nan`` where it fails; without auxiliaries ``t`` is the least margin
        of ``x`` itself)."""
        d, n = self.form.dim, self.form.n
        z = np.zeros(n + 1)
        z[:d] = x
        if self._witness_program is None:
            return z, self._margin(z[:n])
        try:
            solution = self._witness_program.solve(z[:d])
        except SolverFailure:  # u = 0: the certificate decides
            return z, math.nan
        z[d:n] = solution.x
        return z, float(solution.aux[0])

    def _margin(self, z: np.ndarray) -> float:
        """The least margin of the pair ``z`` (length n) in the set's cones, in floating point
        (:func:`~sege_cvx.conic.programs.margin_constraints`: ``s_i`` for a nonnegative row,
        ``s_0 - ||s_1||`` for a second-order cone), ``-inf`` if an equality fails by more than
        rounding."""
        form, blk = self.form, self.form.blocks
        slack = form.h - self._G @ z
        if form.A.shape[0] and not np.all(np.abs(form.A @ z - form.b) <= 1e-12 * (
                1.0 + np.abs(form.A) @ np.abs(z) + np.abs(form.b))):
            return -math.inf
        out = math.inf
        for j in range(form.n_blocks):
            r0, r1 = int(blk.rows[j]), int(blk.rows[j + 1])
            out = min(out, slack[r0] if blk.kind[j] == 0
                      else slack[r0] - float(np.linalg.norm(slack[r0 + 1:r1])))
        return out

    def _holds_exactly(self, z: np.ndarray) -> bool:
        """Whether the pair ``z`` (length n) satisfies every row in rational arithmetic: the
        equalities exactly, each nonnegative row's slack ``>= 0``, each second-order cone's
        ``s_0 >= 0`` and ``s_0^2 >= ||s_1||^2`` (exact squares)."""
        form, blk = self.form, self.form.blocks
        zf = [Fraction(float(v)) for v in z]

        def dot(row) -> Fraction:
            return sum((Fraction(float(a)) * zf[k] for k, a in enumerate(row) if a != 0.0),
                       Fraction(0))

        for i in range(form.A.shape[0]):
            if dot(form.A[i]) != Fraction(float(form.b[i])):
                return False
        for j in range(form.n_blocks):
            r0, r1 = int(blk.rows[j]), int(blk.rows[j + 1])
            s = [Fraction(float(form.h[r])) - dot(self._G[r]) for r in range(r0, r1)]
            if s[0] < 0 or (blk.kind[j] == 1 and s[0] * s[0] < sum(v * v for v in s[1:])):
                return False
        return True

    def prove(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Whether each row of ``points`` ``(k, d)`` lies in the set exactly, with its pair and
        the witness program's margin: the pair with its max-margin witness (:meth:`witness`),
        moved onto the equalities by the right inverse ``R``, passes :func:`certify` (a
        rigorous floating-point bound per row and per cone), or, where that bound is
        inconclusive and the pair's floating-point margins are all nonnegative, every row holds
        in rational arithmetic (:meth:`_holds_exactly`) with that witness or with it rounded to
        12 significant digits.  Returns ``(inside, pairs, margins)``, the pairs of length ``n``
        (NaN rows for non-finite points).  True only when proven: a point on the boundary of a
        cone whose witness is not exactly representable comes out False."""
        points = np.asarray(points, dtype=np.float64)
        n = self.form.n
        pairs = np.full((points.shape[0], n), np.nan)
        margins = np.full(points.shape[0], np.nan)
        form, d = self.form, self.form.dim
        for i in np.flatnonzero(np.isfinite(points).all(axis=1)):
            z, margins[i] = self.witness(points[i])
            if form.A.shape[0]:
                # The witness moved onto the equalities (a solve meets them to its tolerance
                # only, which the certificate would otherwise charge against every row).
                z[d:n] += self.R @ (form.b - form.A @ z[:n])
            pairs[i] = z[:n]
        inside = self.certify(pairs)
        for i in np.flatnonzero(~inside & np.isfinite(pairs).all(axis=1)):
            # The witness as solved, then rounded to 12 significant digits: a point on a cone's
            # boundary needs its exact witness (x t >= 1 at x = 1/2 needs t = 2, which the
            # solve returns as 1.9999999999995).
            snapped = np.r_[pairs[i, :d], [float(f"{v:.12g}") for v in pairs[i, d:]]]
            for z in (pairs[i], snapped):
                if self._margin(z) >= 0.0 and self._holds_exactly(z):
                    inside[i], pairs[i] = True, z
                    break
        return inside, pairs, margins

    def contains(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`prove`'s ``(inside, pairs)``."""
        inside, pairs, _ = self.prove(points)
        return inside, pairs

    def pull_in(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Move each row of ``points`` ``(k, d)`` exactly into the set, in place: rows that
        :meth:`prove` accepts stay; the others move to the first contraction toward the
        interior pair's ``x`` (:attr:`center`) of the schedule
        (:func:`~sege_cvx.arm_sets.kernels.pull_in.contractions`: 1e-15, 1e-14, ...) at or
        above ``eps = (a - t) / (t_c - t)`` that :meth:`prove` accepts, so that ``contains``
        proves every point it returns.  That ``eps`` is where the margin, concave along the
        segment, is sure to reach :data:`WITNESS_ACCURACY` ``a`` from ``t`` at the point (the
        witness program's margin) and :attr:`center_margin` ``t_c`` at the centre: below it a
        witness solve cannot be trusted to prove a point, so the search goes up from it (one
        solve per point where the first contraction passes), and only if none up to the limit
        is proven (a witness solve's accuracy varies), down from it.  Returns ``(ok, pairs)``:
        rows that cannot be moved in (or are not finite) are left as they were, not ok."""
        from ..kernels.pull_in import contraction_limit, contractions

        d = self.form.dim
        ok, pairs, margins = self.prove(points)
        c, t_c = self.center[:d], self.center_margin
        for i in np.flatnonzero(~ok & np.isfinite(points).all(axis=1)):
            offset = points[i] - c
            t = min(margins[i], 0.0) if math.isfinite(margins[i]) else -t_c
            start = (WITNESS_ACCURACY - t) / (t_c - t)
            schedule = contractions(contraction_limit(points[i], c, offset))
            # Up from the start; then, should a witness solve fail to prove every one of those
            # (its accuracy varies from solve to solve), down from it.
            above = [eps for eps in schedule if eps >= start]
            for eps in above + [eps for eps in reversed(schedule) if eps < start]:
                point = c + (1.0 - eps) * offset
                inside, pair, _ = self.prove(point[None])
                if inside[0]:
                    points[i], pairs[i], ok[i] = point, pair[0], True
                    break
        return ok, pairs

    def _record(self, baseline: np.ndarray, table: np.ndarray) -> ConeGeometry:
        form = self.form
        return ConeGeometry(self.structure, self.blocks.values, form.n_blocks, form.n, form.dim,
                            self.h, self.A, form.b, self.row_l1, self.row_aux_l1,
                            self.row_terms, self.eq_l1, self.R, self.kappa, self.center,
                            self.center_margin, baseline, table, self.safe_structure,
                            self.safe_h, self.shapes, self.witness_structure,
                            self.witness_values, self.witness_h, self.witness_Gx,
                            self.witness_A, self.witness_shapes,
                            self.within_structure, self.within_h, self.within_shapes)

    def geometry(self, lam: float | None = None, anchors=None) -> ConeGeometry | None:
        """The record compiled stages receive (:class:`ConeGeometry`).  With SEGE's ``anchors``
        (:class:`~sege_cvx.arm_sets.kernels.registry.Anchors`) the pairs of its baseline arm
        and of its exploration's vertices and centre; None if that exploration is not a
        cross-polytope (its draws then have no witnesses)."""
        if anchors is None:
            return self._plain
        exploration = anchors.exploration
        if exploration.kind != "cross":
            return None
        points = np.vstack([exploration.vertices(), exploration.center])
        table = np.array([self.witness(v)[0] for v in points])
        return self._record(self.witness(anchors.safe_arm)[0], table)

    def warm_state(self, n: int) -> tuple[np.ndarray, ...]:
        """Per run: the pairs (slots :data:`GREEDY`, :data:`LCB`, :data:`MIX`) and the greedy
        and LCB programs' warm starts (slots :data:`GREEDY_START`, :data:`LCB_START`, empty),
        the solver's scratch and values (:func:`~sege_cvx.conic.socp.scratch_shapes`)."""
        p = self.form.A.shape[0]
        V, M = socp.scratch_shapes(self.blocks, self.form.n + 1, p)
        width = max(self.form.n + 1, socp.start_size(self.blocks, self.form.n + 1, p))
        return (np.zeros((n, 5, width)), np.zeros((n,) + V), np.zeros((n,) + M),
                np.tile(self.blocks.values, (n, 1)))

    def checked_lcb_arm(self, theta_hat: object, V: object, radius: object) -> None:
        """No single-call shortcut: the general path validates and solves."""
        return None

    def greedy_all(self, thetas: np.ndarray, warm: bool = False) -> ConeSolves:
        """:func:`greedy_one` per row of ``thetas``, each solved cold, or (``warm``) in order, each
        warm started from the previous row's solution, as a learner's consecutive stages are."""
        state = tuple(a[0] for a in self.warm_state(1))
        n = thetas.shape[0]
        return ConeSolves(*_all(self._plain, np.ascontiguousarray(thetas, dtype=np.float64),
                                np.zeros((n, 1, 1)), np.zeros(n), state, False, warm))

    def lcb_all(self, thetas: np.ndarray, chols: np.ndarray, radii: np.ndarray,
                warm: bool = False) -> ConeSolves:
        """:func:`lcb_one` per row, cold or (``warm``) as :meth:`greedy_all`."""
        state = tuple(a[0] for a in self.warm_state(1))
        return ConeSolves(*_all(self._plain, np.ascontiguousarray(thetas, dtype=np.float64),
                                np.ascontiguousarray(chols, dtype=np.float64),
                                np.ascontiguousarray(radii, dtype=np.float64), state, True, warm))

    def pull_in_all(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:func:`pull_in_one` per row of ``points``: ``(moved, ok)``, the rows moved in (as given
        where not ok)."""
        moved = np.array(points, dtype=np.float64, copy=True, order="C")
        return moved, _pull_in_rows(self._plain, moved)

    def greedy_within_all(self, thetas: np.ndarray, cuts: np.ndarray,
                          limit: float) -> tuple[np.ndarray, np.ndarray]:
        """:func:`greedy_within_one` per row of ``thetas`` with the same ``2 d`` ``cuts``:
        ``(arms, codes)``, NaN rows where not :data:`VERIFIED`."""
        return _within_rows(self._plain, np.ascontiguousarray(thetas, dtype=np.float64),
                            np.ascontiguousarray(cuts, dtype=np.float64), float(limit))

    def certify(self, pairs: np.ndarray) -> np.ndarray:
        """:func:`certify` per row of ``pairs`` (length ``n``)."""
        return _certify_all(self._plain, np.ascontiguousarray(pairs, dtype=np.float64))


def _joined(first: socp.ConeBlocks, extra: socp.ConeBlocks, m: int) -> socp.ConeBlocks:
    """``first``'s blocks (``m`` rows) followed by ``extra``'s."""
    return socp.ConeBlocks(
        np.r_[first.kind, extra.kind], np.r_[first.rows, m + extra.rows[1:]],
        np.r_[first.col_ptr, first.cols.size + extra.col_ptr[1:]], np.r_[first.cols, extra.cols],
        np.r_[first.val_ptr, first.values.size + extra.val_ptr[1:]],
        np.r_[first.values, np.zeros(extra.values.size)])


def _interior_pair(form: ConeForm) -> np.ndarray:
    """The pair ``z = (x, u)`` of largest margin ``t <= 1`` in every cone of ``form``
    (:func:`~sege_cvx.conic.programs.margin_constraints`; ``||u||_inf`` bounded as in the
    witness program)."""
    import cvxpy as cp

    d, n = form.dim, form.n
    z, t = cp.Variable(n), cp.Variable()
    bound = 1e6 * (1.0 + float(abs(form.h).max(initial=0.0)))
    cons = [*margin_constraints(form, z, t), t <= 1.0]
    if n > d:
        cons.append(cp.norm(z[d:], "inf") <= bound)
    try:
        solve_once(cp.Problem(cp.Maximize(t), cons), z, "the set's interior pair")
    except ValueError as exc:
        raise UnsupportedCone(str(exc)) from None
    return np.asarray(z.value, dtype=np.float64)


def _right_inverse(Au: np.ndarray) -> tuple[np.ndarray, float]:
    """``(R, kappa)``: ``R`` the pseudo-inverse of the equalities' witness columns ``Au`` and
    ``kappa = ||R||_inf / (1 - ||Au R - I||_inf)``, the residual computed in rationals and
    ``kappa`` rounded up: for every ``rho`` some ``delta`` with ``Au delta = rho`` has
    ``||delta||_inf <= kappa ||rho||_inf`` (a Neumann series)."""
    p, k = Au.shape
    if p == 0:
        return np.zeros((k, 0)), 0.0
    R = np.linalg.pinv(Au)
    F = [[Fraction(float(v)) for v in row] for row in Au]
    Rf = [[Fraction(float(v)) for v in row] for row in R]
    worst = Fraction(0)
    for i in range(p):
        total = Fraction(0)
        for j in range(p):
            e = sum((F[i][a] * Rf[a][j] for a in range(k)), Fraction(0)) - (1 if i == j else 0)
            total += abs(e)
        worst = max(worst, total)
    if worst >= Fraction(1, 2):
        raise UnsupportedCone("its equalities leave no room to correct a witness (their "
                              "auxiliary columns are not of full row rank)")
    norm_R = max(sum((abs(v) for v in row), Fraction(0)) for row in Rf)
    kappa = norm_R / (1 - worst)
    value = float(kappa)
    if Fraction(value) < kappa:
        value = float(np.nextafter(value, np.inf))
    return R, value


# --- the stage's arms (the geometry registry: sege_cvx.arm_sets.kernels.registry) ----------------

@njit(inline="always")
def _stage_greedy(geometry, theta, warm, out, mats, vecs):
    return greedy_one(geometry, theta, warm, out)


@njit(inline="always")
def _stage_lcb(geometry, theta, chol, r, warm, out, mats, vecs):
    return lcb_one(geometry, theta, chol, r, warm, out)


@njit(inline="always")
def _stage_pull_inside(geometry, x, warm, use_lcb, rho, g, safe, offset, trial):
    d, n = geometry.dim, geometry.n
    row = drawn_vertex(g)
    mix = warm[0][MIX]
    for k in range(d, n):
        mix[k] = geometry.table[row, k]
    return pull_inside_one(geometry, x, warm, use_lcb, rho)


@njit(inline="always")
def _stage_safe_set(geometry, theta, gamma, inv, beta, margin, start, out, work):
    return safe_set_one(geometry, theta, gamma, inv, beta, margin, start, out, work)


@njit(inline="always")
def _stage_pull_in(geometry, x, offset, trial):
    return pull_in_one(geometry, x)


@njit(inline="always")
def _stage_within(geometry, theta, cuts, limit, start, out, work):
    return greedy_within_one(geometry, theta, cuts, limit, start, out, work)


register_geometry(ConeGeometry, GeometryKernels(
    greedy=_stage_greedy, lcb=_stage_lcb, pull_in=_stage_pull_in, pull_inside=_stage_pull_inside,
    within=_stage_within, within_scratch=within_scratch_of, within_start=within_start_of,
    safe_set=_stage_safe_set, safe_set_scratch=safe_set_scratch_of,
    safe_set_start=safe_set_start_of))
