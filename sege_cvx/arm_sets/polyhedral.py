"""Polyhedral arm sets: boxes and bounded polytopes ``{x : A x <= b}``."""

from __future__ import annotations

from functools import cached_property

import cvxpy as cp
import numpy as np

from .._rowwise import row_matvec
from .._validation import as_finite_array, as_vector
from .base import ArmSet
from .exploration import Exploration, max_volume_inscribed_ellipsoid

#: Chebyshev radius below which a polytope is said to have an empty interior.
MIN_INTERIOR_RADIUS = 1e-9


class Box(ArmSet):
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

    def __repr__(self) -> str:
        return f"Box(lower={self.lower!r}, upper={self.upper!r})"

    def constraints(self, x: cp.Variable) -> list:
        return [x >= self.lower, x <= self.upper]

    def _inside(self, xs: np.ndarray, tol: float) -> np.ndarray:
        return np.all((xs >= self.lower - tol) & (xs <= self.upper + tol), axis=1)

    def _greedy_closed_form(self, thetas: np.ndarray) -> np.ndarray:
        # Coordinate-wise maximization; a zero coordinate of theta leaves every value optimal.
        mid = 0.5 * (self.lower + self.upper)
        return np.where(thetas > 0, self.upper, np.where(thetas < 0, self.lower, mid))

    def bounding_box(self) -> tuple[np.ndarray, np.ndarray]:
        return self.lower.copy(), self.upper.copy()

    def exploration(self) -> Exploration:
        """The maximum-volume inscribed ellipsoid: centre the midpoint, semi-axes the half-widths
        (``|x_i - m_i| = h_i |zeta_i| <= h_i`` on it)."""
        half = 0.5 * (self.upper - self.lower)
        return Exploration(0.5 * (self.lower + self.upper), np.diag(half), "sphere")

    def _contains_ellipsoid(self, center: np.ndarray, B: np.ndarray) -> bool:
        reach = np.linalg.norm(B, axis=1)  # max_u |(B u)_i| = ||row i of B||
        return bool(np.all(center - reach >= self.lower) and np.all(center + reach <= self.upper))


class Polytope(ArmSet):
    """The polytope ``{x : A x <= b}``; must be bounded with a nonempty interior.

    Both properties are checked at construction by convex programs on Clarabel: ``2d``
    linear programs for boundedness (they also give :meth:`bounding_box`) and the Chebyshev
    ball (largest inscribed ball) for the interior.

    Parameters
    ----------
    A : array_like, shape (m, d)
    b : array_like, shape (m,)

    Attributes
    ----------
    chebyshev_center : ndarray, shape (d,)
    chebyshev_radius : float

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
        self.A = A
        self.dim = A.shape[1]
        self.b = as_vector("b", b, A.shape[0])
        row_norms = np.linalg.norm(A, axis=1)
        if np.any(row_norms == 0):
            raise ValueError(f"A has an all-zero row (row {int(np.argmin(row_norms))})")
        self.bounding_box()  # raises ValueError if empty or unbounded
        self.chebyshev_center, self.chebyshev_radius = self._chebyshev_ball(row_norms)
        if self.chebyshev_radius < MIN_INTERIOR_RADIUS:
            raise ValueError("Polytope has an empty interior (largest inscribed ball radius "
                             f"{self.chebyshev_radius:.3g})")

    def __repr__(self) -> str:
        return f"Polytope({self.A.shape[0]} inequalities in dimension {self.dim})"

    def _chebyshev_ball(self, row_norms: np.ndarray) -> tuple[np.ndarray, float]:
        x, r = cp.Variable(self.dim), cp.Variable()
        problem = cp.Problem(cp.Maximize(r), [self.A @ x + r * row_norms <= self.b])
        problem.solve(solver=cp.CLARABEL)
        if problem.status != cp.OPTIMAL:
            raise ValueError(f"Chebyshev-ball program for the polytope ended {problem.status}")
        return np.asarray(x.value), float(r.value)

    def constraints(self, x: cp.Variable) -> list:
        return [self.A @ x <= self.b]

    def exploration(self) -> Exploration:
        """The maximum-volume inscribed ellipsoid (certified; see
        :func:`~sege_cvx.arm_sets.exploration.max_volume_inscribed_ellipsoid`)."""
        return self._mve

    @cached_property
    def _mve(self) -> Exploration:
        return max_volume_inscribed_ellipsoid(self.A, self.b)

    def _contains_ellipsoid(self, center: np.ndarray, B: np.ndarray) -> bool:
        # max over the ellipsoid of a_i^T x is a_i^T center + ||B^T a_i||.
        return bool(np.all(self.A @ center + np.linalg.norm(self.A @ B, axis=1) <= self.b))

    def _inside(self, xs: np.ndarray, tol: float) -> np.ndarray:
        return np.all(row_matvec(np.ascontiguousarray(xs), self.A) <= self.b + tol, axis=1)
