r"""Exact signs of ``a^T x - b`` for float64 data: polyhedral membership decided exactly.

A float64 number is an exact rational, and so is ``a^T x - b`` for float64 ``a``, ``x`` and
``b``; its sign is what "``x`` satisfies the inequality exactly" means.  :func:`dot_sign`
decides it in three tiers, each exact where it answers:

1. **A float filter.**  The sum ``s`` computed in index order differs from the exact value by
   at most ``gamma_n T`` (Higham, *Accuracy and Stability of Numerical Algorithms*, 3.1;
   ``T`` the sum of the terms' magnitudes, ``gamma_n = n u / (1 - n u)``, ``u = 2^-53``);
   :data:`FILTER_FACTOR` ``(n + 2) u T`` covers it twice over.  Beyond it, ``s`` has the exact
   sign: this decides every row not within a few ulps of its boundary.
2. **A compensated sum** with error-free transformations (Ogita, Rump & Oishi, "Accurate sum
   and dot product", SIAM J. Sci. Comput. 26, 2005, Algorithm Dot2): each product ``a_k x_k =
   h + r`` exactly (:func:`two_product`, Dekker's), each partial sum ``hi + h = hi' + q``
   exactly (:func:`two_sum`, Knuth's).  If every ``r`` and ``q`` is zero the running ``hi`` *is*
   the exact value; otherwise the result errs by at most ``u |value| + gamma_n^2 T``, so a
   result beyond ``2 gamma_n^2 T`` (about ``1e-31 T``) has the exact sign.
3. **An exact expansion** (Shewchuk, "Adaptive precision floating-point arithmetic and fast
   robust geometric predicates", 1997, Grow-Expansion with zero elimination): the terms
   ``h``, ``r`` and ``-b`` summed into nonoverlapping components of increasing magnitude, the
   largest of which has the sign of the sum.

Tiers 2 and 3 are exact when no product overflows and no product's error term underflows:
every nonzero product ``a_k x_k`` (and ``b``) of binary exponent within
``+-EXACT_EXPONENT`` (products from about 1e-289 to 1e289).  Beyond that :func:`dot_sign`
answers :data:`UNDECIDED`: compiled code then treats the point as not (yet) inside, which is safe
(an arm is pulled further in), and Python decides the row in rationals
(:mod:`sege_cvx.arm_sets.rational`).  Non-finite ``x`` is :data:`UNDECIDED` too; callers treat
it as outside.

The kernels run with IEEE arithmetic and no fused multiply-add (numba without ``fastmath``),
which the transformations assume.
"""

from __future__ import annotations

import math

import numpy as np

from .._numba import njit

#: :func:`dot_sign`'s answers: the sign of ``a^T x - b``, or that the kernels cannot tell.
NEGATIVE, ZERO, POSITIVE, UNDECIDED = -1, 0, 1, 2
#: :func:`polytope_verdict`'s answers.
OUTSIDE, INSIDE = 0, 1

#: Binary exponents of the nonzero products (and of ``b``) within which tiers 2 and 3 are
#: exact: a product's error term is then a normal or subnormal multiple of ``2^-1066``, no sum of
#: up to 2^40 terms overflows, and Dekker's split of a factor (below ``2^990``) does not either.
EXACT_EXPONENT = 960
_PRODUCT_LOW, _PRODUCT_HIGH = 2.0**-EXACT_EXPONENT, 2.0**EXACT_EXPONENT
_NORMAL, _FACTOR = 2.0**-1020, 2.0**990
_U = 2.0**-53
#: Dekker's splitter for float64, ``2^27 + 1``.
_SPLITTER = 134217729.0
#: An absolute allowance for subnormal rounding, far below any term in the exact range.
_ABS = 2.0**-1000


@njit(inline="always")
def two_sum(a: float, b: float) -> tuple[float, float]:
    """``(s, e)`` with ``s = fl(a + b)`` and ``a + b = s + e`` exactly (Knuth; any order, no
    overflow)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


@njit(inline="always")
def two_product(a: float, b: float) -> tuple[float, float]:
    """``(p, e)`` with ``p = fl(a b)`` and ``a b = p + e`` exactly (Dekker, Veltkamp's split),
    for a product within :data:`EXACT_EXPONENT` (:func:`_exact_product`)."""
    p = a * b
    c = _SPLITTER * a
    ah = c - (c - a)
    al = a - ah
    c = _SPLITTER * b
    bh = c - (c - b)
    bl = b - bh
    return p, al * bl - (((p - ah * bh) - al * bh) - ah * bl)


@njit(inline="always")
def _exact_product(a: float, v: float) -> bool:
    """Whether :func:`two_product` of ``a`` and ``v`` is exact and their product safe to sum (a
    zero factor always is): normal factors below ``2^990`` and a product within
    ``2^+-EXACT_EXPONENT`` (Dekker's condition ``e_a + e_v >= e_min + p - 1``, with room to sum;
    rounding is monotone, so the computed product tells)."""
    if a == 0.0 or v == 0.0:
        return True
    p = abs(a * v)
    return (_NORMAL <= abs(a) < _FACTOR and _NORMAL <= abs(v) < _FACTOR
            and _PRODUCT_LOW <= p <= _PRODUCT_HIGH)


@njit(inline="always")
def filter_factor(n: int) -> float:
    """Tier 1's bound on ``|fl(a^T x - b) - (a^T x - b)|`` per unit of ``T`` for ``n`` products:
    ``(n + 2) u``, twice ``gamma_{n+1}`` for any ``n`` below 2^40."""
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
def dot_sign(A, j, x, bj) -> int:
    """The exact sign of ``A[j] x - bj`` (the module docstring's tiers): :data:`NEGATIVE`,
    :data:`ZERO`, :data:`POSITIVE`, or :data:`UNDECIDED` for data beyond the exact range or a
    non-finite ``x``."""
    n = x.shape[0]
    s = 0.0
    t = 0.0
    for k in range(n):
        p = A[j, k] * x[k]
        s += p
        t += abs(p)
    s -= bj
    t += abs(bj)
    bound = filter_factor(n) * t + _ABS
    if s > bound:
        return POSITIVE
    if s < -bound:
        return NEGATIVE
    if not (_exact_product(bj, 1.0) and math.isfinite(s)):
        return UNDECIDED
    for k in range(n):
        if not (math.isfinite(x[k]) and _exact_product(A[j, k], x[k])):
            return UNDECIDED
    hi = 0.0
    lo = 0.0
    total = 0.0
    exact = True
    for k in range(n + 1):
        if k < n:
            h, r = two_product(A[j, k], x[k])
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
    return _expansion_sign(A, j, x, bj)


@njit(inline="always")
def polytope_verdict(A, b, x) -> int:
    """Whether ``A x <= b`` holds exactly: :data:`INSIDE`, :data:`OUTSIDE` (some row fails), or
    :data:`UNDECIDED` (no row fails, some cannot be decided by the kernels)."""
    undecided = False
    for j in range(A.shape[0]):
        sign = dot_sign(A, j, x, b[j])
        if sign == POSITIVE:
            return OUTSIDE
        if sign == UNDECIDED:
            undecided = True
    return UNDECIDED if undecided else INSIDE


@njit
def in_polytope(x, data) -> bool:
    """``A x <= b`` proven exactly (``data = (A, b)``, the user's own rows): the membership test
    of :func:`sege_cvx._pull_in.pull_in_one` for boxes and polytopes.  False where it cannot be
    proven (:data:`UNDECIDED`): the point is then pulled further in."""
    return polytope_verdict(data[0], data[1], x) == INSIDE


@njit
def polytope_verdicts(A, b, X) -> np.ndarray:
    """:func:`polytope_verdict` per row of ``X`` (int8)."""
    out = np.empty(X.shape[0], dtype=np.int8)
    for i in range(X.shape[0]):
        out[i] = polytope_verdict(A, b, X[i])
    return out


@njit
def row_signs(A, b, x) -> np.ndarray:
    """:func:`dot_sign` of every row of ``A x - b`` (int8)."""
    out = np.empty(A.shape[0], dtype=np.int8)
    for j in range(A.shape[0]):
        out[j] = dot_sign(A, j, x, b[j])
    return out
