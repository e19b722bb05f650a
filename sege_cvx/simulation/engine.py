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
from ..conic.errors import SolverFailure
from ..policies.base import Policy
from .loop import Environment, play_stages
from .statistics import RunStatistics, checkpoint_grid, decision_count_problem


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
        # noise_sd times a normal draw (|z| < 40 in practice) must stay within the float range.
        self.noise_sd = as_scalar("noise_sd", noise_sd, low=0.0, high=np.finfo(float).max / 64)
        if not isinstance(seeds, Sequence) or isinstance(seeds, str | bytes) or not seeds:
            raise TypeError(f"seeds must be a nonempty list of SeedSequence (one per run), got {seeds!r}")
        self.n_runs = len(seeds)
        self._noise = NormalStreams(seed_sequences(list(seeds), len(seeds), name="seeds"), 1)

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
        mean, observed = self._pull(xs)
        if not np.all(np.isfinite(observed)):
            raise ValueError("arms and theta_star give rewards beyond the float range (max "
                             f"|theta_star| = {np.abs(self.theta_star).max():.3g}): rescale the "
                             "problem")
        return mean, observed

    def _pull(self, arms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`pull` without validation; each run's reward from its own row and stream."""
        mean = row_dot(np.ascontiguousarray(arms), self.theta_star)
        return mean, mean + self.noise_sd * self._noise.next()[:, 0]


@dataclass
class SimulationResult:
    """What a simulation reports: running statistics, checkpoint rows and (on request) traces.

    Attributes
    ----------
    stats : RunStatistics
        Per-run running statistics and per-run values at the checkpoint stages
        (:mod:`sege_cvx.simulation.statistics`): memory ``runs x checkpoints``.
    optimal_reward : float
        ``<X*, theta*>``.
    threshold : float
        The policy's safety threshold ``b``, against which violations were counted.
    wall_seconds : float
    snapshots : dict
        ``{t: (theta_hat_{t-1}, V_{t-1}, r_t)}`` of run 0 at the requested stages.
    expected_reward, decisions : ndarray, shape (horizon, n_runs), or None
        ``<X_t, theta*>`` and the decision code at every stage: only with ``traces=True``.
    """

    stats: RunStatistics
    optimal_reward: float
    threshold: float
    wall_seconds: float
    snapshots: dict[int, tuple[np.ndarray, np.ndarray, float]] = field(default_factory=dict)
    expected_reward: np.ndarray | None = None
    decisions: np.ndarray | None = None

    @property
    def horizon(self) -> int:
        return int(self.stats.checkpoints[-1])

    @property
    def n_runs(self) -> int:
        return self.stats.cum_regret.shape[0]

    @property
    def cumulative_regret(self) -> np.ndarray:
        """``sum_{k<=t} <X* - X_k, theta*>`` per stage and run, shape (horizon, n_runs); needs
        ``traces=True`` (``stats.regret`` holds it at the checkpoints)."""
        if self.expected_reward is None:
            raise ValueError("per-stage regret needs simulate(..., traces=True); "
                             "stats.regret holds it at the checkpoint stages")
        return np.cumsum(self.optimal_reward - self.expected_reward, axis=0)


def simulate(
    policy,
    bandit: LinearBandit,
    horizon: int,
    *,
    snapshot_stages: Iterable[int] = (),
    checkpoints: Iterable[int] | None = None,
    traces: bool = False,
    progress: bool | str = False,
) -> SimulationResult:
    """Run ``policy`` (acting on ``n_runs`` runs) against ``bandit`` for ``horizon`` stages.

    Policies whose whole stage is compiled (:attr:`~sege_cvx.Policy.compiled_stages`: CLUCB,
    ROFUL, and SEGE on ellipsoids, balls, boxes and polytopes unless its LCB arms come from the
    solver) play up to a thousand stages per call of the compiled stage loop
    (:mod:`sege_cvx.simulation.loop`), with the runs spread over threads (as many as numba's setting:
    ``NUMBA_NUM_THREADS``, or :func:`numba.set_num_threads`; default every core); others go
    through ``select``/``observe`` stage by stage.  Either way the numbers are bitwise those of
    the step API, whatever the number of threads.

    Parameters
    ----------
    policy : Policy
        SEGE, CLUCB, ROFUL or any :class:`~sege_cvx.Policy` (at most three decision codes).
    bandit : LinearBandit
        Environment with one noise stream per run.
    horizon : int
        Number of stages ``T >= 1``.
    snapshot_stages : iterable of int
        Stages ``t`` at which to record run 0's ``(theta_hat_{t-1}, V_{t-1}, r_t)`` (needs
        ``policy.radii``).
    checkpoints : iterable of int, optional
        Stages at which every run's statistics are recorded; default
        :func:`~sege_cvx.simulation.statistics.checkpoint_grid` (about 200 log-spaced stages and
        the paper's).  The horizon is always one.
    traces : bool, default False
        Also keep every stage's expected reward and decision (memory ``horizon x runs``).
    progress : bool or str
        Show a tqdm bar on stderr (a string is used as its label).

    Returns
    -------
    SimulationResult
    """
    # Everything a run needs is computed and checked before the first stage, so that a bad
    # argument or a failing computation costs a clear error, not a discarded simulation.
    if not isinstance(policy, Policy):
        raise TypeError(f"policy must be a sege_cvx.Policy (SEGE, CLUCB, ROFUL or a subclass of "
                        f"sc.Policy), got {type(policy).__name__}")
    if (too_many := decision_count_problem(type(policy))) is not None:
        raise ValueError(too_many)
    if not isinstance(bandit, LinearBandit):
        raise TypeError(f"bandit must be a LinearBandit, got {type(bandit).__name__}")
    horizon = as_positive_int("horizon", horizon)
    n = policy.n_runs
    if bandit.dim != policy.arm_set.dim:
        raise ValueError(f"bandit has dimension {bandit.dim} but the policy's arm set has "
                         f"dimension {policy.arm_set.dim}")
    if policy.t != 0 or policy.awaiting_observe:
        pending = " and has a pending select()" if policy.awaiting_observe else ""
        raise ValueError(f"simulate starts at stage 1, but the policy has already played "
                         f"{policy.t} stage(s){pending}: give it a fresh policy (or continue "
                         "this one with select/observe)")
    if bandit.n_runs != n:
        raise ValueError(f"bandit has {bandit.n_runs} noise stream(s) but the policy acts on {n} "
                         "runs: give LinearBandit one seed per run (see sege_cvx.run_seeds)")
    snaps = set()
    for s in snapshot_stages:
        if isinstance(s, bool) or not isinstance(s, int | np.integer) or not 1 <= s <= horizon:
            raise ValueError(f"snapshot_stages must hold stages in 1..{horizon}, got {s!r}")
        snaps.add(int(s))
    if snaps and not callable(getattr(policy, "radii", None)):
        raise ValueError(f"snapshot_stages need a policy with a radii(t) method (SEGE); "
                         f"{type(policy).__name__} has none")
    try:
        optimal = float(policy.arm_set.support(bandit.theta_star))
    except SolverFailure as exc:
        raise ValueError(f"could not compute the optimal reward max <x, theta*> over the arm set: "
                         f"{exc}") from exc
    if checkpoints is None:
        grid = checkpoint_grid(horizon)
    else:
        given = list(checkpoints)
        for c in given:
            if isinstance(c, bool) or not isinstance(c, int | np.integer) or not 1 <= c <= horizon:
                raise ValueError(f"checkpoints must hold stages in 1..{horizon}, got {c!r}")
        grid = np.array(sorted({int(c) for c in given} | {horizon}), dtype=np.int64)
    stats = RunStatistics.empty(grid, n)
    threshold = float(policy.threshold)
    rewards = np.empty((horizon, n)) if traces else None
    decisions = np.empty((horizon, n), dtype=np.int8) if traces else None
    snapshots = {}
    row = 0
    start = time.perf_counter()
    bar = tqdm(total=horizon, desc=progress if isinstance(progress, str) else None,
               disable=not progress, mininterval=0.5, unit="stage")
    if policy.compiled_stages:
        # Many stages per compiled call, with the same per-run functions as select/observe;
        # calls end before snapshot stages, whose state (stages 1..t-1) is recorded first.
        upcoming = sorted(snaps)
        t = 1
        while t <= horizon:
            if upcoming and upcoming[0] == t:
                conf = policy.confidence
                snapshots[t] = (conf.theta_hat[0].copy(), conf.V[0].copy(), policy.radii(t)[0])
                upcoming.pop(0)
            steps = min(horizon - t + 1, bandit._noise.available(), 1000 - (t - 1) % 1000,
                        (upcoming[0] - t) if upcoming else horizon)
            noise = np.ascontiguousarray(bandit._noise.take(steps)[:, :, 0])
            window = slice(t - 1, t - 1 + steps)
            recording = stats.recording(
                row, rewards[window] if traces else np.empty((0, n)),
                decisions[window] if traces else np.empty((0, n), dtype=np.int8))
            done = play_stages(policy.stage_record(t, steps), t,
                               Environment(bandit.theta_star, bandit.noise_sd, noise, optimal,
                                           threshold), recording)
            if done.invalid.any():
                i = int(np.argmax(done.invalid > 0))
                raise ValueError(f"{type(policy).__name__}'s compiled stages gave run {i} a "
                                 f"non-finite arm or a decision code outside 0.."
                                 f"{policy.decision_counts.shape[1] - 1} at stage "
                                 f"{done.invalid[i]}")
            if done.failed.any():
                i = int(np.argmax(done.failed > 0))
                raise ValueError(f"run {i}, stage {done.failed[i]}: V = lam I + sum x x^T is "
                                 f"not numerically positive definite (lam = {policy.lam:g} is too "
                                 "small): use a larger lam")
            policy.t = t + steps - 1
            row = int(done.rows[0])  # the same for every run
            t += steps
            bar.update(t - 1 - bar.n)
        bar.close()
        return SimulationResult(stats, optimal, threshold, time.perf_counter() - start, snapshots,
                                rewards, decisions)
    for k in range(horizon):
        t = k + 1
        if t in snaps:
            conf = policy.confidence
            snapshots[t] = (conf.theta_hat[0].copy(), conf.V[0].copy(), policy.radii(t)[0])
        arms = policy.select()
        # The codes select set, as the protocol checked them (observe may change the attribute).
        codes = np.array(policy.last_decision, dtype=np.int8)
        mean, y = bandit._pull(arms.reshape(n, -1))
        policy.observe(arms, y)
        stats.record(t, mean, codes, optimal, threshold, row)
        row += t == grid[row]
        if traces:
            rewards[k] = mean
            decisions[k] = codes
        if t % 1000 == 0 or t == horizon:
            bar.update(t - bar.n)
    bar.close()
    return SimulationResult(stats, optimal, threshold, time.perf_counter() - start, snapshots,
                            rewards, decisions)
