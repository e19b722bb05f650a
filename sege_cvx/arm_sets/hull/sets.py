"""The convex hull of finitely many points, given by its vertices (no facet enumeration)."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from ..._rowwise import row_matvec
from ..._validation import as_batch_of_vectors, as_finite_array, format_value, scaled_norm
from .. import rational
from ..base import BatchArms
from ..exploration import Exploration
from ..generic import MAX_DIM, ConvexArmSet
from ..scaling import scale_directions
from . import arms as hull_arms

if TYPE_CHECKING:
    import cvxpy as cp

#: Rows of the pairwise-distance computation done at once (bounds its memory).
_DISTANCE_CHUNK = 256


class ConvexHull(ConvexArmSet):
    """``conv{p_1, ..., p_K}``: a polytope given by points, a lifted set with the weights as witness.

    Its constraints are ``x == P^T w, w >= 0, sum(w) == 1`` (``witness_dim = K``).  Greedy arms
    are closed form and exact: the best point itself (the first of ties), with the unit weight
    vector as witness, so CLUCB plays exact vertices; :meth:`support` is the exact best value
    among the points.  LCB arms come from a certified active-set method over the weights
    (:mod:`sege_cvx.arm_sets.hull.arms`; Clarabel where a certificate fails), which SEGE's
    compiled stages call warm started per run.

    Membership is exact: ``contains(x, tol=0)`` is whether ``x`` is a convex combination of the
    points in exact arithmetic on their float64 values (a point itself, by comparison; else
    decided on rational weights, :func:`~sege_cvx.arm_sets.rational.convex_weights`, from the
    weights of a small linear program), so the hull contains its own points.  Every arm a policy
    plays or a method returns is proven inside from the weights it was computed with
    (:func:`~sege_cvx.arm_sets.hull.arms.anchored`), after the least contraction toward the
    interior that the proof accepts; its witness is those weights, a certificate's anchor, not
    an exact convex combination.  :meth:`bounding_box` is the points' coordinate-wise range,
    :meth:`norm_bound` the largest point norm and :meth:`diameter_bound` the largest pairwise
    distance, each widened by a few ulps so that rounding cannot understate it.  SEGE explores on
    an inscribed cross-polytope whose vertices carry their weights.

    Duplicated and interior points are allowed (a witness is then one of many).

    Parameters
    ----------
    points : array_like, shape (K, d)
        Finite, ``K >= d + 1``, affinely spanning ``R^d``.

    Attributes
    ----------
    points : ndarray, shape (K, d)
    witness_dim : int
        ``K``.

    Raises
    ------
    ValueError
        Points not finite, of the wrong shape, or not spanning ``R^d`` (the hull would have an
        empty interior).

    Examples
    --------
    >>> import numpy as np
    >>> square = ConvexHull([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0], [2.0, 2.0], [1.0, 1.0]])
    >>> square.greedy_arm([1.0, -0.5])
    array([2., 0.])
    >>> square.greedy_arm_batch(np.array([[1.0, -0.5]])).witnesses
    array([[0., 1., 0., 0., 0.]])
    >>> bool(square.contains([1.5, 0.5])), bool(square.contains([2.5, 0.5]))
    (True, False)
    >>> triangle = ConvexHull([[0.1, 0.1], [0.7, 0.2], [0.3, 0.9]])
    >>> bool(triangle.contains([0.1, 0.1], tol=0.0))  # a hull contains its own points
    True
    """

    def __init__(self, points: np.ndarray) -> None:
        P = as_finite_array("points", points)
        if P.ndim != 2 or P.shape[1] == 0:
            raise ValueError(f"points must be a (K, d) array, got shape {P.shape}")
        K, d = P.shape
        if d > MAX_DIM:
            raise ValueError(f"dimension must be at most {MAX_DIM}, got {d}")
        if K < d + 1:
            raise ValueError(f"ConvexHull in dimension {d} needs at least d + 1 = {d + 1} points "
                             f"(a nonempty interior), got {K}")
        # Affine rank, each coordinate scaled so that the test depends on no coordinate's units
        # (one scale for all called [[0, 0], [1e30, 0], [0, 1]] a segment).
        spread = P - P.mean(axis=0)
        scale = np.max(np.abs(spread), axis=0)
        rank = np.linalg.matrix_rank(spread / np.where(scale > 0, scale, 1.0))
        if rank < d:
            raise ValueError(f"the points span an affine subspace of dimension {rank} only, not "
                             f"R^{d}: their convex hull has an empty interior")
        self.dim = d
        self.points = np.array(P, dtype=np.float64, order="C")  # a copy: the caller's may change
        self._certify_construction()

    def __repr__(self) -> str:
        return f"ConvexHull({self.points.shape[0]} points in dimension {self.dim})"

    def fingerprint_data(self) -> dict:
        """The points (see :meth:`ArmSet.fingerprint_data`)."""
        return {"kind": "convex hull", "points": self.points}

    def constraints(self, x: cp.Variable) -> list:
        import cvxpy as cp

        w = cp.Variable(self.points.shape[0], name="weights")
        return [x == self.points.T @ w, w >= 0, cp.sum(w) == 1]

    # ----------------------------------------------------------------- exact closed forms
    @property
    def has_closed_form_greedy(self) -> bool:
        return True

    def _greedy_index(self, thetas: np.ndarray) -> np.ndarray:
        # Row by row in index order (not BLAS): a run's choice never depends on the batch.
        return np.argmax(row_matvec(scale_directions(thetas), self.points), axis=1)

    def greedy_arm_batch(self, thetas: np.ndarray) -> BatchArms:
        """The best point per direction, exactly, with its unit weight vector as witness."""
        thetas = np.ascontiguousarray(thetas, dtype=np.float64)
        n = thetas.shape[0]
        index = self._greedy_index(thetas)
        arms = self.points[index]
        witnesses = np.zeros((n, self.points.shape[0]))
        witnesses[np.arange(n), index] = 1.0
        # A direction with NaN or inf has no best point: that instance fails.
        finite = np.isfinite(thetas).all(axis=1)
        arms[~finite], witnesses[~finite] = np.nan, np.nan
        status = ["closed_form" if good else "NotFinite" for good in finite]
        return self._verified(arms, status, witnesses)

    def support(self, theta: np.ndarray) -> np.ndarray | float:
        """``max_k <p_k, theta>``, exactly as the best point's value is computed (no solve)."""
        thetas, single = as_batch_of_vectors("theta", theta, self.dim)
        values = np.max(row_matvec(thetas, self.points), axis=1)
        if not np.all(np.isfinite(values)):
            raise ValueError(f"theta {format_value(thetas[~np.isfinite(values)][0])} gives a support value "
                             "beyond the float range: rescale the problem")
        return float(values[0]) if single else values

    @cached_property
    def compiled_arms(self) -> hull_arms.HullArms:
        """The data of the compiled certified arms (see :class:`ArmSet`)."""
        return hull_arms.HullArms(self.points, self.norm_bound(), self._body)

    @cached_property
    def _body(self) -> tuple[np.ndarray, np.ndarray]:
        """``(c, h)``: the cross-polytope ``{c + t : sum_i |t_i| / h_i <= 1}`` inside the hull, from
        which arms are certified (:func:`~sege_cvx.arm_sets.hull.arms.anchored`).

        ``c`` is the centre of the inscribed cross-polytope of :class:`ConvexArmSet` and ``h_i``
        the smaller offset of its two vertices on axis ``i``, rounded down: the centre and the
        vertices were certified in the hull in exact arithmetic, so the body's vertices, on the
        segments between them, are in it too.
        """
        cross = self._scaled_cross_polytope
        d = self.dim
        vertices = cross.vertices()
        up, down = np.diag(vertices[:d]), np.diag(vertices[d:])
        half = np.minimum(up - cross.center, cross.center - down) * (1.0 - 4.0 * _EPS)
        if not np.all(half > 0.0):
            raise ValueError(f"{self!r}: the certified inscribed cross-polytope is degenerate")
        return cross.center.copy(), half

    def exploration(self) -> Exploration:
        """SEGE's exploration: the certified cross-polytope of :meth:`_body` shrunk about its
        centre by :data:`EXPLORATION_SHRINK`, so that a mix with a drawn vertex is proven in the
        hull directly (:func:`~sege_cvx.arm_sets.hull.arms.pull_inside_one`); each vertex's
        weights are the same mix of the body's vertex's and the centre's."""
        return self._exploration

    @cached_property
    def _exploration(self) -> Exploration:
        cross = self._scaled_cross_polytope
        keep = 1.0 - EXPLORATION_SHRINK
        return Exploration(cross.center, keep * cross.B, "cross",
                           keep * cross.witnesses + EXPLORATION_SHRINK * cross.center_witness,
                           cross.center_witness)

    @property
    def has_closed_form_lcb(self) -> bool:
        return True

    def lcb_arm_batch(self, thetas: np.ndarray, chols: np.ndarray, radii: np.ndarray,
                      method: str = "auto") -> BatchArms:
        """Certified active-set LCB arms over the weights (:mod:`sege_cvx.arm_sets.hull.arms`),
        each from a cold start, with their weights as witnesses.

        An instance whose certificate fails is reported as ``"NotCertified"`` with
        ``method="closed_form"`` and solved on Clarabel with ``"auto"``; ``"solver"`` is
        Clarabel alone (``lcb_arm(..., cross_check=True)`` compares the two).  SEGE's compiled
        stages call the same functions, warm started per run.
        """
        if method == "solver":
            return super().lcb_arm_batch(thetas, chols, radii, "solver")
        arms, weights, codes = hull_arms.lcb_all(
            self.compiled_arms.geometry(), np.ascontiguousarray(thetas, dtype=np.float64),
            np.ascontiguousarray(chols, dtype=np.float64),
            np.ascontiguousarray(radii, dtype=np.float64))
        return self._certified_or_solved(
            arms, codes, weights, method,
            lambda rows: super(ConvexHull, self).lcb_arm_batch(
                thetas[rows], chols[rows], radii[rows], "solver"))

    def _certify_pair(self, x: np.ndarray, u: np.ndarray, tol: float) -> tuple[bool, np.ndarray]:
        """Whether ``x`` is in the hull, with weights ``u`` as a hint.

        ``tol = 0``: exactly (:meth:`_exact_weights`); the weights returned are then the exact
        ones, rounded to float.  ``tol > 0``: :meth:`LiftedMembership.certify
        <sege_cvx.arm_sets.lifted.LiftedMembership.certify>` of the hull's own constraints with
        that tolerance, compiled (:func:`~sege_cvx.arm_sets.hull.arms.certify_pair`): the
        same repair, equalities, rounding bound and inequality as cvxpy's evaluation.
        """
        if tol == 0.0:
            weights = self._exact_weights(np.asarray(x, dtype=np.float64), u)
            return (False, u) if weights is None else (True, weights)
        lifted = self._lifted
        ok, u = hull_arms.certify_pair(
            self.points, np.ascontiguousarray(x, dtype=np.float64),
            np.ascontiguousarray(u, dtype=np.float64), float(tol), lifted._pinv_u,
            lifted._abs_A, lifted._abs_beta, lifted._round)
        return bool(ok), u

    def _find_witnesses(self, points: np.ndarray) -> np.ndarray:
        """Weights per row: a point of the set itself gets its unit weight vector, any other a
        basic solution of ``P^T w = x, sum(w) = 1, w >= 0``
        (:func:`~sege_cvx.arm_sets.rational.basic_weights`: at most ``d + 1`` nonzero, none
        negative, as the certificates they anchor need); NaN rows where none is found."""
        out = np.full((points.shape[0], self.points.shape[0]), np.nan)
        for i, x in enumerate(points):
            if not np.all(np.isfinite(x)):
                continue
            k = self._point_index(x)
            if k >= 0:
                out[i] = 0.0
                out[i, k] = 1.0
                continue
            weights = rational.basic_weights(self.points, x)
            if weights is not None:
                out[i] = weights
        return out

    def _point_index(self, x: np.ndarray) -> int:
        """The first point equal to ``x`` bit for bit, or -1."""
        match = np.flatnonzero(np.all(self.points == x, axis=1))
        return int(match[0]) if match.size else -1

    def _exact_weights(self, x: np.ndarray, hint: np.ndarray | None = None) -> np.ndarray | None:
        """Weights proving ``x`` in the hull in exact arithmetic (rounded to float), or ``None``
        if it is not in it: a point itself, or outside the points' range, by comparison; an arm
        certified from the weights ``hint`` it came with
        (:func:`~sege_cvx.arm_sets.hull.arms.in_hull`, once the certified body is known); else
        :func:`~sege_cvx.arm_sets.rational.convex_weights` (a verified solve, or rationals)."""
        if not np.all(np.isfinite(x)):
            return None
        K = self.points.shape[0]
        k = self._point_index(x)
        if k >= 0:
            unit = np.zeros(K)
            unit[k] = 1.0
            return unit
        lo, hi = self.bounding_box()
        if np.any(x < lo) or np.any(x > hi):
            return None
        if hint is not None and "_body" in self.__dict__:  # not while the body is certified
            weights = np.ascontiguousarray(hint, dtype=np.float64)
            if np.all(weights >= 0.0) and hull_arms.in_hull_dense(x, self.points, weights,
                                                                   *self._body):
                return weights
        return rational.convex_weights(self.points, x)

    def _inside(self, xs: np.ndarray, tol: float) -> np.ndarray:
        """``tol = 0``: exact membership (:meth:`_exact_weights`).  ``tol > 0``: the lifted check
        with that tolerance (:class:`ConvexArmSet`), or exactly inside."""
        if tol > 0.0:
            inside = super()._inside(xs, tol)
            rest = np.flatnonzero(~inside)
        else:
            inside = np.zeros(xs.shape[0], dtype=bool)
            rest = range(xs.shape[0])
        for i in rest:
            inside[i] = self._exact_weights(xs[i]) is not None
        return inside

    def _pull_in_with(self, points: np.ndarray, witnesses: np.ndarray) -> np.ndarray:
        """Each row certified from its weights, or moved in by the least contraction the
        certificate accepts (:func:`~sege_cvx.arm_sets.hull.arms.pull_into_hull_all`), in
        place on both arrays: a moved row's weights become ``beta w + (1 - beta) w_c``."""
        center, half = self._body
        weights = np.where(np.isfinite(witnesses), np.maximum(witnesses, 0.0), np.nan)
        center_weights = np.maximum(self.exploration().center_witness, 0.0)
        ok = hull_arms.pull_into_hull_all(points, weights, self.points, center, half,
                                          center_weights)
        witnesses[:] = weights
        return ok

    def bounding_box(self) -> tuple[np.ndarray, np.ndarray]:
        return self.points.min(axis=0), self.points.max(axis=0)

    def norm_bound(self) -> float:
        """The largest point norm, widened by ``4 (d + 2)`` ulps (rounding of the norm)."""
        bound = float(np.max(scaled_norm(self.points, axis=1))) * (1.0 + 4.0 * (self.dim + 2) * _EPS)
        if not np.isfinite(bound):
            raise ValueError(f"norm bound of {self!r} is not representable: rescale the points")
        return bound

    def diameter_bound(self) -> float:
        """The largest pairwise distance, widened by ``4 (d + 2)`` ulps (rounding); computed once
        (``O(K^2)``)."""
        return self._diameter

    @cached_property
    def _diameter(self) -> float:
        P, best = 0.5 * self.points, 0.0  # halves: differences cannot overflow
        for start in range(0, P.shape[0], _DISTANCE_CHUNK):
            block = P[start:start + _DISTANCE_CHUNK]
            diff = block[:, None, :] - P[None, :, :]
            best = max(best, float(np.max(scaled_norm(diff.reshape(-1, self.dim), axis=1))))
        bound = 2.0 * best * (1.0 + 4.0 * (self.dim + 2) * _EPS)
        if not np.isfinite(bound):
            raise ValueError(f"diameter bound of {self!r} is not representable (points from "
                             f"{format_value(self.points.min(axis=0))} to "
                             f"{format_value(self.points.max(axis=0))}): rescale the points")
        return bound


_EPS = float(np.finfo(float).eps)
#: Relative shrink of the hull's exploration inside its certified cross-polytope (2^-20): the
#: margin that proves SEGE's mixes ``(1 - rho) X^S + rho U`` without contracting them.
EXPLORATION_SHRINK = 2.0**-20
