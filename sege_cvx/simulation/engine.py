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
from ..safety import KnownConstraint, LinearConstraint, RewardFloor
from ..stages.loop import Environment, play_stages
from ..stages.statistics import RunStatistics, checkpoint_grid


class Feedback(NamedTuple):
    """One stage of every run (:meth:`LinearBandit.feedback`), each of shape ``(n_runs,)``:
    expected and observed rewards, the constraint's value ``<x, gamma*>`` and its observed value
    (None where there is no constraint, and the observed value None where the constraint has no
    feedback of its own), and whether the stage violated the bandit's safety criterion (the
    reward floor or the constraint; False where it has none).

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
    constraint_value: np.ndarray | None
    observed_constraint: np.ndarray | None
    violated: np.ndarray


class LinearBandit:
    """Rewards ``Y = <X, theta*> + eta`` with ``eta ~ N(0, noise_sd^2)``, one noise stream per run,
    and the safety criterion that scores violations: a reward floor ``threshold`` (a stage
    violates it if ``<X, theta*> < threshold``) or a :class:`~sege_cvx.LinearConstraint`
    (``<X, gamma*> > limit``), with its feedback.

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
    threshold : float, optional
        The stagewise floor ``b`` (the paper's Definition 1).
    constraint : LinearConstraint, optional
        The unknown linear constraint of the problem (not with ``threshold``).
    draws : array_like, shape (n_runs, horizon, width), optional
        Standard normal draws to replay instead of drawing from ``seeds`` (which must then be
        None): another code's noise, to compare runs draw for draw.  ``width`` is 2 under a
        constraint with its own feedback (the reward's, then the constraint's), else 1.

    Attributes
    ----------
    dim, n_runs : int
        Dimension of ``theta*`` and number of noise streams (runs).
    threshold : float or None
    constraint : LinearConstraint or None
    gamma_star : ndarray of shape (d,), or None
        The constraint's vector (``B^T theta*`` in ``B``'s model).
    """

    def __init__(self, theta_star: np.ndarray, noise_sd: float,
                 seeds: Sequence[np.random.SeedSequence] | None = None, *,
                 threshold: float | None = None, constraint: LinearConstraint | None = None,
                 draws: np.ndarray | None = None) -> None:
        self.theta_star = as_vector("theta_star", theta_star)
        self.dim = self.theta_star.shape[0]
        # noise_sd times a normal draw (|z| < 40 in practice) must stay within the float range.
        self.noise_sd = as_scalar("noise_sd", noise_sd, low=0.0, high=np.finfo(float).max / 64)
        if threshold is not None and constraint is not None:
            raise TypeError("a bandit scores one safety criterion: a reward floor (threshold) or "
                            "a linear constraint, not both")
        self.threshold = None if threshold is None else as_scalar("threshold", threshold)
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
        feedback = self._feedback(xs)
        if not np.all(np.isfinite(feedback.observed)):
            raise ValueError("arms and theta_star give rewards beyond the float range (max "
                             f"|theta_star| = {np.abs(self.theta_star).max():.3g}): rescale the "
                             "problem")
        return feedback.mean, feedback.observed

    def feedback(self, arms: np.ndarray) -> Feedback:
        """Every run's :class:`Feedback` for ``arms`` (one arm per run, shape ``(n_runs, d)``)."""
        xs, _ = as_batch_of_vectors("arms", arms, self.dim)
        if xs.shape[0] != self.n_runs:
            raise ValueError(f"arms must hold one arm per run ({self.n_runs}), got shape "
                             f"{np.shape(arms)}")
        return self._feedback(xs)

    def _feedback(self, arms: np.ndarray) -> Feedback:
        """:meth:`feedback` without validation; each run's from its own row and stream."""
        arms = np.ascontiguousarray(arms)
        draws = self._noise.next()
        mean = row_dot(arms, self.theta_star)
        observed = mean + self.noise_sd * draws[:, 0]
        if self.constraint is None:
            violated = (mean < self.threshold if self.threshold is not None
                        else np.zeros(len(mean), dtype=bool))
            return Feedback(mean, observed, None, None, violated)
        value = row_dot(arms, self.gamma_star)
        observed_value = (value + self.constraint.noise_sd * draws[:, 1]
                          if draws.shape[1] > 1 else None)
        return Feedback(mean, observed, value, observed_value, value > self.constraint.limit)

    def environment(self, noise: np.ndarray, constraint_noise: np.ndarray,
                    optimal: float) -> Environment:
        """The bandit's side of a compiled call of the stage loop with these draws."""
        if self.constraint is None:
            threshold = -np.inf if self.threshold is None else self.threshold
            return Environment(self.theta_star, self.noise_sd, noise, optimal, threshold)
        return Environment(self.theta_star, self.noise_sd, noise, optimal, -np.inf,
                           self.gamma_star, self.constraint.limit,
                           self.constraint.noise_sd or 0.0, constraint_noise)


@dataclass
class SimulationResult:
    """What a simulation reports: running statistics, checkpoint rows and (on request) traces.

    Attributes
    ----------
    stats : RunStatistics
        Per-run running statistics and per-run values at the checkpoint stages
        (:mod:`sege_cvx.stages.statistics`): memory ``runs x checkpoints``.
    optimal_reward : float
        ``<X*, theta*>`` (within the constraint, under one).
    threshold : float or None
        The bandit's reward floor ``b``, against which violations were counted (None under a
        linear constraint).
    wall_seconds : float
    snapshots : dict
        ``{t: (theta_hat_{t-1}, V_{t-1}, r_t)}`` of run 0 at the requested stages.
    expected_reward, decisions : ndarray, shape (horizon, n_runs), or None
        ``<X_t, theta*>`` and the decision code at every stage: only with ``traces=True``.
    """

    stats: RunStatistics
    optimal_reward: float
    threshold: float | None
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
    constraint's values where it has feedback of its own (None otherwise)."""
    policy.observe(arms, feedback.observed, feedback.observed_constraint)


def disagreement(policy: Policy, bandit: LinearBandit, misspecified: bool = False) -> str | None:
    """Why ``policy``'s setting is not the truth ``bandit`` holds, in one sentence (None if it
    is): the dimension, the safety criterion (the floor's threshold; the constraint's limit,
    safe value, noise and ``B``), and, unless ``misspecified``, the setting's assumptions
    (:meth:`SafeSetting.assumption_violations <sege_cvx.SafeSetting.assumption_violations>`:
    ``||theta*||``, ``||gamma*|| <= S``, ``<x0, theta*> >= b0``)."""
    setting, name = policy.setting, type(policy).__name__
    if bandit.dim != setting.dim:
        return (f"the bandit has dimension {bandit.dim} but {name}'s arm set has dimension "
                f"{setting.dim}")
    safety = setting.safety
    if isinstance(safety, RewardFloor):
        if bandit.constraint is not None:
            return (f"the bandit has a linear constraint but {name} was told a reward floor: give "
                    "both the same problem (BanditProblem.policy and BanditProblem.bandit do)")
        if bandit.threshold is None:
            return (f"{name} keeps a reward floor but the bandit scores none: make it with "
                    f"LinearBandit(..., threshold={safety.threshold!r}) (BanditProblem.bandit "
                    "does)")
        if bandit.threshold != safety.threshold:
            return (f"{name} was told the threshold {safety.threshold!r}, the bandit scores "
                    f"violations against {bandit.threshold!r}")
    else:
        if bandit.constraint is None:
            return (f"{name} was told a linear constraint but the bandit has none: give both the "
                    "same problem (BanditProblem.policy and BanditProblem.bandit do)")
        told = bandit.constraint.known(setting.safe_arm, bandit.theta_star)
        if (wrong := _constraint_difference(safety, told)) is not None:
            return f"{name} was told another constraint than the bandit's: {wrong}"
    if not misspecified:
        broken = setting.assumption_violations(bandit.theta_star, bandit.gamma_star)
        if broken:
            return (f"{'; '.join(broken)}: the bandit breaks what {name} was told (pass "
                    "misspecified=True to study a misspecified problem)")
    return None


def _constraint_difference(known: KnownConstraint, told: KnownConstraint) -> str | None:
    """What differs between the constraint a policy knows and the truth's, or None."""
    same_B = (told.B is None) == (known.B is None) and (
        told.B is None or np.array_equal(told.B, known.B))
    if (known.limit == told.limit and known.safe_value == told.safe_value
            and known.noise_sd == told.noise_sd and same_B):
        return None
    return (f"limit {known.limit!r}, safe arm's value {known.safe_value!r}, noise sd "
            f"{known.noise_sd!r} against {told.limit!r}, {told.safe_value!r}, "
            f"{told.noise_sd!r}{'' if same_B else ', and another B'}")


@dataclass
class _Run:
    """A simulation checked and ready (:func:`_prepare`): what both ways of playing it use."""

    policy: Policy
    bandit: LinearBandit
    horizon: int
    grid: np.ndarray
    snapshot_stages: list[int]
    optimal: float
    stats: RunStatistics
    rewards: np.ndarray | None
    decisions: np.ndarray | None
    snapshots: dict = field(default_factory=dict)

    def snapshot(self, t: int) -> None:
        """Run 0's ``(theta_hat_{t-1}, V_{t-1}, r_t)`` before stage ``t``."""
        conf = self.policy.confidence
        self.snapshots[t] = (conf.theta_hat[0].copy(), conf.V[0].copy(),
                             float(self.policy.radii()[0]))


def simulate(
    policy: Policy,
    bandit: LinearBandit,
    horizon: int,
    *,
    snapshot_stages: Iterable[int] = (),
    checkpoints: Iterable[int] | None = None,
    traces: bool = False,
    progress: bool | str = False,
    misspecified: bool = False,
) -> SimulationResult:
    """Run ``policy`` (acting on ``n_runs`` runs) against ``bandit`` for ``horizon`` stages.

    Policies whose whole stage is compiled (:attr:`~sege_cvx.Policy.compiled_stages`: CLUCB,
    ROFUL, GNOP and SEGE on ellipsoids, balls, boxes, polytopes and hulls, SEGE on cvxpy sets of
    second-order cones built with ``compiled=True``, unless its LCB arms come from the solver,
    and the constrained policies on star sets) play up to a thousand stages per
    call of the compiled stage loop (:mod:`sege_cvx.stages.loop`), with the runs spread over
    threads (as many as numba's setting: ``NUMBA_NUM_THREADS``, or
    :func:`numba.set_num_threads`; default every core); others go through
    ``select``/``observe`` stage by stage.  Either way the numbers are bitwise those of the step
    API, whatever the number of threads.

    Before the first stage, the policy's setting is checked against the bandit
    (:func:`disagreement`): the safety criterion the bandit scores is the one the policy was
    told, and the truth meets the setting's assumptions (``||theta*|| <= S`` and, under a
    constraint, ``||gamma*|| <= S``; ``<x0, theta*> >= b0``) unless ``misspecified``.

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
        ``policy.confidence``).
    checkpoints : iterable of int, optional
        Stages at which every run's statistics are recorded; default
        :func:`~sege_cvx.stages.statistics.checkpoint_grid` (about 200 log-spaced stages and
        the paper's).  The horizon is always one.
    traces : bool, default False
        Also keep every stage's expected reward and decision (memory ``horizon x runs``).
    progress : bool or str
        Show a tqdm bar on stderr (a string is used as its label).
    misspecified : bool, default False
        Allow a bandit that breaks the setting's assumptions (a misspecification study).

    Returns
    -------
    SimulationResult
    """
    run = _prepare(policy, bandit, horizon, snapshot_stages, checkpoints, traces, misspecified)
    start = time.perf_counter()
    bar = tqdm(total=run.horizon, desc=progress if isinstance(progress, str) else None,
               disable=not progress, mininterval=0.5, unit="stage")
    try:
        (_play_compiled if policy.compiled_stages else _play_stepped)(run, bar)
    finally:
        bar.close()
    return SimulationResult(run.stats, run.optimal, bandit.threshold,
                            time.perf_counter() - start, run.snapshots, run.rewards,
                            run.decisions)


def _prepare(policy, bandit, horizon, snapshot_stages, checkpoints, traces,
             misspecified) -> _Run:
    """Every argument checked and everything a run needs computed before the first stage, so
    that a bad argument or a failing computation costs a clear error, not a discarded
    simulation."""
    if not isinstance(policy, Policy):
        raise TypeError(f"policy must be a sege_cvx.Policy (SEGE, CLUCB, ROFUL or a subclass of "
                        f"sc.Policy), got {type(policy).__name__}")
    if not isinstance(bandit, LinearBandit):
        raise TypeError(f"bandit must be a LinearBandit, got {type(bandit).__name__}")
    horizon = as_positive_int("horizon", horizon)
    n = policy.n_runs
    if (wrong := disagreement(policy, bandit, bool(misspecified))) is not None:
        raise ValueError(wrong)
    if policy.t != 0 or policy.awaiting_observe:
        pending = " and has a pending select()" if policy.awaiting_observe else ""
        raise ValueError(f"simulate starts at stage 1, but the policy has already played "
                         f"{policy.t} stage(s){pending}: give it a fresh policy (or continue "
                         "this one with select/observe)")
    if bandit.n_runs != n:
        raise ValueError(f"bandit has {bandit.n_runs} noise stream(s) but the policy acts on {n} "
                         "runs: give LinearBandit one seed per run (see sege_cvx.run_seeds)")
    if isinstance(bandit._noise, GivenNormals) and bandit._noise.available() < horizon:
        raise ValueError(f"the bandit's given draws cover {bandit._noise.available()} stages, "
                         f"fewer than the horizon {horizon}")
    snaps = sorted({_stage("snapshot_stages", s, horizon) for s in snapshot_stages})
    if snaps and policy.confidence is None:
        raise ValueError(f"snapshot_stages need a policy with a confidence set; "
                         f"{type(policy).__name__} has none")
    arm_set = policy.setting.arm_set
    try:
        if bandit.constraint is None:
            optimal = float(arm_set.support(bandit.theta_star))
        else:
            optimal = float(arm_set.constrained_support(
                bandit.theta_star, bandit.gamma_star, bandit.constraint.limit))
    except SolverFailure as exc:
        raise ValueError(f"could not compute the optimal reward max <x, theta*> over the arm set"
                         f"{'' if bandit.constraint is None else ' within the constraint'}: "
                         f"{exc}") from exc
    if checkpoints is None:
        grid = checkpoint_grid(horizon)
    else:
        given = {_stage("checkpoints", c, horizon) for c in checkpoints}
        grid = np.array(sorted(given | {horizon}), dtype=np.int64)
    stats = RunStatistics.empty(grid, n, len(policy.decision_names))
    return _Run(policy, bandit, horizon, grid, snaps, optimal, stats,
                np.empty((horizon, n)) if traces else None,
                np.empty((horizon, n), dtype=np.int8) if traces else None)


def _stage(name: str, value: object, horizon: int) -> int:
    """``value`` as a stage in ``1..horizon`` (a ValueError naming ``name`` otherwise)."""
    if (isinstance(value, bool) or not isinstance(value, int | np.integer)
            or not 1 <= value <= horizon):
        raise ValueError(f"{name} must hold stages in 1..{horizon}, got {value!r}")
    return int(value)


def _play_compiled(run: _Run, bar) -> None:
    """Many stages per compiled call, with the same per-run functions as select/observe; calls
    end before snapshot stages, whose state (stages 1..t-1) is recorded first."""
    policy, bandit, horizon, n = run.policy, run.bandit, run.horizon, run.policy.n_runs
    upcoming = list(run.snapshot_stages)
    row, t = 0, 1
    while t <= horizon:
        if upcoming and upcoming[0] == t:
            run.snapshot(t)
            upcoming.pop(0)
        steps = min(horizon - t + 1, bandit._noise.available(), 1000 - (t - 1) % 1000,
                    (upcoming[0] - t) if upcoming else horizon)
        draws = bandit._noise.take(steps)
        noise = np.ascontiguousarray(draws[:, :, 0])
        constraint_noise = (np.ascontiguousarray(draws[:, :, 1]) if draws.shape[2] > 1
                            else np.empty((0, 0)))
        window = slice(t - 1, t - 1 + steps)
        recording = run.stats.recording(
            row, run.rewards[window] if run.rewards is not None else np.empty((0, n)),
            run.decisions[window] if run.decisions is not None
            else np.empty((0, n), dtype=np.int8))
        done = play_stages(policy.stage_record(t, steps), t,
                           bandit.environment(noise, constraint_noise, run.optimal), recording)
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


def _play_stepped(run: _Run, bar) -> None:
    """``select``/``observe`` stage by stage."""
    policy, bandit, n = run.policy, run.bandit, run.policy.n_runs
    threshold = -np.inf if bandit.threshold is None else bandit.threshold
    snaps, row = set(run.snapshot_stages), 0
    for k in range(run.horizon):
        t = k + 1
        if t in snaps:
            run.snapshot(t)
        arms = policy.select()
        # The codes select set, as the protocol checked them (observe may change the attribute).
        codes = np.array(policy.last_decision, dtype=np.int8)
        feedback = bandit._feedback(arms.reshape(n, -1))
        observe(policy, arms, feedback)
        run.stats.record(t, feedback.mean, feedback.violated, codes, run.optimal, threshold, row)
        row += t == run.grid[row]
        if run.rewards is not None:
            run.rewards[k] = feedback.mean
            run.decisions[k] = codes
        if t % 1000 == 0 or t == run.horizon:
            bar.update(t - bar.n)
