"""CLUCB (Kazerouni et al., "Conservative Contextual Linear Bandits", NeurIPS 2017) on a finite
discretization of a convex arm set, for a batch of runs; the paper's baseline (Section 6)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._numba import njit
from .._random import SeedLike
from .._validation import as_scalar
from ..arm_sets.discretization import (
    as_arm_count,
    default_arm_count,
    discretization_error,
    discretize_with_witnesses,
    support_tests,
)
from ..arm_sets.finite import FiniteArmSet
from ..confidence.cholesky import directional_terms, inverse_factor_one, lcb_one
from ..confidence.ellipsoid import ConfidenceEllipsoid
from ..confidence.radius import CountTable, make_radius, radius_one
from ..confidence.state import (
    ConfidenceState,
    LearnScratch,
    RunConfidence,
    learn_scratch,
    run_confidence,
)
from ..confidence.state import learn as update_confidence
from ..setting import SafeSetting
from ..stages.loop import (
    Decisions,
    StageHooks,
    choose_loop,
    register_stage_hooks,
    stage_loop,
)
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


class CLUCBStages(NamedTuple):
    """CLUCB's stage record for the compiled stage loop (:mod:`sege_cvx.stages.loop`).

    Per run: the ``confidence`` state (of optimistic rounds only; its counts index the
    radius's table), ``optimistic_sum`` (``z``) and the ``decisions``.  The constants: the
    ``radius`` rule and its values by count (``beta_table``), the arms (rows, and ``arms_t``
    as columns), ``b0``, ``alpha`` and the ``baseline`` arm.
    """

    confidence: ConfidenceState
    optimistic_sum: np.ndarray
    decisions: Decisions
    radius: tuple
    beta_table: np.ndarray
    arms: np.ndarray
    arms_t: np.ndarray
    b0: float
    alpha: float
    baseline: np.ndarray


class CLUCBRun(NamedTuple):
    """Run ``i``'s views of a :class:`CLUCBStages` (:func:`run_view`)."""

    confidence: RunConfidence
    optimistic_sum: np.ndarray


class CLUCBScratch(NamedTuple):
    """:func:`choose`'s scratch (:func:`scratch`): ``L^{-1}`` (``inverse``) and the vectors
    :func:`inverse_factor_one` uses (``e``, ``column``), the sum ``z + x`` (``total``) and the
    LCB's vector (``w``); the per-arm terms ``(3, K)``; :func:`learn`'s."""

    inverse: np.ndarray
    e: np.ndarray
    column: np.ndarray
    total: np.ndarray
    w: np.ndarray
    terms: np.ndarray
    learn: LearnScratch


@njit(inline="always")
def choose(policy, run, work, i, s, t, out) -> int:
    """CLUCB's rule for run ``i`` at round ``t`` (the stage loop's ``choose_arm`` hook; ``s``
    unused): the optimistic arm or the baseline into ``out``; returns the decision code.

    ``beta`` is the run's radius of the record's rule and the table's value at its count of
    optimistic rounds (:meth:`CLUCB.radii`).  The optimistic arm
    ``x`` (:func:`optimistic_index`) is played iff
    ``min_{theta in C} <theta, z + x> + m b0 >= (1 - alpha) t b0`` (``z``: the optimistic arms
    played so far, ``m``: baseline plays), else the baseline arm.  ``policy``:
    :class:`CLUCBStages`; ``run``: :class:`CLUCBRun`; ``work``: :class:`CLUCBScratch`.
    """
    chol, theta_hat, z = run.confidence.chol, run.confidence.theta_hat, run.optimistic_sum
    d = theta_hat.shape[0]
    beta = radius_one(policy.radius, policy.beta_table[policy.confidence.counts[i]], chol)
    inverse_factor_one(chol, work.inverse, work.e, work.column)
    k = optimistic_index(work.inverse, theta_hat, beta, policy.arms_t, work.terms)
    arms, b0, total = policy.arms, policy.b0, work.total
    for j in range(d):
        total[j] = z[j] + arms[k, j]
    low = lcb_one(total, theta_hat, chol, beta, work.w)
    play = (low + policy.decisions.counts[i, BASELINE] * b0
            >= (1.0 - policy.alpha) * t * b0)
    for j in range(d):
        out[j] = arms[k, j] if play else policy.baseline[j]
    return OPTIMISTIC if play else BASELINE


@njit(inline="always")
def scratch(policy, d):
    """A :class:`CLUCBScratch` for dimension ``d``."""
    return CLUCBScratch(inverse=np.empty((d, d)), e=np.empty(d), column=np.empty(d),
                        total=np.empty(d), w=np.empty(d),
                        terms=np.empty((3, policy.arms.shape[0])), learn=learn_scratch(d))


@njit(inline="always")
def run_view(policy, i):
    """Run ``i``'s :class:`CLUCBRun`."""
    return CLUCBRun(confidence=run_confidence(policy.confidence, i),
                    optimistic_sum=policy.optimistic_sum[i])


@njit(inline="always")
def learn(policy, run, work, i, arm, y, code, z) -> bool:
    """Only optimistic rounds enter the confidence set
    (:func:`~sege_cvx.confidence.state.learn`) and ``z``."""
    if code != OPTIMISTIC:
        return True
    if not update_confidence(policy.confidence, run.confidence, i, arm, y, work.learn):
        return False
    total = run.optimistic_sum
    for j in range(arm.shape[0]):
        total[j] += arm[j]
    return True


register_stage_hooks(CLUCBStages, StageHooks(scratch, run_view, choose, learn))


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
    setting : SafeSetting
        The arm set (any: on a finite set the baseline arm is one of its arms exactly), the
        baseline arm, ``S``, the noise level and the :class:`~sege_cvx.RewardFloor`: ``b0``, the
        baseline's (known) expected reward, positive, and ``b = (1 - alpha) b0 < b0``.
    lam : float, default 0.1
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
    >>> setting = sc.SafeSetting(disk, [1.2, 1.9], S=1.0, noise_sd=1.0,
    ...                          safety=sc.RewardFloor(2.24, 0.8 * 2.24))
    >>> policy = sc.CLUCB(setting)
    >>> policy.arms.shape, policy.discretization_error <= 3e-3
    ((41, 2), True)
    """

    #: The name of each decision code of :attr:`last_decision` (0, 1, 2), as ``summary.json``
    #: counts them (None: a code CLUCB never records).
    decision_names: tuple[str | None, ...] = ("optimistic", None, "baseline")
    #: Its guarantee is the conservative (cumulative) constraint, not every stage's floor.
    stagewise_safe = False

    def __init__(
        self,
        setting: SafeSetting,
        *,
        lam: float = 0.1,
        delta: float = 0.1,
        n_arms: int | None = None,
        radius: str = "theorem1",
        n_runs: int = 1,
        seed: SeedLike = None,
    ) -> None:
        super().__init__(setting, lam=lam, n_runs=n_runs, seed=seed)
        arm_set, d, floor = setting.arm_set, self.d, setting.safety
        # The conservative constraint is stated for a positive baseline reward r_b = b0.
        if not floor.baseline_reward > 0.0:
            raise ValueError(f"baseline_reward must be > 0 for CLUCB's conservative budget, got "
                             f"{floor.baseline_reward!r} (after certifying a moved baseline arm)")
        self.alpha = 1.0 - floor.threshold / floor.baseline_reward
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
            K = (default_arm_count(arm_set, setting.S, tests=tests) if n_arms is None
                 else as_arm_count("n_arms", n_arms))
            self.arms, self.arm_witnesses = discretize_with_witnesses(arm_set, K)
            self.discretization_error = discretization_error(arm_set, self.arms, setting.S,
                                                             tests=tests)
        self.n_arms = int(self.arms.shape[0])  # the count in effect (the default's, if None)
        self._arms_t = np.ascontiguousarray(self.arms.T)  # arms as columns: vectorized scans
        self.L = arm_set.norm_bound()
        self._check_lam(self.L)
        self.radius = radius
        self._radius = make_radius(radius, d, setting.noise_sd, self.lam, setting.S, self.L)
        self._beta = CountTable(self._radius, self.delta)  # by count of optimistic rounds

        self.confidence = ConfidenceEllipsoid(d, self.lam, self.n_runs)
        self.optimistic_sum = np.zeros((self.n_runs, d))  # z in the conservative check

    def select(self) -> np.ndarray:
        """Choose round ``t``'s arms: optimistic if the conservative check passes, else baseline."""
        t = self.t + 1
        arms = np.empty((self.n_runs, self.d))
        codes = np.empty(self.n_runs, dtype=np.int8)
        choose_loop(CLUCBStages, None, type(self._radius.rule))(self.stage_record(t, 1), t, arms,
                                                                codes)
        self.last_decision = codes
        return arms

    compiled_stages = True

    @property
    def compiled_kernels(self) -> tuple:
        return (stage_loop(CLUCBStages, None, type(self._radius.rule)),)

    def summary(self, stats, stages: list[int]) -> dict:
        """The arm count, its discretization error and the mean number of baseline plays."""
        return {"n_arms": int(self.arms.shape[0]),
                "discretization_error": self.discretization_error,
                "baseline_plays_mean": float(stats.decision_counts[:, BASELINE].mean())}

    def radii(self) -> np.ndarray:
        """Every run's current ``beta``: ``r_n(delta)`` (eq. (r_t) at its ``n`` optimistic
        rounds) or the self-normalized bound at its ``V``."""
        conf = self.confidence
        return self._radius.radii(conf.chol, self._beta[conf.counts])

    def stage_record(self, t0: int, n_stages: int) -> CLUCBStages:
        """The record of the ``n_stages`` rounds from ``t0`` on, for the compiled stage loop
        (:mod:`sege_cvx.stages.loop`): the radius's table covers every count they can
        reach."""
        conf = self.confidence
        table = self._beta.covering(int(conf.counts.max()) + n_stages)
        return CLUCBStages(confidence=conf.state(), optimistic_sum=self.optimistic_sum,
                           decisions=self.decision_record(), radius=self._radius.rule,
                           beta_table=table, arms=self.arms, arms_t=self._arms_t,
                           b0=self.setting.safety.baseline_reward, alpha=self.alpha,
                           baseline=self.setting.safe_arm)

    def observe(self, x: np.ndarray, y: np.ndarray, constraint_values: None = None) -> None:
        """Record rewards; only optimistic rounds enter the confidence set."""
        optimistic = self.last_decision == OPTIMISTIC
        self.confidence.update_unchecked(x, y, mask=optimistic)
        self.optimistic_sum[optimistic] += x[optimistic]
