"""Ellipsoids (the paper's arm set, eq. (ellipsoid)) and Euclidean balls.

Their arms, bounds and exploration are closed forms: cvxpy is imported only by
:meth:`Ellipsoid.constraints`, for the solver programs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..._validation import as_scalar, as_vector, scaled_norm
from ...confidence.validation import as_spd_matrix
from ..base import ArmSet
from ..exploration import Exploration
from . import arms as fast

if TYPE_CHECKING:
    import cvxpy as cp


class Ellipsoid(ArmSet):
    """``{x : (x - c)^T H^{-1} (x - c) <= 1}`` with ``H`` symmetric positive definite (eq. (1)).

    Parameters
    ----------
    center : array_like, shape (d,)
        The centre ``c`` (the paper's ``x-bar``).
    shape : array_like, shape (d, d)
        The shape matrix ``H``.

    Attributes
    ----------
    dim : int
    center : ndarray, shape (d,)
    shape : ndarray, shape (d, d)
    shape_sqrt : ndarray, shape (d, d)
        The symmetric square root ``H^{1/2}``.

    Examples
    --------
    >>> import numpy as np
    >>> disk = Ellipsoid(center=[1.0, 1.0], shape=np.eye(2))
    >>> disk.greedy_arm(np.array([0.6, 0.8]))
    array([1.6, 1.8])
    >>> round(disk.diameter_bound(), 12)
    2.0
    """

    def __init__(self, center: np.ndarray, shape: np.ndarray) -> None:
        self.center = as_vector("center", center).copy()  # copies: the caller's may change
        self.dim = self.center.shape[0]
        self.shape = as_spd_matrix("shape", shape, self.dim).copy()
        self._eig = np.linalg.eigvalsh(self.shape)
        #: The data of the compiled per-point arms (:mod:`sege_cvx.arm_sets.ellipsoid.arms`),
        #: which the batched methods below and SEGE's compiled stages share.
        self.compiled_arms = fast.EllipsoidArms(self.center, self.shape)
        self.shape_sqrt = self.compiled_arms.h_sqrt
        self._shape_inv_sqrt = self.compiled_arms.h_inv_sqrt
        if not np.isfinite(self.norm_bound()):
            raise ValueError(f"center and shape give max ||x|| beyond the float range "
                             f"(||center|| = {scaled_norm(self.center):.3g}): rescale the problem")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(center={self.center!r}, shape={self.shape!r})"

    def fingerprint_data(self) -> dict:
        """The centre and shape matrix (see :meth:`ArmSet.fingerprint_data`)."""
        return {"kind": "ellipsoid", "center": self.center, "shape": self.shape}

    def constraints(self, x: cp.Variable) -> list:
        import cvxpy as cp

        return [cp.norm(self._shape_inv_sqrt @ (x - self.center), 2) <= 1]

    def _inside(self, xs: np.ndarray, tol: float) -> np.ndarray:
        return fast.inside_all(np.ascontiguousarray(xs, dtype=np.float64), self.center,
                                  self._shape_inv_sqrt, tol)

    def gauge(self, xs: np.ndarray) -> np.ndarray:
        """``||x - c||_{H^{-1}}`` for each row: <= 1 exactly on the set."""
        return fast.gauge_all(np.ascontiguousarray(xs, dtype=np.float64), self.center,
                                 self._shape_inv_sqrt)

    def _pull_in(self, points: np.ndarray) -> np.ndarray:
        # The schedule of ArmSet.pull_inside toward the centre, compiled per point
        # (fast.pull_inside_one, also called by SEGE's compiled stages).
        return fast.pull_inside_all(points, self.center, self._shape_inv_sqrt)

    @property
    def has_closed_form_greedy(self) -> bool:
        return True

    def _greedy_closed_form(self, thetas: np.ndarray) -> np.ndarray:
        # X^CE = x-bar + H theta / ||theta||_H (paper eq. (greedy arm)); theta = 0: the centre.
        return fast.greedy_all(np.ascontiguousarray(thetas, dtype=np.float64), self.center,
                                  self.shape, self._shape_inv_sqrt)

    @property
    def has_closed_form_lcb(self) -> bool:
        return True

    def _lcb_closed_form(self, thetas: np.ndarray, chols: np.ndarray,
                         radii: np.ndarray) -> np.ndarray:
        arms, _ = fast.lcb_from_factor_all(*self.compiled_arms.lcb_data(), thetas, chols, radii)
        return arms

    def exploration(self) -> Exploration:
        """The set itself: the paper's ``U_t = x-bar + H^{1/2} zeta_t``, ``zeta_t`` on the sphere."""
        return Exploration(self.center, self.shape_sqrt, "sphere")

    def _contains_ellipsoid(self, center: np.ndarray, B: np.ndarray) -> bool:
        # sup_u ||H^{-1/2}(center + B u - c)|| <= ||H^{-1/2}(center - c)|| + ||H^{-1/2} B||_2.
        offset = np.linalg.norm(self._shape_inv_sqrt @ (center - self.center))
        return bool(offset + np.linalg.norm(self._shape_inv_sqrt @ B, 2) <= 1.0)

    def norm_bound(self) -> float:
        """``||c|| + sqrt(lambda_max(H))`` (from paper eq. (step 2)); exact when ``c`` lies along
        a top eigenvector of ``H`` (e.g. any ball)."""
        return float(scaled_norm(self.center) + np.sqrt(self._eig[-1]))

    def distance_bound(self, point: np.ndarray) -> float:
        """``||c - point|| + sqrt(lambda_max(H))`` (the triangle inequality; exact for a ball)."""
        return float(scaled_norm(self.center - np.asarray(point, dtype=np.float64))
                     + np.sqrt(self._eig[-1]))

    def diameter_bound(self) -> float:
        """Exact diameter ``2 sqrt(lambda_max(H))`` (the paper's term in rho-bar, eq. (rho bar))."""
        return float(2.0 * np.sqrt(self._eig[-1]))

    def bounding_box(self) -> tuple[np.ndarray, np.ndarray]:
        half = np.sqrt(np.diag(self.shape))
        return self.center - half, self.center + half


class Ball(Ellipsoid):
    """Euclidean ball ``{x : ||x - c|| <= radius}``, an :class:`Ellipsoid` with ``H = radius^2 I``.

    Examples
    --------
    >>> Ball(center=[1.0, 1.0], radius=1.0).contains([1.6, 1.8])
    True
    """

    def __init__(self, center: np.ndarray, radius: float) -> None:
        center = as_vector("center", center)
        self.radius = as_scalar("radius", radius, low=0.0, low_open=True)
        squared = self.radius * self.radius
        if not np.finfo(float).tiny <= squared < np.inf:
            raise ValueError(f"radius must have a square within the float range "
                             f"({np.finfo(float).tiny:.3g} to {np.finfo(float).max:.3g}), got "
                             f"{self.radius!r}: rescale the problem")
        super().__init__(center, squared * np.eye(center.shape[0]))

    def __repr__(self) -> str:
        return f"Ball(center={self.center!r}, radius={self.radius!r})"
