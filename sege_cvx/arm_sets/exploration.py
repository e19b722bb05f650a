"""Exploratory arms for SEGE inside any convex arm set (paper eq. (U_t), generalized).

The paper draws ``U_t = x-bar + H^{1/2} zeta_t`` with ``zeta_t`` independent, zero-mean,
symmetric, ``||zeta_t|| = 1`` and ``Cov(zeta_t)`` positive definite.  Here ``U = c + B zeta`` with
``zeta`` uniform either

* on the unit sphere (``kind="sphere"``): ``U`` lies on the ellipsoid ``{c + B u : ||u|| = 1}``,
  which must be certified to lie inside the arm set, or
* on the ``2d`` points ``{+-e_i}`` (``kind="cross"``): ``U`` is a vertex of the cross-polytope
  ``conv{c +- B e_i}``; checking those ``2d`` vertices certifies it for *any* convex set.

Both have ``Cov(zeta) = I / d``, hence ``sigma^2 = lambda_min(Cov U) = lambda_min(B B^T) / d``.

The inscribed bodies are solved for with cvxpy, which the solving functions import: an ellipsoid
or a box, whose exploration body is a closed form, never loads it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .._numba import njit
from .._validation import as_finite_array, as_vector

if TYPE_CHECKING:
    import cvxpy as cp

KINDS = ("sphere", "cross")

#: Shrink factor applied to a solver's inscribed body before it is certified.
CERTIFY_SHRINK = 1.0 - 1e-7
#: Half-width, relative to the set's size (its bounding-box diagonal), below which an inscribed
#: cross-polytope means the interior is empty.
MIN_HALF_WIDTH = 1e-7
#: Smallest extent of a set, relative to ``max(1, |x|)`` over it, that its support programs can
#: resolve: Clarabel's tolerances are about 1e-8, absolute and relative, so the extent of a
#: smaller set is indistinguishable from solver noise.
MIN_SOLVER_SCALE = 1e-6


@dataclass(frozen=True)
class Exploration:
    """The distribution of SEGE's exploratory arms ``U = center + B zeta``.

    Parameters
    ----------
    center : ndarray, shape (d,)
    B : ndarray, shape (d, d)
        Nonsingular; for ``kind="sphere"`` the ellipsoid ``{center + B u : ||u|| <= 1}``.
    kind : {"sphere", "cross"}
    witnesses : ndarray, shape (2d, k), optional
        For a lifted arm set (:mod:`.lifted`), ``kind="cross"``: the witness of each vertex, in
        the order of :meth:`vertices`; a drawn vertex carries its own
        (:meth:`witness_points`).
    center_witness : ndarray, shape (k,), optional
        The centre's witness (given with ``witnesses``).

    Examples
    --------
    >>> import numpy as np
    >>> e = Exploration(np.zeros(2), np.diag([2.0, 1.0]), "cross")
    >>> e.sigma2, e.vertices() + 0.0
    (0.5, array([[ 2.,  0.],
           [ 0.,  1.],
           [-2.,  0.],
           [ 0., -1.]]))
    """

    center: np.ndarray
    B: np.ndarray
    kind: str
    witnesses: np.ndarray | None = None
    center_witness: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        center = as_vector("center", self.center)
        B = as_finite_array("B", self.B)
        d = center.shape[0]
        if B.shape != (d, d):
            raise ValueError(f"B must have shape ({d}, {d}), got {B.shape}")
        object.__setattr__(self, "center", center)  # frozen: store the validated arrays
        object.__setattr__(self, "B", np.ascontiguousarray(B))
        if self.sigma2 <= 0:
            raise ValueError("B must be nonsingular (sigma^2 = lambda_min(B B^T)/d must be > 0)")
        if (self.witnesses is None) != (self.center_witness is None):
            raise ValueError("witnesses and center_witness go together")
        if self.witnesses is not None:
            if self.kind != "cross":
                raise ValueError("witnesses are for kind='cross' (its 2d vertices)")
            W = as_finite_array("witnesses", self.witnesses)
            wc = as_vector("center_witness", self.center_witness)
            if W.shape != (2 * d, wc.shape[0]):
                raise ValueError(f"witnesses must have shape ({2 * d}, {wc.shape[0]}), got {W.shape}")
            object.__setattr__(self, "witnesses", np.ascontiguousarray(W))
            object.__setattr__(self, "center_witness", wc)

    @property
    def sigma2(self) -> float:
        """``lambda_min(Cov U) = lambda_min(B B^T) / d``."""
        return float(np.linalg.eigvalsh(self.B @ self.B.T)[0] / self.center.shape[0])

    def points(self, gaussians: np.ndarray) -> np.ndarray:
        """Map standard normal draws ``(n, d)`` to exploratory arms ``(n, d)``.

        ``sphere``: ``zeta = g / ||g||``.  ``cross``: ``zeta = sign(g_k) e_k`` with ``k`` the
        largest ``|g_k|``, uniform on ``{+-e_i}`` by the symmetry of i.i.d. normals.  Row by row
        (:func:`exploration_point`): a run's arm does not depend on the other rows.
        """
        return exploration_points(np.ascontiguousarray(gaussians, dtype=np.float64), self.center,
                                  self.B, self.kind == "cross")

    def vertex_indices(self, gaussians: np.ndarray) -> np.ndarray:
        """For ``kind="cross"``: the row of :meth:`witness_table` (the :meth:`vertices`, then the
        centre) that :meth:`points` draws from each row of ``gaussians``: ``k`` for ``+e_k``,
        ``d + k`` for ``-e_k``, ``2d`` for an all-zero draw (the centre); :func:`drawn_vertex`
        per row."""
        if self.kind != "cross":
            raise ValueError("vertex_indices is for kind='cross'")
        return _drawn_vertices(np.ascontiguousarray(gaussians, dtype=np.float64))

    def witness_points(self, gaussians: np.ndarray) -> np.ndarray:
        """The witnesses of :meth:`points` ``(gaussians)``: each drawn vertex's own, the centre's
        for an all-zero draw.  Shape ``(n, k)``; needs :attr:`witnesses`."""
        return self.witness_table()[self.vertex_indices(gaussians)]

    def witness_table(self) -> np.ndarray:
        """The vertices' witnesses then the centre's, shape ``(2d + 1, k)``; needs
        :attr:`witnesses`."""
        if self.witnesses is None:
            raise ValueError("this Exploration has no witnesses")
        return np.vstack([self.witnesses, self.center_witness])

    def vertices(self) -> np.ndarray:
        """The ``2d`` points ``center +- B e_i``: the support of ``U`` for ``kind="cross"``."""
        return self.center + np.vstack([self.B.T, -self.B.T])


@njit(inline="always")
def drawn_vertex(g) -> int:
    """The cross-polytope vertex that one run's normal draws ``g`` select, as a row of the
    table ``[+e_0, ..., +e_{d-1}, -e_0, ..., -e_{d-1}, centre]``: the first largest ``|g_k|``
    gives ``k`` (``g_k > 0``) or ``d + k`` (``g_k < 0``), an all-zero draw ``2d`` (the centre).
    The one choice behind :meth:`Exploration.vertex_indices`, :func:`exploration_point` and
    every geometry's exploration vertex."""
    d = g.shape[0]
    k = 0
    for j in range(1, d):
        if abs(g[j]) > abs(g[k]):
            k = j
    return k if g[k] > 0.0 else (d + k if g[k] < 0.0 else 2 * d)


@njit(inline="always")
def exploration_point(g, center, B, cross, out, zeta) -> None:
    """``out = center + B zeta`` for one run's normal draws ``g`` (see :meth:`Exploration.points`);
    ``zeta``: scratch of length d."""
    d = g.shape[0]
    if cross:
        vertex = drawn_vertex(g)
        zeta[:] = 0.0
        if vertex < d:
            zeta[vertex] = 1.0
        elif vertex < 2 * d:
            zeta[vertex - d] = -1.0
    else:
        norm2 = 0.0
        for j in range(d):
            norm2 += g[j] * g[j]
        norm = np.sqrt(norm2)
        for j in range(d):
            zeta[j] = g[j] / norm
    for j in range(d):
        acc = 0.0
        for k in range(d):
            acc += B[j, k] * zeta[k]
        out[j] = center[j] + acc


@njit
def _drawn_vertices(gaussians) -> np.ndarray:
    """:func:`drawn_vertex` per row."""
    out = np.empty(gaussians.shape[0], dtype=np.int64)
    for i in range(gaussians.shape[0]):
        out[i] = drawn_vertex(gaussians[i])
    return out


@njit
def exploration_points(gaussians, center, B, cross) -> np.ndarray:
    """:func:`exploration_point` per row."""
    n, d = gaussians.shape
    out = np.empty((n, d))
    zeta = np.empty(d)
    for i in range(n):
        exploration_point(gaussians[i], center, B, cross, out[i], zeta)
    return out


def max_volume_inscribed_ellipsoid(
    A: np.ndarray, b: np.ndarray, center: np.ndarray | None = None, scale: float = 1.0
) -> Exploration:
    """Maximum-volume ellipsoid ``{c + B u : ||u|| <= 1}`` inside ``{x : A x <= b}``.

    Solves ``max log det B`` s.t. ``||B a_i|| + a_i^T c <= b_i`` (Boyd & Vandenberghe, 8.4.2) on
    Clarabel, then scales ``B`` so that every inequality holds in floating point: the returned
    ellipsoid is certified to lie in the polytope.

    Parameters
    ----------
    A : ndarray, shape (m, d)
    b : ndarray, shape (m,)
    center : ndarray, shape (d,), optional
        A point near the middle of the polytope (default the origin) and
    scale : float, default 1
        its size: the program is solved for ``y = (x - center) / scale``, so that its data are
        of order one whatever the polytope's position and size (Clarabel's tolerances are
        absolute).  The certificate is checked in the original coordinates.

    Raises
    ------
    ValueError
        The program fails or no interior ellipsoid can be certified (the polytope has an empty
        interior at the solver's resolution).
    """
    import cvxpy as cp

    from ..conic.programs import solve_once

    d = A.shape[1]
    m = np.zeros(d) if center is None else np.asarray(center, dtype=np.float64)
    if not (np.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be positive and finite, got {scale!r}")
    b_scaled = (b - A @ m) / scale
    B, c = cp.Variable((d, d), PSD=True), cp.Variable(d)
    problem = cp.Problem(cp.Maximize(cp.log_det(B)),
                         [cp.norm(B @ A[i], 2) + A[i] @ c <= b_scaled[i] for i in range(A.shape[0])])
    solve_once(problem, B, "maximum-volume inscribed ellipsoid program",
               ": the polytope may have an empty interior")
    Bv, cv = scale * 0.5 * (B.value + B.value.T), m + scale * np.asarray(c.value)
    slack = b - A @ cv
    if not np.all(slack > 0):
        raise ValueError("the polytope has an empty interior (no strictly interior centre)")
    reach = np.linalg.norm(A @ Bv, axis=1)
    shrink = CERTIFY_SHRINK * min(1.0, float(np.min(slack / np.maximum(reach, 1e-300))))
    return Exploration(cv, shrink * Bv, "sphere")


def inscribed_cross_polytope(
    dim: int,
    constraints: Callable[[cp.Expression], list],
    contains: Callable[..., bool],
    frame: tuple[np.ndarray, float] | None = None,
    size: float = 1.0,
    certify: Callable[[np.ndarray, np.ndarray, float], tuple[bool, np.ndarray]] | None = None,
    find_witness: Callable[[np.ndarray], np.ndarray] | None = None,
) -> Exploration:
    """An axis-aligned cross-polytope ``conv{c +- t_i e_i}`` inside a convex set.

    Maximizes the geometric mean of ``t`` subject to all ``2d`` vertices satisfying the set's
    constraints, then certifies: each vertex is checked with ``contains(v, tol=0)``; if the
    solver's point is infeasible by rounding, ``t`` shrinks until every vertex passes.  The set
    being convex, the whole cross-polytope then lies inside it.

    For a lifted set (``certify`` given) each vertex's constraints create their own auxiliary
    variables, whose values are that vertex's witness.  The centre's witness is found by
    ``find_witness(c)``, a solve that ends in the relative interior of the centre's witnesses
    (the mean of the vertices' witnesses would not do: a constraint active at every vertex, as
    ``t <= 1.5`` in an epigraph, would be active there too, leaving pull-ins toward the centre
    no room).  Shrinking a vertex toward the centre shrinks its witness toward the centre's;
    each pair is checked with ``certify(x, u, 0.0)``.

    Parameters
    ----------
    dim : int
    constraints : callable
        ``constraints(x)`` for a cvxpy expression ``x`` of shape ``(dim,)``.
    contains : callable
        ``contains(points, tol=0.0)``, exact membership (unused when ``certify`` is given).
    frame : (mid, s), optional
        Solve for ``c = mid + s c'``, ``t = s t'`` so that the program's variables are of order
        one (Clarabel's tolerances are absolute); default ``(0, 1)``, the set's own coordinates.
    size : float, default 1
        The set's size (e.g. its bounding-box diagonal): a half-width below
        :data:`MIN_HALF_WIDTH` times ``size`` means an empty interior.
    certify : callable, optional
        ``certify(x, u, tol) -> (bool, u)`` for a lifted set
        (:meth:`~sege_cvx.arm_sets.lifted.LiftedMembership.certify`); the result then carries
        witnesses.
    find_witness : callable, optional
        ``find_witness(x) -> u`` (with ``certify``).

    Raises
    ------
    ValueError
        The interior is empty at the solver's resolution, or no cross-polytope can be certified.
    """
    import cvxpy as cp

    from ..conic.programs import auxiliary_variables, solve_once
    from .lifted import flat_values

    mid, s = (np.zeros(dim), 1.0) if frame is None else frame
    c, t = cp.Variable(dim), cp.Variable(dim, nonneg=True)
    eye = np.eye(dim)
    cons, per_vertex = [], {}
    for i in range(dim):
        for row, sign in ((i, 1.0), (dim + i, -1.0)):  # rows in the order of vertices()
            vertex = c + sign * t[i] * eye[i]
            per_vertex[row] = constraints(vertex if frame is None else mid + s * vertex)
            cons += per_vertex[row]
    problem = cp.Problem(cp.Maximize(cp.geo_mean(t)), cons)
    solve_once(problem, t, "inscribed cross-polytope program",
               ": the set may have an empty interior, or be numerically ill-posed (data far "
               "from order one, such as points far from the origin for their spread: rescale)")
    cv = mid + s * np.asarray(c.value)
    tv = s * np.maximum(np.asarray(t.value), 0.0)
    if not np.all(np.isfinite(cv)) or not tv.min() > MIN_HALF_WIDTH * size:
        raise ValueError(f"the set has an empty interior (inscribed cross-polytope half-widths "
                         f"{tv}, below {MIN_HALF_WIDTH:g} times the set's size {size:.3g})")
    if certify is not None:
        W = np.array([flat_values(auxiliary_variables(per_vertex[row], [c, t]))
                      for row in range(2 * dim)])
        return _certified_lifted_cross(cv, tv, certify, W, find_witness(cv))
    if not contains(cv, tol=0.0):
        raise ValueError("could not certify the centre of the inscribed cross-polytope")
    for _ in range(60):
        tv = CERTIFY_SHRINK * tv
        expl = Exploration(cv, np.diag(tv), "cross")
        if np.all(contains(expl.vertices(), tol=0.0)):
            return expl
        tv = tv * 0.999
    raise ValueError("could not certify an inscribed cross-polytope")


def _certified_lifted_cross(cv: np.ndarray, tv: np.ndarray, certify, W: np.ndarray,
                            wc: np.ndarray) -> Exploration:
    """:func:`inscribed_cross_polytope`'s certification for a lifted set: the solver's vertices
    ``cv +- tv_i e_i`` have witnesses ``W`` (rows in the order of :meth:`Exploration.vertices`),
    the centre ``wc``."""
    ok, wc = certify(cv, wc, 0.0)
    if not ok:
        raise ValueError("could not certify the centre of the inscribed cross-polytope")
    scale = 1.0
    for _ in range(60):
        scale *= CERTIFY_SHRINK
        verts = cv + np.vstack([np.diag(scale * tv), -np.diag(scale * tv)])
        witnesses = wc + scale * (W - wc)
        checked = [certify(v, w, 0.0) for v, w in zip(verts, witnesses, strict=True)]
        if all(good for good, _ in checked):
            return Exploration(cv, np.diag(scale * tv), "cross",
                               np.array([w for _, w in checked]), wc)
        scale *= 0.999
    raise ValueError("could not certify an inscribed cross-polytope")
