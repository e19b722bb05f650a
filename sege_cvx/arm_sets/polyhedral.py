"""Polyhedral arm sets: boxes and bounded polytopes ``{x : A x <= b}``."""

from __future__ import annotations

from functools import cached_property

import cvxpy as cp
import numpy as np

from .._validation import _fmt, as_finite_array, as_vector, scaled_norm
from .base import ArmSet, BatchArms
from .exploration import Exploration, max_volume_inscribed_ellipsoid

#: Chebyshev radius, relative to the polytope's size (its bounding-box diagonal), below which
#: a polytope is said to have an empty interior.
MIN_INTERIOR_RADIUS = 1e-9


def check_box_holds(arm_set: ArmSet, verified: np.ndarray) -> None:
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


class WellScaledSolves:
    """Mixin for arm sets whose greedy or LCB arms come from Clarabel: each instance's data are
    scaled to order one before it is solved, since Clarabel's tolerances are absolute (a
    ``theta`` of norm 1e8 otherwise ends ``MaxIterations``, or ``DualInfeasible`` on a box).

    The arms are unchanged: ``argmax <x, theta>`` is invariant under ``theta -> theta / k`` and
    ``argmax <x, theta> - r ||x||_{V^{-1}}`` under ``(theta, r) -> (theta, r) / k`` and
    ``(V^{-1}, r) -> (V^{-1} / c, r sqrt(c))``.  ``k`` and ``c`` are powers of two, so the
    scaling is exact (no rounding, hence the same bits whether an instance is solved alone or
    in a batch) and never overflows; data within ``2^+-ORDER_ONE`` of 1 are left as they are.
    """

    #: Binary exponents within which data count as of order one and are solved as given (so
    #: that well-scaled problems keep exactly the solver path they would have without this).
    ORDER_ONE = 8

    @classmethod
    def _exponent(cls, e: np.ndarray) -> np.ndarray:
        return np.where(np.abs(e) <= cls.ORDER_ONE, 0, e)

    def greedy_arm_batch(self, thetas: np.ndarray) -> BatchArms:
        _, exponent = np.frexp(np.max(np.abs(thetas), axis=1))
        return super().greedy_arm_batch(np.ldexp(thetas, -self._exponent(exponent)[:, None]))

    def lcb_arm_batch(self, thetas: np.ndarray, V_inv: np.ndarray, radii: np.ndarray,
                      method: str = "auto") -> BatchArms:
        if method == "closed_form" or (method == "auto" and self.has_closed_form_lcb):
            return super().lcb_arm_batch(thetas, V_inv, radii, method)
        # V^{-1} / 4^m with 4^m near its largest entry; then ||x||_{V^{-1}} = 2^m ||P^T x||.
        _, v_exp = np.frexp(np.max(np.abs(V_inv), axis=(1, 2)))
        m = self._exponent(v_exp // 2)
        V_c = np.ldexp(V_inv, -2 * m[:, None, None])
        # One power of two k = 2^e for both theta and r 2^m, from the larger of the two, in
        # integer exponents so that r 2^m itself is never formed (it may overflow).
        _, t_exp = np.frexp(np.max(np.abs(thetas), axis=1))
        _, r_exp = np.frexp(radii)
        e = np.maximum(np.where(np.any(thetas != 0, axis=1), t_exp, np.iinfo(np.int32).min),
                       np.where(radii > 0, r_exp + m, np.iinfo(np.int32).min))
        e = self._exponent(np.where(e == np.iinfo(np.int32).min, 0, e))  # 0 for theta = r = 0
        thetas_k = np.ldexp(thetas, -e[:, None])
        radii_k = np.ldexp(radii, m - e)
        try:
            P = np.linalg.cholesky(V_c)
        except np.linalg.LinAlgError:
            # V^{-1} positive definite only up to rounding (condition number near 1 / eps): any
            # factor P P^T = V^{-1} / 4^m serves; eigenvalues below 0 are rounding.
            eig, Q = np.linalg.eigh(V_c)
            P = Q * np.sqrt(np.maximum(eig, 0.0))[:, None, :]
        # M = (r 2^m / k) P^T, so that ||M x|| = r ||x||_{V^{-1}} / k (see conic.programs).
        factors = np.swapaxes(P, 1, 2) * radii_k[:, None, None]
        return self._solve_each(self._lcb_program, thetas_k, factors)


class Box(WellScaledSolves, ArmSet):
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

    def constraints(self, x: cp.Variable) -> list:
        return [x >= self.lower, x <= self.upper]

    def _inside(self, xs: np.ndarray, tol: float) -> np.ndarray:
        return np.all((xs >= self.lower - tol) & (xs <= self.upper + tol), axis=1)

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


class Polytope(WellScaledSolves, ArmSet):
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
        self.diameter_bound()  # raises ValueError if not representable
        self.norm_bound()
        self.chebyshev_center, self.chebyshev_radius = self._chebyshev_ball()
        size = self.diameter_bound()
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

    def _chebyshev_ball(self) -> tuple[np.ndarray, float]:
        frame = solver_frame(*self.bounding_box())
        mid, s = (np.zeros(self.dim), 1.0) if frame is None else frame
        y, r = cp.Variable(self.dim), cp.Variable()
        # Rows have unit norm: a_i^T (mid + s y) + s r <= b_i, divided by s.
        problem = cp.Problem(cp.Maximize(r), [self.A @ y + r <= (self.b - self.A @ mid) / s])
        try:
            problem.solve(solver=cp.CLARABEL)
        except cp.error.SolverError:
            pass  # reported below through the status
        if problem.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or y.value is None:
            raise ValueError("Chebyshev-ball program for the polytope A x <= b ended "
                             f"{problem.status}")
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
        return np.all(xs @ self.A.T <= self.b + tol, axis=1)
