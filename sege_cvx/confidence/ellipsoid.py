"""The confidence ellipsoid of the l2-regularized least-squares estimate (paper Theorem 1).

``V_t = lam I + sum_k X_k X_k^T`` (eq. (infomat)), ``theta_hat_t = V_t^{-1} sum_k X_k Y_k``
(eq. (estimate)) and ``C_t(delta) = {theta : ||theta_hat_t - theta||_{V_t} <= r_t(delta)}``
(eq. (C_t)) with the radius of eq. (r_t).  The lower confidence bound on an arm's reward is
``LCB(x) = min_{theta in C} <x, theta> = <x, theta_hat> - r ||x||_{V^{-1}}``.
"""

from __future__ import annotations

import numpy as np

from .._validation import (
    as_batch_of_vectors,
    as_positive_int,
    as_scalar,
    as_spd_batch,
    as_vector,
)


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
    t_arr = np.asarray(t, dtype=np.float64)
    d_arr = np.asarray(delta, dtype=np.float64)
    if np.any(~np.isfinite(t_arr)) or np.any(t_arr < 0):
        raise ValueError(f"t must be finite and >= 0, got {t!r}")
    if np.any(~(d_arr > 0)) or np.any(~(d_arr < 1)):
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
    r = RadiusFormula(dim, noise_sd, lam, S, L)(t_arr, d_arr)
    return float(r) if np.ndim(r) == 0 else r


class RadiusFormula:
    """Eq. (r_t) with its constants fixed; unvalidated, for per-stage use in simulation loops."""

    def __init__(self, dim: int, noise_sd: float, lam: float, S: float, L: float) -> None:
        self._dim, self._noise_sd = dim, noise_sd
        self._growth = L**2 / lam
        self._offset = np.sqrt(lam) * S

    def __call__(self, t, delta):
        return self._noise_sd * np.sqrt(self._dim * np.log((1.0 + t * self._growth) / delta)) \
            + self._offset


def lcb_from_precision(
    x: np.ndarray, theta_hat: np.ndarray, V_inv: np.ndarray, radius: np.ndarray
) -> np.ndarray:
    """Unvalidated batched LCB: ``<x_i, theta_hat_i> - r_i sqrt(x_i^T V_inv_i x_i)``, all batched."""
    Vx = np.einsum("nij,nj->ni", V_inv, x)
    quad = np.maximum(np.einsum("ni,ni->n", x, Vx), 0.0)
    return np.einsum("ni,ni->n", x, theta_hat) - radius * np.sqrt(quad)


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
    # ||x||_{V^{-1}} = ||L^{-1} x|| for V = L L^T: a triangular solve, no inverse.
    w = np.linalg.solve(chol[0], xs.T)
    values = xs @ theta_hat - r * np.linalg.norm(w, axis=0)
    return float(values[0]) if single else values


class ConfidenceEllipsoid:
    """Regularized least-squares confidence ellipsoids for a batch of independent runs.

    Holds, per run, ``V`` and ``V^{-1}`` (updated by Sherman-Morrison: no O(d^3) inverse per
    observation), ``sum_k X_k Y_k``, the estimate ``theta_hat`` and the observation count.
    A single learner is a batch of one.

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
    V, V_inv : ndarray, shape (n_runs, d, d)
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
    """

    def __init__(self, dim: int, lam: float, n_runs: int = 1) -> None:
        self.dim = as_positive_int("dim", dim)
        self.lam = as_scalar("lam", lam, low=0.0, low_open=True)
        self.n_runs = as_positive_int("n_runs", n_runs)
        eye = np.eye(self.dim)
        self.V = np.repeat((self.lam * eye)[None], self.n_runs, axis=0)
        self.V_inv = np.repeat((eye / self.lam)[None], self.n_runs, axis=0)
        self.xy_sum = np.zeros((self.n_runs, self.dim))
        self.theta_hat = np.zeros((self.n_runs, self.dim))
        self.counts = np.zeros(self.n_runs, dtype=np.int64)

    def update(self, x: np.ndarray, y: np.ndarray, mask: np.ndarray | None = None) -> None:
        """Add one observation ``(x_i, y_i)`` to each run (only runs where ``mask`` is true).

        Parameters
        ----------
        x : ndarray, shape (n_runs, d)
        y : ndarray, shape (n_runs,)
        mask : ndarray of bool, shape (n_runs,), optional
        """
        if mask is not None:
            idx = np.flatnonzero(mask)
            if idx.size == 0:
                return
            x, y = x[idx], y[idx]
        else:
            idx = slice(None)
        V_inv = self.V_inv[idx]
        u = np.einsum("nij,nj->ni", V_inv, x)
        denom = 1.0 + np.einsum("ni,ni->n", x, u)
        # Sherman-Morrison: (V + x x^T)^{-1} = V^{-1} - u u^T / (1 + x^T u), u = V^{-1} x.
        self.V_inv[idx] = V_inv - u[:, :, None] * (u / denom[:, None])[:, None, :]
        self.V[idx] += x[:, :, None] * x[:, None, :]
        self.xy_sum[idx] += x * y[:, None]
        self.theta_hat[idx] = np.einsum("nij,nj->ni", self.V_inv[idx], self.xy_sum[idx])
        self.counts[idx] += 1

    def lambda_min(self) -> np.ndarray:
        """Smallest eigenvalue of ``V`` per run."""
        if self.dim == 2:
            # Closed form for 2 x 2 (5x faster than a batched eigvalsh in the simulation loop).
            a, b, d = self.V[:, 0, 0], self.V[:, 0, 1], self.V[:, 1, 1]
            return 0.5 * (a + d) - np.hypot(0.5 * (a - d), b)
        return np.linalg.eigvalsh(self.V)[:, 0]
