"""Simulate a batched policy on many independent runs of a linear bandit, in lockstep."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
from tqdm.auto import tqdm

from .._random import NormalStreams, seed_sequences
from .._rowwise import row_dot
from .._validation import as_batch_of_vectors, as_positive_int, as_scalar, as_vector
from ..conic.compiled import SolverFailure
from ..policies.base import BatchPolicy


class LinearBandit:
    """Rewards ``Y = <X, theta*> + eta`` with ``eta ~ N(0, noise_sd^2)``, one noise stream per run.

    Parameters
    ----------
    theta_star : array_like, shape (d,)
    noise_sd : float
    seeds : list of numpy SeedSequence
        One per run (see :func:`sege_cvx.simulation.run_seeds`).

    Attributes
    ----------
    dim, n_runs : int
        Dimension of ``theta*`` and number of noise streams (runs).
    """

    def __init__(self, theta_star: np.ndarray, noise_sd: float,
                 seeds: Sequence[np.random.SeedSequence]) -> None:
        self.theta_star = as_vector("theta_star", theta_star)
        self.dim = self.theta_star.shape[0]
        self.noise_sd = as_scalar("noise_sd", noise_sd, low=0.0)
        if not isinstance(seeds, Sequence) or isinstance(seeds, str | bytes) or not seeds:
            raise TypeError(f"seeds must be a nonempty list of SeedSequence (one per run), got {seeds!r}")
        self.n_runs = len(seeds)
        self._noise = NormalStreams(seed_sequences(list(seeds), len(seeds)), 1)

    def pull(self, arms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Expected rewards ``<X_i, theta*>`` and observed rewards, one arm per run.

        Parameters
        ----------
        arms : ndarray, shape (n_runs, d), or (d,) for a single run

        Returns
        -------
        mean, observed : ndarray, shape (n_runs,)
        """
        xs, _ = as_batch_of_vectors("arms", arms, self.dim)
        if xs.shape[0] != self.n_runs:
            raise ValueError(f"arms must hold one arm per run ({self.n_runs}), got shape "
                             f"{np.shape(arms)}")
        return self._pull(xs)

    def _pull(self, arms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`pull` without validation; each run's reward from its own row and stream."""
        mean = row_dot(np.ascontiguousarray(arms), self.theta_star)
        return mean, mean + self.noise_sd * self._noise.next()[:, 0]


@dataclass
class SimulationResult:
    """Per-stage record of a simulation.

    Attributes
    ----------
    expected_reward : ndarray, shape (horizon, n_runs)
        ``<X_t, theta*>`` of the arm played.
    decisions : ndarray of int8, shape (horizon, n_runs)
        The policy's ``last_decision`` code at each stage.
    optimal_reward : float
        ``<X*, theta*>``.
    wall_seconds : float
    snapshots : dict
        ``{t: (theta_hat_{t-1}, V_{t-1}, r_t)}`` of run 0 at the requested stages.
    """

    expected_reward: np.ndarray
    decisions: np.ndarray
    optimal_reward: float
    wall_seconds: float
    snapshots: dict[int, tuple[np.ndarray, np.ndarray, float]] = field(default_factory=dict)

    @property
    def cumulative_regret(self) -> np.ndarray:
        """``sum_{k<=t} <X* - X_k, theta*>`` per stage and run, shape (horizon, n_runs)."""
        return np.cumsum(self.optimal_reward - self.expected_reward, axis=0)


def simulate(
    policy,
    bandit: LinearBandit,
    horizon: int,
    *,
    snapshot_stages: Iterable[int] = (),
    progress: bool | str = False,
) -> SimulationResult:
    """Run ``policy`` (acting on ``n_runs`` runs) against ``bandit`` for ``horizon`` stages.

    Parameters
    ----------
    policy : SEGE or CLUCB
        A batched policy with ``select``, ``observe``, ``last_decision`` and ``n_runs``.
    bandit : LinearBandit
        Environment with one noise stream per run.
    horizon : int
        Number of stages ``T >= 1``.
    snapshot_stages : iterable of int
        Stages ``t`` at which to record run 0's ``(theta_hat_{t-1}, V_{t-1}, r_t)`` (needs
        ``policy.radius``).
    progress : bool or str
        Show a tqdm bar on stderr (a string is used as its label).

    Returns
    -------
    SimulationResult
    """
    # Everything a run needs is computed and checked before the first stage, so that a bad
    # argument or a failing computation costs a clear error, not a discarded simulation.
    if not isinstance(policy, BatchPolicy):
        raise TypeError(f"policy must be a sege_cvx policy (SEGE, CLUCB), got {type(policy).__name__}")
    if not isinstance(bandit, LinearBandit):
        raise TypeError(f"bandit must be a LinearBandit, got {type(bandit).__name__}")
    horizon = as_positive_int("horizon", horizon)
    n = policy.n_runs
    if bandit.dim != policy.arm_set.dim:
        raise ValueError(f"bandit has dimension {bandit.dim} but the policy's arm set has "
                         f"dimension {policy.arm_set.dim}")
    if bandit.n_runs != n:
        raise ValueError(f"bandit has {bandit.n_runs} noise stream(s) but the policy acts on {n} "
                         "runs: give LinearBandit one seed per run (see sege_cvx.run_seeds)")
    snaps = set()
    for s in snapshot_stages:
        if isinstance(s, bool) or not isinstance(s, int | np.integer) or not 1 <= s <= horizon:
            raise ValueError(f"snapshot_stages must hold stages in 1..{horizon}, got {s!r}")
        snaps.add(int(s))
    try:
        optimal = float(policy.arm_set.support(bandit.theta_star))
    except SolverFailure as exc:
        raise ValueError(f"could not compute the optimal reward max <x, theta*> over the arm set: "
                         f"{exc}") from exc
    rewards = np.empty((horizon, n))
    decisions = np.empty((horizon, n), dtype=np.int8)
    snapshots = {}
    start = time.perf_counter()
    bar = tqdm(total=horizon, desc=progress if isinstance(progress, str) else None,
               disable=not progress, mininterval=0.5, unit="stage")
    for k in range(horizon):
        t = k + 1
        if t in snaps:
            conf = policy.confidence
            snapshots[t] = (conf.theta_hat[0].copy(), conf.V[0].copy(), policy.radius(t))
        arms = policy.select()
        mean, y = bandit._pull(arms.reshape(n, -1))
        policy.observe(arms, y)
        rewards[k] = mean
        decisions[k] = policy.last_decision
        if t % 1000 == 0 or t == horizon:
            bar.update(t - bar.n)
    bar.close()
    return SimulationResult(rewards, decisions, optimal, time.perf_counter() - start, snapshots)
