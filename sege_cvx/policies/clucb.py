"""CLUCB (Kazerouni et al., "Conservative Contextual Linear Bandits", NeurIPS 2017) on a finite
discretization of a convex arm set, for a batch of runs; the paper's baseline (Section 6)."""

from __future__ import annotations

import numpy as np
from scipy.special import ndtri

from .._numba import njit
from .._validation import as_batch_of_vectors, as_positive_int, as_scalar
from ..arm_sets.base import ArmSet
from ..confidence.cholesky import inverse_factor
from ..confidence.ellipsoid import ConfidenceEllipsoid, RadiusFormula
from .base import BatchPolicy

#: Decision codes recorded per stage (``CLUCB.last_decision``).
OPTIMISTIC, BASELINE = 0, 2

#: Discretization error the default arm count must meet (the paper's 3e-3, Section 6).
DEFAULT_DISCRETIZATION_TOL = 3e-3


def sphere_directions(dim: int, count: int) -> np.ndarray:
    """``count`` well-spread unit vectors, deterministic.

    ``d = 1``: the unit sphere is ``{+1, -1}``, so there are exactly two directions: ``[[1], [-1]]``
    for any ``count >= 2`` (``[[1]]`` for ``count = 1``).  ``d = 2``: equally spaced angles.
    ``d = 3``: the spherical Fibonacci lattice (``z_k = 1 - (2k + 1)/K``, longitude ``k`` times the
    golden angle).  ``d > 3``: a generalized Fibonacci lattice in the unit cube (``(k + 1/2)/K``
    and ``frac(k sqrt(p_j))`` for primes ``p_j``) mapped to the sphere through the inverse normal
    CDF (less uniform).

    Parameters
    ----------
    dim, count : int
        At least 1.

    Returns
    -------
    ndarray, shape (min(count, 2), 1) if dim == 1 else (count, dim)

    Examples
    --------
    >>> sphere_directions(1, 10)
    array([[ 1.],
           [-1.]])
    """
    dim = as_positive_int("dim", dim)
    count = as_positive_int("count", count)
    if dim == 1:
        return np.array([[1.0], [-1.0]])[:count]
    k = np.arange(count)
    if dim == 2:
        angles = 2.0 * np.pi * k / count
        return np.column_stack([np.cos(angles), np.sin(angles)])
    if dim == 3:
        z = 1.0 - (2.0 * k + 1.0) / count
        phi = k * np.pi * (3.0 - np.sqrt(5.0))
        rho = np.sqrt(1.0 - z**2)
        return np.column_stack([rho * np.cos(phi), rho * np.sin(phi), z])
    primes = [p for p in range(2, 20 * dim) if all(p % q for q in range(2, p))][: dim - 1]
    cube = np.hstack([(k[:, None] + 0.5) / count, (k[:, None] * np.sqrt(primes)) % 1.0])
    points = ndtri(np.clip(cube, 1e-12, 1 - 1e-12))
    return points / np.linalg.norm(points, axis=1, keepdims=True)


def _check_arm_set(arm_set: object) -> ArmSet:
    if not isinstance(arm_set, ArmSet):
        raise TypeError(f"arm_set must be an ArmSet, got {type(arm_set).__name__}")
    return arm_set


def discretization_error(arm_set: ArmSet, arms: np.ndarray, S: float) -> float:
    """``S * max_u [h(u) - max_k <a_k, u>]`` over a dense set of unit test directions ``u``.

    Bounds (up to the test grid) the loss in optimal reward from restricting to ``arms`` when
    ``||theta*|| <= S``.  In ``d = 1`` the test directions are ``+-1``, which is exact.

    Parameters
    ----------
    arm_set : ArmSet
    arms : array_like, shape (K, d)
    S : float
        ``S > 0``.
    """
    d = _check_arm_set(arm_set).dim
    arms, _ = as_batch_of_vectors("arms", arms, d)
    S = as_scalar("S", S, low=0.0, low_open=True)
    tests = sphere_directions(d, 3600 if d == 2 else 1000 * d)
    gap = arm_set.support(tests) - (tests @ arms.T).max(axis=1)
    return float(S * max(gap.max(), 0.0))


def discretize(arm_set: ArmSet, n_arms: int) -> np.ndarray:
    """Support points of the set over ``n_arms`` well-spread directions (for the disk: equally
    spaced boundary points).  In ``d = 1`` there are at most two: the interval's endpoints."""
    _check_arm_set(arm_set)
    return arm_set.greedy_arm(sphere_directions(arm_set.dim, as_positive_int("n_arms", n_arms)))


def default_arm_count(arm_set: ArmSet, S: float, tol: float = DEFAULT_DISCRETIZATION_TOL,
                      max_arms: int = 4096) -> int:
    """Smallest ``K`` (by doubling then bisection) whose discretization error is ``<= tol``.

    ``d = 1``: 2 (the interval's endpoints; the error is then 0).
    """
    _check_arm_set(arm_set)
    S = as_scalar("S", S, low=0.0, low_open=True)
    tol = as_scalar("tol", tol, low=0.0, low_open=True)
    max_arms = as_positive_int("max_arms", max_arms)
    if arm_set.dim == 1:
        return 2
    hi = min(8, max_arms)
    while discretization_error(arm_set, discretize(arm_set, hi), S) > tol:
        if hi >= max_arms:
            return max_arms
        hi = min(2 * hi, max_arms)
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if discretization_error(arm_set, discretize(arm_set, mid), S) <= tol:
            hi = mid
        else:
            lo = mid
    return hi


@njit
def optimistic_arms(chol, theta_hat, beta, arms):
    """Per run, the index of ``argmax_k <theta_hat, a_k> + beta ||a_k||_{V^{-1}}`` (first of ties).

    ``||a||_{V^{-1}} = ||L^{-1} a||`` with ``L^{-1}`` formed once per run (``d`` triangular
    solves), so that each of the ``K`` arms costs one triangular mat-vec and no division.
    """
    n, d = theta_hat.shape
    out = np.empty(n, dtype=np.int64)
    inv = inverse_factor(chol)
    for i in range(n):
        best = -np.inf
        best_k = 0
        for k in range(arms.shape[0]):
            dot = 0.0
            quad = 0.0
            for j in range(d):
                dot += theta_hat[i, j] * arms[k, j]
                w = 0.0
                for m in range(j + 1):  # L^{-1} is lower triangular
                    w += inv[i, j, m] * arms[k, m]
                quad += w * w
            ucb = dot + beta[i] * np.sqrt(quad)
            if ucb > best:
                best = ucb
                best_k = k
        out[i] = best_k
    return out


class CLUCB(BatchPolicy):
    """Conservative linear UCB with a known baseline reward, on ``n_runs`` runs at once.

    Finite arms: support points of the set (:func:`discretize`).  Each round ``t`` the optimistic
    arm is ``argmax_k <theta_hat, a_k> + beta ||a_k||_{V^{-1}}``, where ``theta_hat`` and ``V``
    use only the rounds in which an optimistic arm was played, and ``beta = r_n(delta)`` is the
    radius of the paper's eq. (r_t) at ``n`` = number of such rounds, with the overall ``delta``.
    With ``z`` the sum of optimistic arms played and ``m`` the number of baseline plays, the
    conservative check plays the optimistic arm ``x`` iff
    ``min_{theta in C} <theta, z + x> + m b0 >= (1 - alpha) t b0`` (``alpha = 1 - b / b0``,
    reward of the baseline ``r_b = b0``), else the baseline arm.

    Parameters
    ----------
    arm_set : ArmSet
    baseline_arm : array_like, shape (d,)
    baseline_reward : float
        ``b0``, the baseline's (known) expected reward.
    threshold : float
        ``b = (1 - alpha) b0 < b0``.
    S, noise_sd, lam : float
        As for :class:`~sege_cvx.policies.SEGE`.
    delta : float, default 0.1
        Overall risk of the confidence sets.
    n_arms : int, optional
        Number of discrete arms; default the smallest meeting a 3e-3 discretization error.
    n_runs : int, default 1

    Attributes
    ----------
    arms : ndarray, shape (K, d)
    discretization_error : float
    alpha : float
    confidence : ConfidenceEllipsoid
    last_decision : ndarray of int8
        :data:`OPTIMISTIC` or :data:`BASELINE`.
    decision_counts : ndarray, shape (n_runs, 2)
        Optimistic and baseline rounds.

    Examples
    --------
    >>> import sege_cvx as sc
    >>> disk = sc.Ball(center=[1.0, 1.0], radius=1.0)
    >>> policy = sc.CLUCB(disk, [1.2, 1.9], 2.24, 0.8 * 2.24, S=1.0, noise_sd=1.0)
    >>> policy.arms.shape, policy.discretization_error <= 3e-3
    ((41, 2), True)
    """

    def __init__(
        self,
        arm_set: ArmSet,
        baseline_arm: np.ndarray,
        baseline_reward: float,
        threshold: float,
        *,
        S: float,
        noise_sd: float,
        lam: float = 0.1,
        delta: float = 0.1,
        n_arms: int | None = None,
        n_runs: int = 1,
    ) -> None:
        self._set_problem(arm_set, baseline_arm, baseline_reward, threshold, S, noise_sd, lam, n_runs)
        d = arm_set.dim
        # The conservative constraint is stated for a positive baseline reward r_b = b0.
        if not self.baseline_reward > 0.0:
            raise ValueError(f"baseline_reward must be > 0 for CLUCB's conservative budget, got "
                             f"{self.baseline_reward!r} (after certifying a moved baseline arm)")
        self.alpha = 1.0 - self.threshold / self.baseline_reward
        self.delta = as_scalar("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
        K = default_arm_count(arm_set, self.S) if n_arms is None else as_positive_int("n_arms", n_arms)
        self.arms = discretize(arm_set, K)
        self.discretization_error = discretization_error(arm_set, self.arms, self.S)
        self.L = arm_set.norm_bound()
        self._check_lam(self.L)
        self._radius = RadiusFormula(d, self.noise_sd, self.lam, self.S, self.L)
        self._beta_table = np.empty(0)  # r_n(delta) for n = 0, 1, ...: see beta()

        self.confidence = ConfidenceEllipsoid(d, self.lam, self.n_runs)
        self.optimistic_sum = np.zeros((self.n_runs, d))  # z in the conservative check
        self.t = 0
        self.last_decision = np.full(self.n_runs, -1, dtype=np.int8)
        self.decision_counts = np.zeros((self.n_runs, 2), dtype=np.int64)

    def select(self) -> np.ndarray:
        """Choose round ``t``'s arms: optimistic if the conservative check passes, else baseline."""
        t = self._stage_start()
        conf = self.confidence
        beta = self.beta(conf.counts)
        optimistic = self.arms[optimistic_arms(conf.chol, conf.theta_hat, beta, self.arms)]
        # L_t = min_{theta in C} <theta, z + x> (a lower confidence bound on z + x).
        low = conf.lcb(self.optimistic_sum + optimistic, beta)
        baseline_plays = self.decision_counts[:, 1]
        play = low + baseline_plays * self.baseline_reward >= (1.0 - self.alpha) * t * self.baseline_reward
        arms = np.where(play[:, None], optimistic, self.baseline_arm)
        self.last_decision = np.where(play, OPTIMISTIC, BASELINE).astype(np.int8)
        self.decision_counts[:, 0] += play
        self.decision_counts[:, 1] += ~play
        return self._stage_arms(arms)

    def beta(self, counts: np.ndarray) -> np.ndarray:
        """``beta = r_n(delta)`` (eq. (r_t) at ``n`` optimistic rounds) per run.

        Looked up in a table of scalar radii, so that a run's radius is the same number alone
        and in any batch.
        """
        top = int(counts.max())
        if top >= self._beta_table.size:
            size = max(2 * top + 1, 1024)
            extra = [self._radius.scalar(n, self.delta) for n in range(self._beta_table.size, size)]
            self._beta_table = np.concatenate([self._beta_table, extra])
        return self._beta_table[counts]

    def observe(self, x: np.ndarray, y: np.ndarray | float) -> None:
        """Record rewards; only optimistic rounds enter the confidence set."""
        xs, ys = self._observation(x, y)
        optimistic = self.last_decision == OPTIMISTIC
        self.confidence._update(xs, ys, mask=optimistic)
        self.optimistic_sum[optimistic] += xs[optimistic]
