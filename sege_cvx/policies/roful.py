r"""ROFUL (Hutchinson, Turan and Alizadeh, "Directional Optimism for Safe Linear Bandits",
AISTATS 2024), one class per safety model, both registered as ``"ROFUL"``: :class:`ROFUL` in its
authors' model (an unknown linear constraint; :mod:`.directional` has that rule) and
:class:`StagewiseROFUL`, a stagewise-safe comparator in the paper's setting, for a batch of runs.

:class:`StagewiseROFUL`'s rule works relative to the baseline arm ``x0``, whose reward
``b0 = <x0, theta*>`` it must know exactly: ``x' = x - x0``, ``y' = y - b0 = <x', theta*> + eta``,
and safety is
``<x', theta*> >= -m`` with the margin ``m = b0 - b > 0``.  ``V = lam I + sum x' x'^T`` and
``theta_hat = V^{-1} sum x' y'`` are those of :mod:`sege_cvx.confidence`; ``beta`` is the
confidence radius (:mod:`sege_cvx.confidence.radius`).  The directions ``u_j = (p_j - x0) / s_j``
point to the boundary points ``p_j`` CLUCB plays (:func:`~sege_cvx.arm_sets.discretization.discretize`),
at the full step ``s_j = ||p_j - x0||``.  Each stage, with ``w_j = ||u_j||_{V^{-1}}``:

1. optimistic loss per unit step ``l_j = -<theta_hat, u_j> - beta w_j``; step
   ``sigma_j = min(m / l_j, s_j)`` if ``l_j > 0``, else ``s_j``; value
   ``v_j = sigma_j (<theta_hat, u_j> + beta w_j)``;
2. if every ``v_j < 0``, ``x~ = 0``; else ``x~ = sigma_j* u_j*`` with ``j*`` maximizing ``v_j``;
3. pessimistic loss ``p = -<theta_hat, x~> + beta ||x~||_{V^{-1}}``; ``mu = min(m / p, 1)`` if
   ``p > 0``, else 1; known-safe scale ``kappa = min((m / S) / ||x~||, 1)`` (1 for ``x~ = 0``);
   ``gamma = max(kappa, mu)``;
4. play ``x = x0 + gamma x~``, computed as ``x0 + tau (p_j* - x0)`` with
   ``tau = gamma sigma_j* / s_j*`` in ``[0, 1]``: a point of the segment ``[x0, p_j*]``, moved
   exactly into the set if rounding left it outside (as every arm of the package; on a lifted
   set with the witness ``(1 - tau) w0 + tau w_j*`` of the baseline's and the point's).

The rule is its authors' (:func:`~sege_cvx.policies.directional.ray_step`, written once for
both safety models: the floor is the constraint ``<x', -theta*> <= m``), applied here by
:func:`step_one`; as there, a step scaled to the certificate's boundary (``gamma < 1``) is shrunk
by a relative ``2^-40`` and every step is certified before it is played (the pessimistic loss at
most ``m``, or ``||x - x0|| <= m / S``), the baseline arm counted as a fallback otherwise.
:class:`ROFULStages` and its hooks put it in the compiled stage loop
(:mod:`sege_cvx.stages.loop`), many stages of a block of runs in one compiled call (blocks
on threads), on sets whose exact membership is compiled
(ellipsoids, balls, boxes, polytopes: :func:`~sege_cvx.arm_sets.kernels.registry.has_pull_in`), and
:meth:`ROFUL.select` applies the same function around any other convex set's own membership
test.
"""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple

import numpy as np

from .._numba import njit
from .._random import SeedLike
from .._validation import as_scalar, scaled_norm
from ..arm_sets.discretization import as_arm_count, default_arm_count, discretize_with_witnesses
from ..arm_sets.kernels.registry import has_pull_in, pull_in
from ..confidence.cholesky import directional_terms, inverse_factor_one
from ..confidence.ellipsoid import ConfidenceEllipsoid
from ..confidence.radius import CountTable, make_radius, radius_one
from ..confidence.state import ConfidenceState, LearnScratch, learn_scratch, run_confidence
from ..confidence.state import learn as update_confidence
from ..setting import SafeSetting
from ..stages.loop import Decisions, StageHooks, register_stage_hooks, stage_loop
from .base import Policy
from .directional import ROFUL_RULE, DirectionalPolicy, ray_step

#: Decision codes recorded per stage (``ROFUL.last_decision``): the step ``x~`` played in full
#: (``gamma = 1``), scaled down for safety (``gamma < 1``), or the baseline arm (``x~ = 0``, or a
#: point that could not be verified in the set).
FULL_STEP, SCALED_STEP, BASELINE = 0, 1, 2

#: Directions whose boundary point lies closer than this fraction of the set's diameter to the
#: baseline arm are dropped (``s_j ~ 0``: no direction to normalize).
MIN_STEP = 1e-9


@njit(inline="always")
def step_one(chol, theta_hat, beta, dirs_t, steps, unorm, margin, S, work, dir_work):
    """ROFUL's rule for one run (steps 1-3 of the module docstring): the authors' rule
    (:func:`~sege_cvx.policies.directional.ray_step`, written once for both models) with the
    floor as a constraint, ``gamma_hat = -theta_hat`` (``<x', -theta*> <= m``).

    ``beta``: the run's confidence radius.  Returns ``(j, tau, code)``: play
    ``x0 + tau (p_j - x0)``; ``code`` is :data:`FULL_STEP`,
    :data:`SCALED_STEP` or :data:`BASELINE` (then ``tau = 0``; ``tau < 0`` if no scale passed
    the certificate).  ``dirs_t``: the unit directions as columns, shape ``(d, K)``; ``steps``:
    ``s_j``; ``unorm``: the directions' norms (1); ``work``: scratch ``(d + 2, d)``;
    ``dir_work``: scratch ``(4, K)``.
    """
    d, K = dirs_t.shape
    inv = work[:d]
    inverse_factor_one(chol, inv, work[d], work[d + 1])
    directional_terms(inv, theta_hat, dirs_t, dir_work)
    dot, norm, value, cdot = dir_work[0], dir_work[1], dir_work[2], dir_work[3]
    for k in range(K):
        cdot[k] = -dot[k]  # the floor's constraint vector is -theta
    j, s, code = ray_step(ROFUL_RULE, dot, cdot, norm, unorm, steps, beta, margin, S, value)
    if s < 0.0:
        return j, -1.0, BASELINE
    return j, min(s / steps[j], 1.0), code


@njit
def step_all(chol, theta_hat, betas, dirs_t, steps, unorm, margin, S) -> tuple:
    """:func:`step_one` for every run (the step API's ``select``; ``betas``: the runs' radii):
    ``(j, tau, code)`` per run."""
    n, d = theta_hat.shape
    work = np.empty((d + 2, d))
    dir_work = np.empty((4, dirs_t.shape[1]))
    out_j = np.empty(n, dtype=np.int64)
    out_tau = np.empty(n)
    out_code = np.empty(n, dtype=np.int8)
    for i in range(n):
        out_j[i], out_tau[i], out_code[i] = step_one(chol[i], theta_hat[i], betas[i], dirs_t,
                                                     steps, unorm, margin, S, work, dir_work)
    return out_j, out_tau, out_code


@njit(inline="always")
def segment_point(baseline, offsets, j, tau, out) -> None:
    """``out = x0 + tau (p_j - x0)`` (``offsets[j] = p_j - x0``)."""
    for k in range(baseline.shape[0]):
        out[k] = baseline[k] + tau * offsets[j, k]


class ROFULStages(NamedTuple):
    """ROFUL's stage record for the compiled stage loop (:mod:`sege_cvx.stages.loop`).

    Per run: the ``confidence`` state (of ``(x - x0, y - b0)``), the ``decisions``, the
    ``fallbacks``.  The constants: the ``radius`` rule and its values by count
    (``beta_table``), the directions as columns (``dirs_t``), the full ``steps`` and the
    ``offsets`` ``p_j - x0``, the directions' norms (``unorm``), the ``margin`` ``m``, ``S``,
    the ``baseline`` arm and ``b0``, and the set's ``geometry`` record
    (:func:`~sege_cvx.arm_sets.kernels.registry.has_pull_in`).
    """

    confidence: ConfidenceState
    decisions: Decisions
    fallbacks: np.ndarray
    radius: tuple
    beta_table: np.ndarray
    dirs_t: np.ndarray
    steps: np.ndarray
    offsets: np.ndarray
    unorm: np.ndarray
    margin: float
    S: float
    baseline: np.ndarray
    b0: float
    geometry: tuple


class ROFULScratch(NamedTuple):
    """:func:`choose_arm`'s scratch (:func:`scratch`): :func:`step_one`'s ``(d + 2, d)``
    (``step``) and ``(4, K)`` (``terms``), the arm relative to the baseline (``relative``),
    the pull-in's two vectors (``offset``, ``trial``); :func:`learn`'s."""

    step: np.ndarray
    terms: np.ndarray
    relative: np.ndarray
    offset: np.ndarray
    trial: np.ndarray
    learn: LearnScratch


@njit(inline="always")
def scratch(policy, d):
    """A :class:`ROFULScratch` for dimension ``d``."""
    return ROFULScratch(step=np.empty((d + 2, d)), terms=np.empty((4, policy.dirs_t.shape[1])),
                        relative=np.empty(d), offset=np.empty(d), trial=np.empty(d),
                        learn=learn_scratch(d))


@njit(inline="always")
def run_view(policy, i):
    """Run ``i``'s :class:`~sege_cvx.confidence.state.RunConfidence`."""
    return run_confidence(policy.confidence, i)


@njit(inline="always")
def choose_arm(policy, run, work, i, s, t, arm) -> int:
    """:func:`step_one` at the run's radius, the point on the segment (:func:`segment_point`)
    moved exactly into the set (the set's geometry record,
    :func:`~sege_cvx.arm_sets.kernels.registry.pull_in`; the baseline arm, counted in
    ``fallbacks``, if it cannot be)."""
    beta = radius_one(policy.radius, policy.beta_table[policy.confidence.counts[i]], run.chol)
    j, tau, code = step_one(run.chol, run.theta_hat, beta, policy.dirs_t, policy.steps,
                            policy.unorm, policy.margin, policy.S, work.step, work.terms)
    baseline = policy.baseline
    segment_point(baseline, policy.offsets, j, max(tau, 0.0), arm)
    if tau < 0.0 or not pull_in(policy.geometry, arm, work.offset, work.trial):
        policy.fallbacks[i] += 1
        code = BASELINE
        for k in range(arm.shape[0]):
            arm[k] = baseline[k]
    return code


@njit(inline="always")
def learn(policy, run, work, i, arm, y, code, z) -> bool:
    """The update with ``(x - x0, y - b0)`` (:func:`~sege_cvx.confidence.state.learn`)."""
    relative, baseline = work.relative, policy.baseline
    for k in range(arm.shape[0]):
        relative[k] = arm[k] - baseline[k]
    return update_confidence(policy.confidence, run, i, relative, y - policy.b0, work.learn)


register_stage_hooks(ROFULStages, StageHooks(scratch, run_view, choose_arm, learn))


class StagewiseROFUL(Policy):
    r"""ROFUL adapted to the stagewise floor (Hutchinson, Turan and Alizadeh, AISTATS 2024,
    directional optimism), on ``n_runs`` runs at once; the rule is in the module docstring.
    Registered, with :class:`ROFUL` (its authors' model), as ``"ROFUL"``: the registry gives
    the class of a problem's safety model.

    **Why it is safe.**  On the event of the confidence set (probability ``1 - delta`` for all
    stages at once), ``<x~, theta*> >= <x~, theta_hat> - beta ||x~||_{V^{-1}} = -p``.  With
    ``gamma = mu``: ``<gamma x~, theta*> >= -gamma p >= -m``.  With ``gamma = kappa``:
    ``||gamma x~|| <= m / S``, so ``<gamma x~, theta*> >= -S ||gamma x~|| >= -m`` by
    Cauchy-Schwarz and ``||theta*|| <= S`` (this one always).  Either way
    ``<x, theta*> = b0 + <gamma x~, theta*> >= b0 - m = b``.  And ``x`` lies on the segment
    ``[x0, p_j*]``, inside the convex set (verified exactly, as every arm of the package).

    **It needs the baseline's exact reward.**  The paper assumes only ``b0 <= <x0, theta*>``;
    ROFUL's ``y' = y - b0`` assumes equality.  A gap ``g = <x0, theta*> - b0 > 0`` adds ``g`` to
    every ``y'``, for which the model ``<x', theta>`` has no intercept: ``theta_hat`` is biased
    toward the directions played (by about ``g / ||x'||``), the confidence set no longer holds and
    neither does the guarantee through ``mu`` (the ``kappa`` steps stay safe).  So the baseline
    arm must lie in the set exactly (a baseline moved into the set has a reward known only as a
    bound: refused).

    Parameters
    ----------
    setting : SafeSetting
        A convex set, the baseline arm (in the set exactly), ``S``, the noise level and the
        :class:`~sege_cvx.RewardFloor` ``(b0, b)`` with ``b0 = <x0, theta*>`` exactly.
    lam : float, default 0.1
    delta : float, default 0.1
        Overall risk of the confidence sets.
    radius : {"self_normalized", "theorem1"}, default "self_normalized"
        ``beta``: the self-normalized bound or the paper's ``r_n(delta)`` at ``n`` observations
        with ``L`` a certified bound on ``max ||x - x0||`` over the set
        (:meth:`~sege_cvx.arm_sets.ArmSet.distance_bound`).
    n_directions : int, optional
        ``K``: as CLUCB's ``n_arms`` (default the smallest count meeting a 3e-3 discretization
        error; 41 on the paper's disk).
    n_runs : int, default 1
    seed : int, SeedSequence or list of SeedSequence, optional
        StagewiseROFUL draws nothing; accepted (and validated) so that every policy takes the
        same arguments.

    Attributes
    ----------
    margin : float
        ``m = b0 - b``.
    points : ndarray, shape (K, d)
        The boundary points ``p_j``; ``directions`` the unit ``u_j`` and ``steps`` the ``s_j``.
    L : float
        The bound on ``||x - x0||`` in the ``"theorem1"`` radius.
    confidence : ConfidenceEllipsoid
        ``V``, ``theta_hat`` in coordinates relative to the baseline.
    last_decision : ndarray of int8
        :data:`FULL_STEP`, :data:`SCALED_STEP` or :data:`BASELINE`.
    decision_counts : ndarray, shape (n_runs, 3)
    solver_fallbacks : ndarray, shape (n_runs,)
        Stages whose point could not be verified in the set (the baseline arm was played).

    Examples
    --------
    >>> import sege_cvx as sc
    >>> disk = sc.Ball(center=[1.0, 1.0], radius=1.0)
    >>> setting = sc.SafeSetting(disk, [1.2, 1.9], S=1.0, noise_sd=1.0,
    ...                          safety=sc.RewardFloor(2.24, 0.8 * 2.24))
    >>> policy = sc.StagewiseROFUL(setting)
    >>> policy.directions.shape, round(policy.margin, 3)
    ((41, 2), 0.448)
    >>> x = policy.select()
    >>> policy.observe(x, float(x @ [0.6, 0.8]) + 0.1)
    >>> bool(x @ [0.6, 0.8] >= 0.8 * 2.24)
    True
    """

    #: The name of each decision code of :attr:`last_decision` (0, 1, 2), as ``summary.json``
    #: counts them.
    decision_names: tuple[str | None, ...] = ("full_step", "scaled_step", "baseline")

    def __init__(
        self,
        setting: SafeSetting,
        *,
        lam: float = 0.1,
        delta: float = 0.1,
        radius: str = "self_normalized",
        n_directions: int | None = None,
        n_runs: int = 1,
        seed: SeedLike = None,
    ) -> None:
        super().__init__(setting, lam=lam, n_runs=n_runs, seed=seed)
        self._require_convex()  # it plays points of segments [x0, p_j]
        if setting.safe_shift > 0.0:
            # The arm may well be in the set: on its boundary, rounding (or, on a set given by
            # cvxpy constraints, the witness solve) can fail the exact test, which is what the
            # user must know.
            raise ValueError(f"ROFUL needs the baseline's exact reward, but the safe arm failed "
                             f"the set's exact membership test (tol=0) and was moved "
                             f"{setting.safe_shift:.3g} into the arm set (its reward is then "
                             "known only as a bound), as a point on the boundary can by rounding: "
                             "give a safe arm that passes arm_set.contains(x0, tol=0), e.g. "
                             "one off the boundary")
        arm_set, d, floor = setting.arm_set, self.d, setting.safety
        self.delta = as_scalar("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
        self.margin = floor.margin
        K = (default_arm_count(arm_set, setting.S) if n_directions is None
             else as_arm_count("n_directions", n_directions))
        points, witnesses = discretize_with_witnesses(arm_set, K)
        offsets = points - setting.safe_arm
        steps = scaled_norm(offsets, axis=1)
        keep = steps > MIN_STEP * arm_set.diameter_bound()
        if not keep.any():
            raise ValueError("every boundary point coincides with the baseline arm: no direction "
                             "to explore")
        self.points = np.ascontiguousarray(points[keep])
        self.n_directions = int(self.points.shape[0])  # the count in effect (after the default)
        self._point_witnesses = witnesses[keep]  # a lifted set's (shape (K, 0) otherwise)
        self._offsets = np.ascontiguousarray(offsets[keep])
        self.steps = np.ascontiguousarray(steps[keep])
        self.directions = self._offsets / self.steps[:, None]
        self._dirs_t = np.ascontiguousarray(self.directions.T)  # columns: vectorized scans
        self._unorm = np.ones(len(self.steps))  # the rule's ||u_j||: unit directions
        self.L = arm_set.distance_bound(setting.safe_arm)
        self._check_lam(self.L)
        self.radius = radius
        self._radius = make_radius(radius, d, setting.noise_sd, self.lam, setting.S, self.L)
        self._beta = CountTable(self._radius, self.delta)  # by observation count
        # Compiled stages on sets whose membership is decided from x alone (registry.has_pull_in).
        compiled = arm_set.compiled_arms
        geometry = None if compiled is None else compiled.geometry()
        self._geometry = geometry if has_pull_in(geometry) else None

        self.confidence = ConfidenceEllipsoid(d, self.lam, self.n_runs)
        self._fallbacks = np.zeros(self.n_runs, dtype=np.int64)

    @property
    def compiled_stages(self) -> bool:
        return self._geometry is not None

    @property
    def compiled_kernels(self) -> tuple:
        if self._geometry is None:
            return ()
        return (stage_loop(ROFULStages, type(self._geometry), type(self._radius.rule)),)

    @property
    def solver_fallbacks(self) -> np.ndarray:
        """Per run: stages whose arm could not be verified in the set (the baseline arm was
        played)."""
        return self._fallbacks

    @property
    def fallback_reasons(self) -> Counter[str]:
        """How often a point could not be verified in the set (status ``"NotMember"``)."""
        total = int(self._fallbacks.sum())
        return Counter({"NotMember": total} if total else {})

    def summary(self, stats, stages: list[int]) -> dict:
        """The number of directions and the confidence radius."""
        return {"n_directions": int(self.directions.shape[0]), "radius": self.radius}

    def radii(self) -> np.ndarray:
        """Every run's current confidence radius ``beta``."""
        conf = self.confidence
        return self._radius.radii(conf.chol, self._beta[conf.counts])

    def select(self) -> np.ndarray:
        """Choose the stage's arms (:func:`step_one`, then the point moved exactly into the set;
        the baseline arm, counted in ``solver_fallbacks``, where it cannot be)."""
        conf, setting = self.confidence, self.setting
        j, tau, code = step_all(conf.chol, conf.theta_hat, self.radii(), self._dirs_t,
                                self.steps, self._unorm, self.margin, setting.S)
        uncertified = tau < 0.0
        tau = np.maximum(tau, 0.0)
        arms = _segment_points(setting.safe_arm, self._offsets, j, tau)
        witnesses = None
        if setting.arm_set.witness_dim:  # the same convex combination of the witnesses
            witnesses = ((1.0 - tau)[:, None] * setting.safe_witness
                         + tau[:, None] * self._point_witnesses[j])
        arms, inside = setting.arm_set.pull_inside_unchecked(arms, witnesses)
        inside &= ~uncertified
        if not inside.all():
            self._fallbacks += ~inside
            arms[~inside] = setting.safe_arm
            code[~inside] = BASELINE
        self.last_decision = code
        return arms

    def observe(self, x: np.ndarray, y: np.ndarray, constraint_values: None = None) -> None:
        """Record the rewards: ``(x - x0, y - b0)`` enter the confidence set."""
        setting = self.setting
        self.confidence.update_unchecked(x - setting.safe_arm, y - setting.safety.baseline_reward)

    def stage_record(self, t0: int, n_stages: int) -> ROFULStages:
        """The record of the ``n_stages`` stages from ``t0`` on, for the compiled stage loop
        (:mod:`sege_cvx.stages.loop`).  Only on sets with a compiled membership test
        (:attr:`compiled_stages`)."""
        conf, setting = self.confidence, self.setting
        table = self._beta.covering(int(conf.counts.max()) + n_stages)
        return ROFULStages(confidence=conf.state(), decisions=self.decision_record(),
                           fallbacks=self._fallbacks, radius=self._radius.rule, beta_table=table,
                           dirs_t=self._dirs_t, steps=self.steps, offsets=self._offsets,
                           unorm=self._unorm, margin=self.margin, S=setting.S,
                           baseline=setting.safe_arm, b0=setting.safety.baseline_reward,
                           geometry=self._geometry)


class ROFUL(DirectionalPolicy):
    r"""ROFUL in its authors' own model, an unknown linear constraint with its own feedback,
    and as their code defines it (:mod:`sege_cvx.policies.directional` has the rule and says
    how each arm is certified), on ``n_runs`` runs at once.  Registered, with
    :class:`StagewiseROFUL` (the stagewise floor), as ``"ROFUL"``.

    Parameters
    ----------
    setting : SafeSetting
        A :class:`~sege_cvx.StarSet` (compiled stages) or a convex set holding the origin, the
        origin as safe arm, ``S`` bounding ``||theta*||`` and ``||gamma*||``, and a
        :class:`~sege_cvx.KnownConstraint` with its own feedback.
    lam : float, default 1.0
    delta : float, default 0.01
        Overall risk, split between the two confidence sets (the authors' ``delta / 2``).
    radius : {"theorem1", "self_normalized"}, default "theorem1"
        The authors' ``beta_t`` at risk ``delta / 2`` per confidence set, or the self-normalized
        bound.
    n_directions : int, optional
        Rays on a convex set (default: CLUCB's count, at least 64); a star set has its own.
    refine : bool, default True
        On a box, polytope, ball or ellipsoid: the fan's best ray refined toward the rule's
        continuous optimum (:func:`~sege_cvx.policies.directional.refine_update`).
    n_runs : int, default 1
    seed : optional
        ROFUL draws nothing; accepted (and validated) as every policy's.

    Examples
    --------
    >>> import sege_cvx as sc
    >>> star = sc.StarSet([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]], radius=1.0)
    >>> con = sc.LinearConstraint(0.5, gamma_star=[0.8, 0.1], noise_sd=0.1)
    >>> setting = sc.SafeSetting(star, [0.0, 0.0], S=1.0, noise_sd=0.1,
    ...                          safety=con.known([0.0, 0.0], theta_star=[0.6, 0.3]))
    >>> policy = sc.ROFUL(setting, n_runs=2)
    >>> result = sc.simulate(policy, sc.LinearBandit([0.6, 0.3], 0.1, sc.run_seeds(0, 2)[1],
    ...                                              constraint=con), 300)
    >>> int(result.stats.total_violations.sum())
    0
    """

    rule = ROFUL_RULE


@njit
def _segment_points(baseline, offsets, j, tau) -> np.ndarray:
    """:func:`segment_point` per run."""
    n = j.shape[0]
    out = np.empty((n, baseline.shape[0]))
    for i in range(n):
        segment_point(baseline, offsets, j[i], tau[i], out[i])
    return out


__all__ = ["ROFUL", "StagewiseROFUL", "FULL_STEP", "SCALED_STEP", "BASELINE"]
