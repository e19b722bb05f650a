r"""A finite star: segments from the origin along ``K`` directions, the ROFUL paper's arm sets.

``StarSet(directions, radius)`` is the union of the segments ``{s u_k : 0 <= s <= cap_k}`` with
``cap_k = radius / ||u_k||``, so that every arm has length at most ``radius``: for unit
directions, ``{s u_k : 0 <= s <= radius}`` (Hutchinson, Turan and Alizadeh, AISTATS 2024,
Section 6; their code scales each direction to ``xlim / ||u||`` alike).  It is star-convex
about the origin but not convex, so policies that mix arms refuse it
(:meth:`sege_cvx.policies.base.Policy._require_convex`).

**Exactly in the set.**  A segment's points are not floats: ``s u_k`` rounds, and a float
vector lies exactly on a ray of a full-precision direction only at ``s`` a power of two.  The
arms of a star set are therefore the float products: ``x`` is an arm when ``x = fl(s u_k)``
(each coordinate the product ``s * u_kj`` rounded to nearest, as numpy and numba compute it) for
some float ``s`` in ``[0, cap_k]`` and some ``k``, where ``cap_k`` is computed once in floating
point (``radius / sqrt(u_k1^2 + ... + u_kd^2)``, the squares summed in index order, scaled by the
largest entry where they would overflow or underflow) and kept
(:attr:`StarSet.caps`).  :meth:`StarSet.contains` with ``tol=0`` decides that exactly
(:meth:`StarSet.ray_of` finds ``(k, s)``), and every policy on a star set plays such products.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .._numba import njit
from .._validation import as_finite_array, as_scalar, as_vector, scaled_norm
from ..confidence.cholesky import lcb_one
from .base import ArmSet, BatchArms, check_tol
from .exploration import Exploration

if TYPE_CHECKING:
    import cvxpy as cp

@njit
def _best_endpoint(thetas, ends, chols, radii, lcb):
    """Per instance: the first endpoint ``radius u_k`` maximizing ``<e, theta>`` (or the LCB
    with ``lcb``), or -1 for the origin when no endpoint beats 0."""
    n, d = thetas.shape
    out = np.full(n, -1, dtype=np.int64)
    w = np.empty(d)
    for i in range(n):
        best = 0.0
        for k in range(ends.shape[0]):
            if lcb:
                v = lcb_one(ends[k], thetas[i], chols[i], radii[i], w)
            else:
                v = 0.0
                for j in range(d):
                    v += ends[k, j] * thetas[i, j]
            if v > best:
                best, out[i] = v, k
    return out


#: The bits of +inf: the nonnegative floats are the integers 0 .. _INF_BITS, in order.
_INF_BITS = 0x7FF0000000000000


@njit
def _first_bits(u, x, strictly):
    """The smallest nonnegative float ``s`` (as its bits) with ``fl(s u) >= x`` (``> x`` when
    ``strictly``), for ``u > 0``: ``fl(s u)`` is nondecreasing in ``s``, so bisect the bits."""
    lo, hi = 0, _INF_BITS
    cell = np.empty(1, dtype=np.int64)
    as_float = cell.view(np.float64)
    while lo < hi:
        mid = lo + (hi - lo) // 2
        cell[0] = mid
        product = as_float[0] * u
        if product > x or (not strictly and product == x):
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit
def _smallest_scale(x, u, cap):
    """The smallest float ``s`` in ``[0, cap]`` with ``fl(s u_j) == x_j`` for every ``j`` (-1 if
    none): per coordinate the scales giving ``x_j`` are a run of consecutive floats (a product
    is monotone in ``s``), found by bisection; ``x`` is an arm on this ray when the runs meet."""
    cell = np.empty(1, dtype=np.int64)
    as_float = cell.view(np.float64)
    lo, hi = 0, _INF_BITS
    for j in range(x.shape[0]):
        uj, xj = u[j], x[j]
        if uj == 0.0:
            if xj != 0.0:
                return -1.0
            continue
        if uj < 0.0:  # fl(s (-u)) = -fl(s u): rounding to nearest is symmetric
            uj, xj = -uj, -xj
        first = _first_bits(uj, xj, False)
        cell[0] = first
        if first > _INF_BITS or as_float[0] * uj != xj:
            return -1.0
        last = _first_bits(uj, xj, True) - 1
        lo, hi = max(lo, first), min(hi, last)
        if lo > hi:
            return -1.0
    cell[0] = lo
    return as_float[0] if as_float[0] <= cap else -1.0


def _norm(u: np.ndarray) -> float:
    """``||u||`` in Python floats, each square rounded and summed in index order (the same on
    every machine), scaled by the largest entry where the squares would overflow or underflow."""
    total = sum(float(v) * float(v) for v in u)
    if np.finfo(float).tiny <= total < np.inf:
        return math.sqrt(total)
    top = max(abs(float(v)) for v in u)
    return top * math.sqrt(sum((float(v) / top) * (float(v) / top) for v in u))


class StarSet(ArmSet):
    """The finite star ``{s u_k : 0 <= s <= cap_k}``, ``cap_k = radius / ||u_k||`` (see the
    module docstring).

    Not convex: :class:`~sege_cvx.ROFUL`, :class:`~sege_cvx.GNOP` and :class:`~sege_cvx.SafeTS`
    scan its rays; SEGE refuses it.  Its arms are the float products ``fl(s u_k)`` (module
    docstring); the origin is an arm (``s = 0``), the safe arm of the ROFUL paper's experiments.

    Parameters
    ----------
    directions : array_like, shape (K, d)
        ``K >= 1`` nonzero directions, stored as given (not normalized: the ROFUL paper's are
        unit vectors).
    radius : float
        The arms' largest length, > 0.

    Attributes
    ----------
    directions : ndarray, shape (K, d)
        A read-only copy.
    radius : float
    caps : ndarray, shape (K,)
        The largest scale along each ray, ``radius / ||u_k||`` in floating point (the module
        docstring).
    endpoints : ndarray, shape (K, d)
        ``fl(cap_k u_k)``, the rays' far ends.
    n_directions, dim : int

    Examples
    --------
    >>> import sege_cvx as sc
    >>> star = sc.StarSet([[0.6, 0.8], [2.0, 0.0]], radius=2.0)
    >>> star.contains([0.3, 0.4]), star.contains([0.3, 0.41]), star.contains([0.0, 0.0])
    (True, False, True)
    >>> star.ray_of([0.3, 0.4]), star.caps
    ((0, 0.5), array([2., 1.]))
    >>> star.greedy_arm([0.0, 1.0]), float(star.support([-1.0, -1.0]))
    (array([1.2, 1.6]), 0.0)
    """

    is_convex = False

    def __init__(self, directions: np.ndarray, radius: float) -> None:
        data = as_finite_array("directions", directions)
        if data.ndim != 2 or data.shape[0] < 1 or data.shape[1] < 1:
            raise ValueError(f"directions must be a 2-D array of shape (K, d) with K, d >= 1, one "
                             f"direction per row, got shape {data.shape}")
        zero = ~np.any(data != 0.0, axis=1)
        if zero.any():
            k = int(np.argmax(zero))
            raise ValueError(f"direction {k} is zero: every ray needs a nonzero direction")
        self.radius = as_scalar("radius", radius, low=0.0, low_open=True)
        self.directions = np.array(data, dtype=np.float64, order="C")
        self.directions.flags.writeable = False
        self.n_directions, self.dim = self.directions.shape
        self.caps = np.array([self.radius / _norm(u) for u in self.directions])
        if not np.all(np.isfinite(self.caps) & (self.caps > 0.0)):
            k = int(np.argmax(~(np.isfinite(self.caps) & (self.caps > 0.0))))
            raise ValueError(f"radius {self.radius!r} over the norm of direction {k} is not a "
                             f"positive float ({self.caps[k]!r}): rescale the directions")
        self.caps.flags.writeable = False
        self.endpoints = self.caps[:, None] * self.directions
        self.endpoints.flags.writeable = False
        if not np.all(np.isfinite(self.endpoints)):
            raise ValueError(f"radius {self.radius!r} times the directions overflows: rescale")
        # fl(s u_kj) is monotone in s: the ends are the longest arms; 4 ulps bound the rounding.
        self._norm = float(scaled_norm(self.endpoints, axis=1).max()) * (
            1.0 + 4.0 * np.finfo(float).eps)

    def __repr__(self) -> str:
        return f"StarSet({self.n_directions} directions in R^{self.dim}, radius={self.radius!r})"

    def fingerprint_data(self) -> dict:
        """The directions and the radius (see :meth:`ArmSet.fingerprint_data`)."""
        return {"kind": "star", "directions": self.directions, "radius": self.radius}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.directions.flags.writeable = False
        self.caps.flags.writeable = False
        self.endpoints.flags.writeable = False

    # ----------------------------------------------------------------- no convex representation
    def constraints(self, x: cp.Variable) -> list:
        """Not available: raises ``TypeError`` (a star is not convex)."""
        raise TypeError(f"{self!r} is not convex: it has no cvxpy constraints and no solver "
                        "programs (its greedy and LCB arms are exact scans of the rays)")

    def exploration(self) -> Exploration:
        """Not available: raises ``TypeError``."""
        raise TypeError(f"{self!r} has no exploration distribution: exploring by mixing arms "
                        "(SEGE) needs a convex arm set")

    def certify_exploration(self, exploration: Exploration) -> bool:
        """Always False (no convex body)."""
        return False

    # ----------------------------------------------------------------- membership
    def ray_of(self, x: np.ndarray) -> tuple[int, float] | None:
        """``(k, s)`` with ``x = fl(s u_k)`` exactly and ``0 <= s <= cap_k`` (the first ray and
        the smallest such ``s``), or None if ``x`` is not an arm.  The origin is ``(0, 0.0)``."""
        x = as_vector("x", x, self.dim) if np.all(np.isfinite(np.asarray(x, dtype=np.float64))) \
            else None
        if x is None:
            return None
        if not np.any(x):
            return 0, 0.0
        for k in range(self.n_directions):
            s = self._scale_on(x, self.directions[k], self.caps[k])
            if s is not None:
                return k, s
        return None

    def _scale_on(self, x: np.ndarray, u: np.ndarray, cap: float) -> float | None:
        """The smallest float ``s`` in ``[0, cap]`` with ``fl(s u) == x``, or None."""
        found = _smallest_scale(np.ascontiguousarray(x, dtype=np.float64),
                                np.ascontiguousarray(u, dtype=np.float64), float(cap))
        return None if found < 0.0 else float(found)

    def _inside(self, xs: np.ndarray, tol: float) -> np.ndarray:
        if tol == 0.0:
            return np.array([self.ray_of(x) is not None for x in xs], dtype=bool)
        # Max-abs distance to the nearest segment point, at the projection's clipped scale.
        out = np.zeros(len(xs), dtype=bool)
        for i, x in enumerate(xs):
            if not np.all(np.isfinite(x)):
                continue
            u = self.directions
            s = np.clip((u @ x) / np.einsum("kj,kj->k", u, u), 0.0, self.caps)
            out[i] = bool(np.min(np.abs(x[None] - s[:, None] * u).max(axis=1)) <= tol)
        return out

    def _pull_in(self, points: np.ndarray) -> np.ndarray:
        # Nothing lies beside a ray to move a point into: only exact arms are accepted.
        return self._inside(points, 0.0)

    def contains(self, x: np.ndarray, tol: float = 1e-9) -> bool | np.ndarray:
        """Whether ``x`` (or each row) is an arm: ``tol=0`` exactly (``fl(s u_k)``, see the
        module docstring), else within ``tol`` of a segment in max-abs distance."""
        return super().contains(x, check_tol(tol))

    # ----------------------------------------------------------------- greedy and LCB arms
    @property
    def has_closed_form_greedy(self) -> bool:
        return True

    def _greedy_closed_form(self, thetas: np.ndarray) -> np.ndarray:
        n = thetas.shape[0]
        index = _best_endpoint(np.ascontiguousarray(thetas), self.endpoints,
                               np.empty((n, 0, 0)), np.empty(n), False)
        return self._ends(index, thetas)

    @property
    def has_closed_form_lcb(self) -> bool:
        return True

    def lcb_arm_batch(self, thetas: np.ndarray, chols: np.ndarray, radii: np.ndarray,
                      method: str = "auto") -> BatchArms:
        """LCB arms by the exact scan of the rays' ends and the origin (the LCB is linear in
        ``s`` along a ray); ``method="solver"`` raises ``TypeError``."""
        if method == "solver":
            self.constraints(None)
        return super().lcb_arm_batch(thetas, chols, radii, "closed_form")

    def _lcb_closed_form(self, thetas: np.ndarray, chols: np.ndarray,
                         radii: np.ndarray) -> np.ndarray:
        index = _best_endpoint(np.ascontiguousarray(thetas), self.endpoints,
                               np.ascontiguousarray(chols),
                               np.ascontiguousarray(radii, dtype=np.float64), True)
        return self._ends(index, thetas)

    def _ends(self, index: np.ndarray, thetas: np.ndarray) -> np.ndarray:
        out = np.zeros((len(index), self.dim))
        out[index >= 0] = self.endpoints[index[index >= 0]]
        out[~np.all(np.isfinite(thetas), axis=1)] = np.nan
        return out

    def constrained_support(self, theta: np.ndarray, gamma: np.ndarray, limit: float) -> float:
        """``max <x, theta>`` over the arms with ``<x, gamma> <= limit``, by rays: along ``u_k``
        the largest feasible scale is ``min(limit / <u_k, gamma>, cap_k)`` where
        ``<u_k, gamma> > 0`` (else ``cap_k``), and the origin (0) is feasible when
        ``limit >= 0`` (the ROFUL authors' optimum, which scans the rays alike)."""
        theta = as_vector("theta", theta, self.dim)
        gamma = as_vector("gamma", gamma, self.dim)
        limit = as_scalar("limit", limit)
        best = 0.0 if limit >= 0.0 else -np.inf
        for u, cap in zip(self.directions, self.caps, strict=True):
            g = float(u @ gamma)
            if g > 0.0:
                scale = min(limit / g, cap)
                if scale < 0.0:
                    continue
            elif limit < 0.0:
                continue  # the ray's feasible part starts away from the origin: not this model
            else:
                scale = cap
            best = max(best, scale * float(u @ theta))
        if not np.isfinite(best):
            raise ValueError(f"no arm of {self!r} meets <x, gamma> <= {limit!r}")
        return best

    # ----------------------------------------------------------------- exact bounds
    def bounding_box(self) -> tuple[np.ndarray, np.ndarray]:
        """Coordinate-wise extremes of the ends and the origin (exact: ``fl(s u_kj)`` is
        monotone in ``s``)."""
        return (np.minimum(self.endpoints.min(axis=0), 0.0),
                np.maximum(self.endpoints.max(axis=0), 0.0))

    def norm_bound(self) -> float:
        """The longest end's norm (about ``radius``), rounded up."""
        return self._norm

    def diameter_bound(self) -> float:
        """Twice :meth:`norm_bound`."""
        return 2.0 * self._norm

