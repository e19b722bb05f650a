"""The confidence ellipsoid of the l2-regularized least-squares estimate (paper Theorem 1).

``V_t = lam I + sum_k X_k X_k^T`` (eq. (infomat)), ``theta_hat_t = V_t^{-1} sum_k X_k Y_k``
(eq. (estimate)) and ``C_t(delta) = {theta : ||theta_hat_t - theta||_{V_t} <= r_t(delta)}``
(eq. (C_t)) with the radius of eq. (r_t).  The lower confidence bound on an arm's reward is
``LCB(x) = min_{theta in C} <x, theta> = <x, theta_hat> - r ||x||_{V^{-1}}``.

Everything is computed from a Cholesky factor of ``V`` (:mod:`sege_cvx.confidence.cholesky`),
never from a propagated inverse: see that module for why the error does not grow with ``t``.
"""

from __future__ import annotations

import math

import numpy as np

from .._numba import njit
from .._validation import (
    as_batch_of_vectors,
    as_finite_array,
    as_positive_int,
    as_scalar,
    as_vector,
)
from . import cholesky
from .state import ConfidenceState
from .validation import as_spd_batch

#: Largest dimension accepted (a bandit's d is small; larger ints overflow the radius formula).
MAX_DIM = 10_000


def confidence_radius(
    t: float | np.ndarray,
    delta: float | np.ndarray,
    *,
    dim: int,
    noise_sd: float,
    lam: float,
    S: float,
    L: float,
) -> float | np.ndarray:
    """Radius ``r_t(delta)`` of Theorem 1, eq. (r_t).

    ``r_t(delta) = noise_sd * sqrt(d * log((1 + t L^2 / lam) / delta)) + sqrt(lam) * S``.

    Parameters
    ----------
    t : float or ndarray
        Number of observations (nonnegative); arrays broadcast with ``delta``.
    delta : float or ndarray
        Risk level in (0, 1).
    dim : int
        Dimension ``d``.
    noise_sd : float
        Sub-Gaussian noise parameter ``sigma_eta >= 0``.
    lam : float
        Regularization ``lambda > 0``.
    S : float
        Bound ``||theta*|| <= S``, ``S > 0``.
    L : float
        Bound ``max_{x in X} ||x|| <= L``, ``L >= 0``.

    Returns
    -------
    float or ndarray
        The radius.

    Examples
    --------
    >>> round(confidence_radius(0, 0.1, dim=2, noise_sd=1.0, lam=0.1, S=1.0, L=2.0), 6)
    2.462194
    """
    as_positive_int("dim", dim)
    noise_sd = as_scalar("noise_sd", noise_sd, low=0.0)
    lam = as_scalar("lam", lam, low=0.0, low_open=True)
    S = as_scalar("S", S, low=0.0, low_open=True)
    L = as_scalar("L", L, low=0.0)
    t_arr = as_finite_array("t", t)
    d_arr = as_finite_array("delta", delta)
    if np.any(~np.isfinite(t_arr)) or np.any(t_arr < 0):
        raise ValueError(f"t must be finite and >= 0, got {t!r}")
    if np.any(~(d_arr > 0)) or np.any(~(d_arr < 1)):
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
    with np.errstate(over="ignore", divide="ignore"):
        r = RadiusFormula(dim, noise_sd, lam, S, L)(t_arr, d_arr)
    if not np.all(np.isfinite(r)):
        raise ValueError(f"the radius overflows the float range for dim={dim}, noise_sd={noise_sd}, "
                         f"lam={lam}, L={L}, t={t!r}, delta={delta!r}: rescale the problem")
    return float(r) if np.ndim(r) == 0 else r


class RadiusFormula:
    """Eq. (r_t) with its constants fixed; unvalidated, for per-stage use in simulation loops.

    :meth:`scalar` uses Python's ``math`` on one value, so a radius is the same number whether
    it is computed for a run alone or for a batch (numpy's vectorized ``log`` may round a lane
    of a SIMD register differently from its scalar tail).
    """

    def __init__(self, dim: int, noise_sd: float, lam: float, S: float, L: float) -> None:
        self._dim, self._noise_sd = dim, noise_sd
        self._growth = L * L / lam  # L^2 / lam, inf rather than OverflowError when too large
        if not math.isfinite(self._growth) or dim > MAX_DIM:
            raise ValueError(f"L^2 / lam is beyond the float range (L={L}, lam={lam}) or "
                             f"dim={dim} exceeds {MAX_DIM}: rescale the problem")
        self._offset = math.sqrt(lam) * S

    def __call__(self, t, delta):
        return self._noise_sd * np.sqrt(self._dim * np.log((1.0 + t * self._growth) / delta)) \
            + self._offset

    def scalar(self, t: float, delta: float) -> float:
        """``r_t(delta)`` for one ``t`` and ``delta``."""
        return self._noise_sd * math.sqrt(self._dim * math.log((1.0 + t * self._growth) / delta)) \
            + self._offset

    def counts(self, start: int, stop: int, delta: float) -> np.ndarray:
        """:meth:`scalar` at ``t = start, ..., stop - 1``, the same numbers (compiled: the same
        scalar ``log`` and ``sqrt`` in the same order), at a fraction of the cost."""
        return _formula_values(start, stop, float(self._noise_sd), float(self._dim),
                               float(self._growth), float(delta), float(self._offset))


@njit
def _formula_values(start, stop, noise_sd, dim, growth, delta, offset):
    """:meth:`RadiusFormula.scalar` over ``t = start .. stop - 1``."""
    out = np.empty(stop - start)
    for k in range(stop - start):
        t = float(start + k)
        out[k] = noise_sd * math.sqrt(dim * math.log((1.0 + t * growth) / delta)) + offset
    return out


@njit
def lcb_from_precision(x, theta_hat, V_inv, radius):
    """Unvalidated LCB from precision matrices, ``<x_i, theta_hat_i> - r_i sqrt(x_i^T V_inv_i x_i)``.

    One row at a time (the same arithmetic whatever the batch); for checks against a given
    ``V^{-1}``.  Simulation loops use :meth:`ConfidenceEllipsoid.lcb` (Cholesky factor).
    """
    n, d = x.shape
    out = np.empty(n)
    for i in range(n):
        quad = 0.0
        dot = 0.0
        for a in range(d):
            acc = 0.0
            for b in range(d):
                acc += V_inv[i, a, b] * x[i, b]
            quad += x[i, a] * acc
            dot += x[i, a] * theta_hat[i, a]
        out[i] = dot - radius[i] * np.sqrt(max(quad, 0.0))
    return out


def lcb(x: np.ndarray, theta_hat: np.ndarray, V: np.ndarray, radius: float) -> np.ndarray | float:
    """Closed-form lower confidence bound ``<x, theta_hat> - r ||x||_{V^{-1}}``.

    Vectorized over the rows of ``x``.

    Parameters
    ----------
    x : ndarray, shape (d,) or (n, d)
        Arms.
    theta_hat : ndarray, shape (d,)
        Estimate (centre of the confidence ellipsoid).
    V : ndarray, shape (d, d)
        Information matrix, symmetric positive definite.
    radius : float
        Confidence radius ``r >= 0``.

    Returns
    -------
    float or ndarray of shape (n,)

    Examples
    --------
    >>> import numpy as np
    >>> float(lcb(np.array([3.0, 4.0]), np.array([1.0, 0.0]), 4.0 * np.eye(2), 1.0))
    0.5
    """
    theta_hat = as_vector("theta_hat", theta_hat)
    d = theta_hat.shape[0]
    xs, single = as_batch_of_vectors("x", x, d)
    _, chol = as_spd_batch("V", V, d)
    if chol.shape[0] != 1:
        raise ValueError("V must be a single (d, d) matrix; use lcb_from_precision for batches")
    r = as_scalar("radius", radius, low=0.0)
    # ||x||_{V^{-1}} = ||L^{-1} x|| for V = L L^T: the simulation's own triangular solves.
    n = xs.shape[0]
    values = cholesky.lcb_values(np.ascontiguousarray(xs), np.tile(theta_hat, (n, 1)),
                                 np.repeat(chol, n, axis=0), np.full(n, r))
    if not np.all(np.isfinite(values)):
        raise ValueError("x, theta_hat, V and radius give a lower confidence bound beyond the "
                         f"float range (max |x| = {np.abs(xs).max():.3g}): rescale the problem")
    return float(values[0]) if single else values


class ConfidenceEllipsoid:
    """Regularized least-squares confidence ellipsoids for a batch of independent runs.

    Holds, per run, the exact sums ``V = lam I + sum_k X_k X_k^T`` and ``sum_k X_k Y_k``, the
    lower Cholesky factor of ``V`` (refactored after every observation; see
    :mod:`sege_cvx.confidence.cholesky`), the estimate ``theta_hat`` and the observation count.
    A single learner is a batch of one; each run is computed independently of the others.

    Parameters
    ----------
    dim : int
        Dimension ``d``.
    lam : float
        Regularization ``lambda > 0`` (``V_0 = lambda I``).
    n_runs : int, default 1
        Number of independent runs held side by side.

    Attributes
    ----------
    V : ndarray, shape (n_runs, d, d)
    chol : ndarray, shape (n_runs, d, d)
        Lower Cholesky factors, ``V = chol @ chol.T``.
    xy_sum : ndarray, shape (n_runs, d)
    theta_hat : ndarray, shape (n_runs, d)
    counts : ndarray of int, shape (n_runs,)

    Examples
    --------
    >>> import numpy as np
    >>> ce = ConfidenceEllipsoid(dim=2, lam=1.0)
    >>> ce.update(np.array([[1.0, 0.0]]), np.array([2.0]))
    >>> ce.theta_hat
    array([[1., 0.]])
    >>> ce.lcb(np.array([[1.0, 0.0]]), radius=1.0).round(4)
    array([0.2929])
    """

    def __init__(self, dim: int, lam: float, n_runs: int = 1) -> None:
        self.dim = as_positive_int("dim", dim)
        self.lam = as_scalar("lam", lam, low=0.0, low_open=True)
        self.n_runs = as_positive_int("n_runs", n_runs)
        eye = np.eye(self.dim)
        self.V = np.repeat((self.lam * eye)[None], self.n_runs, axis=0)
        self.chol = np.repeat((math.sqrt(self.lam) * eye)[None], self.n_runs, axis=0)
        self.xy_sum = np.zeros((self.n_runs, self.dim))
        self.theta_hat = np.zeros((self.n_runs, self.dim))
        self.counts = np.zeros(self.n_runs, dtype=np.int64)

    # ------------------------------------------------------------------ observations
    def update(self, x: np.ndarray, y: np.ndarray, mask: np.ndarray | None = None) -> None:
        """Add one observation ``(x_i, y_i)`` to each run (only runs where ``mask`` is true).

        Parameters
        ----------
        x : ndarray, shape (n_runs, d)
            One arm per run (a single ``(d,)`` arm only when ``n_runs == 1``).
        y : ndarray, shape (n_runs,)
            One reward per run.
        mask : ndarray of bool, shape (n_runs,), optional
        """
        x = as_finite_array("x", x)
        if x.shape == (self.dim,) and self.n_runs == 1:
            x = x[None]
        if x.shape != (self.n_runs, self.dim):
            raise ValueError(f"x must have shape ({self.n_runs}, {self.dim}): one arm per run, "
                             f"got shape {x.shape}")
        y = np.atleast_1d(as_finite_array("y", y))
        if y.shape != (self.n_runs,):
            raise ValueError(f"y must hold one reward per run, shape ({self.n_runs},), got shape "
                             f"{np.shape(y)}")
        if mask is not None:
            mask = np.asarray(mask)
            if mask.dtype != np.bool_ or mask.shape != (self.n_runs,):
                raise ValueError(f"mask must be a boolean array of shape ({self.n_runs},), got "
                                 f"{mask.dtype} array of shape {mask.shape}")
        self.update_unchecked(x, y, mask)

    def update_unchecked(self, x: np.ndarray, y: np.ndarray, mask: np.ndarray | None = None) -> None:
        """:meth:`update` without validation (policies pass validated observations)."""
        rows = np.arange(self.n_runs) if mask is None else np.flatnonzero(mask)
        if rows.size == 0:
            return
        x, y = (x, y) if mask is None else (x[rows], y[rows])
        failed = cholesky.observe(self.V, self.chol, self.xy_sum, self.theta_hat, self.counts,
                                  rows, np.ascontiguousarray(x), np.ascontiguousarray(y))
        if failed >= 0:
            run = int(rows[failed])
            raise ValueError(
                f"run {run}: V = lam I + sum x x^T is not numerically positive definite after "
                f"{self.counts[run]} observations (lam = {self.lam:g} is too small for arms of "
                f"norm {np.linalg.norm(x[failed]):.3g}); use a larger lam")

    def state(self) -> ConfidenceState:
        """The runs' arrays as the compiled stage loop takes them (views, not copies):
        :class:`~sege_cvx.confidence.state.ConfidenceState`."""
        return ConfidenceState(V=self.V, chol=self.chol, xy_sum=self.xy_sum,
                               theta_hat=self.theta_hat, counts=self.counts)

    # ------------------------------------------------------------------ queries
    def lcb(self, x: np.ndarray, radius: float | np.ndarray,
            rows: np.ndarray | None = None) -> np.ndarray:
        """``LCB = <x, theta_hat> - r ||x||_{V^{-1}}`` for one arm per selected run.

        Parameters
        ----------
        x : ndarray, shape (m, d)
            Arms, row ``j`` for run ``rows[j]``.
        radius : float or ndarray of shape (m,)
        rows : ndarray of int, optional
            Runs (default all, ``m = n_runs``).
        """
        rows = slice(None) if rows is None else rows
        radii = np.broadcast_to(np.asarray(radius, dtype=np.float64), (len(x),))
        return cholesky.lcb_values(np.ascontiguousarray(x), self.theta_hat[rows],
                                   self.chol[rows], np.ascontiguousarray(radii))

    def min_eigenvalue_at_least(self, bound: float) -> np.ndarray:
        """``lambda_min(V) >= bound`` per run, decided by factoring ``V - bound I``."""
        return cholesky.min_eigenvalue_at_least(self.V, float(bound))

    @property
    def V_inv(self) -> np.ndarray:
        """``V^{-1}`` per run, from the Cholesky factor (computed on each access)."""
        return cholesky.precision(self.chol)

    def lambda_min(self) -> np.ndarray:
        """Smallest eigenvalue of ``V`` per run (for reporting; decisions use
        :meth:`min_eigenvalue_at_least`)."""
        return np.array([np.linalg.eigvalsh(v)[0] for v in self.V])
