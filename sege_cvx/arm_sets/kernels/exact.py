r"""Exact signs of ``a^T x - b`` for float64 data: polyhedral membership decided exactly.

A float64 number is an exact rational, and so is ``a^T x - b`` for float64 ``a``, ``x`` and
``b``; its sign is what "``x`` satisfies the inequality exactly" means.  :func:`dot_sign`
decides it in three tiers, each exact where it answers:

1. **A float filter.**  The sum ``s`` computed in index order differs from the exact value by
   at most ``gamma_{n+1} T`` (Higham, *Accuracy and Stability of Numerical Algorithms*, 3.1;
   ``T`` the sum of the terms' magnitudes, ``gamma_n = n u / (1 - n u)``, ``u = 2^-53``), and
   ``T <= ||a||_1 max_k |x_k| + |b|``, with ``||a||_1`` rounded up once per row
   (:func:`membership_rows`); :func:`filter_factor` ``(n + 2) u`` times that covers it.  Beyond
   it, ``s`` has the exact sign: this decides every row not within a few ulps of its boundary,
   at the cost of the plain float test (:func:`filter_sign`).  A row with a single entry ``+-1``
   (a box's) has an exact sum: its sign decides, zero included.
2. **A compensated sum** with error-free transformations (Ogita, Rump & Oishi, "Accurate sum
   and dot product", SIAM J. Sci. Comput. 26, 2005, Algorithm Dot2): each product ``a_k x_k =
   h + r`` exactly (:func:`two_product`, a fused multiply-add), each partial sum ``hi + h = hi' +
   q`` exactly (:func:`two_sum`, Knuth's).  If every ``r`` and ``q`` is zero the running ``hi``
   *is* the exact value; otherwise the result errs by at most ``u |value| + gamma_n^2 T``, so a
   result beyond ``2 gamma_n^2 T`` (about ``1e-31 T``) has the exact sign.
3. **An exact expansion** (Shewchuk, "Adaptive precision floating-point arithmetic and fast
   robust geometric predicates", 1997, Grow-Expansion with zero elimination): the terms
   ``h``, ``r`` and ``-b`` summed into nonoverlapping components of increasing magnitude, the
   largest of which has the sign of the sum (:func:`row_signs`).

``contains(x, tol=0)`` runs all three (:func:`polytope_verdict`, then :func:`row_signs`), and
rationals where they cannot answer (:mod:`sege_cvx.arm_sets.rational`).  The compiled stages run
tier 1 alone (:func:`in_polytope`): an arm it cannot prove inside is pulled in a little further
(about 1e-15 of its distance) until it can, so that every later check of that arm costs what the
plain float test did, and a point it accepts is inside exactly.

Tiers 2 and 3 are exact when no product overflows and no product's error term underflows:
every nonzero product ``a_k x_k`` (and ``b``) of binary exponent within ``+-EXACT_EXPONENT``
(products from about 1e-289 to 1e289; rows are scaled by powers of two first, so this concerns
``x``).  Beyond that they answer :data:`UNDECIDED`, and rationals decide.  Non-finite ``x`` is
:data:`UNDECIDED` too; callers treat it as outside.

The kernels run with IEEE arithmetic (numba without ``fastmath``), which the transformations
assume; the one fused multiply-add, in :func:`two_product`, is LLVM's ``llvm.fma.f64``, exact on
every CPU (in hardware where there is one, else in software).
"""

from __future__ import annotations

import math

import llvmlite.ir as ir
import numpy as np
from numba.core import cgutils, types
from numba.extending import intrinsic

from ..._numba import njit

#: :func:`dot_sign`'s answers: the sign of ``a^T x - b``, or that the kernels cannot tell.
NEGATIVE, ZERO, POSITIVE, UNDECIDED = -1, 0, 1, 2
#: :func:`polytope_verdict`'s answers.
OUTSIDE, INSIDE = 0, 1

#: Binary exponents of the nonzero products (and of ``b``) within which tiers 2 and 3 are
#: exact: a product's error term (a multiple of the factors' ulps' product, at least
#: ``2^-1066``) is then representable, and no sum of up to 2^40 terms overflows.
EXACT_EXPONENT = 960
_PRODUCT_LOW, _PRODUCT_HIGH = 2.0**-EXACT_EXPONENT, 2.0**EXACT_EXPONENT
_U = 2.0**-53
#: An absolute allowance for subnormal rounding, far below any term in the exact range.
_ABS = 2.0**-1000


@njit(inline="always")
def two_sum(a: float, b: float) -> tuple[float, float]:
    """``(s, e)`` with ``s = fl(a + b)`` and ``a + b = s + e`` exactly (Knuth; any order, no
    overflow)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


@intrinsic
def fma(typingctx, a, b, c):
    """``a b + c`` rounded once (``llvm.fma.f64``)."""
    def codegen(context, builder, signature, args):
        double = ir.DoubleType()
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(double, [double] * 3),
                                            "llvm.fma.f64")
        return builder.call(fn, args)

    return types.float64(types.float64, types.float64, types.float64), codegen


@njit(inline="always")
def two_product(a: float, b: float) -> tuple[float, float]:
    """``(p, e)`` with ``p = fl(a b)`` and ``a b = p + e`` exactly (``e = fma(a, b, -p)``), for a
    product within :data:`EXACT_EXPONENT`."""
    p = a * b
    return p, fma(a, b, -p)


@njit(inline="always")
def filter_factor(n: int) -> float:
    """Tier 1's bound on ``|fl(a^T x - b) - (a^T x - b)|`` per unit of the terms' magnitude for
    ``n`` products: ``(n + 2) u``, above ``gamma_{n+1}`` with room for the bound's own rounding."""
    return (n + 2.0) * _U


@njit
def _expansion_sign(A, j, x, bj) -> int:
    """Tier 3: the exact sign of ``A[j] x - bj`` (products within :data:`EXACT_EXPONENT`)."""
    n = x.shape[0]
    e = np.empty(2 * n + 1)
    m = 0
    for k in range(n + 1):
        if k < n:
            h, r = two_product(A[j, k], x[k])
        else:
            h, r = -bj, 0.0
        for q in (h, r):  # Grow-Expansion of e[:m] by q, zero-eliminated
            out = 0
            for i in range(m):
                q, low = two_sum(q, e[i])
                if low != 0.0:
                    e[out] = low
                    out += 1
            if q != 0.0:
                e[out] = q
                out += 1
            m = out
    if m == 0:
        return ZERO
    return POSITIVE if e[m - 1] > 0.0 else NEGATIVE


@njit(inline="always")
def filter_sign(A, j, x, bj, norm, largest) -> int:
    """Tier 1: the sign of ``A[j] x - bj`` where the float sum is beyond its rounding bound,
    else :data:`UNDECIDED` (and for NaN or inf).  ``norm``: the row's rounded-up ``||a||_1``
    (:func:`membership_rows`), 0 for a row whose float sum is exact (a single entry ``+-1``: the
    sign of the float sum is then the exact sign, zero included); ``largest``: ``max_k |x_k|``."""
    n = x.shape[0]
    s = 0.0
    for k in range(n):
        s += A[j, k] * x[k]
    s -= bj
    if norm == 0.0:  # s is exact
        return POSITIVE if s > 0.0 else (NEGATIVE if s < 0.0 else (ZERO if s == 0.0 else UNDECIDED))
    bound = filter_factor(n) * (norm * largest + abs(bj)) + _ABS
    if s > bound:
        return POSITIVE
    if s < -bound:
        return NEGATIVE
    return UNDECIDED


@njit(inline="always")
def dot_sign(A, j, x, bj, norm, largest) -> int:
    """The exact sign of ``A[j] x - bj`` by tiers 1 and 2 (the module docstring's):
    :data:`NEGATIVE`, :data:`ZERO`, :data:`POSITIVE`, or :data:`UNDECIDED` for data beyond the
    exact range, a non-finite ``x``, or a value tier 2 cannot separate from 0 (below about
    ``1e-31`` of its terms: :func:`row_signs` decides it by tier 3).  ``norm``, ``largest``: as
    :func:`filter_sign`."""
    sign = filter_sign(A, j, x, bj, norm, largest)
    if sign != UNDECIDED or not largest < math.inf:
        return sign
    return _compensated_sign(A, j, x, bj)


@njit(inline="always")
def _compensated_sign(A, j, x, bj) -> int:
    """Tier 2 of :func:`dot_sign`: the sign, or :data:`UNDECIDED` where it cannot tell (then
    :func:`row_signs` runs tier 3).  Inlined and free of calls: a call taking arrays inside the
    membership loop would make numba keep the reference counts of its array views (4x slower)."""
    n = x.shape[0]
    if not abs(bj) <= _PRODUCT_HIGH:
        return UNDECIDED
    hi = 0.0
    lo = 0.0
    total = 0.0
    exact = True
    for k in range(n + 1):
        if k < n:
            a, v = A[j, k], x[k]
            h, r = two_product(a, v)
            # Exact only for a product within 2^+-EXACT_EXPONENT (or a zero factor); this also
            # refuses NaN and inf.
            if not (_PRODUCT_LOW <= abs(h) <= _PRODUCT_HIGH or (h == 0.0 and (a == 0.0 or v == 0.0)
                                                                 and math.isfinite(v))):
                return UNDECIDED
        else:
            h, r = -bj, 0.0
        total += abs(h)
        hi, q = two_sum(hi, h)
        if q != 0.0 or r != 0.0:
            exact = False
        lo += q + r
    if exact:  # every partial sum was exact: hi is the value
        return POSITIVE if hi > 0.0 else (NEGATIVE if hi < 0.0 else ZERO)
    value = hi + lo
    g = (n + 1.0) * _U / (1.0 - (n + 1.0) * _U)
    bound = 2.0 * g * g * total + _ABS
    if value > bound:
        return POSITIVE
    if value < -bound:
        return NEGATIVE
    return UNDECIDED


def membership_rows(A: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(A, b, l1)``, the data of :func:`in_polytope`: the rows as given (float64, C order), each
    multiplied by the power of two that brings its largest ``|a_jk|`` into ``[1, 2)`` where that
    is exact (the same inequality, and products of ordinary size even for rows of 1e-300), and
    each row's ``||a_j||_1`` rounded up (by ``(d + 2) u``, above its summation's rounding), or 0
    for a row whose float sum is exact: a single entry ``+-1`` (a box's rows)."""
    A = np.array(A, dtype=np.float64, order="C")
    b = np.array(b, dtype=np.float64)
    with np.errstate(all="ignore"):
        shift = 1 - np.frexp(np.abs(A).max(axis=1))[1]
        scaled_A, scaled_b = np.ldexp(A, shift[:, None]), np.ldexp(b, shift)
        exact = (np.all(np.ldexp(scaled_A, -shift[:, None]) == A, axis=1)
                 & (np.ldexp(scaled_b, -shift) == b) & np.isfinite(scaled_b)
                 & np.all(np.isfinite(scaled_A), axis=1))
    A[exact], b[exact] = scaled_A[exact], scaled_b[exact]
    l1 = np.abs(A).sum(axis=1) * (1.0 + (A.shape[1] + 2.0) * _U)
    l1[(np.count_nonzero(A, axis=1) == 1) & (np.abs(A).max(axis=1) == 1.0)] = 0.0
    return A, b, l1


@njit(inline="always")
def polytope_verdict(rows, x) -> int:
    """Whether ``A x <= b`` holds exactly (``rows``: :func:`membership_rows`): :data:`INSIDE`,
    :data:`OUTSIDE` (some row fails), or :data:`UNDECIDED` (no row fails, some cannot be decided
    by the kernels)."""
    A, b, l1 = rows
    largest = _largest(x)
    undecided = False
    for j in range(A.shape[0]):
        sign = dot_sign(A, j, x, b[j], l1[j], largest)
        if sign == POSITIVE:
            return OUTSIDE
        if sign == UNDECIDED:
            undecided = True
    return UNDECIDED if undecided else INSIDE


@njit(inline="always")
def _largest(x) -> float:
    """``max_k |x_k|``: inf or NaN if some ``x_k`` is (the rows are then undecided)."""
    largest = 0.0
    for k in range(x.shape[0]):
        if not abs(x[k]) <= largest:  # larger, or NaN
            largest = abs(x[k])
    return largest


@njit
def in_polytope(x, rows) -> bool:
    """``A x <= b`` proven exactly by tier 1 alone (``rows``: :func:`membership_rows` of the user's
    own ``A`` and ``b``): the membership test of the compiled stages and of
    :func:`sege_cvx.arm_sets.kernels.pull_in.pull_in_one` for boxes and polytopes.

    A point within rounding of a facet is not accepted (but on a box's face it is: those rows
    are exact), so the pull-in moves it in, by about 1e-15 of its distance, until the float sum
    proves it: then every later check of that arm (the simplex method's warm start, ROFUL's
    segment points) costs what the plain float test did.  ``contains(x, tol=0)`` decides such a
    point exactly (:func:`polytope_verdict`)."""
    A, b, l1 = rows
    largest = _largest(x)
    for j in range(A.shape[0]):
        sign = filter_sign(A, j, x, b[j], l1[j], largest)
        if sign != NEGATIVE and sign != ZERO:
            return False
    return True


@njit
def polytope_verdicts(rows, X) -> np.ndarray:
    """:func:`polytope_verdict` per row of ``X`` (int8)."""
    out = np.empty(X.shape[0], dtype=np.int8)
    for i in range(X.shape[0]):
        out[i] = polytope_verdict(rows, X[i])
    return out


@njit
def row_signs(rows, x) -> np.ndarray:
    """The sign of every row of ``A x - b`` (int8): :func:`dot_sign`, then tier 3 where it could
    not separate the value from 0; :data:`UNDECIDED` only for data beyond the exact range (or a
    non-finite ``x``), which rationals decide (:mod:`sege_cvx.arm_sets.rational`)."""
    A, b, l1 = rows
    largest = _largest(x)
    out = np.empty(A.shape[0], dtype=np.int8)
    for j in range(A.shape[0]):
        sign = dot_sign(A, j, x, b[j], l1[j], largest)
        if sign == UNDECIDED and _in_exact_range(A, j, x, b[j]):
            sign = _expansion_sign(A, j, x, b[j])
        out[j] = sign
    return out


@njit
def _in_exact_range(A, j, x, bj) -> bool:
    """Whether every product of row ``j`` (and ``bj``) is within :data:`EXACT_EXPONENT`."""
    if not abs(bj) <= _PRODUCT_HIGH:
        return False
    for k in range(x.shape[0]):
        a, v = A[j, k], x[k]
        p = abs(a * v)
        if not (_PRODUCT_LOW <= p <= _PRODUCT_HIGH or (p == 0.0 and (a == 0.0 or v == 0.0)
                                                      and math.isfinite(v))):
            return False
    return True
