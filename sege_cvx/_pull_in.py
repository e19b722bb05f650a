"""The exact pull-in of a point that lies just outside a convex set (:meth:`ArmSet.pull_inside`).

A point ``x`` failing the set's exact membership test is replaced by the least contraction
``c + (1 - eps)(x - c)`` toward a certified interior point ``c`` that passes, for ``eps`` =
1e-15, 1e-14, ... up to a limit: :data:`MAX_CONTRACTION` (solver tolerance), or 16 ulps of the
coordinates relative to ``||x - c||`` where the floats themselves are coarser than that.  This
module holds the schedule's constants and its compiled per-point form; the arm sets' batched
form applies the same arithmetic to many rows at once.
"""

from __future__ import annotations

import math

from ._numba import njit

#: Largest relative contraction toward the set's certified interior point.
MAX_CONTRACTION = 1e-5
#: First contraction tried (rounding), multiplied by 10 at each further try.
FIRST_CONTRACTION = 1e-15
#: ``np.spacing(0)``, the smallest subnormal.
_SMALLEST_SPACING = 5e-324
_TINY = 2.2250738585072014e-308


@njit
def spacing(v: float) -> float:
    """``numpy.spacing(v)`` for finite ``v >= 0``: the gap to the next float."""
    if v < _TINY:
        return _SMALLEST_SPACING
    return math.ldexp(1.0, math.frexp(v)[1] - 53)


@njit
def contraction_limit(x, c, offset) -> float:
    """Largest ``eps`` tried for ``x`` (``offset = x - c``)."""
    biggest = 0.0
    norm2 = 0.0
    for k in range(x.shape[0]):
        biggest = max(biggest, abs(x[k]), abs(c[k]))
        norm2 += offset[k] * offset[k]
    return max(MAX_CONTRACTION, 16.0 * spacing(biggest) / max(math.sqrt(norm2), 1e-300))
