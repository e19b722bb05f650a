"""CLUCB (Kazerouni et al., "Conservative Contextual Linear Bandits", NeurIPS 2017) on a finite
discretization of a convex arm set, for a batch of runs; the paper's baseline (Section 6)."""

from __future__ import annotations

import numpy as np

from .._numba import borrow, keep_alive, njit, over_runs
from .._random import SeedLike
from .._validation import as_scalar
from ..arm_sets.base import ArmSet
from ..arm_sets.discretization import (  # noqa: F401 - also their old home, for one release
    DEFAULT_DISCRETIZATION_TOL,
    MAX_ARMS,
    as_arm_count,
    default_arm_count,
    discretization_error,
    discretize,
    discretize_with_witnesses,
    sphere_directions,
    support_tests,
)
from ..arm_sets.finite import FiniteArmSet
from ..confidence.cholesky import directional_terms, inverse_factor_one, lcb_one, observe_one
from ..confidence.ellipsoid import ConfidenceEllipsoid
from ..confidence.radius import ConfidenceRadius, CountTable, radii_all, radius_one
from ..simulation.statistics import record_run_stage
from .base import Policy

#: Decision codes recorded per stage (``CLUCB.last_decision``).
OPTIMISTIC, BASELINE = 0, 2

@njit(inline="always")
def optimistic_index(inv, theta_hat, beta, arms_t, work) -> int:
    """One run's ``argmax_k <theta_hat, a_k> + beta ||a_k||_{V^{-1}}`` (first of ties), from
    :func:`directional_terms` (``work``: scratch of shape ``(3, K)``)."""
    directional_terms(inv, theta_hat, arms_t, work)
    dot, norm = work[0], work[1]
    best_k = 0
    best = dot[0] + beta * norm[0]
    for k in range(1, arms_t.shape[1]):
        score = dot[k] + beta * norm[k]
        if score > best:
            best_k, best = k, score
    return best_k


@njit(inline="always")
def choose(t, chol, theta_hat, rule, beta_value, arms, arms_t, optimistic_sum, baseline_plays, b0,
           alpha, baseline_arm, work, arm_work, out_arm) -> bool:
    """CLUCB's rule for one run at round ``t``: whether it plays the optimistic arm.

    ``beta`` is the run's :func:`~sege_cvx.confidence.radius.radius_one` of ``rule`` and
    ``beta_value`` (:meth:`CLUCB.beta`'s table entry at its count of optimistic rounds).
    The optimistic arm ``x`` (:func:`optimistic_index`) is played iff
    ``min_{theta in C} <theta, z + x> + m b0 >= (1 - alpha) t b0`` (``z``: the optimistic arms
    played so far, ``m``: baseline plays), else the baseline arm; ``out_arm`` receives it.
    ``arms_t``: the arms as columns; ``work``, ``arm_work``: scratch of shapes ``(d + 4, d)``
    and ``(3, K)``.
    """
    d = theta_hat.shape[0]
    inv = work[:d]
    e, col, s = work[d], work[d + 1], work[d + 2]
    beta = radius_one(rule, beta_value, chol)
    inverse_factor_one(chol, inv, e, col)
    k = optimistic_index(inv, theta_hat, beta, arms_t, arm_work)
    for j in range(d):
        s[j] = optimistic_sum[j] + arms[k, j]
    low = lcb_one(s, theta_hat, chol, beta, work[d + 3])
    play = low + baseline_plays * b0 >= (1.0 - alpha) * t * b0
    for j in range(d):
        out_arm[j] = arms[k, j] if play else baseline_arm[j]
    return play


@njit
def choose_all(t, chol, theta_hat, rule, beta_values, arms, arms_t, optimistic_sum, baseline_plays,
               b0, alpha, baseline_arm, out_arms, out_play) -> None:
    """:func:`choose` for every run (the step API's ``select``)."""
    n, d = theta_hat.shape
    work = np.empty((d + 4, d))
    arm_work = np.empty((3, arms.shape[0]))
    for i in range(n):
        out_play[i] = choose(t, chol[i], theta_hat[i], rule, beta_values[i], arms, arms_t,
                             optimistic_sum[i], baseline_plays[i], b0, alpha, baseline_arm, work,
                             arm_work, out_arms[i])


@njit(nogil=True)
def run_stages(first, last, t0, n_stages, state, rule, beta_table, arms, arms_t, b0, alpha,
               baseline_arm, theta_star, noise_sd, noise, optimal, threshold, grid, row, stats,
               rows, traces, failed):
    """Rounds ``t0 .. t0 + n_stages - 1`` of runs ``first .. last - 1`` against the linear
    bandit (:func:`~sege_cvx._numba.over_runs` spreads blocks of runs over threads).

    Per run and round, the very functions of the step API in its order: :func:`choose`, the
    reward ``<x, theta*> + noise_sd * noise`` (as :meth:`LinearBandit.pull`), the update of the
    confidence set on optimistic rounds (:func:`observe_one`) and the running statistics
    (:func:`record_run_stage`), so a run's numbers are bitwise those of ``select``/``observe``,
    whatever the thread that computed it.  ``state``: ``(V, chol, xy_sum, theta_hat, counts,
    optimistic_sum, decision_counts, last_decision)``; ``stats``: the arrays of
    :class:`~sege_cvx.simulation.statistics.RunStatistics`; ``rows[i]`` receives run ``i``'s
    next checkpoint row; ``failed[i]`` the round at which its ``V`` lost definiteness (else 0).
    """
    # Every array borrowed (_numba.borrow): the caller holds the arguments, and ``scratch`` is
    # kept alive to the end.
    state, stats, traces = borrow(state), borrow(stats), borrow(traces)
    beta_table, arms, arms_t, baseline_arm, theta_star, noise, optimal, grid, rows, failed = borrow(
        (beta_table, arms, arms_t, baseline_arm, theta_star, noise, optimal, grid, rows, failed))
    V, chol, xy_sum, theta_hat, counts, optimistic_sum, decision_counts, last_decision = state
    (cum_regret, cum_reward, min_reward, reward_min, reward_max, first_violation, violations,
     conservative, decisions, regret_rows, reward_rows, violation_rows, decision_rows) = stats
    trace_reward, trace_decision = traces
    d = theta_hat.shape[1]
    scratch = (np.empty((d + 4, d)), np.empty((3, arms.shape[0])), np.empty(d), np.empty((d, d)),
               np.empty((d, d)), np.empty(d))
    work, arm_work, arm, V_new, L, w = borrow(scratch)
    for i in range(first, last):
        V_i, chol_i, xy_i, theta_i, z_i = V[i], chol[i], xy_sum[i], theta_hat[i], optimistic_sum[i]
        r_i = row
        for s_ in range(n_stages):
            t = t0 + s_
            play = choose(t, chol_i, theta_i, rule, beta_table[counts[i]], arms, arms_t, z_i,
                          decision_counts[i, BASELINE], b0, alpha, baseline_arm, work, arm_work, arm)
            mean = 0.0
            for j in range(d):
                mean += arm[j] * theta_star[j]
            y = mean + noise_sd * noise[i, s_]
            if play:
                if not observe_one(V_i, chol_i, xy_i, theta_i, arm, y, V_new, L, w):
                    failed[i] = t
                    break
                counts[i] += 1
                for j in range(d):
                    z_i[j] += arm[j]
                decision_counts[i, OPTIMISTIC] += 1
                code = 0
            else:
                decision_counts[i, BASELINE] += 1
                code = 2
            last_decision[i] = code
            r_i = record_run_stage(i, t, s_, mean, code, optimal, threshold, grid, r_i,
                                   cum_regret, cum_reward, min_reward, reward_min, reward_max,
                                   first_violation, violations, conservative, decisions,
                                   regret_rows, reward_rows, violation_rows, decision_rows,
                                   trace_reward, trace_decision)
        rows[i] = r_i
    keep_alive(scratch)


class CLUCB(Policy):
    """Conservative linear UCB with a known baseline reward, on ``n_runs`` runs at once.

    Finite arms: support points of the set (:func:`discretize`), or, on a
    :class:`~sege_cvx.arm_sets.FiniteArmSet`, its rows as given.  Each round ``t`` the optimistic
    arm is ``argmax_k <theta_hat, a_k> + beta ||a_k||_{V^{-1}}``, where ``theta_hat`` and ``V``
    use only the rounds in which an optimistic arm was played, and ``beta = r_n(delta)`` is the
    radius of the paper's eq. (r_t) at ``n`` = number of such rounds, with the overall ``delta``
    (or, with ``radius="self_normalized"``, Abbasi-Yadkori et al.'s Theorem 2 bound at the run's
    ``V`` and ``delta``).
    With ``z`` the sum of optimistic arms played and ``m`` the number of baseline plays, the
    conservative check plays the optimistic arm ``x`` iff
    ``min_{theta in C} <theta, z + x> + m b0 >= (1 - alpha) t b0`` (``alpha = 1 - b / b0``,
    reward of the baseline ``r_b = b0``), else the baseline arm.

    Parameters
    ----------
    arm_set : ArmSet
    baseline_arm : array_like, shape (d,)
        In the set; on a finite set, one of its arms exactly.
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
        On a :class:`~sege_cvx.arm_sets.FiniteArmSet`: ``None`` or its number of arms (every
        arm is played; the error is 0).
    radius : {"theorem1", "self_normalized"}
        The confidence radius ``beta`` (:mod:`sege_cvx.confidence.radius`).
    n_runs : int, default 1
    seed : int, SeedSequence, sequence of SeedSequence, or None
        Validated only: CLUCB draws nothing (:class:`~sege_cvx.Policy`).

    Attributes
    ----------
    arms : ndarray, shape (K, d)
    arm_witnesses : ndarray, shape (K, witness_dim)
        The arms' witnesses on a lifted arm set (:func:`discretize_with_witnesses`).
    baseline_witness : ndarray, shape (witness_dim,)
    discretization_error : float
    alpha : float
    confidence : ConfidenceEllipsoid
    last_decision : ndarray of int8
        :data:`OPTIMISTIC` or :data:`BASELINE`.
    decision_counts : ndarray, shape (n_runs, 3)
        Optimistic rounds (column :data:`OPTIMISTIC`) and baseline rounds (:data:`BASELINE`).

    Examples
    --------
    >>> import sege_cvx as sc
    >>> disk = sc.Ball(center=[1.0, 1.0], radius=1.0)
    >>> policy = sc.CLUCB(disk, [1.2, 1.9], 2.24, 0.8 * 2.24, S=1.0, noise_sd=1.0)
    >>> policy.arms.shape, policy.discretization_error <= 3e-3
    ((41, 2), True)
    """

    #: The name of each decision code of :attr:`last_decision` (0, 1, 2), as ``summary.json``
    #: counts them (None: a code CLUCB never records).
    decision_names: tuple[str | None, ...] = ("optimistic", None, "baseline")
    compiled_kernels = (run_stages,)

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
        radius: str = "theorem1",
        n_runs: int = 1,
        seed: SeedLike = None,
    ) -> None:
        super().__init__(arm_set, baseline_arm, baseline_reward, threshold, S=S,
                         noise_sd=noise_sd, lam=lam, n_runs=n_runs, seed=seed)
        d = arm_set.dim
        # The conservative constraint is stated for a positive baseline reward r_b = b0.
        if not self.baseline_reward > 0.0:
            raise ValueError(f"baseline_reward must be > 0 for CLUCB's conservative budget, got "
                             f"{self.baseline_reward!r} (after certifying a moved baseline arm)")
        self.alpha = 1.0 - self.threshold / self.baseline_reward
        self.delta = as_scalar("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
        if isinstance(arm_set, FiniteArmSet):
            # The arms are given: play them as they are, with no discretization.
            if n_arms is not None and as_arm_count("n_arms", n_arms) != arm_set.n_arms:
                raise ValueError(f"n_arms = {n_arms!r}, but {arm_set!r} has {arm_set.n_arms} "
                                 "arms: CLUCB plays every arm of a finite set (n_arms=None)")
            self.arms = np.array(arm_set.arms)
            self.arm_witnesses = np.empty((self.arms.shape[0], 0))
            self.discretization_error = 0.0
        else:
            tests = support_tests(arm_set)  # one greedy arm per direction, used twice
            K = (default_arm_count(arm_set, self.S, tests=tests) if n_arms is None
                 else as_arm_count("n_arms", n_arms))
            self.arms, self.arm_witnesses = discretize_with_witnesses(arm_set, K)
            self.discretization_error = discretization_error(arm_set, self.arms, self.S,
                                                             tests=tests)
        self._arms_t = np.ascontiguousarray(self.arms.T)  # arms as columns: vectorized scans
        self.L = arm_set.norm_bound()
        self._check_lam(self.L)
        self.radius = radius
        self._radius = ConfidenceRadius(radius, d, self.noise_sd, self.lam, self.S, self.L)
        self._beta = CountTable(self._radius, self.delta)  # by count of optimistic rounds

        self.confidence = ConfidenceEllipsoid(d, self.lam, self.n_runs)
        self.optimistic_sum = np.zeros((self.n_runs, d))  # z in the conservative check

    def select(self) -> np.ndarray:
        """Choose round ``t``'s arms: optimistic if the conservative check passes, else baseline."""
        t = self.t + 1
        conf = self.confidence
        arms = np.empty((self.n_runs, self.arm_set.dim))
        play = np.empty(self.n_runs, dtype=bool)
        choose_all(t, conf.chol, conf.theta_hat, self._radius.rule, self._beta[conf.counts],
                   self.arms, self._arms_t, self.optimistic_sum, self.decision_counts[:, BASELINE],
                   self.baseline_reward, self.alpha, self.baseline_arm, arms, play)
        self.last_decision = np.where(play, OPTIMISTIC, BASELINE).astype(np.int8)
        return arms

    _fused_stages = True

    def summary(self, stats, stages: list[int]) -> dict:
        """The arm count, its discretization error and the mean number of baseline plays."""
        return {"n_arms": int(self.arms.shape[0]),
                "discretization_error": self.discretization_error,
                "baseline_plays_mean": float(stats.decision_counts[:, BASELINE].mean())}

    def beta(self) -> np.ndarray:
        """Every run's current ``beta``: ``r_n(delta)`` (eq. (r_t) at its ``n`` optimistic
        rounds) or the self-normalized bound at its ``V``."""
        conf = self.confidence
        return radii_all(self._radius.rule, self._beta[conf.counts], conf.chol)

    def _run_stages(self, t0: int, noise: np.ndarray, bandit, optimal: float, stats, row: int,
                    trace_reward: np.ndarray, trace_decision: np.ndarray) -> int:
        """Play rounds ``t0 .. t0 + k - 1`` against ``bandit`` in one compiled call per block of
        runs (:func:`run_stages`, blocks on threads), ``noise`` of shape ``(n_runs, k)`` being
        the bandit's draws for them; fold them into ``stats`` from checkpoint ``row`` on and
        return the next row."""
        k = noise.shape[1]
        conf = self.confidence
        table = self._beta.covering(int(conf.counts.max()) + k)
        state = (conf.V, conf.chol, conf.xy_sum, conf.theta_hat, conf.counts,
                 self.optimistic_sum, self.decision_counts, self.last_decision)
        rows = np.empty(self.n_runs, dtype=np.int64)
        failed = np.zeros(self.n_runs, dtype=np.int64)
        over_runs(run_stages, self.n_runs, t0, k, state, self._radius.rule, table, self.arms,
                  self._arms_t, self.baseline_reward, self.alpha, self.baseline_arm,
                  bandit.theta_star, bandit.noise_sd, noise, optimal, self.threshold,
                  stats.checkpoints, row, stats.arrays(), rows, (trace_reward, trace_decision),
                  failed)
        return self._stages_done(t0 + k - 1, rows, failed)

    def observe(self, x: np.ndarray, y: np.ndarray | float) -> None:
        """Record rewards; only optimistic rounds enter the confidence set."""
        optimistic = self.last_decision == OPTIMISTIC
        self.confidence.update_unchecked(x, y, mask=optimistic)
        self.optimistic_sum[optimistic] += x[optimistic]
