"""Simulate a batched policy on many independent runs of a linear bandit, in lockstep."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from tqdm.auto import tqdm

from .._random import GivenNormals, NormalStreams, seed_sequences
from .._rowwise import row_dot
from .._validation import (
    as_batch_of_vectors,
    as_finite_array,
    as_positive_int,
    as_scalar,
    as_vector,
)
from ..conic.errors import SolverFailure
from ..policies.base import Policy
from ..safety import LinearConstraint
from ..stages.loop import Environment, play_stages
from ..stages.statistics import RunStatistics, checkpoint_grid, decision_count_problem


class Feedback(NamedTuple):
    """One stage of every run (:meth:`LinearBandit.feedback`), each of shape ``(n_runs,)``:
    expected and observed rewards, the constraint's value ``<x, gamma*>`` (NaN without a
    constraint) and its observed value (NaN where the model has no separate feedback), and
    whether the stage violated the constraint (False without one).

    Examples
    --------
    >>> import sege_cvx as sc
    >>> con = sc.LinearConstraint(0.5, gamma_star=[1.0, 0.0], noise_sd=0.0)
    >>> bandit = sc.LinearBandit([0.6, 0.8], 0.0, sc.run_seeds(0, 1)[1], constraint=con)
    >>> fb = bandit.feedback([[0.7, 0.1]])
    >>> float(fb.mean[0]), float(fb.constraint_value[0]), bool(fb.violated[0])
    (0.5, 0.7, True)
    """

    mean: np.ndarray
    observed: np.ndarray
    constraint_value: np.ndarray
    observed_constraint: np.ndarray
    violated: np.ndarray


class LinearBandit:
    """Rewards ``Y = <X, theta*> + eta`` with ``eta ~ N(0, noise_sd^2)``, one noise stream per run;
    with a :class:`~sege_cvx.LinearConstraint`, also the constraint's feedback.

    Under a constraint with its own vector ``gamma*``, each stage also returns
    ``Z = <X, gamma*> + constraint.noise_sd * eta'``, each run drawing ``(eta, eta')`` from its
    own stream (the reward's first); under ``B``'s model ``gamma* = B^T theta*`` and ``Y`` is the
    only feedback.

    Parameters
    ----------
    theta_star : array_like, shape (d,)
    noise_sd : float
    seeds : list of numpy SeedSequence
        One per run (see :func:`sege_cvx.simulation.run_seeds`).
    constraint : LinearConstraint, optional
        The unknown linear constraint of the problem (default: none, the stagewise model).
    draws : array_like, shape (n_runs, horizon, width), optional
        Standard normal draws to replay instead of drawing from ``seeds`` (which must then be
        None): another code's noise, to compare runs draw for draw.  ``width`` is 2 under a
        constraint with its own feedback (the reward's, then the constraint's), else 1.

    Attributes
    ----------
    dim, n_runs : int
        Dimension of ``theta*`` and number of noise streams (runs).
    constraint : LinearConstraint or None
    gamma_star : ndarray of shape (d,), or None
        The constraint's vector (``B^T theta*`` in ``B``'s model).
    """

    def __init__(self, theta_star: np.ndarray, noise_sd: float,
                 seeds: Sequence[np.random.SeedSequence] | None = None, *,
                 constraint: LinearConstraint | None = None,
                 draws: np.ndarray | None = None) -> None:
        self.theta_star = as_vector("theta_star", theta_star)
        self.dim = self.theta_star.shape[0]
        # noise_sd times a normal draw (|z| < 40 in practice) must stay within the float range.
        self.noise_sd = as_scalar("noise_sd", noise_sd, low=0.0, high=np.finfo(float).max / 64)
        if constraint is not None and not isinstance(constraint, LinearConstraint):
            raise TypeError(f"constraint must be a sc.LinearConstraint, got "
                            f"{type(constraint).__name__}")
        if constraint is not None and constraint.dim != self.dim:
            raise ValueError(f"the constraint has dimension {constraint.dim} but theta_star "
                             f"{self.dim}")
        self.constraint = constraint
        self.gamma_star = None if constraint is None else constraint.vector(self.theta_star)
        width = 2 if constraint is not None and constraint.gamma_star is not None else 1
        if draws is not None:
            if seeds is not None:
                raise TypeError("give seeds or draws, not both")
            given = as_finite_array("draws", draws)
            if given.ndim != 3 or given.shape[0] < 1 or given.shape[1] < 1 or given.shape[2] != width:
                raise ValueError(f"draws must have shape (n_runs, horizon, {width}), got "
                                 f"{given.shape}")
            self.n_runs = given.shape[0]
            self._noise = GivenNormals(given)
            return
        if not isinstance(seeds, Sequence) or isinstance(seeds, str | bytes) or not seeds:
            raise TypeError(f"seeds must be a nonempty list of SeedSequence (one per run), got {seeds!r}")
        self.n_runs = len(seeds)
        self._noise = NormalStreams(seed_sequences(list(seeds), len(seeds), name="seeds"), width)

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
        feedback = self._feedback(arms)
        return feedback.mean, feedback.observed

    def feedback(self, arms: np.ndarray) -> Feedback:
        """Every run's :class:`Feedback` for ``arms`` (one arm per run, shape ``(n_runs, d)``)."""
        xs, _ = as_batch_of_vectors("arms", arms, self.dim)
        if xs.shape[0] != self.n_runs:
            raise ValueError(f"arms must hold one arm per run ({self.n_runs}), got shape "
                             f"{np.shape(arms)}")
        return self._feedback(xs)

    def _feedback(self, arms: np.ndarray) -> Feedback:
        arms = np.ascontiguousarray(arms)
        draws = self._noise.next()
        mean = row_dot(arms, self.theta_star)
        observed = mean + self.noise_sd * draws[:, 0]
        nan = np.full(len(mean), np.nan)
        if self.constraint is None:
            return Feedback(mean, observed, nan, nan, np.zeros(len(mean), dtype=bool))
        value = row_dot(arms, self.gamma_star)
        observed_value = (value + self.constraint.noise_sd * draws[:, 1]
                          if draws.shape[1] > 1 else nan)
        return Feedback(mean, observed, value, observed_value, value > self.constraint.limit)


@dataclass
class SimulationResult:
    """What a simulation reports: running statistics, checkpoint rows and (on request) traces.

    Attributes
    ----------
    stats : RunStatistics
        Per-run running statistics and per-run values at the checkpoint stages
        (:mod:`sege_cvx.stages.statistics`): memory ``runs x checkpoints``.
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


def observe(policy: Policy, arms: np.ndarray, feedback: Feedback) -> None:
    """``policy.observe`` of ``arms`` with their :class:`Feedback`: the rewards, and the
    constraint's values where the policy's constraint has its own feedback."""
    known = policy.constraint
    if known is not None and known.separate_feedback:
        policy.observe(arms, feedback.observed, feedback.observed_constraint)
    else:
        policy.observe(arms, feedback.observed)


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
    (:mod:`sege_cvx.stages.loop`), with the runs spread over threads (as many as numba's setting:
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
        :func:`~sege_cvx.stages.statistics.checkpoint_grid` (about 200 log-spaced stages and
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
    known = getattr(policy, "constraint", None)
    if (known is None) != (bandit.constraint is None):
        raise ValueError(f"the bandit {'has' if bandit.constraint is not None else 'has no'} "
                         f"linear constraint but {type(policy).__name__} was made "
                         f"{'without' if known is None else 'with'} one: give both the same "
                         "problem (BanditProblem.policy and BanditProblem.bandit do)")
    if known is not None:
        told = bandit.constraint.known(policy.baseline_arm, bandit.theta_star)
        same_B = (told.B is None) == (known.B is None) and (
            told.B is None or np.array_equal(told.B, known.B))
        if not (known.limit == told.limit and known.safe_value == told.safe_value
                and known.noise_sd == told.noise_sd and same_B):
            raise ValueError(f"{type(policy).__name__} was told another constraint than the "
                             f"bandit's: limit {known.limit!r}, safe arm's value "
                             f"{known.safe_value!r}, noise sd {known.noise_sd!r} against "
                             f"{told.limit!r}, {told.safe_value!r}, {told.noise_sd!r}"
                             f"{'' if same_B else ', and another B'} (BanditProblem.policy and "
                             "BanditProblem.bandit tell both the same)")
    if isinstance(bandit._noise, GivenNormals) and bandit._noise.available() < horizon:
        raise ValueError(f"the bandit's given draws cover {bandit._noise.available()} stages, "
                         f"fewer than the horizon {horizon}")
    snaps = set()
    for s in snapshot_stages:
        if isinstance(s, bool) or not isinstance(s, int | np.integer) or not 1 <= s <= horizon:
            raise ValueError(f"snapshot_stages must hold stages in 1..{horizon}, got {s!r}")
        snaps.add(int(s))
    if snaps and not callable(getattr(policy, "radii", None)):
        raise ValueError(f"snapshot_stages need a policy with a radii(t) method (SEGE); "
                         f"{type(policy).__name__} has none")
    try:
        if bandit.constraint is None:
            optimal = float(policy.arm_set.support(bandit.theta_star))
        else:
            optimal = float(policy.arm_set.constrained_support(
                bandit.theta_star, bandit.gamma_star, bandit.constraint.limit))
    except SolverFailure as exc:
        raise ValueError(f"could not compute the optimal reward max <x, theta*> over the arm set"
                         f"{'' if bandit.constraint is None else ' within the constraint'}: "
                         f"{exc}") from exc
    if bandit.constraint is None:
        gamma, limit, constraint_sd = np.empty(0), np.inf, 0.0
    else:
        gamma, limit = bandit.gamma_star, bandit.constraint.limit
        constraint_sd = bandit.constraint.noise_sd or 0.0
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
            draws = bandit._noise.take(steps)
            noise = np.ascontiguousarray(draws[:, :, 0])
            constraint_noise = (np.ascontiguousarray(draws[:, :, 1]) if draws.shape[2] > 1
                                else np.empty((0, 0)))
            window = slice(t - 1, t - 1 + steps)
            recording = stats.recording(
                row, rewards[window] if traces else np.empty((0, n)),
                decisions[window] if traces else np.empty((0, n), dtype=np.int8))
            done = play_stages(policy.stage_record(t, steps), t,
                               Environment(bandit.theta_star, bandit.noise_sd, noise, optimal,
                                           threshold, gamma, limit, constraint_sd,
                                           constraint_noise), recording)
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
        feedback = bandit._feedback(arms.reshape(n, -1))
        mean = feedback.mean
        observe(policy, arms, feedback)
        violated = feedback.violated if known is not None else mean < threshold
        stats.record(t, mean, violated, codes, optimal, threshold, row)
        row += t == grid[row]
        if traces:
            rewards[k] = mean
            decisions[k] = codes
        if t % 1000 == 0 or t == horizon:
            bar.update(t - bar.n)
    bar.close()
    return SimulationResult(stats, optimal, threshold, time.perf_counter() - start, snapshots,
                            rewards, decisions)
