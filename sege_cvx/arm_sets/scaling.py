"""Exact rescaling of the data a solver sees, for arm sets and problems of any scale.

Clarabel's tolerances are absolute, so data far from order one (a ``theta`` of norm 1e8, a set
of diameter 1e-6 or 1e6) end ``MaxIterations``, ``DualInfeasible`` or inaccurate.  Scaling by
powers of two is exact (no rounding, so the same bits whether an instance is solved alone or in
a batch) and never overflows; data within ``2^+-ORDER_ONE`` of 1 are left as they are, so that
well-scaled problems are solved exactly as given.  The compiled geometries (ellipsoid,
polytope, hull) scale ``theta`` and ``r`` the same way, per instance
(:func:`order_one_exponent`).
"""

from __future__ import annotations

import math

import numpy as np

from .._numba import njit
from .._validation import format_value
from ..confidence.cholesky import inverse_factor_one

#: Binary exponents within which data count as of order one and are solved as given.
ORDER_ONE = 8
_ORDER_ONE_LOW, _ORDER_ONE_HIGH = 2.0 ** (-ORDER_ONE - 1), 2.0**ORDER_ONE
_NONE = np.iinfo(np.int32).min


@njit(inline="always")
def order_one_exponent(v: float) -> int:
    """The binary exponent ``e`` of ``v > 0`` (``2^(e-1) <= v < 2^e``), or 0 where
    ``|e| <= ORDER_ONE``: data of order one are left as given.  Also 0 for ``v = 0``."""
    if _ORDER_ONE_LOW <= v < _ORDER_ONE_HIGH:  # the common case, without a libm call
        return 0
    return _order_one(_binary_exponent(v))


@njit(inline="always")
def scale_to_order_one(theta, r, rows, row) -> float:
    """``rows[row] = theta / 2^e`` for ``2^e`` near ``max(|theta_i|, r)`` (exact: a greedy or LCB
    arm is unchanged when ``theta`` and ``r`` are scaled together); returns ``r / 2^e``, or NaN
    if an entry of ``rows[row]`` is not finite.  (Rows of a scratch array rather than a view of
    one: a view costs two reference-count updates per call.)"""
    d = theta.shape[0]
    biggest = r
    for c in range(d):
        biggest = max(biggest, abs(theta[c]))
    e = order_one_exponent(biggest)
    finite = True
    for c in range(d):
        rows[row, c] = math.ldexp(theta[c], -e) if e != 0 else theta[c]
        finite = finite and math.isfinite(rows[row, c])
    return (math.ldexp(r, -e) if e != 0 else r) if finite else math.nan


@njit(inline="always")
def _binary_exponent(v: float) -> int:
    """``np.frexp(v)[1]``: ``2^(e-1) <= |v| < 2^e``, and 0 for 0, inf and NaN."""
    return math.frexp(v)[1] if math.isfinite(v) else 0


@njit(inline="always")
def _order_one(e: int) -> int:
    """0 for exponents within ``ORDER_ONE`` (data of order one are left as given), else ``e``."""
    return 0 if abs(e) <= ORDER_ONE else e


@njit(inline="always")
def _largest(x: np.ndarray) -> float:
    """``max |x_k|`` over all entries, NaN if any is NaN (as ``np.max``)."""
    out = 0.0
    for v in x.ravel():
        if not abs(v) <= out:  # larger, or NaN
            out = abs(v)
            if out != out:
                break
    return out


@njit
def _scale_directions(thetas: np.ndarray) -> np.ndarray:
    n, d = thetas.shape
    out = np.empty((n, d))
    for i in range(n):
        e = _order_one(_binary_exponent(_largest(thetas[i])))
        for k in range(d):
            out[i, k] = math.ldexp(thetas[i, k], -e)
    return out


def scale_directions(thetas: np.ndarray) -> np.ndarray:
    """``theta / 2^e`` per row with ``2^e`` near ``max |theta_i|``: ``argmax <x, theta>`` is
    unchanged (and a closed form scale-invariant in theta gives the same bits)."""
    return _scale_directions(np.ascontiguousarray(thetas, dtype=np.float64))


@njit
def _scale_lcb_data(thetas: np.ndarray, chols: np.ndarray,
                    radii: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n, d = thetas.shape
    scaled = np.empty((n, d))
    factors = np.empty((n, d, d))
    inv = np.empty((d, d))
    unit = np.empty(d)
    col = np.empty(d)
    for i in range(n):
        inverse_factor_one(chols[i], inv, unit, col)
        m = _order_one(_binary_exponent(_largest(inv)))
        e = _NONE
        if np.any(thetas[i] != 0):
            e = _binary_exponent(_largest(thetas[i]))
        r = radii[i]
        if r > 0:
            e = max(e, _binary_exponent(r) + m)
        e = _order_one(0 if e == _NONE else e)  # 0 for theta = r = 0
        r_scaled = math.ldexp(r, m - e)
        for a in range(d):
            scaled[i, a] = math.ldexp(thetas[i, a], -e)
            for b in range(d):
                factors[i, a, b] = math.ldexp(inv[a, b], -m) * r_scaled
    return scaled, factors


def scale_lcb_data(thetas: np.ndarray, chols: np.ndarray,
                   radii: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The LCB program's data ``(theta / k, M)`` with ``||M x|| = r ||x||_{V^{-1}} / k``.

    ``||x||_{V^{-1}} = ||L^{-1} x||`` for ``V = L L^T``; ``L^{-1} / 2^m`` is of order one and
    ``(theta, r 2^m) / k`` with ``k = 2^e`` from the larger of the two (integer exponents, so
    ``r 2^m`` itself is never formed).  ``argmax <x, theta> - r ||x||_{V^{-1}}`` is unchanged.
    Compiled per instance: every step is exact, as numpy's ``frexp`` and ``ldexp`` would do it.
    """
    return _scale_lcb_data(np.ascontiguousarray(thetas, dtype=np.float64),
                           np.ascontiguousarray(chols, dtype=np.float64),
                           np.ascontiguousarray(radii, dtype=np.float64))


def check_box_holds(arm_set, verified: np.ndarray) -> None:
    """Raise ``ValueError`` if points verified in ``arm_set`` lie outside its bounding box.

    The box from support programs is an upper bound only if Clarabel's values are accurate; on
    badly scaled data (e.g. ``norm(x) <= 1e12``) it can report ``Solved`` far from the optimum,
    and a point known to be in the set but beyond the box exposes that.
    """
    lo, hi = arm_set.bounding_box()
    outside = np.flatnonzero(np.any((verified < lo) | (verified > hi), axis=1))
    if outside.size:
        raise ValueError(
            f"the solver's results for {arm_set!r} are inconsistent: the point "
            f"{format_value(verified[outside[0]])}, verified in the set, lies outside the bounding "
            f"box {format_value(lo)} to {format_value(hi)} from its support programs; Clarabel is "
            "inaccurate on these constraints at this scale: rescale the problem (other units for "
            "the arms)")


def solver_frame(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, float] | None:
    """Coordinates ``x = mid + s y`` in which a set with bounding box ``[lo, hi]`` is of order
    one, for programs solved with Clarabel's absolute tolerances; ``None`` where the set's own
    coordinates already are (largest half-width ``s`` within a factor 4 of 1 and
    ``|x| <= 4 s`` on the box), so that well-scaled problems are solved exactly as given.
    ``s`` is a power of two: the change of coordinates then adds no rounding of its own beyond
    the translation.
    """
    half = 0.5 * hi - 0.5 * lo
    s = float(np.ldexp(1.0, int(np.frexp(np.max(half))[1])))
    reach = float(max(np.max(np.abs(lo)), np.max(np.abs(hi))))
    if 0.25 <= s <= 4.0 and reach <= 4.0 * s:
        return None
    return 0.5 * lo + 0.5 * hi, s
