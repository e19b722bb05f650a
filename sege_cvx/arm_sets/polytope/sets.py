"""Polyhedral arm sets: boxes and bounded polytopes ``{x : A x <= b}``.

cvxpy is imported only where a program is built (a polytope's certificates at construction,
the solver programs of either).
"""

from __future__ import annotations

import math
import warnings
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from ..._rowwise import row_matvec
from ..._validation import as_finite_array, as_vector, format_value, scaled_norm
from .. import rational
from ..base import ArmSet, BatchArms, check_resolvable
from ..exploration import Exploration, max_volume_inscribed_ellipsoid
from ..kernels import exact
from ..kernels.pull_in import pull_into_polytope
from ..scaling import check_box_holds, scale_directions, solver_frame
from . import arms as polytope_arms

if TYPE_CHECKING:
    import cvxpy as cp

#: Chebyshev radius, relative to the polytope's size (its bounding-box diagonal), below which
#: a polytope is said to have an empty interior.
MIN_INTERIOR_RADIUS = 1e-9
#: Farthest a face may lie from the origin (``|b_i| / ||a_i||``): the programs that certify a
#: polytope (Clarabel, tolerances near 1e-8) bound a box of half-width 1e14 right and one of
#: 1e16 wrong (reported unbounded), measured on the square ``|x_i| <= r``.
MAX_FACE_DISTANCE = 1e12
#: Most vertices the upper bound theorem allows (:func:`max_vertex_count`) for which the
#: vertices are enumerated: qhull's work and the checks grow with the count.
VERTEX_BUDGET = 100_000
#: Most vertices kept (beyond, the pairwise distances cost more than they save).
VERTEX_MAX_COUNT = 5000
#: Tolerance of the vertex checks, relative to the polytope's size and distance from 0.
VERTEX_TOL = 1e-9
#: Relative widening of the vertex bounds (diameter, distance): far above the checks' tolerance.
VERTEX_MARGIN = 1e-6


def max_vertex_count(m: int, d: int) -> int:
    """The most vertices a ``d``-polytope with ``m`` facets can have (McMullen's upper bound
    theorem: the facets of the cyclic polytope ``C(m, d)``, in the dual)."""
    return (math.comb(m - (d + 1) // 2, d // 2)
            + math.comb(m - d // 2 - 1, (d + 1) // 2 - 1))


def pairwise_diameter(points: np.ndarray) -> float:
    """The largest distance between rows of ``points`` (halved first: no overflow)."""
    half = 0.5 * points
    best = 0.0
    for start in range(0, half.shape[0], 256):
        diff = half[start:start + 256, None, :] - half[None, :, :]
        best = max(best, float(np.max(scaled_norm(diff.reshape(-1, half.shape[1]), axis=1))))
    return 2.0 * best


def _closed(facets: np.ndarray, neighbors: np.ndarray) -> bool:
    """Whether qhull's triangulated facets close up: neighbour ``j`` of every facet holds all its
    points but the ``j``-th, and has the facet among its own neighbours."""
    F, d = facets.shape
    if np.any(neighbors < 0) or np.any(neighbors >= F):
        return False
    expected = ~np.eye(d, dtype=bool)
    for start in range(0, F, 8192):  # bounded memory: chunks of (8192, d, d, d) booleans
        f = slice(start, min(start + 8192, F))
        nb = neighbors[f]
        shared = (facets[f][:, None, :, None] == facets[nb][:, :, None, :]).any(axis=-1)
        back = (neighbors[nb] == np.arange(start, f.stop)[:, None, None]).any(axis=-1)
        if not (np.all(shared == expected) and back.all()):
            return False
    return True


def checked_vertices(polytope: Polytope, interior: np.ndarray) -> tuple[np.ndarray | None, str]:
    """The vertices of ``polytope``, enumerated and checked, or ``None`` and why not (see
    :meth:`Polytope.diameter_bound`).

    In coordinates centred at the interior point ``c`` the polytope is ``{v : a_i^T v <= b_i'}``
    with ``b_i' = b_i - a_i^T c > 0``; its vertices are the facets of the convex hull of the
    dual points ``q_i = a_i / b_i'`` (qhull: ``m`` points, cheap), each the solution of its
    facet's ``d`` rows.  Two checks make the list complete and correct to tolerance: every
    vertex satisfies every row (each facet hyperplane supports the dual hull), and the facets,
    as triangulated, close up (each ridge shared by exactly two facets, neighbours symmetric): a
    closed surface of supporting facets is the whole boundary, so no vertex is missing.
    """
    from scipy.spatial import ConvexHull as QhullHull
    from scipy.spatial import QhullError

    m, d = polytope.A.shape
    if d < 2:
        return None, "dimension 1"
    count = max_vertex_count(m, d)
    if count > VERTEX_BUDGET:
        return None, f"up to {count} vertices, beyond the budget of {VERTEX_BUDGET}"
    A = polytope.A
    slack = polytope.b - A @ interior
    if not np.all(slack > 0):
        return None, "the interior point is not strictly inside"
    try:
        dual = QhullHull(A / slack[:, None])
    except (QhullError, ValueError) as exc:
        return None, f"qhull failed ({type(exc).__name__})"
    facets, neighbors = dual.simplices, dual.neighbors
    if facets.shape[0] > 2 * VERTEX_BUDGET:
        return None, f"{facets.shape[0]} facets in the dual hull"
    if not _closed(facets, neighbors):
        return None, "the dual hull is not closed"
    with np.errstate(all="ignore"):
        try:
            offsets = np.linalg.solve(A[facets], slack[facets][..., None])[..., 0]
        except np.linalg.LinAlgError:
            return None, "a facet's rows are singular"
    vertices = np.unique(interior + offsets, axis=0)
    if not np.all(np.isfinite(vertices)) or not d + 1 <= len(vertices) <= VERTEX_MAX_COUNT:
        return None, f"{len(vertices)} vertices"
    lo, hi = polytope.bounding_box()
    scale = float(np.max(np.maximum(np.abs(lo), np.abs(hi)))) + float(np.max(hi - lo))
    if np.max(vertices @ A.T - polytope.b) > VERTEX_TOL * scale:  # every vertex in P
        return None, "a vertex fails the inequalities"
    return vertices, ""


class _CertifiedPolyhedron(ArmSet):
    """Greedy and LCB arms of a set ``{x : A x <= b}`` by the certified active-set solves of
    :mod:`sege_cvx.arm_sets.polytope.arms`, with Clarabel behind them.

    ``lcb_arm(method="closed_form")`` (and ``"auto"``) solves each instance from a cold start;
    an instance whose certificate fails is reported as ``"NotCertified"`` with
    ``"closed_form"``, and solved on Clarabel with ``"auto"``.  ``method="solver"`` is Clarabel
    alone, and ``cross_check=True`` compares the two.  SEGE's compiled stages call the same
    functions, warm started per run (:attr:`compiled_arms`).  Subclasses give
    :meth:`_halfspaces` and :meth:`_member_rows`.
    """

    def _halfspaces(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(center, A, b)``: a certified interior point and the rows, of unit norm."""
        raise NotImplementedError

    def _given_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """``(A, b)`` as the user gave them: membership is decided against these, exactly."""
        raise NotImplementedError

    @cached_property
    def _member_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:func:`~sege_cvx.arm_sets.kernels.exact.membership_rows` of :meth:`_given_rows`."""
        return exact.membership_rows(*self._given_rows())

    @cached_property
    def compiled_arms(self) -> polytope_arms.PolytopeArms:
        """The data of the compiled certified arms (see :class:`ArmSet`)."""
        center, A, b = self._halfspaces()
        # The bounding box's distance bound: certified, and it enumerates no vertices.
        return polytope_arms.PolytopeArms(A, b, center, self.norm_bound(),
                                          ArmSet.distance_bound(self, center), self._member_rows)

    def _pull_in(self, points: np.ndarray) -> np.ndarray:
        return pull_into_polytope(points, self._halfspaces()[0], self._member_rows)

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
        self.lower = as_vector("lower", lower).copy()  # copies: the caller's may change
        self.dim = self.lower.shape[0]
        self.upper = as_vector("upper", upper, self.dim).copy()
        bad = np.flatnonzero(~(self.lower < self.upper))
        if bad.size:
            i = bad[0]
            raise ValueError(f"Box needs lower < upper in every coordinate; coordinate {i} has "
                             f"lower={self.lower[i]}, upper={self.upper[i]}")
        # SEGE and CLUCB need both bounds; a box beyond the float range is rejected here.
        size = self.diameter_bound()
        self.norm_bound()
        # What a Polytope of the same rows accepts: an extent the solver resolves, and an
        # inscribed ball (radius the smallest half-width) not negligible against the size.
        check_resolvable(self, self.lower, self.upper)
        radius = float(np.min(0.5 * self.upper - 0.5 * self.lower))
        if not radius >= MIN_INTERIOR_RADIUS * size:
            raise ValueError(f"{self!r} has an empty interior (largest inscribed ball radius "
                             f"{radius:.3g}, below {MIN_INTERIOR_RADIUS:g} times its size "
                             f"{size:.3g})")

    def __repr__(self) -> str:
        return f"Box(lower={format_value(self.lower)}, upper={format_value(self.upper)})"

    def fingerprint_data(self) -> dict:
        """The bounds (see :meth:`ArmSet.fingerprint_data`)."""
        return {"kind": "box", "lower": self.lower, "upper": self.upper}

    def constraints(self, x: cp.Variable) -> list:
        return [x >= self.lower, x <= self.upper]

    def _inside(self, xs: np.ndarray, tol: float) -> np.ndarray:
        # Comparisons of floats are exact: with tol = 0 this is exact membership.
        return np.all((xs >= self.lower - tol) & (xs <= self.upper + tol), axis=1)

    def _halfspaces(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self._as_polytope

    def _given_rows(self) -> tuple[np.ndarray, np.ndarray]:
        return self._as_polytope[1:]

    @cached_property
    def _as_polytope(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The exploration centre and the box as ``A x <= b`` with ``A = [I; -I]``,
        ``b = [upper; -lower]``: exactly the box (each ``(A x)_j`` is ``x_j`` or ``-x_j``, and
        negation is exact), so the exact test of these rows agrees with :meth:`contains`."""
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

    Membership is decided against ``A`` and ``b`` as given, in exact arithmetic on their float64
    values (:attr:`A_given`, :attr:`b_given`): ``contains(x, tol=0)`` is exactly whether
    ``A x <= b`` holds for the rationals these floats are, and every arm a policy plays or a
    method returns passes that test (:mod:`sege_cvx.arm_sets.kernels.exact`).  The unit rows serve
    the solvers and ``contains`` with ``tol > 0``.

    Attributes
    ----------
    A : ndarray, shape (m, d)
        The rows ``a_i / ||a_i||``.
    b : ndarray, shape (m,)
        ``b_i / ||a_i||``: the distance of each facet's hyperplane from the origin, signed.
    A_given, b_given : ndarray
        ``A`` and ``b`` as given (float64), against which membership is decided exactly.
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
        far = np.abs(b_unit)
        if far.max() > MAX_FACE_DISTANCE:
            i = int(np.argmax(far))
            raise ValueError(f"inequality {i} of A x <= b lies {far[i]:.3g} from the origin "
                             f"(|b[{i}]| / ||A[{i}]||), beyond {MAX_FACE_DISTANCE:g}, the farthest "
                             "the programs that certify a polytope (Clarabel's) resolve: rescale "
                             "the problem (other units for the arms)")
        self.A, self.b = A / row_norms[:, None], b_unit
        # Copies: the caller's arrays may change after the set is built.
        self.A_given, self.b_given = np.array(A, order="C"), np.array(b)
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
        if not self.contains(self.chebyshev_center, tol=0.0):
            raise ValueError(f"{self!r}: the Chebyshev centre {format_value(self.chebyshev_center)} fails "
                             "A x <= b in exact arithmetic; the polytope is too thin for its "
                             "data's precision")

    def __repr__(self) -> str:
        return f"Polytope(A x <= b: {self.A.shape[0]} inequalities in dimension {self.dim})"

    def fingerprint_data(self) -> dict:
        """The inequalities as given (see :meth:`ArmSet.fingerprint_data`)."""
        return {"kind": "polytope", "A": self.A_given, "b": self.b_given}

    def _chebyshev_ball(self) -> tuple[np.ndarray, float]:
        import cvxpy as cp

        from ...conic.programs import solve_once

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
            expl = max_volume_inscribed_ellipsoid(self.A, self.b)
        else:
            expl = max_volume_inscribed_ellipsoid(self.A, self.b, center=frame[0], scale=frame[1])
        # Its centre is the pull-in's: it must satisfy the given rows exactly.
        if not self.contains(expl.center, tol=0.0):
            raise ValueError(f"{self!r}: the inscribed ellipsoid's centre fails A x <= b in exact "
                             "arithmetic; the polytope is too thin for its data's precision")
        return expl

    def _contains_ellipsoid(self, center: np.ndarray, B: np.ndarray) -> bool:
        # max over the ellipsoid of a_i^T x is a_i^T center + ||B^T a_i||.
        return bool(np.all(self.A @ center + scaled_norm(self.A @ B, axis=1) <= self.b))

    def _inside(self, xs: np.ndarray, tol: float) -> np.ndarray:
        """``tol = 0``: ``A x <= b`` exactly, on the given rows.  ``tol > 0``: each unit row within
        ``tol`` (a distance), or exactly inside."""
        xs = np.ascontiguousarray(xs, dtype=np.float64)
        if tol == 0.0:
            return rational.polytope_contains(self._member_rows, xs)
        inside = np.all(row_matvec(xs, self.A) <= self.b + tol, axis=1)
        if not inside.all():
            rest = np.flatnonzero(~inside)
            inside[rest] = rational.polytope_contains(self._member_rows, xs[rest])
        return inside

    def _given_rows(self) -> tuple[np.ndarray, np.ndarray]:
        return self.A_given, self.b_given

    def _halfspaces(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.exploration().center, self.A, self.b

    # ----------------------------------------------------------------- vertex bounds
    @cached_property
    def _vertices(self) -> np.ndarray | None:
        """The polytope's vertices, checked (see :meth:`diameter_bound`), or ``None`` where
        they are not enumerated (then a one-line warning says why)."""
        vertices, reason = checked_vertices(self, self.chebyshev_center)
        if vertices is None and reason != "dimension 1":
            warnings.warn(f"{self!r}: vertices not enumerated ({reason}); its diameter and "
                          "distance bounds are its bounding box's, up to sqrt(d/2) times looser",
                          RuntimeWarning, stacklevel=4)
        return vertices

    def diameter_bound(self) -> float:
        """Certified upper bound on ``max_{x, y in X} ||x - y||`` (SEGE's rho-bar).

        The largest distance between the vertices (:func:`checked_vertices`: the facets of the
        dual hull from the Chebyshev centre, each vertex within ``VERTEX_TOL`` of the
        polytope's scale of every inequality, the list closed), widened by ``VERTEX_MARGIN``
        (relative), far above that tolerance.  This is the exact diameter up to that margin,
        where the bounding-box diagonal overstates it by up to ``sqrt(d / 2)`` (a simplex).
        The work is bounded: vertices are enumerated only where the upper bound theorem allows
        at most :data:`VERTEX_BUDGET` of them (:func:`max_vertex_count`; in 8 dimensions,
        polytopes of up to about 40 facets).  Otherwise, or should a check fail, the
        bounding-box diagonal, with a one-line ``RuntimeWarning`` saying why.
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
        :mod:`~sege_cvx.arm_sets.polytope.arms`, from a cold start per instance); an
        uncertified instance is solved on Clarabel."""
        thetas = scale_directions(thetas)
        arms, codes = polytope_arms.greedy_all(self.compiled_arms.geometry(), thetas)
        return self._certified_or_solved(
            arms, codes, np.empty((arms.shape[0], 0)), "auto",
            lambda rows: super(Polytope, self).greedy_arm_batch(thetas[rows]))
