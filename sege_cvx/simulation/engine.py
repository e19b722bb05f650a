"""Simulate a batched policy on many independent runs of a linear bandit, in lockstep."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
from tqdm.auto import tqdm

from .._random import NormalStreams, seed_sequences
from .._validation import as_positive_int, as_scalar, as_vector


class LinearBandit:
    """Rewards ``Y = <X, theta*> + eta`` with ``eta ~ N(0, noise_sd^2)``, one noise stream per run.

    Parameters
    ----------
    theta_star : array_like, shape (d,)
    noise_sd : float
    seeds : list of numpy SeedSequence
        One per run (see :func:`sege_cvx.simulation.run_seeds`).
    """

    def __init__(self, theta_star: np.ndarray, noise_sd: float,
                 seeds: Sequence[np.random.SeedSequence]) -> None:
        self.theta_star = as_vector("theta_star", theta_star)
        self.noise_sd = as_scalar("noise_sd", noise_sd, low=0.0)
        if not isinstance(seeds, Sequence) or not seeds:
            raise TypeError(f"seeds must be a nonempty list of SeedSequence (one per run), got {seeds!r}")
        self._noise = NormalStreams(seed_sequences(list(seeds), len(seeds)), 1)

    def pull(self, arms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Expected rewards ``<X_i, theta*>`` and observed rewards for arms of shape ``(n_runs, d)``."""
        mean = arms @ self.theta_star
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
    horizon = as_positive_int("horizon", horizon)
    n = policy.n_runs
    rewards = np.empty((horizon, n))
    decisions = np.empty((horizon, n), dtype=np.int8)
    snaps = set(int(s) for s in snapshot_stages)
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
        mean, y = bandit.pull(arms.reshape(n, -1))
        policy.observe(arms, y)
        rewards[k] = mean
        decisions[k] = policy.last_decision
        if t % 1000 == 0 or t == horizon:
            bar.update(t - bar.n)
    bar.close()
    optimal = float(policy.arm_set.support(bandit.theta_star))
    return SimulationResult(rewards, decisions, optimal, time.perf_counter() - start, snapshots)
