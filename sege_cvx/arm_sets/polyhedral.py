"""Polyhedral arm sets: boxes and bounded polytopes ``{x : A x <= b}``.

cvxpy is imported only where a program is built (a polytope's certificates at construction,
the solver programs of either).
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from .. import _pull_in
from .._rowwise import row_dots, row_matvec
from .._validation import _fmt, as_finite_array, as_vector, scaled_norm
from ..fast_paths import polytope_arms
from ..fast_paths.status import VERIFIED
from .base import ArmSet, BatchArms
from .exploration import Exploration, max_volume_inscribed_ellipsoid
from .scaling import check_box_holds, scale_directions, solver_frame

if TYPE_CHECKING:
    import cvxpy as cp

#: Chebyshev radius, relative to the polytope's size (its bounding-box diagonal), below which
#: a polytope is said to have an empty interior.
MIN_INTERIOR_RADIUS = 1e-9
#: Largest dimension in which a polytope's vertices are enumerated (qhull's cost grows fast).
VERTEX_MAX_DIM = 8
#: Most vertices kept (beyond, the pairwise distances cost more than they save).
VERTEX_MAX_COUNT = 5000
#: Tolerance of the vertex checks, relative to the polytope's size and distance from 0.
VERTEX_TOL = 1e-9
#: Relative widening of the vertex bounds (diameter, distance): far above the checks' tolerance.
VERTEX_MARGIN = 1e-6


def pairwise_diameter(points: np.ndarray) -> float:
    """The largest distance between rows of ``points`` (halved first: no overflow)."""
    half = 0.5 * points
    best = 0.0
    for start in range(0, half.shape[0], 256):
        diff = half[start:start + 256, None, :] - half[None, :, :]
        best = max(best, float(np.max(scaled_norm(diff.reshape(-1, half.shape[1]), axis=1))))
    return 2.0 * best


def checked_vertices(polytope: Polytope, interior: np.ndarray) -> np.ndarray | None:
    """The vertices of ``polytope`` by qhull, or ``None`` if not enumerated or not checked
    (see :meth:`Polytope.diameter_bound`)."""
    from scipy.spatial import ConvexHull as QhullHull
    from scipy.spatial import HalfspaceIntersection, QhullError

    d = polytope.dim
    if d > VERTEX_MAX_DIM or d < 2:
        return None
    try:
        # qhull's halfspaces are rows [a, -b] of a x - b <= 0.
        halfspaces = np.hstack([polytope.A, -polytope.b[:, None]])
        vertices = HalfspaceIntersection(halfspaces, interior).intersections
        vertices = np.unique(vertices, axis=0)
        if not np.all(np.isfinite(vertices)) or not d + 1 <= len(vertices) <= VERTEX_MAX_COUNT:
            return None
        hull = QhullHull(vertices)
    except (QhullError, ValueError):
        return None
    lo, hi = polytope.bounding_box()
    scale = float(np.max(np.maximum(np.abs(lo), np.abs(hi)))) + float(np.max(hi - lo))
    tol = VERTEX_TOL * scale
    if np.max(vertices @ polytope.A.T - polytope.b) > tol:  # each vertex in the polytope
        return None
    normals = np.ascontiguousarray(hull.equations[:, :-1])  # unit normals, n x + offset <= 0
    # The polytope in their hull: its support in each normal, bounded from above by a certified
    # arm's value plus the certificate's accepted gap (GAP_RTOL times about norm_bound + |b|_1;
    # both far below tol).  No solver fallback: its value is a lower bound only to tolerance.
    arms, codes = polytope_arms.greedy_all(polytope.compiled_arms.geometry(), normals)
    if np.any(codes != VERIFIED):
        return None
    gap = polytope_arms.GAP_RTOL * (polytope.norm_bound() + np.abs(polytope.b).sum())
    support = row_dots(arms, normals)
    if np.max(support + hull.equations[:, -1]) > tol - gap:
        return None
    return vertices


class _CertifiedPolyhedron(ArmSet):
    """Greedy and LCB arms of a set ``{x : A x <= b}`` by the certified active-set solves of
    :mod:`sege_cvx.fast_paths.polytope_arms`, with Clarabel behind them.

    ``lcb_arm(method="closed_form")`` (and ``"auto"``) solves each instance from a cold start;
    an instance whose certificate fails is reported as ``"NotCertified"`` with
    ``"closed_form"``, and solved on Clarabel with ``"auto"``.  ``method="solver"`` is Clarabel
    alone, and ``cross_check=True`` compares the two.  SEGE's compiled stages call the same
    functions, warm started per run (:attr:`compiled_arms`).  Subclasses give
    :meth:`_halfspaces`.
    """

    def _halfspaces(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(center, A, b)``: a certified interior point and the rows, of unit norm."""
        raise NotImplementedError

    @cached_property
    def compiled_arms(self) -> polytope_arms.PolytopeArms:
        """The data of the compiled certified arms (see :class:`ArmSet`)."""
        center, A, b = self._halfspaces()
        return polytope_arms.PolytopeArms(A, b, center, self.norm_bound())

    @property
    def has_closed_form_lcb(self) -> bool:
        return True

    def lcb_arm_batch(self, thetas: np.ndarray, chols: np.ndarray, radii: np.ndarray,
                      method: str = "auto") -> BatchArms:
        """Certified active-set LCB arms (see the class docstring); ``"solver"``: Clarabel."""
        if method == "solver":
            return super().lcb_arm_batch(thetas, chols, radii, "solver")
        arms, codes = polytope_arms.lcb_all(
            self.compiled_arms.geometry(), np.ascontiguousarray(thetas, dtype=np.float64),
            np.ascontiguousarray(chols, dtype=np.float64),
            np.ascontiguousarray(radii, dtype=np.float64))
        return self._certified_or_solved(
            arms, codes, np.empty((arms.shape[0], 0)), method,
            lambda rows: super(_CertifiedPolyhedron, self).lcb_arm_batch(
                thetas[rows], chols[rows], radii[rows], "solver"))


class Box(_CertifiedPolyhedron):
    """The box ``{x : lower <= x <= upper}`` with ``lower < upper`` coordinate-wise.

    Parameters
    ----------
    lower, upper : array_like, shape (d,)

    Examples
    --------
    >>> box = Box(lower=[0.0, 0.0], upper=[1.0, 2.0])
    >>> box.greedy_arm([1.0, -1.0])
    array([1., 0.])
    >>> round(box.diameter_bound(), 6)
    2.236068
    """

    def __init__(self, lower: np.ndarray, upper: np.ndarray) -> None:
        self.lower = as_vector("lower", lower)
        self.dim = self.lower.shape[0]
        self.upper = as_vector("upper", upper, self.dim)
        bad = np.flatnonzero(~(self.lower < self.upper))
        if bad.size:
            i = bad[0]
            raise ValueError(f"Box needs lower < upper in every coordinate; coordinate {i} has "
                             f"lower={self.lower[i]}, upper={self.upper[i]}")
        # SEGE and CLUCB need both bounds; a box beyond the float range is rejected here.
        self.diameter_bound()
        self.norm_bound()

    def __repr__(self) -> str:
        return f"Box(lower={_fmt(self.lower)}, upper={_fmt(self.upper)})"

    def fingerprint_data(self) -> dict:
        """The bounds (see :meth:`ArmSet.fingerprint_data`)."""
        return {"kind": "box", "lower": self.lower, "upper": self.upper}

    def constraints(self, x: cp.Variable) -> list:
        return [x >= self.lower, x <= self.upper]

    def _inside(self, xs: np.ndarray, tol: float) -> np.ndarray:
        return np.all((xs >= self.lower - tol) & (xs <= self.upper + tol), axis=1)

    def _pull_in(self, points: np.ndarray) -> np.ndarray:
        return _pull_in.pull_into_polytope(points, *self._as_polytope)

    def _halfspaces(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self._as_polytope

    @property
    def compiled_membership(self) -> tuple:
        """``[I; -I] x <= [upper; -lower]`` toward the midpoint (see :class:`ArmSet`)."""
        center, A, b = self._as_polytope
        return center, (1, A, b)

    @cached_property
    def _as_polytope(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The exploration centre and the box as ``A x <= b`` with ``A = [I; -I]``,
        ``b = [upper; -lower]``: the same verdicts as :meth:`contains` with ``tol=0`` (each
        ``(A x)_j`` is exactly ``x_j`` or ``-x_j``, and negation is exact)."""
        eye = np.eye(self.dim)
        return (0.5 * self.lower + 0.5 * self.upper, np.vstack([eye, -eye]),
                np.concatenate([self.upper, -self.lower]))

    @property
    def has_closed_form_greedy(self) -> bool:
        return True

    def _greedy_closed_form(self, thetas: np.ndarray) -> np.ndarray:
        # Coordinate-wise maximization; a zero coordinate of theta leaves every value optimal.
        # Halves first: lower + upper may overflow where the midpoint does not.
        mid = 0.5 * self.lower + 0.5 * self.upper
        return np.where(thetas > 0, self.upper, np.where(thetas < 0, self.lower, mid))

    def bounding_box(self) -> tuple[np.ndarray, np.ndarray]:
        return self.lower.copy(), self.upper.copy()

    def exploration(self) -> Exploration:
        """The maximum-volume inscribed ellipsoid: centre the midpoint, semi-axes the half-widths
        (``|x_i - m_i| = h_i |zeta_i| <= h_i`` on it)."""
        half = 0.5 * self.upper - 0.5 * self.lower
        # Cov(U) = diag(half^2) / d: its entries, and their ratio (the eigenvalue solver scales
        # by the largest), must be representable for sigma^2 to mean anything; extreme widths
        # (below ~1e-154 or above ~1e154, or ratios beyond ~1e154) are not.
        with np.errstate(over="ignore", under="ignore"):
            squares = half**2
            ratio = (half.max() / half.min()) ** 2
        if not (np.all(np.isfinite(squares)) and squares.min() / self.dim > 0
                and np.isfinite(ratio)):
            raise ValueError(f"the exploration covariance diag(half-widths^2) / d of {self!r} is "
                             f"not representable in floating point (half-widths from "
                             f"{half.min():.3g} to {half.max():.3g}): rescale the problem")
        return Exploration(0.5 * self.lower + 0.5 * self.upper, np.diag(half), "sphere")

    def _contains_ellipsoid(self, center: np.ndarray, B: np.ndarray) -> bool:
        reach = scaled_norm(B, axis=1)  # max_u |(B u)_i| = ||row i of B||
        return bool(np.all(center - reach >= self.lower) and np.all(center + reach <= self.upper))


class Polytope(_CertifiedPolyhedron):
    """The polytope ``{x : A x <= b}``; must be bounded with a nonempty interior.

    Each inequality is first divided by ``||a_i||`` (the same set), so that every check below
    is independent of how the rows were scaled.  Boundedness and nonemptiness are checked at
    construction by ``2d`` linear programs on Clarabel (they also give :meth:`bounding_box`),
    the interior by the Chebyshev ball (largest inscribed ball), solved in coordinates
    centred and scaled by that box where needed (:func:`solver_frame`), whose radius must be at
    least :data:`MIN_INTERIOR_RADIUS` times the box's diagonal.

    Parameters
    ----------
    A : array_like, shape (m, d)
        No zero row.
    b : array_like, shape (m,)

    Attributes
    ----------
    A : ndarray, shape (m, d)
        The rows ``a_i / ||a_i||``.
    b : ndarray, shape (m,)
        ``b_i / ||a_i||``: the distance of each facet's hyperplane from the origin, signed.
    chebyshev_center : ndarray, shape (d,)
    chebyshev_radius : float
        ``min_i (b_i - a_i^T c)`` at the centre ``c``: the radius of a ball about ``c`` inside
        the polytope.

    Raises
    ------
    ValueError
        Malformed ``A`` or ``b``, or a polytope that is empty, unbounded, has an empty interior,
        or is too small (relative to its distance from the origin) for the solver's tolerances.

    Examples
    --------
    >>> import numpy as np
    >>> simplex = Polytope(A=np.vstack([-np.eye(2), np.ones((1, 2))]), b=[0.0, 0.0, 1.0])
    >>> np.round(simplex.greedy_arm([1.0, 2.0]), 6)
    array([0., 1.])
    """

    def __init__(self, A: np.ndarray, b: np.ndarray) -> None:
        A = as_finite_array("A", A)
        if A.ndim != 2 or A.shape[0] == 0 or A.shape[1] == 0:
            raise ValueError(f"A must be a nonempty (m, d) matrix, got shape {A.shape}")
        self.dim = A.shape[1]
        b = as_vector("b", b, A.shape[0])
        row_norms = scaled_norm(A, axis=1)  # no spurious overflow or underflow of tiny rows
        if np.any(row_norms == 0):
            raise ValueError(f"A has an all-zero row (row {int(np.argmin(row_norms))})")
        with np.errstate(over="ignore"):
            b_unit = b / row_norms
        if not np.all(np.isfinite(b_unit)):
            i = int(np.flatnonzero(~np.isfinite(b_unit))[0])
            raise ValueError(f"inequality {i} of A x <= b, divided by ||A[{i}]|| = "
                             f"{row_norms[i]:.3g}, has b[{i}] / ||A[{i}]|| beyond the float range "
                             f"(b[{i}] = {b[i]:.3g}): rescale A and b")
        self.A, self.b = A / row_norms[:, None], b_unit
        self.bounding_box()  # raises ValueError if empty, unbounded or too small to certify
        size = ArmSet.diameter_bound(self)  # the box's diagonal; raises if not representable
        self.norm_bound()
        self.chebyshev_center, self.chebyshev_radius = self._chebyshev_ball()
        if not self.chebyshev_radius >= MIN_INTERIOR_RADIUS * size:
            raise ValueError("Polytope A x <= b has an empty interior (largest inscribed ball "
                             f"radius {self.chebyshev_radius:.3g}, below {MIN_INTERIOR_RADIUS:g} "
                             f"times its size {size:.3g})")
        # The inscribed ball's axis points are in the polytope (up to rounding, which the
        # box's margin covers): the box must hold them.
        tips = self.chebyshev_center + self.chebyshev_radius * np.vstack([np.eye(self.dim),
                                                                         -np.eye(self.dim)])
        check_box_holds(self, tips)

    def __repr__(self) -> str:
        return f"Polytope(A x <= b: {self.A.shape[0]} inequalities in dimension {self.dim})"

    def fingerprint_data(self) -> dict:
        """The inequalities as kept, rows scaled to unit norm (see :meth:`ArmSet.fingerprint_data`)."""
        return {"kind": "polytope", "A": self.A, "b": self.b}

    def _chebyshev_ball(self) -> tuple[np.ndarray, float]:
        import cvxpy as cp

        from ..conic.programs import solve_once

        frame = solver_frame(*self.bounding_box())
        mid, s = (np.zeros(self.dim), 1.0) if frame is None else frame
        y, r = cp.Variable(self.dim), cp.Variable()
        # Rows have unit norm: a_i^T (mid + s y) + s r <= b_i, divided by s.
        problem = cp.Problem(cp.Maximize(r), [self.A @ y + r <= (self.b - self.A @ mid) / s])
        solve_once(problem, y, "Chebyshev-ball program for the polytope A x <= b")
        center = mid + s * np.asarray(y.value)
        # The radius actually achieved at this centre, in floating point (rows have unit norm).
        return center, float(np.min(self.b - self.A @ center))

    def constraints(self, x: cp.Variable) -> list:
        return [self.A @ x <= self.b]

    def exploration(self) -> Exploration:
        """The maximum-volume inscribed ellipsoid (certified; see
        :func:`~sege_cvx.arm_sets.exploration.max_volume_inscribed_ellipsoid`)."""
        return self._mve

    @cached_property
    def _mve(self) -> Exploration:
        frame = solver_frame(*self.bounding_box())
        if frame is None:
            return max_volume_inscribed_ellipsoid(self.A, self.b)
        return max_volume_inscribed_ellipsoid(self.A, self.b, center=frame[0], scale=frame[1])

    def _contains_ellipsoid(self, center: np.ndarray, B: np.ndarray) -> bool:
        # max over the ellipsoid of a_i^T x is a_i^T center + ||B^T a_i||.
        return bool(np.all(self.A @ center + scaled_norm(self.A @ B, axis=1) <= self.b))

    def _inside(self, xs: np.ndarray, tol: float) -> np.ndarray:
        return np.all(row_matvec(np.ascontiguousarray(xs), self.A) <= self.b + tol, axis=1)

    def _pull_in(self, points: np.ndarray) -> np.ndarray:
        return _pull_in.pull_into_polytope(points, *self._polytope_membership)

    @property
    def compiled_membership(self) -> tuple:
        """``A x <= b`` toward the exploration centre (see :class:`ArmSet`)."""
        center, A, b = self._polytope_membership
        return center, (1, A, b)

    @property
    def _polytope_membership(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.exploration().center, self.A, self.b

    def _halfspaces(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self._polytope_membership

    # ----------------------------------------------------------------- vertex bounds
    @cached_property
    def _vertices(self) -> np.ndarray | None:
        """The polytope's vertices, checked (see :meth:`diameter_bound`), or ``None`` where
        they are not enumerated (``d > VERTEX_MAX_DIM``, too many, or a check failed)."""
        return checked_vertices(self, self.chebyshev_center)

    def diameter_bound(self) -> float:
        """Certified upper bound on ``max_{x, y in X} ||x - y||`` (SEGE's rho-bar).

        In dimension ``d <= VERTEX_MAX_DIM`` (8): the largest distance between the vertices,
        enumerated by qhull (``scipy.spatial.HalfspaceIntersection`` from the Chebyshev centre)
        and checked: each lies in the polytope to within ``VERTEX_TOL`` of its scale, and the
        polytope lies in their hull (its certified support value in the normal of every facet
        of their hull exceeds the hull's by at most ``VERTEX_TOL``); widened by
        ``VERTEX_MARGIN`` (relative), far above those tolerances.  This is the exact diameter
        up to that margin, where the bounding-box diagonal overstates it by up to ``sqrt(d /
        2)`` (a simplex).  Otherwise, or should a check fail: the bounding-box diagonal.
        """
        if self._vertices is None:
            return super().diameter_bound()
        return pairwise_diameter(self._vertices) * (1.0 + VERTEX_MARGIN)

    def distance_bound(self, point: np.ndarray) -> float:
        """Certified upper bound on ``max_{x in X} ||x - point||`` (ROFUL's radius): the largest
        distance from ``point`` to a checked vertex, widened as :meth:`diameter_bound`; else
        the farthest corner of the bounding box."""
        if self._vertices is None:
            return super().distance_bound(point)
        p = np.asarray(point, dtype=np.float64)
        return float(np.max(scaled_norm(self._vertices - p, axis=1))) * (1.0 + VERTEX_MARGIN)

    def greedy_arm_batch(self, thetas: np.ndarray) -> BatchArms:
        """Certified greedy arms (the simplex method of
        :mod:`~sege_cvx.fast_paths.polytope_arms`, from a cold start per instance); an
        uncertified instance is solved on Clarabel."""
        thetas = scale_directions(thetas)
        arms, codes = polytope_arms.greedy_all(self.compiled_arms.geometry(), thetas)
        return self._certified_or_solved(
            arms, codes, np.empty((arms.shape[0], 0)), "auto",
            lambda rows: super(Polytope, self).greedy_arm_batch(thetas[rows]))
