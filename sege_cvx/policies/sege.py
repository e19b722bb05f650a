"""SEGE: Safe Exploration and Greedy Exploitation (paper Algorithm 1), for a batch of runs."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .._random import PacedNormals, SeedLike
from .._validation import as_scalar
from ..arm_sets.base import LCB_METHODS
from ..arm_sets.exploration import Exploration
from ..arm_sets.kernels.registry import Anchors
from ..arm_sets.kernels.status import STATUS
from ..confidence.cholesky import min_eigenvalue_at_least
from ..confidence.ellipsoid import ConfidenceEllipsoid
from ..confidence.radius import make_radius
from ..safety import RewardFloor
from ..setting import SafeSetting
from ..stages.loop import choose_loop, stage_loop
from . import sege_rule
from .base import Policy
from .sege_rule import EXPLOIT, EXPLORE_BASELINE, EXPLORE_LCB

__all__ = ["SEGE", "EXPLOIT", "EXPLORE_LCB", "EXPLORE_BASELINE", "PaperRisk", "default_c",
           "paper_risk", "rho_bar"]


def paper_risk(t: int, delta_bar: float = 0.1) -> float:
    """The paper's risk schedule ``delta_t = 6 delta_bar / (pi^2 t^2)`` (sums to ``delta_bar``)."""
    return 6.0 * delta_bar / (np.pi**2 * t**2)


@dataclass(frozen=True)
class PaperRisk:
    """The paper's risk schedule ``delta_t = 6 delta_bar / (pi^2 t^2)`` at a given overall risk
    ``delta_bar`` in (0, 1), as a picklable callable (SEGE's default ``risk``).

    >>> PaperRisk(0.1)(1) == paper_risk(1, 0.1)
    True
    """

    delta_bar: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "delta_bar", as_scalar("delta_bar", self.delta_bar, low=0.0,
                                                        high=1.0, low_open=True, high_open=True))

    def __call__(self, t: int) -> float:
        return paper_risk(t, self.delta_bar)


def default_c(rho: float, sigma2: float) -> float:
    """SEGE's default exploitation constant: ``20 rho^2 sigma^2`` to one significant digit.

    Safe exploration raises ``lambda_min(V_t)`` by about ``rho^2 sigma^2`` a stage (Lemma 4),
    so line 5's test ``lambda_min(V_{t-1}) >= c sqrt(t)`` passes after about
    ``(c / (rho^2 sigma^2))^2 = 400`` exploring stages, whatever the set's scale.  The ratio is
    the paper's: on its disk (``rho = 0.224``, ``sigma^2 = 1/2``) it gives its ``c = 0.5``.

    >>> default_c(0.224, 0.5)
    0.5
    """
    return float(f"{20.0 * rho * rho * sigma2:.0e}")


def rho_bar(baseline_reward: float, threshold: float, S: float, diameter: float) -> float:
    """Largest safe mixing weight, Lemma 1 (eq. (rho bar)) with a certified bound ``D``.

    ``rho_bar = min{1, (b0 - b) / (S * D)}`` where ``D >= ||X^S - U||``; for an ellipsoid
    ``D = 2 sqrt(lambda_max(H))``, exactly the paper's.
    """
    return min(1.0, (baseline_reward - threshold) / (S * diameter))


class SEGE(Policy):
    """The SEGE algorithm (paper Algorithm 1) acting on ``n_runs`` independent runs at once.

    At stage ``t`` (1-based) every decision uses only stages ``1..t-1``: the estimate
    ``theta_hat_{t-1}`` and information matrix ``V_{t-1}`` (eqs. (estimate), (infomat)) and the
    radius ``r_t(delta_t)`` of eq. (r_t) (or, with ``radius="self_normalized"``, the bound of
    Abbasi-Yadkori et al.'s Theorem 2 at ``V_{t-1}`` and ``delta_t``), as in the paper's
    ``LCB_t(x) = <x, theta_hat_{t-1}> - r_t(delta_t) ||x||_{V_{t-1}^{-1}}``.  Line 5 exploits
    iff ``LCB_t(X^CE_t) >= b`` and ``lambda_min(V_{t-1}) >= c sqrt(t)`` (the appendix's
    ``V_{t-1}``: ``X_t`` is not yet chosen).
    Otherwise it plays ``X^SE_t = (1 - rho) X^S_t + rho U_t`` (eq. (safe exp arm)) with
    ``X^S_t`` the LCB arm if ``LCB_t(X^LCB_t) >= b0`` else the baseline (eq. (safe arm t)), and
    ``U_t = x-bar + H^{1/2} zeta_t`` (eq. (U_t)): for an ellipsoid, ``zeta_t`` uniform on the unit
    sphere; for other sets, on an inscribed ellipsoid or cross-polytope certified to lie in the
    set (:mod:`sege_cvx.arm_sets.exploration`).

    A failed or unverified solve never yields an unverified arm: the greedy arm is then not
    played (the stage explores) and a failed LCB arm is replaced by the baseline arm; each such
    event is counted in ``solver_fallbacks``.

    On a lifted arm set (``arm_set.witness_dim > 0``) the exploration arm is certified with the
    same convex combination of witnesses: ``(1 - rho) w^S + rho w^U``, ``w^S`` the LCB arm's or
    the baseline's, ``w^U`` the drawn cross-polytope vertex's (a convex hull's compiled stages
    form the arm itself from that combination of weights).

    The rule is written once, as per-run compiled functions (:mod:`.sege_rule`).  On sets with
    compiled arms (``arm_set.compiled_arms``, with ``lcb_method`` other than ``"solver"``:
    ellipsoids and balls, by closed forms; boxes, polytopes and convex hulls, by certified
    active-set solves warm started from the run's previous arms, :attr:`warm_start`; cvxpy
    sets of second-order cones built with ``compiled=True``, by compiled cone programs with
    certified witnesses, :mod:`sege_cvx.arm_sets.cone`) a whole stage is compiled,
    and :func:`~sege_cvx.simulate` runs many stages per call with the runs spread over threads;
    on other sets the same rule is applied around the set's greedy and LCB arms (closed forms
    or Clarabel solves).  Either way a run's numbers do not depend on the other runs.

    Parameters
    ----------
    setting : SafeSetting
        What SEGE is told: the arm set, convex (a :class:`~sege_cvx.arm_sets.FiniteArmSet` is
        refused with a ``TypeError``: SEGE plays mixtures of arms), the baseline arm ``X_0`` (the
        setting's safe arm), ``S``, the noise level ``sigma_eta`` and the
        :class:`~sege_cvx.RewardFloor` ``(b0, b)``.
    lam : float, default 0.1
        Regularization ``lambda``.
    c : float, optional
        Exploitation rate constant of line 5.  Default: ``20 rho^2 sigma^2`` to one significant
        digit (:func:`default_c`), the paper's own ratio (its ``c = 0.5`` on its disk): safe
        exploration raises ``lambda_min(V_t)`` by about ``rho^2 sigma^2`` a stage (Lemma 4), so
        the test ``lambda_min(V_{t-1}) >= c sqrt(t)`` passes after about 400 stages on any set.
    rho : float, optional
        Mixing weight in ``(0, rho_bar]``; default ``rho_bar`` (Lemma 1).
    L : float, optional
        Bound ``max_{x in X} ||x|| <= L`` in the radius ``r_t``; default the arm set's
        certified :meth:`~sege_cvx.arm_sets.ArmSet.norm_bound`.  A value below the norm of a
        point known to lie in the set (the exploration vertices, the baseline arm) is rejected.
        A value above those but below the true ``max ||x||`` cannot be checked (maximizing a
        norm over a convex set is not a convex program) and would make ``r_t`` too small:
        pass ``L`` only when it is a proven bound.
    exploration : Exploration, optional
        Distribution of ``U_t``; default the arm set's :meth:`~sege_cvx.arm_sets.ArmSet.exploration`.
        Must be certified inside the set (:meth:`~sege_cvx.arm_sets.ArmSet.certify_exploration`).
    risk : callable, optional
        ``t -> delta_t`` in (0, 1); default the paper's schedule at ``delta_bar``
        (:class:`PaperRisk`).
    delta_bar : float, optional
        The overall risk of the paper's schedule ``delta_t = 6 delta_bar / (pi^2 t^2)``
        (default 0.1); not with ``risk``.
    radius : {"theorem1", "self_normalized"}
        The confidence radius (:mod:`sege_cvx.confidence.radius`): the paper's ``r_t(delta_t)``
        (eq. (r_t), default) or ``sigma sqrt(2 log(det(V_{t-1})^{1/2} det(lam I)^{-1/2} /
        delta_t)) + sqrt(lam) S``, per run from its own ``V_{t-1}``.  Both are valid for
        Lemma 2 and Theorem 2 (Theorem 1 is derived from the second).
    lcb_method : {"auto", "closed_form", "solver"}
        How LCB arms are computed (see :meth:`ArmSet.lcb_arm`).
    n_runs : int, default 1
        Independent runs acted on in lockstep.
    seed : int, SeedSequence or list of SeedSequence, optional
        Seeds the exploration directions ``zeta_t``: one stream per run, drawn from only at
        the stages where that run explores.

    Attributes
    ----------
    t : int
        Stages completed.
    rho, rho_bar, L, sigma2 : float
        Mixing weight, its bound, the norm bound in ``r_t`` and ``lambda_min(Cov U_t)``.
    exploration : Exploration
        The distribution of ``U_t``.
    c : float
        The exploitation rate constant (as given, or its default).
    confidence : ConfidenceEllipsoid
        ``V_t``, ``V_t^{-1}``, ``theta_hat_t`` per run.
    last_decision : ndarray of int8, shape (n_runs,)
        Codes :data:`EXPLOIT`, :data:`EXPLORE_LCB`, :data:`EXPLORE_BASELINE` of the last stage.
    last_safe_arm, last_exploration_arm : ndarray, shape (n_runs, d)
        ``X^S_t`` and ``U_t`` of the last stage (NaN rows where the stage exploited).
    decision_counts : ndarray of int, shape (n_runs, 3)
        Stages of each decision type so far.
    solver_fallbacks : ndarray of int, shape (n_runs,)
        Failed or unverified computations (solver failures, arms not verified in the set,
        exceptions raised inside a solve) that forced a fallback.
    fallback_reasons : collections.Counter
        How often each failure status (e.g. ``"NotMember"``, ``"NotCertified"``,
        ``"error: RuntimeError"``) forced a fallback, over all runs.
    warm_start : tuple of ndarray, or None
        On sets with compiled arms, each run's warm start: its working sets
        (:mod:`sege_cvx.arm_sets.polytope.arms`, :mod:`sege_cvx.arm_sets.hull.arms`; empty
        for ellipsoids), part of the run's state, kept by a pickle.

    Examples
    --------
    >>> import numpy as np, sege_cvx as sc
    >>> disk = sc.Ball(center=[1.0, 1.0], radius=1.0)
    >>> setting = sc.SafeSetting(disk, [1.2, 1.9], S=1.0, noise_sd=1.0,
    ...                          safety=sc.RewardFloor(2.24, 0.8 * 2.24))
    >>> policy = sc.SEGE(setting, seed=0)
    >>> round(policy.rho, 3), policy.c
    (0.224, 0.5)
    >>> x = policy.select()
    >>> policy.observe(x, float(x @ [0.6, 0.8]) + 0.1)
    >>> policy.t, int(policy.decision_counts[0, 2])
    (1, 1)
    """

    #: The name of each decision code of :attr:`last_decision` (0, 1, 2), as ``summary.json``
    #: counts them.
    decision_names: tuple[str | None, ...] = ("exploit", "explore_lcb", "explore_baseline")

    def __init__(
        self,
        setting: SafeSetting,
        *,
        lam: float = 0.1,
        c: float | None = None,
        rho: float | None = None,
        L: float | None = None,
        exploration: Exploration | None = None,
        risk: Callable[[int], float] | None = None,
        delta_bar: float | None = None,
        radius: str = "theorem1",
        lcb_method: str = "auto",
        n_runs: int = 1,
        seed: SeedLike = None,
    ) -> None:
        super().__init__(setting, lam=lam, n_runs=n_runs, seed=seed)
        self._require_convex()  # U_t and the mix (1 - rho) X^S + rho U need convexity
        arm_set, d = setting.arm_set, self.d
        floor: RewardFloor = setting.safety
        if lcb_method not in LCB_METHODS:
            raise ValueError(f"lcb_method must be one of {LCB_METHODS}, got {lcb_method!r}")
        if lcb_method == "closed_form" and not arm_set.has_closed_form_lcb:
            raise ValueError(f"lcb_method='closed_form': {type(arm_set).__name__} has no closed-form "
                             "LCB arm; use 'auto' or 'solver'")
        self.lcb_method = lcb_method
        if risk is not None and delta_bar is not None:
            raise ValueError("give risk (a schedule t -> delta_t) or delta_bar (the paper's "
                             "schedule at that overall risk), not both")
        if risk is None:
            delta_bar = 0.1 if delta_bar is None else delta_bar
            risk = PaperRisk(delta_bar)
        self.risk = risk
        #: The overall risk of the paper's schedule (None for a schedule of the user's own).
        self.delta_bar = risk.delta_bar if isinstance(risk, PaperRisk) else None
        if not callable(self.risk):
            raise TypeError(f"risk must be callable t -> delta_t, got {type(risk).__name__}")

        self.rho_bar = rho_bar(floor.baseline_reward, floor.threshold, setting.S,
                               arm_set.diameter_bound())
        self.rho = self.rho_bar if rho is None else as_scalar(
            "rho", rho, low=0.0, low_open=True, high=self.rho_bar)
        self.exploration = arm_set.exploration() if exploration is None else exploration
        if not isinstance(self.exploration, Exploration):
            raise TypeError(f"exploration must be an Exploration, got {type(exploration).__name__}")
        if exploration is not None and arm_set.witness_dim and exploration.witnesses is None:
            raise ValueError("on a lifted arm set (witness_dim > 0) an exploration needs the "
                             "witnesses of its vertices and centre (Exploration(..., witnesses, "
                             "center_witness); arm_set.pull_inside(points, return_witnesses=True) "
                             "finds them)")
        if exploration is not None and not arm_set.certify_exploration(exploration):
            raise ValueError("exploration is not certified to lie inside the arm set")
        # Cov(U) = B E[zeta zeta^T] B^T = B B^T / d (Lemma 4's sigma^2).
        self.sigma2 = self.exploration.sigma2
        self.c = (default_c(self.rho, self.sigma2) if c is None
                  else as_scalar("c", c, low=0.0, low_open=True))
        self.L = arm_set.norm_bound() if L is None else as_scalar("L", L, low=0.0, low_open=True)
        known = np.vstack([self.exploration.vertices(), setting.safe_arm])
        norms = np.linalg.norm(known, axis=1)
        if self.L < norms.max():
            raise ValueError(f"L = {self.L} is below ||x|| = {norms.max():.6g} of the point "
                             f"{known[np.argmax(norms)]} of the arm set; L must bound max ||x||")

        self._check_lam(self.L)
        self.radius = radius
        self._radius = make_radius(radius, d, setting.noise_sd, self.lam, setting.S, self.L)
        # zeta_t is drawn only at the stages where a run explores: its k-th exploration uses
        # the k-th draw of its own stream (the same distribution as a draw at every stage).
        self._zeta = PacedNormals(self._seed_sequences, d)
        self.confidence = ConfidenceEllipsoid(d, self.lam, self.n_runs)
        self.last_safe_arm = np.full((self.n_runs, d), np.nan)
        self.last_exploration_arm = np.full((self.n_runs, d), np.nan)
        # Fallbacks of the Python-orchestrated stages (any status) and of the compiled ones
        # (per run: all, then by code of arm_sets.kernels.status.STATUS).
        self._fallbacks = np.zeros(self.n_runs, dtype=np.int64)
        self._fallback_reasons: Counter[str] = Counter()
        self._compiled_fallbacks = np.zeros((self.n_runs, len(STATUS)), dtype=np.int64)
        compiled = arm_set.compiled_arms
        self._compiled = None
        if compiled is not None and lcb_method != "solver":
            # A hull certifies the mix by weights, a cone set by witnesses: both from its parts.
            geometry = compiled.geometry(self.lam, Anchors(setting.safe_arm, setting.safe_witness,
                                                           self.exploration))
            if geometry is not None:
                self._compiled = (geometry, (self.exploration.center, self.exploration.B,
                                             self.exploration.kind == "cross"))
        #: Per run, the compiled arms' warm start (the working sets of the greedy and LCB
        #: solves; :mod:`sege_cvx.arm_sets.polytope.arms`, :mod:`~sege_cvx.arm_sets.hull.arms`):
        #: part of the run's state, so that a run computes the same arms alone, in any batch,
        #: and after a pickle.
        self.warm_start = None if self._compiled is None else compiled.warm_state(self.n_runs)
        self._warm_layout = None if self.warm_start is None else [
            (a.shape, a.dtype) for a in self.warm_start]

    def _checked_warm_start(self) -> tuple[np.ndarray, ...]:
        """:attr:`warm_start`, checked to have its layout: the compiled stages index it without
        bounds checks, so a tuple of other shapes (say, assigned from another policy) would
        read and write outside its arrays.  Its contents are checked by the solves."""
        warm = self.warm_start
        if (not isinstance(warm, tuple) or len(warm) != len(self._warm_layout)
                or not all(isinstance(a, np.ndarray) and a.flags.c_contiguous
                           and (a.shape, a.dtype) == layout
                           for a, layout in zip(warm, self._warm_layout, strict=False))):
            expected = ", ".join(f"{dtype}{list(shape)}" for shape, dtype in self._warm_layout)
            raise ValueError(f"warm_start must be a tuple of C-contiguous arrays {expected} "
                             f"(one row per run), got {_describe(warm)}")
        return warm

    @property
    def compiled_stages(self) -> bool:
        return self._compiled is not None

    @property
    def compiled_kernels(self) -> tuple:
        if self._compiled is None:
            return ()
        return (stage_loop(sege_rule.SEGEStages, type(self._compiled[0]),
                           type(self._radius.rule)),)

    @property
    def solver_fallbacks(self) -> np.ndarray:
        """Per run: failed or unverified computations that forced a fallback."""
        return self._fallbacks + self._compiled_fallbacks[:, 0]

    @property
    def fallback_reasons(self) -> Counter[str]:
        """How often each failure status forced a fallback, over all runs."""
        reasons = self._fallback_reasons.copy()
        for code in range(1, len(STATUS)):
            count = int(self._compiled_fallbacks[:, code].sum())
            if count:
                reasons[STATUS[code]] += count
        return reasons

    def summary(self, stats, stages: list[int]) -> dict:
        """``lcb_method``, ``rho``, and the exploring stages ``N_t`` (Lemma 3's count: every
        stage but the exploiting ones) at the horizon and over ``sqrt(t)`` at ``stages``
        (Theorem 2's ``O(sqrt(t))`` growth), means over runs."""
        explored = stats.decisions.sum(axis=2) - stats.decisions[:, :, EXPLOIT]
        return {"lcb_method": self.lcb_method, "rho": self.rho,
                "exploration_stages_mean": float(explored[-1].mean()),
                "exploration_over_sqrt_t": {str(c): float(explored[stats.at(c)].mean()
                                                          / np.sqrt(c)) for c in stages}}

    # ------------------------------------------------------------------ stage quantities
    def risk_level(self, t: int) -> float:
        """``delta_t``, checked to lie in (0, 1)."""
        delta = self.risk(t)
        if not 0.0 < delta < 1.0:
            raise ValueError(f"risk schedule returned delta_{t} = {delta!r}, outside (0, 1)")
        return float(delta)

    def radii(self) -> np.ndarray:
        """Every run's radius for its next stage ``t + 1`` (:meth:`radii_at`)."""
        return self.radii_at(self.t + 1)

    def radii_at(self, t: int) -> np.ndarray:
        """Every run's radius at stage ``t`` from its current ``V`` (``V_{t-1}`` when ``t`` is
        the next stage): ``r_t(delta_t)`` of eq. (r_t), the same for all runs, or the
        self-normalized bound (``radius="self_normalized"``)."""
        value = self._radius.stage_value(t, self.risk_level(t))
        return self._radius.radii(self.confidence.chol, np.full(self.n_runs, value))

    # ------------------------------------------------------------------ Algorithm 1
    def select(self) -> np.ndarray:
        """Choose stage ``t``'s arms (Algorithm 1, lines 3-9).

        Returns
        -------
        ndarray, shape (d,) for one run, else (n_runs, d)
        """
        t = self.t + 1
        if self._compiled is not None:
            arms = np.empty((self.n_runs, self.d))
            decision = np.empty(self.n_runs, dtype=np.int8)
            kernel = choose_loop(sege_rule.SEGEStages, type(self._compiled[0]),
                                 type(self._radius.rule))
            kernel(self.stage_record(t, 1), t, arms, decision)
        else:
            arms, decision = self._select_around_arm_set(self.radii_at(t), self.c * math.sqrt(t))
        self.last_decision = decision
        return arms

    def _select_around_arm_set(self, r: np.ndarray, bound: float) -> tuple[np.ndarray, np.ndarray]:
        """The rule (:mod:`.sege_rule`) around the arm set's own greedy and LCB arms (``r``: the
        runs' radii)."""
        conf, setting = self.confidence, self.setting
        floor, arm_set = setting.safety, setting.arm_set
        # Safe greedy exploitation (lines 5-6).  The greedy arm (eq. (greedy arm)) is computed
        # only for runs that pass the information test, which is cheap and often fails.
        arms = np.full((self.n_runs, self.d), np.nan)
        exploit = min_eigenvalue_at_least(conf.V, bound)
        ready = np.flatnonzero(exploit)
        if ready.size:
            greedy = arm_set.greedy_arm_batch(conf.theta_hat[ready])
            self._count_fallbacks(ready, greedy)
            exploit[ready] = sege_rule.exploit_all(greedy.arms, greedy.ok, conf.theta_hat,
                                                   conf.chol, r, floor.threshold, ready)
            arms[ready] = greedy.arms

        # Safe exploration (lines 7-8) for the other runs.
        decision = np.full(self.n_runs, EXPLOIT, dtype=np.int8)
        self.last_safe_arm.fill(np.nan)
        self.last_exploration_arm.fill(np.nan)
        idx = np.flatnonzero(~exploit)
        if idx.size:
            lcb_arm = arm_set.lcb_arm_batch(conf.theta_hat[idx], conf.chol[idx], r[idx],
                                            self.lcb_method)
            self._count_fallbacks(idx, lcb_arm)
            draws = self._zeta.take(idx)
            U = self.exploration.points(draws)  # eq. (U_t)
            use_lcb, safe, mixed = sege_rule.explore_all(
                lcb_arm.arms, lcb_arm.ok, conf.theta_hat, conf.chol, r, floor.baseline_reward,
                setting.safe_arm, U, self.rho, idx)
            witnesses = None
            if arm_set.witness_dim:  # the same convex combination of the witnesses
                safe_w = np.where(use_lcb[:, None], lcb_arm.witnesses, setting.safe_witness)
                witnesses = (1.0 - self.rho) * safe_w + self.rho * self.exploration.witness_points(draws)
            # Rounding can leave the mix an ulp outside; the baseline if it cannot be moved in.
            explore, inside = arm_set.pull_inside_unchecked(mixed, witnesses)
            if not inside.all():
                self._fallbacks[idx] += ~inside
                self._fallback_reasons["NotMember"] += int((~inside).sum())
            arms[idx] = np.where(inside[:, None], explore, setting.safe_arm)
            decision[idx] = np.where(use_lcb, EXPLORE_LCB, EXPLORE_BASELINE)
            self.last_safe_arm[idx] = safe
            self.last_exploration_arm[idx] = U
        return arms, decision

    def _count_fallbacks(self, rows: np.ndarray, result) -> None:
        """Count the instances of a :class:`~sege_cvx.arm_sets.base.BatchArms` that failed."""
        failed = ~result.ok
        if failed.any():
            self._fallbacks[rows] += failed
            self._fallback_reasons.update(s for s, ok in zip(result.status, result.ok, strict=True)
                                          if not ok)

    def stage_record(self, t0: int, n_stages: int) -> sege_rule.SEGEStages:
        """The record of the ``n_stages`` stages from ``t0`` on, for the compiled stage loop
        (:mod:`sege_cvx.stages.loop`): per stage, ``c sqrt(t)`` and the radius's value
        at ``delta_t``; at least ``n_stages`` unread normal draws per run.  Only on sets with compiled
        arms (:attr:`compiled_stages`)."""
        stages = range(t0, t0 + n_stages)
        bounds = np.array([self.c * math.sqrt(t) for t in stages])
        values = np.array([self._radius.stage_value(t, self.risk_level(t)) for t in stages])
        self._zeta.reserve(n_stages)
        geometry, exploration = self._compiled
        floor = self.setting.safety
        return sege_rule.SEGEStages(
            confidence=self.confidence.state(), decisions=self.decision_record(),
            last_safe=self.last_safe_arm, last_exploration=self.last_exploration_arm,
            fallbacks=self._compiled_fallbacks, warm=self._checked_warm_start(), bounds=bounds,
            radius=self._radius.rule, stage_values=values, draws=self._zeta.buffer,
            cursor=self._zeta.cursor, geometry=geometry, exploration=exploration, rho=self.rho,
            baseline=self.setting.safe_arm, b=floor.threshold, b0=floor.baseline_reward)

    def observe(self, x: np.ndarray, y: np.ndarray, constraint_values: None = None) -> None:
        """Record the observed rewards of the arms returned by :meth:`select` (line 11).

        Parameters
        ----------
        x : ndarray, shape (d,) or (n_runs, d)
            The arms played (those :meth:`select` returned).
        y : float or ndarray of shape (n_runs,)
            Observed rewards.
        constraint_values : None
            The stagewise floor has no constraint feedback.
        """
        self.confidence.update_unchecked(x, y)


def _describe(value: object) -> str:
    """Shapes and dtypes of a tuple of arrays (for an error message)."""
    if isinstance(value, tuple):
        return "(" + ", ".join(f"{a.dtype}{list(a.shape)}" if isinstance(a, np.ndarray)
                               else type(a).__name__ for a in value) + ")"
    return type(value).__name__
