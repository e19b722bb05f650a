"""Exact rescaling of the data a solver sees, for arm sets and problems of any scale.

Clarabel's tolerances are absolute, so data far from order one (a ``theta`` of norm 1e8, a set
of diameter 1e-6 or 1e6) end ``MaxIterations``, ``DualInfeasible`` or inaccurate.  Scaling by
powers of two is exact (no rounding, so the same bits whether an instance is solved alone or in
a batch) and never overflows; data within ``2^+-ORDER_ONE`` of 1 are left as they are, so that
well-scaled problems are solved exactly as given.
"""

from __future__ import annotations

import numpy as np

from .._validation import _fmt
from ..confidence import cholesky

#: Binary exponents within which data count as of order one and are solved as given.
ORDER_ONE = 8
_NONE = np.iinfo(np.int32).min


def _exponent(e: np.ndarray) -> np.ndarray:
    return np.where(np.abs(e) <= ORDER_ONE, 0, e)


def scale_directions(thetas: np.ndarray) -> np.ndarray:
    """``theta / 2^e`` per row with ``2^e`` near ``max |theta_i|``: ``argmax <x, theta>`` is
    unchanged (and a closed form scale-invariant in theta gives the same bits)."""
    _, exponent = np.frexp(np.max(np.abs(thetas), axis=1))
    return np.ldexp(thetas, -_exponent(exponent)[:, None])


def scale_lcb_data(thetas: np.ndarray, chols: np.ndarray,
                   radii: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The LCB program's data ``(theta / k, M)`` with ``||M x|| = r ||x||_{V^{-1}} / k``.

    ``||x||_{V^{-1}} = ||L^{-1} x||`` for ``V = L L^T``; ``L^{-1} / 2^m`` is of order one and
    ``(theta, r 2^m) / k`` with ``k = 2^e`` from the larger of the two (integer exponents, so
    ``r 2^m`` itself is never formed).  ``argmax <x, theta> - r ||x||_{V^{-1}}`` is unchanged.
    """
    inv = cholesky.inverse_factor(chols)
    _, l_exp = np.frexp(np.max(np.abs(inv), axis=(1, 2)))
    m = _exponent(l_exp)
    _, t_exp = np.frexp(np.max(np.abs(thetas), axis=1))
    _, r_exp = np.frexp(radii)
    e = np.maximum(np.where(np.any(thetas != 0, axis=1), t_exp, _NONE),
                   np.where(radii > 0, r_exp + m, _NONE))
    e = _exponent(np.where(e == _NONE, 0, e))  # 0 for theta = r = 0
    factors = np.ldexp(inv, -m[:, None, None]) * np.ldexp(radii, m - e)[:, None, None]
    return np.ldexp(thetas, -e[:, None]), factors


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
            f"{_fmt(verified[outside[0]])}, verified in the set, lies outside the bounding box "
            f"{_fmt(lo)} to {_fmt(hi)} from its support programs; Clarabel is inaccurate on these "
            "constraints at this scale: rescale the problem (other units for the arms)")


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
