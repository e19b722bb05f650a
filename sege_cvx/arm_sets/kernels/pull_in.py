"""The exact pull-in of a point that lies just outside a convex set (:meth:`ArmSet.pull_inside`).

A point ``x`` failing the set's exact membership test is replaced by the least contraction
``c + (1 - eps)(x - c)`` toward a certified interior point ``c`` that passes, for ``eps`` =
1e-15, 1e-14, ... up to a limit: :data:`MAX_CONTRACTION` (solver tolerance), or 16 ulps of the
coordinates relative to ``||x - c||`` where the floats themselves are coarser than that.  This
module holds the schedule's constants and its compiled per-point form (for ellipsoids in
:mod:`sege_cvx.arm_sets.ellipsoid.arms`, for polytopes and boxes here); other arm sets apply
the same arithmetic row by row, searching the schedule from a start
(:func:`least_contraction`).  A box's or polytope's test is exact: a passing point satisfies
the user's own inequalities in exact arithmetic (:mod:`sege_cvx.arm_sets.kernels.exact`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..._numba import njit
from .exact import in_polytope

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


@njit(inline="always")
def pull_in_one(x, center, inside, data, offset, trial) -> bool:
    """Move ``x`` into the set by the least contraction toward ``center`` that passes
    ``inside(point, data)`` (the set's exact membership test); False, ``x`` unchanged, if none
    up to the limit does.  The per-point form of :meth:`~sege_cvx.arm_sets.base.ArmSet.pull_inside`'s
    schedule, for every set with a compiled membership test.  ``offset``, ``trial``: scratch."""
    if inside(x, data):
        return True
    d = x.shape[0]
    for k in range(d):
        offset[k] = x[k] - center[k]
    limit = contraction_limit(x, center, offset)
    eps = FIRST_CONTRACTION
    while eps <= limit * 10.0:
        factor = 1.0 - min(eps, limit)
        for k in range(d):
            trial[k] = center[k] + factor * offset[k]
        if inside(trial, data):
            for k in range(d):
                x[k] = trial[k]
            return True
        if not eps < limit:
            break
        eps *= 10.0
    return False


@njit
def pull_into_polytope(points, center, rows) -> np.ndarray:
    """:func:`pull_in_one` for every row of ``points``, in place, into ``{x : A x <= b}`` as
    decided exactly (:func:`sege_cvx.arm_sets.kernels.exact.in_polytope`; ``rows``: its
    :func:`~sege_cvx.arm_sets.kernels.exact.membership_rows`); returns which rows are inside (the
    others are left as they were)."""
    n, d = points.shape
    ok = np.empty(n, dtype=np.bool_)
    scratch = np.empty((2, d))
    for i in range(n):
        ok[i] = pull_in_one(points[i], center, in_polytope, rows, scratch[0], scratch[1])
    return ok


def contractions(limit: float) -> list[float]:
    """The schedule's contractions for a point of limit ``limit``, in order: ``min(eps, limit)``
    for ``eps`` = 1e-15, 1e-14, ... (each ten times the last, as :func:`pull_in_one` computes
    them) up to the first ``eps >= limit``."""
    out = []
    eps = FIRST_CONTRACTION
    while eps <= limit * 10.0:
        out.append(min(eps, limit))
        if not eps < limit:
            break
        eps *= 10.0
    return out


def least_contraction(trial: Callable[[float], object | None], limit: float,
                      start: float = 0.0) -> object | None:
    """The schedule's least contraction that passes, searched from ``start``: its trial's result.

    ``trial(eps)`` builds the contraction ``c + (1 - eps)(x - c)``, tests it exactly, and returns
    what the caller keeps (``None`` if it fails).  The search tests the first contraction of
    :func:`contractions` at or above ``start``, then steps down while they pass or up while they
    fail; the last to pass is returned (``None`` if none up to the limit does).  With
    ``start = 0`` (no guess) this is :func:`pull_in_one`'s schedule, each contraction tried once
    from the smallest.  A good ``start`` (the contraction that convexity guarantees,
    :meth:`~sege_cvx.arm_sets.evaluation.ConstraintEvaluator.contraction_start`) needs about two
    tests instead of up to eleven.  The points on the segment that lie in a convex set form an
    interval ending at ``c``, so in exact arithmetic the passing contractions are those above a
    threshold, and both searches find the same one; in floating point any contraction returned
    passed the exact test.
    """
    schedule = contractions(limit)
    if not schedule:
        return None
    k = next((i for i, eps in enumerate(schedule) if eps >= start), len(schedule) - 1)
    kept, direction = None, 0
    while True:
        result = trial(schedule[k])
        if result is not None:
            kept = result
            if direction > 0 or k == 0:
                return kept
            direction, k = -1, k - 1
        else:
            if direction < 0 or k == len(schedule) - 1:
                return kept
            direction, k = 1, k + 1
