r"""Exact LCB (pessimistic) arm over an ellipsoidal arm set.

The paper's LCB arm, eq. (lcb arm), is

.. math::  X^{LCB}_t = \arg\max_{x \in X} \langle x, \hat\theta_{t-1}\rangle
           - r_t \|x\|_{V_{t-1}^{-1}},

here for the ellipsoid :math:`E = \{x : (x - c)^T H^{-1} (x - c) \le 1\}`.  The objective
``f(x) = <x, theta> - r sqrt(x^T V^{-1} x)`` is concave, so this is a convex problem; the
kernel below solves it to double precision with two nested scalar root finds instead of a
conic solver.

Reduction
---------
Put ``x = H^{1/2} w`` and diagonalise ``B = H^{1/2} V^{-1} H^{1/2} = Q diag(D) Q^T``
(``D > 0``).  With ``y = Q^T w``, ``g = Q^T H^{1/2} theta`` and ``chat = Q^T H^{-1/2} c``::

    (P)   max_{||y - chat|| <= 1}  <g, y> - r ||y||_D,      ||y||_D^2 = sum_i D_i y_i^2.

``f`` is positively homogeneous and ``||theta||_V^2 = sum_i g_i^2 / D_i``, so
``sup_{R^d} f = 0`` if ``||theta||_V <= r`` (Cauchy-Schwarz) and ``+inf`` otherwise.  Hence

* ``r = 0``: greedy arm ``x = c + H theta / ||theta||_H`` (the centre if ``theta = 0``).
* 0 in E and ``||theta||_V <= r``: ``x* = 0``, ``f* = 0``.
* Otherwise, unless 0 is on the boundary of E and optimal (limit case below), ``y* != 0``
  (an interior maximiser would be an unconstrained one), ``y*`` lies on the sphere and
  solves the KKT system

  (1)  ``g - tau D y = nu (y - chat)``,  ``tau = r / ||y||_D``,  ``nu >= 0``.

Inner problem.  For fixed ``tau > 0``, (1) with ``||y - chat|| <= 1`` is the optimality
system of the strictly concave trust-region problem ``max <g, y> - tau/2 ||y||_D^2``::

    (2)  u_i := y_i - chat_i = a_i / (b_i + nu),   a_i = g_i - b_i chat_i,   b_i = tau D_i,

with ``nu = 0`` if ``||u(0)|| <= 1`` and otherwise the root of the secular equation
``phi(nu) = 1 / ||u(nu)|| - 1 = 0``.  ``phi`` is concave and increasing, so Newton's method
started left of the root increases monotonically to it (More & Sorensen).  The start is
``nu_0 = max(0, max_i(|a_i| - b_i), ||a|| - max_i b_i)`` (each bound forces
``||u(nu_0)|| >= 1``), or 0 if rounding in ``a`` spoils the bounds.  With
``kappa = 1 - ||H^{-1/2} c||^2`` (computed once), ``y_i = (g_i + nu chat_i) / (b_i + nu)`` and
``||u||^2 - 1 = ||y||^2 - 2 <y, chat> - kappa`` are free of the cancellation in ``chat + u``
when the optimum is close to 0 (0 near the boundary of E).

Outer problem.  Let ``rho(tau) = ||y(tau)||_D`` and ``P(rho) = max{<g, y> : ||y - chat|| <= 1,
||y||_D <= rho}`` (concave).  ``y(tau)`` attains ``P(rho(tau))`` with multiplier
``tau rho(tau) = P'(rho(tau))``; ``rho`` decreases in ``tau`` (exchange argument), so
``psi(tau) = tau rho(tau) - r = P'(rho(tau)) - r`` is nondecreasing and ``psi(tau*) = 0`` is
the optimality condition of ``max_rho P(rho) - r rho``.  We solve ``F(s) = log(tau rho / r) = 0``
in ``s = log(tau)`` (Newton is exact where ``rho`` is constant, e.g. ``theta = 0``).
Implicit differentiation of (2) and of ``||u||^2 = 1`` (when ``nu > 0``) gives::

    nu'  = - sum_i u_i D_i y_i / (b_i + nu) / sum_i u_i^2 / (b_i + nu),
    y_i' = - (D_i y_i + nu' u_i) / (b_i + nu),
    F'(s) = 1 + tau rho' / rho = 1 - sum_i w_i (D_i y_i^2 + nu' u_i y_i) / rho^2,
            w_i = b_i / (b_i + nu).

Newton is safeguarded by a bracket (bisection in ``s`` when Newton leaves it or stalls).
Lower end: ``tau_0 = r / ||chat + g/||g|| ||_D`` has ``F <= 0`` because
``rho(tau) <= rho(0+) = ||chat + g/||g|| ||_D``.  Upper end: if 0 is inside E, ``nu = 0`` and
``F = log(||theta||_V / r) > 0`` for ``tau >= ||g / D|| / (1 - ||chat||)``; if outside,
``rho >= sqrt(min D) (||chat|| - 1)`` bounds ``tau*``.  If 0 is on the boundary of E
(``kappa = 0``) there is no such bound: the bracket is expanded geometrically, and ``F < 0``
up to ``tau max(D) = e^300`` means the optimum is the limit ``y -> 0`` (0 optimal); the
returned arm is then of size ~1e-130.

Certificate
-----------
With ``C = {theta' : ||theta' - theta||_V <= r}``, ``f(x) = min_{theta' in C} <x, theta'>`` and
``max_{x in E} <x, theta'> = <c, theta'> + ||theta'||_H =: h(theta')``, so by minimax duality
``h(theta') >= max_E f`` for every ``theta' in C``.  We use
``theta* = theta - t V^{-1} x`` with ``t = min(tau, r / ||x||_{V^{-1}})``: at a KKT point
``tau ||x||_{V^{-1}} = r`` and this is ``theta - r V^{-1} x / ||x||_{V^{-1}}``; in the limit
case (0 on the sphere and optimal) it is the dual point ``g - tau D y`` of (1).  ``theta' = 0``
(``h = 0``) is used when it lies in C and does better, ``theta`` itself when ``x = 0`` otherwise.
``gap = h(theta*) - f(x) >= max_E f - f(x) >= 0`` up to rounding.

Returned arm
------------
If rounding leaves ``x`` outside E (``||H^{-1/2}(x - c)|| > 1``), ``x - c`` is scaled down until
it is inside; the returned value is ``f`` recomputed from the returned arm.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..._numba import njit

__all__ = ["EllipsoidLCBKernel", "ellipsoid_lcb_arms"]

_EPS = float(np.finfo(np.float64).eps)
_MAX_INNER = 100  # safety caps on Newton steps per secular solve (typically ~4) and on outer
_MAX_OUTER = 200  # evaluations (typically ~6; up to ~60 seen with 0 on the boundary of E)
_LOG_TAU_CAP = 300.0  # cap on log(tau * max D): keeps a_i^2 in (2) far from overflow


@njit
def _congruence(s, m, tmp, out):
    """Write ``s @ m @ s`` (symmetrised) into ``out``; ``s`` is symmetric."""
    # Plain loops for every d: a BLAS call on a view of one instance may round differently
    # with the view's memory alignment, i.e. with the instance's position in the batch.
    d = s.shape[0]
    for i in range(d):
        for j in range(d):
            acc = 0.0
            for k in range(d):
                acc += m[i, k] * s[k, j]
            tmp[i, j] = acc
    for i in range(d):
        for j in range(d):
            acc = 0.0
            for k in range(d):
                acc += s[i, k] * tmp[k, j]
            out[i, j] = acc
    for i in range(d):
        for j in range(i):
            sym = 0.5 * (out[i, j] + out[j, i])
            out[i, j] = sym
            out[j, i] = sym


@njit
def _eigh(bmat, dvec, q):
    """Ascending eigenvalues ``dvec`` and eigenvectors (columns of ``q``) of symmetric ``bmat``.

    ``d = 2`` uses one Jacobi rotation (Golub & Van Loan, Alg. 8.5.1), which is as accurate as
    LAPACK and avoids its call and workspace overhead on the most common size.
    """
    if bmat.shape[0] != 2:
        w, v = np.linalg.eigh(bmat)
        # Element loops, not ``dvec[:] = w``: numba compiles a slice copy with its shape-error
        # message, seconds of a cold start.
        for i in range(w.shape[0]):
            dvec[i] = w[i]
            for j in range(w.shape[0]):
                q[i, j] = v[i, j]
        return
    p, off, s = bmat[0, 0], bmat[0, 1], bmat[1, 1]
    cs, sn = 1.0, 0.0
    if off != 0.0:
        zeta = (s - p) / (2.0 * off)
        t = 1.0 / (zeta + np.hypot(1.0, zeta)) if zeta >= 0.0 else -1.0 / (-zeta + np.hypot(1.0, zeta))
        cs = 1.0 / np.hypot(1.0, t)
        sn = t * cs
        p, s = p - t * off, s + t * off
    if p <= s:
        dvec[0], dvec[1] = p, s
        q[0, 0], q[1, 0], q[0, 1], q[1, 1] = cs, -sn, sn, cs
    else:
        dvec[0], dvec[1] = s, p
        q[0, 0], q[1, 0], q[0, 1], q[1, 1] = sn, cs, cs, -sn


@njit
def _dot(v, w):
    """``<v, w>`` as a plain loop (no BLAS call for these short vectors)."""
    acc = 0.0
    for i in range(v.shape[0]):
        acc += v[i] * w[i]
    return acc


@njit
def _matvec(m, v, out):
    """Write ``m @ v`` into ``out``."""
    d = v.shape[0]
    for i in range(d):
        acc = 0.0
        for k in range(d):
            acc += m[i, k] * v[k]
        out[i] = acc


@njit
def _scaled_vinv_norm(x, m, x_dir, m_dir):
    """Return ``(max|x|, ||x / max|x| ||_M)``; ``x_dir = x / max|x|`` and ``m_dir = M x_dir``.

    Scaling by ``max|x|`` keeps ``x^T M x`` from underflowing for tiny arms (see ``s_cap``).
    Returns ``(0, 0)`` for ``x = 0``.
    """
    x_max = 0.0
    for i in range(x.shape[0]):
        x_max = max(x_max, abs(x[i]))
    if x_max == 0.0:
        return 0.0, 0.0
    for i in range(x.shape[0]):
        x_dir[i] = x[i] / x_max
    _matvec(m, x_dir, m_dir)
    return x_max, np.sqrt(max(_dot(x_dir, m_dir), 0.0))


@njit
def _sphere_excess(nu, g, chat, kappa, a, b, u, y):
    """Fill ``u, y`` of (2) at ``nu``; return ``(||u||^2 - 1, sum_i u_i^2 / (b_i + nu))``."""
    y2 = 0.0
    y_dot_c = 0.0
    u2 = 0.0
    s3 = 0.0
    for i in range(g.shape[0]):
        w = 1.0 / (b[i] + nu)
        u[i] = a[i] * w
        y[i] = (g[i] + nu * chat[i]) * w
        y2 += y[i] * y[i]
        y_dot_c += y[i] * chat[i]
        u2 += u[i] * u[i]
        s3 += u[i] * u[i] * w
    # ||y - chat||^2 - 1 = ||y||^2 - 2 <y, chat> - kappa has no cancellation for small y (0 near
    # the sphere, where u ~ -chat); for large y the direct form is the more accurate one.
    excess = y2 - 2.0 * y_dot_c - kappa if y2 < 1.0 else u2 - 1.0
    return excess, s3


@njit
def _secular(tau, g, chat, kappa, dvec, a, b, u, y):
    """Solve the inner trust-region problem (2) at ``tau``; fill ``a, b, u, y``, return ``nu``."""
    norm_a2 = 0.0
    b_max = 0.0
    nu = 0.0
    for i in range(g.shape[0]):
        b[i] = tau * dvec[i]
        a[i] = g[i] - b[i] * chat[i]
        norm_a2 += a[i] * a[i]
        b_max = max(b_max, b[i])
        nu = max(nu, abs(a[i]) - b[i])
    excess, s3 = _sphere_excess(0.0, g, chat, kappa, a, b, u, y)
    if excess <= 0.0:
        return 0.0
    nu = max(nu, np.sqrt(norm_a2) - b_max)
    if nu > 0.0:
        excess, s3 = _sphere_excess(nu, g, chat, kappa, a, b, u, y)
        if not excess >= 0.0:
            # The bounds lose to rounding in a_i when b_i >> |g_i|; nu = 0 is left of the root.
            nu = 0.0
            excess, s3 = _sphere_excess(nu, g, chat, kappa, a, b, u, y)
    for _ in range(_MAX_INNER):
        # Newton on 1/||u|| - 1; a non-positive (or NaN) step means we reached the root.
        u2 = 1.0 + excess
        step = excess / (np.sqrt(u2) + 1.0) * u2 / s3
        if not step > 4.0 * _EPS * nu:
            break
        nu += step
        excess, s3 = _sphere_excess(nu, g, chat, kappa, a, b, u, y)
    return nu


@njit
def _solve_whitened(g, chat, kappa, dvec, r, a, b, u, y):
    """Write the maximiser of (P) into ``y`` (``r > 0``, case ``y* != 0`` or 0 on the sphere).

    Returns the final ``tau``: ``g - tau D y`` is the dual point ``H^{1/2} theta*`` in
    ``y``-coordinates, also in the limit case where ``tau ||y||_D < r`` and ``y* = 0``.
    """
    d = g.shape[0]
    g_norm = np.sqrt(_dot(g, g))
    rho0 = 0.0
    for i in range(d):
        yi = chat[i] + g[i] / g_norm if g_norm > 0.0 else chat[i]
        rho0 += dvec[i] * yi * yi
    rho0 = np.sqrt(rho0)
    if rho0 == 0.0:
        # Greedy arm (or, for theta = 0, the centre) is x = 0, so f <= 0 = f(0) on E.
        y[:] = 0.0
        return 0.0
    s = np.log(r / rho0)
    # For g != 0, rho(tau) <= rho0 gives F(s) <= 0; for g = 0 rho is constant in tau.
    lo = s if g_norm > 0.0 else -np.inf
    # Upper ends with F >= 0 (doubled against rounding), with 1 - ||chat|| = kappa / (1 + ||chat||).
    # 0 inside the sphere: for tau >= ||g / D|| / (1 - ||chat||) nu = 0 and tau rho =
    # ||theta||_V > r (this branch).  0 outside: rho >= sqrt(min D) (||chat|| - 1).
    # 0 on the sphere: none; F < 0 up to s_cap means y* = 0 (limit).
    chat_norm1 = 1.0 + np.sqrt(_dot(chat, chat))
    if kappa > 0.0:
        g_over_d2 = 0.0
        for i in range(d):
            g_over_d2 += (g[i] / dvec[i]) ** 2
        hi = np.log(2.0 * np.sqrt(g_over_d2) * chat_norm1 / kappa)
    elif kappa < 0.0:
        hi = np.log(2.0 * r * chat_norm1 / (np.sqrt(dvec[0]) * -kappa))  # dvec ascending
    else:
        hi = np.inf
    s_cap = _LOG_TAU_CAP - np.log(dvec[d - 1])
    expand = 1.0
    last_step = np.inf
    for _ in range(_MAX_OUTER):
        tau = np.exp(s)
        nu = _secular(tau, g, chat, kappa, dvec, a, b, u, y)
        # Work with tau * y (bounded by (|g| + nu |chat|) / D): y itself underflows as tau grows.
        rho2 = 0.0
        num = 0.0
        den = 0.0
        for i in range(d):
            ty = tau * y[i]
            rho2 += dvec[i] * ty * ty
            w = 1.0 / (b[i] + nu)
            num += u[i] * dvec[i] * ty * w
            den += u[i] * u[i] * w
        f_val = 0.5 * np.log(rho2) - np.log(r)
        if abs(f_val) <= 8.0 * _EPS:
            return tau
        if f_val < 0.0:
            lo = s
        else:
            hi = s
        nu_dot = -num / den if nu > 0.0 else 0.0  # tau * d nu / d tau
        acc = 0.0
        for i in range(d):
            ty = tau * y[i]
            acc += b[i] / (b[i] + nu) * (dvec[i] * ty * ty + nu_dot * u[i] * ty)
        s_new = s - f_val / (1.0 - acc / rho2)
        bounded = lo > -np.inf and hi < np.inf
        # Newton unless it leaves the bracket or, with a finite bracket, stalls (rtsafe rule).
        if not lo < s_new < hi or (bounded and abs(s_new - s) > 0.5 * last_step):
            if hi == np.inf:
                s_new = s + expand
                expand *= 2.0
            elif lo == -np.inf:
                s_new = s - expand
                expand *= 2.0
            else:
                s_new = 0.5 * (lo + hi)
        s_new = min(s_new, s_cap)
        last_step = abs(s_new - s)
        if last_step <= 4.0 * _EPS * (1.0 + abs(s)):
            return tau
        s = s_new
    return tau


@njit
def lcb_arm_one(center, shape, h_sqrt, h_inv_sqrt, white_center, kappa, theta, m, r, want_gap,
                x, mats, vecs):
    """One instance: write the LCB arm into ``x``; return ``(f(x), gap)`` (gap 0 unless wanted).

    ``kappa = 1 - ||H^{-1/2} c||^2`` (>= 0 iff 0 is in E; it keeps (2) accurate near the
    sphere), ``m = V^{-1}``; ``mats`` (3, d, d) and ``vecs`` (10, d) are scratch.
    """
    d = theta.shape[0]
    tmp, bmat, q = mats[0], mats[1], mats[2]
    dvec, g, chat, a, b = vecs[0], vecs[1], vecs[2], vecs[3], vecs[4]
    u, y, vec, vec2, theta_star = vecs[5], vecs[6], vecs[7], vecs[8], vecs[9]
    zero_dual = False  # whether theta' = 0 lies in C
    tau = 0.0  # multiplier of (1); theta* = theta - tau V^{-1} x (clipped to C) below
    if r > 0.0:
        _congruence(h_sqrt, m, tmp, bmat)
        _eigh(bmat, dvec, q)
        # Eigenvalues below eps * max(D) are rounding noise of eigh; keep ||.||_D a norm.
        d_floor = _EPS * dvec[d - 1]
        for i in range(d):
            dvec[i] = max(dvec[i], d_floor)
        _matvec(h_sqrt, theta, vec)
        theta_v2 = 0.0
        for i in range(d):
            gi = 0.0
            ci = 0.0
            for j in range(d):
                gi += q[j, i] * vec[j]
                ci += q[j, i] * white_center[j]
            g[i] = gi
            chat[i] = ci
            theta_v2 += gi * gi / dvec[i]
        zero_dual = theta_v2 <= r * r
        if kappa >= 0.0 and zero_dual:
            x[:] = 0.0
        else:
            tau = _solve_whitened(g, chat, kappa, dvec, r, a, b, u, y)
            _matvec(q, y, vec)
            _matvec(h_sqrt, vec, x)
    else:
        _matvec(shape, theta, vec)
        norm_h = np.sqrt(max(_dot(theta, vec), 0.0))
        for i in range(d):
            x[i] = center[i] + (vec[i] / norm_h if norm_h > 0.0 else 0.0)

    if want_gap:
        # theta* from the computed maximiser, before the pull-in below, which may perturb
        # the direction of a tiny arm.  t ||x||_{V^-1} <= r keeps theta* in C.
        x_max, xv_dir = _scaled_vinv_norm(x, m, vec2, vec)
        if xv_dir > 0.0:
            t_scaled = min(tau * x_max, r / xv_dir)
            for i in range(d):
                theta_star[i] = theta[i] - t_scaled * vec[i]
        elif zero_dual:
            theta_star[:] = 0.0
        else:
            for i in range(d):
                theta_star[i] = theta[i]

    # Pull x into E if rounding left it outside: shrink x - c towards the centre.
    for attempt in range(4):
        for i in range(d):
            vec2[i] = x[i] - center[i]
        _matvec(h_inv_sqrt, vec2, vec)
        quad = _dot(vec, vec)
        if quad <= 1.0:
            break
        shrink = (1.0 - 2.0 ** (attempt + 1) * _EPS) / np.sqrt(quad)
        for i in range(d):
            x[i] = center[i] + vec2[i] * shrink

    x_max, xv_dir = _scaled_vinv_norm(x, m, vec2, vec)
    value = _dot(theta, x) - r * x_max * xv_dir
    gap = 0.0
    if want_gap:
        _matvec(shape, theta_star, vec)
        h_val = _dot(center, theta_star) + np.sqrt(max(_dot(theta_star, vec), 0.0))
        if zero_dual:
            h_val = min(h_val, 0.0)  # theta' = 0 is in C too, with h(0) = 0
        gap = h_val - value
    return value, gap


@njit
def _lcb_batch(center, shape, h_sqrt, h_inv_sqrt, white_center, theta_hat, v_inv, radius, want_gap):
    """Arms, values and (if ``want_gap``, else an empty array) gaps for every instance."""
    n, d = theta_hat.shape
    arms = np.empty((n, d))
    values = np.empty(n)
    gaps = np.empty(n if want_gap else 0)
    kappa = 1.0 - _dot(white_center, white_center)
    mats = np.empty((3, d, d))  # one allocation for all work arrays: matters at small n and d
    vecs = np.empty((10, d))
    for k in range(n):
        values[k], gap = lcb_arm_one(center, shape, h_sqrt, h_inv_sqrt, white_center, kappa,
                                     theta_hat[k], v_inv[k], radius[k], want_gap, arms[k],
                                     mats, vecs)
        if want_gap:
            gaps[k] = gap
    return arms, values, gaps


def square_roots(shape: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``H^{1/2}`` and ``H^{-1/2}`` (symmetric, C-contiguous) of a symmetric positive definite
    ``H``, from one eigendecomposition."""
    lam, vecs = np.linalg.eigh(shape)
    return (np.ascontiguousarray((vecs * np.sqrt(lam)) @ vecs.T),
            np.ascontiguousarray((vecs / np.sqrt(lam)) @ vecs.T))


class EllipsoidLCBKernel:
    """LCB arms, eq. (lcb arm), over a fixed ellipsoid ``{x : (x-c)^T H^{-1} (x-c) <= 1}``.

    ``H^{1/2}``, ``H^{-1/2}`` and ``H^{-1/2} c`` are computed once here; each call then runs
    the compiled per-instance solver over the batch.

    Parameters
    ----------
    center : array_like, shape (d,)
        Centre ``c`` of the ellipsoid.
    shape : array_like, shape (d, d)
        Symmetric positive definite shape matrix ``H``.

    Attributes
    ----------
    center, shape : ndarray
        The ellipsoid, as float64 arrays (``shape`` symmetrised).
    """

    def __init__(self, center: ArrayLike, shape: ArrayLike) -> None:
        self.center = np.ascontiguousarray(center, dtype=np.float64)
        shape_arr = np.asarray(shape, dtype=np.float64)
        self.shape = np.ascontiguousarray(0.5 * (shape_arr + shape_arr.T))
        self._h_sqrt, self._h_inv_sqrt = square_roots(self.shape)
        self._white_center = self._h_inv_sqrt @ self.center

    def __call__(
        self,
        theta_hat: ArrayLike,
        V_inv: ArrayLike,
        radius: ArrayLike,
        return_gap: bool = False,
    ) -> tuple[NDArray[np.float64], ...]:
        """Exact LCB arms for a batch of ``(theta_hat, V^{-1}, r)`` instances.

        Parameters
        ----------
        theta_hat : array_like, shape (n, d)
            Parameter estimates.
        V_inv : array_like, shape (n, d, d)
            Inverses of the (SPD) information matrices.
        radius : array_like, shape (n,)
            Confidence radii ``r >= 0``.
        return_gap : bool, default False
            Also return the duality-gap certificates.

        Returns
        -------
        arms : ndarray, shape (n, d)
            Maximisers ``x*`` (inside E).
        values : ndarray, shape (n,)
            ``f(x*) = <x*, theta_hat> - r ||x*||_{V^{-1}}`` evaluated at the returned arms.
        gaps : ndarray, shape (n,)
            Only if ``return_gap``: ``h(theta*) - f(x*)``, an upper bound on the suboptimality.
        """
        arms, values, gaps = _lcb_batch(
            self.center,
            self.shape,
            self._h_sqrt,
            self._h_inv_sqrt,
            self._white_center,
            np.ascontiguousarray(theta_hat, dtype=np.float64),
            np.ascontiguousarray(V_inv, dtype=np.float64),
            np.ascontiguousarray(radius, dtype=np.float64),
            return_gap,
        )
        if return_gap:
            return arms, values, gaps
        return arms, values


def ellipsoid_lcb_arms(
    center: ArrayLike,
    shape: ArrayLike,
    theta_hat: ArrayLike,
    V_inv: ArrayLike,
    radius: ArrayLike,
    *,
    return_gap: bool = False,
) -> tuple[NDArray[np.float64], ...]:
    """Exact LCB arms, eq. (lcb arm), for a batch over one ellipsoid.

    Parameters
    ----------
    center : array_like, shape (d,)
        Centre ``c`` of the ellipsoid ``{x : (x-c)^T H^{-1} (x-c) <= 1}``.
    shape : array_like, shape (d, d)
        SPD shape matrix ``H``.
    theta_hat : array_like, shape (n, d)
        Parameter estimates.
    V_inv : array_like, shape (n, d, d)
        Inverses of the SPD information matrices.
    radius : array_like, shape (n,)
        Confidence radii ``r >= 0``.
    return_gap : bool, default False
        Also return the duality-gap certificates.

    Returns
    -------
    arms : ndarray, shape (n, d)
        Maximisers of ``<x, theta_hat> - r ||x||_{V^{-1}}`` over the ellipsoid.
    values : ndarray, shape (n,)
        Objective evaluated at the returned arms.
    gaps : ndarray, shape (n,)
        Only if ``return_gap``: certified upper bounds on ``max f - f(arm)``.

    See Also
    --------
    EllipsoidLCBKernel : reuses the ellipsoid precomputation across calls.
    """
    return EllipsoidLCBKernel(center, shape)(theta_hat, V_inv, radius, return_gap=return_gap)
