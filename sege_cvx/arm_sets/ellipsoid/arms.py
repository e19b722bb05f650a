r"""Compiled per-point arms of an ellipsoid ``E = {x : ||H^{-1/2}(x - c)|| <= 1}``.

The arm set's batched methods (:class:`sege_cvx.Ellipsoid`) and SEGE's compiled stages
(:mod:`sege_cvx.policies.sege_rule`) call these same functions, so an arm is the same number
whichever computed it:

* :func:`inside_one`: exact membership, ``||H^{-1/2}(x - c)|| <= 1 + tol``;
* :func:`pull_inside_one`: the least contraction toward ``c`` that passes it
  (:mod:`sege_cvx.arm_sets.kernels.pull_in`);
* :func:`greedy_one`: the greedy arm ``x-bar + H theta / ||theta||_H`` (paper eq. (greedy arm));
* :func:`lcb_from_factor_one`: the LCB arm (eq. (lcb arm), :mod:`.lcb`) from the
  Cholesky factor of ``V``, verified in ``E``.

Status codes: :mod:`sege_cvx.arm_sets.kernels.status`.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..._numba import njit
from ..._validation import SYMMETRY_RTOL
from ...confidence.cholesky import SPD_OK, checked_factor, precision_one
from ..kernels.pull_in import pull_in_one
from ..kernels.registry import GeometryKernels, register_geometry
from ..kernels.status import NOT_FINITE, NOT_MEMBER, VERIFIED
from ..scaling import order_one_exponent
from .lcb import lcb_arm_one, square_roots


class EllipsoidGeometry(NamedTuple):
    """An ellipsoid as compiled code reads it (:mod:`~sege_cvx.arm_sets.kernels.registry` dispatches on this
    class): ``c``, ``H``, ``H^{1/2}``, ``H^{-1/2}``, ``H^{-1/2} c`` and ``1 - ||H^{-1/2} c||^2``."""

    center: np.ndarray
    shape: np.ndarray
    h_sqrt: np.ndarray
    h_inv_sqrt: np.ndarray
    white_center: np.ndarray
    kappa: float


_EPS = float(np.finfo(np.float64).eps)
_TINY = float(np.finfo(np.float64).tiny)


@njit(inline="always")
def gauge_one(x, center, h_inv_sqrt) -> float:
    """``||H^{-1/2}(x - c)||``: at most 1 exactly on ``E``."""
    d = x.shape[0]
    acc = 0.0
    for j in range(d):
        s = 0.0
        for k in range(d):
            s += h_inv_sqrt[j, k] * (x[k] - center[k])
        acc += s * s
    return np.sqrt(acc)


@njit(inline="always")
def inside_one(x, center, h_inv_sqrt, tol) -> bool:
    """Whether ``x`` lies in ``E`` up to ``tol`` (False for NaN)."""
    return gauge_one(x, center, h_inv_sqrt) <= 1.0 + tol


@njit
def _inside_exactly(x, data) -> bool:
    """:func:`inside_one` with ``tol = 0``; ``data = (center, h_inv_sqrt)``."""
    return gauge_one(x, data[0], data[1]) <= 1.0


@njit(inline="always")
def pull_inside_one(x, center, h_inv_sqrt, offset, trial) -> bool:
    """Move ``x`` exactly into ``E`` by the least contraction toward ``c`` that passes
    :func:`inside_one` with ``tol = 0`` (:func:`sege_cvx.arm_sets.kernels.pull_in.pull_in_one`); False (``x``
    unchanged) if none up to the limit does.  ``offset``, ``trial``: scratch of length d."""
    return pull_in_one(x, center, _inside_exactly, (center, h_inv_sqrt), offset, trial)


@njit(inline="always")
def verify_one(x, center, h_inv_sqrt, offset, trial) -> int:
    """Status of a computed arm: finite and in ``E`` (after :func:`pull_inside_one`)."""
    for k in range(x.shape[0]):
        if not math.isfinite(x[k]):
            return NOT_FINITE
    return VERIFIED if pull_inside_one(x, center, h_inv_sqrt, offset, trial) else NOT_MEMBER


@njit(inline="always")
def greedy_one(theta, center, shape, h_inv_sqrt, out, work) -> None:
    """``out = c + H theta / ||theta||_H`` (paper eq. (greedy arm)); ``theta = 0``: the centre.

    ``theta`` is first scaled by a power of two near ``max |theta_i|`` (exact, and the arm is
    scale-invariant).  Rounding can leave the arm an ulp outside the gauge test; the step is
    scaled by its computed gauge (times ``1 - 4 eps``) so that it passes exactly.
    ``work``: scratch of shape (2, d).
    """
    d = theta.shape[0]
    biggest = 0.0
    for k in range(d):
        biggest = max(biggest, abs(theta[k]))
    e = order_one_exponent(biggest)
    scaled, step = work[0], work[1]
    for k in range(d):
        scaled[k] = math.ldexp(theta[k], -e) if e != 0 else theta[k]
    quad = 0.0
    for j in range(d):
        s = 0.0
        for k in range(d):
            s += shape[j, k] * scaled[k]
        step[j] = s
        quad += scaled[j] * s
    norm_h = np.sqrt(max(quad, 0.0))
    scale = 1.0 / norm_h if norm_h > 0.0 else 0.0
    for k in range(d):
        step[k] *= scale
    gauge = 0.0
    for j in range(d):
        s = 0.0
        for k in range(d):
            s += h_inv_sqrt[j, k] * step[k]
        gauge += s * s
    shrink = (1.0 - 4.0 * _EPS) / max(np.sqrt(gauge), 1.0)
    for k in range(d):
        out[k] = center[k] + step[k] * shrink


@njit
def lcb_from_factor_one(center, shape, h_sqrt, h_inv_sqrt, white_center, kappa, theta, chol,
                        r, out, mats, vecs) -> int:
    """The verified LCB arm of one instance into ``out``; returns its status.

    ``V^{-1} = L^{-T} L^{-1}`` from the Cholesky factor ``chol``; ``(theta, r)`` are scaled by
    a power of two near ``max(|theta|, r)`` (exact; the arm is unchanged) so that the closed
    form stays finite.  ``mats``: scratch (5, d, d); ``vecs``: scratch (14, d).
    """
    d = theta.shape[0]
    v_inv = mats[3]
    precision_one(chol, v_inv, mats[4], vecs[10], vecs[11])
    biggest = r  # the exponent of max(|theta_i|, r) is the larger of theirs
    for k in range(d):
        biggest = max(biggest, abs(theta[k]))
    e = order_one_exponent(biggest)
    scaled = vecs[12]
    for k in range(d):
        scaled[k] = math.ldexp(theta[k], -e) if e != 0 else theta[k]
    lcb_arm_one(center, shape, h_sqrt, h_inv_sqrt, white_center, kappa, scaled, v_inv,
                math.ldexp(r, -e) if e != 0 else r, False, out, mats[:3], vecs[:10])
    return verify_one(out, center, h_inv_sqrt, vecs[12], vecs[13])


@njit
def lcb_arm_checked(center, shape, h_sqrt, h_inv_sqrt, white_center, kappa, theta, V, r,
                    out) -> int:
    """A single public LCB-arm call, validated and computed in one compiled call.

    Checks what :meth:`ArmSet.lcb_arm` checks (finite ``theta``; ``r`` finite, nonnegative and
    not subnormal; ``V`` through :func:`~sege_cvx.confidence.cholesky.checked_factor`) and then
    computes the verified arm from the factor, exactly as the batched path does.  Returns
    :data:`VERIFIED` with the arm in ``out``, or a nonzero code: the caller then takes the
    batched path, which raises the precise error.
    """
    d = theta.shape[0]
    for k in range(d):
        if not math.isfinite(theta[k]):
            return NOT_FINITE
    if not (math.isfinite(r) and r >= 0.0) or 0.0 < r < _TINY:
        return NOT_FINITE
    sym = np.empty((d, d))
    chol = np.zeros((d, d))
    if checked_factor(V, SYMMETRY_RTOL, sym, chol, np.empty((d + 2, d))) != SPD_OK:
        return NOT_FINITE
    return lcb_from_factor_one(center, shape, h_sqrt, h_inv_sqrt, white_center, kappa, theta,
                               chol, r, out, np.empty((5, d, d)), np.empty((14, d)))


class EllipsoidArms:
    """An ellipsoid's data for the compiled per-point functions, computed once.

    Parameters
    ----------
    center : ndarray, shape (d,)
    shape : ndarray, shape (d, d)
        Symmetric positive definite ``H``.

    Attributes
    ----------
    center, shape, h_sqrt, h_inv_sqrt, white_center : ndarray
        ``c``, ``H``, ``H^{1/2}``, ``H^{-1/2}`` and ``H^{-1/2} c`` (C-contiguous float64).
    kappa : float
        ``1 - ||H^{-1/2} c||^2`` (>= 0 iff the origin lies in E).
    """

    def __init__(self, center: np.ndarray, shape: np.ndarray) -> None:
        self.center = np.ascontiguousarray(center, dtype=np.float64)
        self.shape = np.ascontiguousarray(shape, dtype=np.float64)
        self.h_sqrt, self.h_inv_sqrt = square_roots(self.shape)
        self.white_center = self.h_inv_sqrt @ self.center
        self.kappa = float(1.0 - self.white_center @ self.white_center)

    def lcb_data(self) -> tuple:
        """The arguments :func:`lcb_from_factor_one` takes before ``theta``."""
        return (self.center, self.shape, self.h_sqrt, self.h_inv_sqrt, self.white_center,
                self.kappa)

    def geometry(self, lam: float | None = None, anchors=None) -> EllipsoidGeometry:
        """What compiled stages receive (:mod:`~sege_cvx.arm_sets.kernels.registry`):
        :meth:`lcb_data` as a record (``lam`` and ``anchors`` are not needed)."""
        return EllipsoidGeometry(*self.lcb_data())

    def warm_state(self, n: int) -> tuple[np.ndarray, ...]:
        """An empty warm-start state for ``n`` runs: closed forms need none."""
        return (np.zeros((n, 2, 0), dtype=np.int64), np.zeros((n, 2), dtype=np.int64),
                np.zeros((n, 2, 0)), np.zeros((n, 0, 0)))

    def checked_lcb_arm(self, theta_hat: object, V: object, radius: object) -> np.ndarray | None:
        """The LCB arm of a single instance given as float64 arrays of shapes ``(d,)`` and
        ``(d, d)`` and a real radius, validated and computed in one compiled call
        (:func:`lcb_arm_checked`); ``None`` for any other input or any failure, which the
        caller's general path then handles (and reports)."""
        d = self.center.shape[0]
        if not (type(theta_hat) is np.ndarray and type(V) is np.ndarray
                and theta_hat.dtype == np.float64 and V.dtype == np.float64
                and theta_hat.shape == (d,) and V.shape == (d, d)
                and type(radius) in (float, np.float64)):
            return None
        out = np.empty(d)
        try:
            code = lcb_arm_checked(self.center, self.shape, self.h_sqrt, self.h_inv_sqrt,
                                   self.white_center, self.kappa, theta_hat, V, radius, out)
        except Exception:  # e.g. LAPACK's eigh (d > 2) on data that overflow inside
            return None  # the general path reports it, as a failed instance
        return out if code == VERIFIED else None


@njit
def inside_all(xs, center, h_inv_sqrt, tol) -> np.ndarray:
    """:func:`inside_one` per row."""
    out = np.empty(xs.shape[0], dtype=np.bool_)
    for i in range(xs.shape[0]):
        out[i] = inside_one(xs[i], center, h_inv_sqrt, tol)
    return out


@njit
def gauge_all(xs, center, h_inv_sqrt) -> np.ndarray:
    """:func:`gauge_one` per row."""
    out = np.empty(xs.shape[0])
    for i in range(xs.shape[0]):
        out[i] = gauge_one(xs[i], center, h_inv_sqrt)
    return out


@njit
def pull_inside_all(xs, center, h_inv_sqrt) -> np.ndarray:
    """:func:`pull_inside_one` per row, in place; returns which rows are now inside."""
    n, d = xs.shape
    ok = np.empty(n, dtype=np.bool_)
    scratch = np.empty((2, d))
    for i in range(n):
        ok[i] = pull_inside_one(xs[i], center, h_inv_sqrt, scratch[0], scratch[1])
    return ok


@njit
def greedy_all(thetas, center, shape, h_inv_sqrt) -> np.ndarray:
    """:func:`greedy_one` per row (unverified)."""
    n, d = thetas.shape
    out = np.empty((n, d))
    work = np.empty((2, d))
    for i in range(n):
        greedy_one(thetas[i], center, shape, h_inv_sqrt, out[i], work)
    return out


@njit
def lcb_from_factor_all(center, shape, h_sqrt, h_inv_sqrt, white_center, kappa, thetas, chols,
                        radii):
    """:func:`lcb_from_factor_one` per row: arms and status codes (the arm is as computed where
    the status is not :data:`VERIFIED`)."""
    n, d = thetas.shape
    arms = np.empty((n, d))
    status = np.empty(n, dtype=np.int64)
    mats = np.empty((5, d, d))
    vecs = np.empty((14, d))
    for i in range(n):
        status[i] = lcb_from_factor_one(center, shape, h_sqrt, h_inv_sqrt, white_center, kappa,
                                        thetas[i], chols[i], radii[i], arms[i], mats, vecs)
    return arms, status


# --- the stage's arms (the geometry registry: sege_cvx.arm_sets.kernels.registry) ----------------

@njit(inline="always")
def _stage_greedy(geometry, theta, warm, out, mats, vecs):
    greedy_one(theta, geometry.center, geometry.shape, geometry.h_inv_sqrt, out, vecs[14:16])
    return verify_one(out, geometry.center, geometry.h_inv_sqrt, vecs[14], vecs[15])


@njit(inline="always")
def _stage_lcb(geometry, theta, chol, r, warm, out, mats, vecs):
    return lcb_from_factor_one(geometry.center, geometry.shape, geometry.h_sqrt,
                               geometry.h_inv_sqrt, geometry.white_center, geometry.kappa, theta,
                               chol, r, out, mats, vecs)


@njit(inline="always")
def _stage_pull_in(geometry, x, offset, trial):
    return pull_inside_one(x, geometry.center, geometry.h_inv_sqrt, offset, trial)


# SEGE's mix by the set's own pull-in directly (not through _stage_pull_in): one call less.
@njit(inline="always")
def _stage_pull_inside(geometry, x, warm, use_lcb, rho, g, safe, offset, trial):
    return pull_inside_one(x, geometry.center, geometry.h_inv_sqrt, offset, trial)


@njit(inline="always")
def radial_one(geometry, u, h, caps, grads):
    """The ellipsoid's extent along ``u``: the root ``s > 0`` of ``||H^{-1/2}(s u - c)|| = 1``,
    ``s = (<w, w_c> + D) / ||w||^2`` with ``w = H^{-1/2} u``, ``w_c = H^{-1/2} c`` and
    ``D = sqrt(<w, w_c>^2 + ||w||^2 (1 - ||w_c||^2))`` (its conjugate form where ``<w, w_c> <
    0``); one piece, ``s``, the gradient of whose log is ``-H^{-1/2}(s w - w_c) / D`` by
    implicit differentiation (:func:`~sege_cvx.arm_sets.kernels.registry.radial_extent`;
    ``caps`` holds at least ``d`` numbers, used as scratch)."""
    Q, wc, kappa = geometry.h_inv_sqrt, geometry.white_center, geometry.kappa
    d = u.shape[0]
    if not kappa > 0.0:  # the origin on the boundary
        return 0.0, 0
    a, bq = 0.0, 0.0
    for j in range(d):
        w = 0.0
        for k in range(d):
            w += Q[j, k] * u[k]
        caps[j] = w
        a += w * w
        bq += w * wc[j]
    if not a > 0.0:
        return 0.0, 0
    disc = np.sqrt(bq * bq + a * kappa)
    s = (bq + disc) / a if bq >= 0.0 else kappa / (disc - bq)
    for j in range(d):
        caps[j] = s * caps[j] - wc[j]
    for j in range(d):
        q = 0.0
        for k in range(d):
            q += Q[k, j] * caps[k]
        grads[0, j] = -q / disc
    caps[0] = s
    return s, 1


register_geometry(EllipsoidGeometry, GeometryKernels(
    greedy=_stage_greedy, lcb=_stage_lcb, pull_in=_stage_pull_in, pull_inside=_stage_pull_inside,
    radial=radial_one))
