r"""The confidence radius every policy uses: the paper's ``r_t`` or the self-normalized bound.

Two choices (``radius=`` of every policy):

* ``"theorem1"``: the paper's eq. (r_t),
  ``r_t(delta) = sigma sqrt(d log((1 + t L^2 / lam) / delta)) + sqrt(lam) S``, a function of the
  stage (or observation count) and ``delta`` only (:class:`~.ellipsoid.RadiusFormula`).
* ``"self_normalized"``: the bound Theorem 1 is derived from (Abbasi-Yadkori, Pal and
  Szepesvari, NeurIPS 2011, Theorem 2),
  ``sigma sqrt(2 log(det(V)^{1/2} det(lam I)^{-1/2} / delta)) + sqrt(lam) S``, which depends on
  the run's own ``V``.  Since ``det V <= (lam + t L^2 / d)^d``, it is never larger than
  ``sigma sqrt(d log(1 + t L^2 / (d lam)) + 2 log(1 / delta)) + sqrt(lam) S``, and it needs no
  bound ``L`` on the arms.

The self-normalized bound holds simultaneously for all ``t`` with probability ``1 - delta``,
and for ``d >= 2`` so does eq. (r_t), which is then at least as large (``d log(1/delta) >=
2 log(1/delta)`` and ``log det V - d log lam <= d log(1 + t L^2 / lam)``).  In ``d = 1`` eq.
(r_t) carries ``log(1/delta)`` where Theorem 2 has ``2 log(1/delta)``: it is then smaller than
the bound it is derived from, and not implied by it; ``"theorem1"`` implements the paper as
written.  ``log det V`` is
``2 sum_k log L_kk`` from the Cholesky factor ``L`` the confidence set maintains
(:mod:`.cholesky`): no determinant is formed, so it neither overflows nor loses accuracy as
``V`` grows.

Kernels receive a radius as a *rule* and a *stage value* (:func:`radius_one`): for
``"theorem1"`` the stage value is ``r_t`` itself, computed in Python once per stage (or per
observation count) and shared by all runs; for ``"self_normalized"`` it is ``2 log(1/delta)``,
and each run adds its own ``log det`` term.  One compiled function therefore serves both, and a
run's radius is computed from its own data only, whatever its batch.
"""

from __future__ import annotations

import math

import numpy as np

from .._numba import njit
from .._validation import as_scalar
from .ellipsoid import RadiusFormula
from .validation import as_spd_batch

#: The ``radius=`` choices of every policy.
RADII = ("theorem1", "self_normalized")


def check_radius(radius: object) -> str:
    """Validate a policy's ``radius`` argument."""
    if not isinstance(radius, str) or radius not in RADII:
        raise ValueError(f"radius must be one of {RADII}, got {radius!r}")
    return radius


@njit(inline="always")
def radius_one(rule, stage_value, chol) -> float:
    """One run's radius from its Cholesky factor ``chol`` of ``V``.

    ``rule = (self_normalized, noise_sd, half_d_log_lam, offset)`` (:attr:`ConfidenceRadius.rule`).
    ``"theorem1"``: ``stage_value`` is ``r_t`` and is returned.  ``"self_normalized"``:
    ``stage_value = 2 log(1/delta)`` and the radius is
    ``noise_sd sqrt(log det V - d log lam + 2 log(1/delta)) + sqrt(lam) S``, with
    ``log det V - d log lam = 2 (sum_k log L_kk - (d/2) log lam)`` (at least 0: ``V >= lam I``;
    clipped at 0 against rounding).
    """
    self_normalized, noise_sd, half_d_log_lam, offset = rule
    if not self_normalized:
        return stage_value
    s = 0.0
    for k in range(chol.shape[0]):
        s += math.log(chol[k, k])
    return noise_sd * math.sqrt(max(2.0 * (s - half_d_log_lam), 0.0) + stage_value) + offset


@njit
def radii_all(rule, stage_values, chol) -> np.ndarray:
    """:func:`radius_one` for every run (``stage_values`` of shape ``(n,)``, ``chol`` of shape
    ``(n, d, d)``)."""
    n = chol.shape[0]
    out = np.empty(n)
    for i in range(n):
        out[i] = radius_one(rule, stage_values[i], chol[i])
    return out


class ConfidenceRadius:
    """A policy's confidence radius, by rule (:data:`RADII`), with its constants fixed.

    Parameters
    ----------
    kind : {"theorem1", "self_normalized"}
    dim : int
    noise_sd, lam, S : float
        ``sigma_eta``, ``lambda`` and the bound ``||theta*|| <= S`` (validated by the policy).
    L : float
        Bound on the norm of the regressors (only ``"theorem1"`` uses it).

    Attributes
    ----------
    rule : tuple
        ``(self_normalized, noise_sd, (d/2) log lam, sqrt(lam) S)``, what :func:`radius_one`
        takes.

    Examples
    --------
    >>> import numpy as np
    >>> r = ConfidenceRadius("self_normalized", dim=2, noise_sd=1.0, lam=0.1, S=1.0, L=2.0)
    >>> chol = np.sqrt(0.1) * np.eye(2)[None]          # V = lam I: no observation yet
    >>> round(float(r.radii(chol, 0, 0.1)[0]), 6)       # sqrt(2 log 10) + sqrt(0.1)
    2.462194
    """

    def __init__(self, kind: str, dim: int, noise_sd: float, lam: float, S: float,
                 L: float) -> None:
        self.kind = check_radius(kind)
        self._theorem1 = RadiusFormula(dim, noise_sd, lam, S, L)
        self.rule = (self.kind == "self_normalized", float(noise_sd),
                     0.5 * dim * math.log(lam), math.sqrt(lam) * S)

    def stage_value(self, n: float, delta: float) -> float:
        """What kernels take per stage: ``r_n(delta)`` (``"theorem1"``, ``n`` observations or the
        stage index, as the policy defines it) or ``2 log(1/delta)`` (``"self_normalized"``)."""
        if self.rule[0]:
            return -2.0 * math.log(delta)
        return self._theorem1.scalar(n, delta)

    def stage_values(self, start: int, stop: int, delta: float) -> np.ndarray:
        """:meth:`stage_value` at ``n = start, ..., stop - 1`` (the same numbers)."""
        if self.rule[0]:
            return np.full(stop - start, -2.0 * math.log(delta))
        return self._theorem1.counts(start, stop, delta)

    def radii(self, chol: np.ndarray, n: float, delta: float) -> np.ndarray:
        """The radius of every run (``chol``: the runs' Cholesky factors of ``V``)."""
        return radii_all(self.rule, np.full(chol.shape[0], self.stage_value(n, delta)), chol)


class CountTable:
    """A radius's stage values by observation count ``n = 0, 1, ...`` at a fixed ``delta``
    (:meth:`ConfidenceRadius.stage_value`), for policies whose radius is indexed by count (CLUCB,
    ROFUL).  Kernels look the values up, so that a run's radius is the same number alone and in
    any batch; the table grows by doubling as counts grow.

    Examples
    --------
    >>> import numpy as np
    >>> table = CountTable(ConfidenceRadius("theorem1", 2, 1.0, 0.1, 1.0, 2.0), 0.1)
    >>> table[np.array([0, 3])].round(4)
    array([2.4622, 4.0841])
    """

    def __init__(self, radius: ConfidenceRadius, delta: float) -> None:
        self._radius, self._delta = radius, delta
        self._values = np.empty(0)

    def covering(self, top: int) -> np.ndarray:
        """The table, covering counts ``0..top`` (at least)."""
        if top >= self._values.size:
            size = max(2 * top + 1, 1024)
            extra = self._radius.stage_values(self._values.size, size, self._delta)
            self._values = np.concatenate([self._values, extra])
        return self._values

    def __getitem__(self, counts: np.ndarray) -> np.ndarray:
        """The stage values at ``counts`` (one per run)."""
        return self.covering(int(np.max(counts)))[counts]


def self_normalized_radius(V: np.ndarray, delta: float, *, noise_sd: float, lam: float,
                           S: float) -> float:
    """Abbasi-Yadkori, Pal and Szepesvari (2011), Theorem 2, for one information matrix.

    ``sigma sqrt(2 log(det(V)^{1/2} det(lam I)^{-1/2} / delta)) + sqrt(lam) S``, from the
    Cholesky factor of ``V`` (no determinant is formed).

    Parameters
    ----------
    V : ndarray, shape (d, d)
        ``lam I + sum_k X_k X_k^T``, symmetric positive definite.
    delta : float
        Risk in (0, 1).
    noise_sd, lam, S : float
        ``sigma_eta >= 0``, ``lambda > 0`` (the ``lam`` ``V`` was started from) and ``S > 0``.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> round(self_normalized_radius(np.diag([0.1, 10.1]), 0.1, noise_sd=1.0, lam=0.1, S=1.0), 6)
    3.352721
    """
    noise_sd = as_scalar("noise_sd", noise_sd, low=0.0)
    lam = as_scalar("lam", lam, low=0.0, low_open=True)
    S = as_scalar("S", S, low=0.0, low_open=True)
    delta = as_scalar("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    shape = np.shape(V)
    if len(shape) != 2 or shape[0] == 0:
        raise ValueError(f"V must be a (d, d) matrix, got shape {shape}")
    dim = shape[0]
    _, chol = as_spd_batch("V", V, dim)
    r = ConfidenceRadius("self_normalized", dim, noise_sd, lam, S, 0.0).radii(chol, 0, delta)
    if not np.isfinite(r[0]):
        raise ValueError("the radius overflows the float range: rescale the problem")
    return float(r[0])
