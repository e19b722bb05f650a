r"""SEGE's decision rule (paper Algorithm 1, lines 5-8) as per-run compiled functions.

Every engine calls these, so the rule exists once:

* :func:`exploits` (line 5's safety test of the greedy arm) and :func:`safe_exploration_arm`
  (eqs. (safe arm t) and (safe exp arm)) are the rule itself.  ``SEGE.select`` applies them
  to the greedy and LCB arms of any arm set (closed forms or Clarabel solves), through the
  batched :func:`exploit_all` and :func:`explore_all`.
* :func:`stage_one` is a whole stage of one run on a set whose greedy and LCB arms are
  compiled (:mod:`sege_cvx.arm_sets.kernels.registry`: ellipsoids, boxes and polytopes): the
  information test, the greedy arm and its test, the LCB arm, the exploration point, the mix
  and its verification.
  :class:`SEGEStages` (with :class:`SEGERun` and :class:`SEGEScratch`) and its hooks
  (:func:`scratch`, :func:`run_view`, :func:`stage_one`, :func:`learn`) put it in the
  compiled stage loop (:mod:`sege_cvx.stages.loop`): many stages of a block of runs against a
  linear bandit, or one stage of every run (``SEGE.select``).

Each run is computed with its own data only, in the same order of operations whatever the
other runs, the number of threads or the engine: the results are bitwise the same.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._numba import njit
from ..arm_sets.exploration import exploration_point
from ..arm_sets.kernels.registry import (
    SCRATCH_MATS,
    SCRATCH_VECS,
    greedy_arm,
    lcb_arm,
    pull_inside,
)
from ..arm_sets.kernels.status import NOT_MEMBER, VERIFIED
from ..confidence.cholesky import factor, lcb_one
from ..confidence.radius import radius_one
from ..confidence.state import (
    ConfidenceState,
    LearnScratch,
    RunConfidence,
    learn_scratch,
    run_confidence,
)
from ..confidence.state import learn as update_confidence
from ..stages.loop import Decisions, StageHooks, register_stage_hooks

#: Decision codes recorded per stage (``SEGE.last_decision``).
EXPLOIT, EXPLORE_LCB, EXPLORE_BASELINE = 0, 1, 2


@njit(inline="always")
def exploits(greedy, theta_hat, chol, r, threshold, w) -> bool:
    """Line 5's safety test of the (verified) greedy arm: ``LCB_t(X^CE_t) >= b``."""
    return lcb_one(greedy, theta_hat, chol, r, w) >= threshold


@njit(inline="always")
def safe_exploration_arm(lcb_arm, lcb_ok, theta_hat, chol, r, b0, baseline, U, rho, w, safe,
                         out) -> bool:
    """Lines 7-8: the safe arm and the safe exploratory arm of one run.

    ``X^S_t = X^LCB_t`` if that arm was verified in the set and ``LCB_t(X^LCB_t) >= b0``, else
    the baseline ``X_0`` (eq. (safe arm t)); ``out = (1 - rho) X^S_t + rho U_t`` (eq. (safe exp
    arm)), a convex combination of points of the set, still to be verified in it (rounding).
    ``safe`` receives ``X^S_t``.  Returns whether ``X^S_t`` is the LCB arm.
    """
    use_lcb = lcb_ok and lcb_one(lcb_arm, theta_hat, chol, r, w) >= b0
    for k in range(out.shape[0]):
        safe[k] = lcb_arm[k] if use_lcb else baseline[k]
        out[k] = (1.0 - rho) * safe[k] + rho * U[k]
    return use_lcb


@njit
def exploit_all(arms, ok, theta_hat, chol, radii, threshold, rows) -> np.ndarray:
    """:func:`exploits` for runs ``rows`` (``arms[j]`` is run ``rows[j]``'s greedy arm;
    ``radii[i]``: run ``i``'s ``r_t``)."""
    out = np.zeros(rows.shape[0], dtype=np.bool_)
    w = np.empty(arms.shape[1])
    for j in range(rows.shape[0]):
        i = rows[j]
        out[j] = ok[j] and exploits(arms[j], theta_hat[i], chol[i], radii[i], threshold, w)
    return out


@njit
def explore_all(lcb_arms, lcb_ok, theta_hat, chol, radii, b0, baseline, U, rho, rows):
    """:func:`safe_exploration_arm` for runs ``rows``: ``(use_lcb, safe arms, mixed arms)``."""
    n, d = lcb_arms.shape
    use = np.empty(n, dtype=np.bool_)
    safe = np.empty((n, d))
    mixed = np.empty((n, d))
    w = np.empty(d)
    for j in range(n):
        i = rows[j]
        use[j] = safe_exploration_arm(lcb_arms[j], lcb_ok[j], theta_hat[i], chol[i], radii[i],
                                      b0, baseline, U[j], rho, w, safe[j], mixed[j])
    return use, safe, mixed


class SEGEStages(NamedTuple):
    """SEGE's stage record for the compiled stage loop (:mod:`sege_cvx.stages.loop`).

    Per run (first axis): the ``confidence`` state, the ``decisions``, the last safe and
    exploration arms, the ``fallbacks`` by status, the ``warm`` start of the set's arms (a
    polytope's ``(rows, counts, points, inverse)``).  The call's constants: per stage,
    ``c sqrt(t)`` in ``bounds`` and the ``radius`` rule's value in ``stage_values``; the normal
    draws and their per-run ``cursor``; the set's ``geometry`` record and
    ``exploration = (center, B, cross)``; ``rho``, the ``baseline`` arm, ``b`` and ``b0``.
    """

    confidence: ConfidenceState
    decisions: Decisions
    last_safe: np.ndarray
    last_exploration: np.ndarray
    fallbacks: np.ndarray
    warm: tuple
    bounds: np.ndarray
    radius: tuple
    stage_values: np.ndarray
    draws: np.ndarray
    cursor: np.ndarray
    geometry: tuple
    exploration: tuple
    rho: float
    baseline: np.ndarray
    b: float
    b0: float


class SEGERun(NamedTuple):
    """Run ``i``'s views of a :class:`SEGEStages` (:func:`run_view`)."""

    confidence: RunConfidence
    safe: np.ndarray
    exploration: np.ndarray
    fallbacks: np.ndarray
    warm: tuple


#: SEGE's own scratch rows, after the set's arms' (:data:`SCRATCH_MATS`, :data:`SCRATCH_VECS`)
#: in the same two blocks: the factor of ``V - c sqrt(t) I``; the LCB arm, the vector of the LCB
#: test and of the pull-in, the pull-in's trial point, the exploration point's scratch.  Rows of
#: two arrays, not arrays of their own: every array the stage holds is live across the set's
#: (not inlined) solves, and four more cost SEGE's polyhedral stages a tenth, measured.
SHIFTED = SCRATCH_MATS
LCB_POINT, W, TRIAL, ZETA = range(SCRATCH_VECS, SCRATCH_VECS + 4)


class SEGEScratch(NamedTuple):
    """:func:`stage_one`'s scratch (:func:`scratch`): ``mats`` and ``vecs``, the set's arms'
    rows (:data:`~sege_cvx.arm_sets.kernels.registry.SCRATCH_MATS`, ...) followed by SEGE's own
    (:data:`SHIFTED`; :data:`LCB_POINT`, :data:`W`, :data:`TRIAL`, :data:`ZETA`), and
    :func:`learn`'s."""

    mats: np.ndarray
    vecs: np.ndarray
    learn: LearnScratch


@njit(inline="always")
def stage_one(policy, run, work, i, s, t, out) -> int:
    """One stage ``t`` of run ``i`` on a set with compiled arms (the stage loop's ``choose_arm``
    hook): the arm into ``out``; returns the decision code.  ``policy``: :class:`SEGEStages`
    (``s``: the stage's index in it); ``run``: :class:`SEGERun`; ``work``: :class:`SEGEScratch`.

    The arms are the geometry's (:mod:`sege_cvx.arm_sets.kernels.registry`: an ellipsoid's closed
    forms, a polytope's certified active-set solves warm started from the run's ``warm`` state).
    The radius ``r_t`` is the run's radius of the record's rule and the stage's value
    (:func:`~sege_cvx.confidence.radius.radius_one`).
    Line 5: exploit iff ``lambda_min(V_{t-1}) >= c sqrt(t)`` (decided by factoring
    ``V - c sqrt(t) I``) and the greedy arm, verified in the set, passes :func:`exploits`.
    Otherwise lines 7-8 with the LCB arm and ``U_t`` from the run's next normal draw,
    ``draws[i, cursor[i]]`` (the cursor then advances: directions are drawn only when
    exploring).  A greedy or LCB arm that cannot be verified, or a mix that cannot be moved
    exactly into the set, is not played: the stage explores, the safe arm is the baseline, or
    the arm is the baseline; each such event adds one to ``fallbacks[0]`` (all events) and to
    ``fallbacks[status]`` (by status: :mod:`~sege_cvx.arm_sets.kernels.status`).  The run's last safe
    arm and exploration point receive ``X^S_t`` and ``U_t`` (NaN when exploiting).
    """
    V, chol, theta_hat = run.confidence.V, run.confidence.chol, run.confidence.theta_hat
    safe, U, fallbacks, warm = run.safe, run.exploration, run.fallbacks, run.warm
    mats, vecs = work.mats, work.vecs
    geometry, baseline, rho = policy.geometry, policy.baseline, policy.rho
    r = radius_one(policy.radius, policy.stage_values[s], chol)
    if factor(V, policy.bounds[s], mats[SHIFTED]):
        status = greedy_arm(geometry, theta_hat, warm, out, mats, vecs)
        if status != VERIFIED:
            fallbacks[0] += 1
            fallbacks[status] += 1
        elif exploits(out, theta_hat, chol, r, policy.b, vecs[W]):
            safe[:] = np.nan
            U[:] = np.nan
            return EXPLOIT
    lcb_point = vecs[LCB_POINT]
    status = lcb_arm(geometry, theta_hat, chol, r, warm, lcb_point, mats, vecs)
    if status != VERIFIED:
        fallbacks[0] += 1
        fallbacks[status] += 1
    g = policy.draws[i, policy.cursor[i]]
    center, B, cross = policy.exploration
    exploration_point(g, center, B, cross, U, vecs[ZETA])
    policy.cursor[i] += 1
    use_lcb = safe_exploration_arm(lcb_point, status == VERIFIED, theta_hat, chol, r, policy.b0,
                                   baseline, U, rho, vecs[W], safe, out)
    if not pull_inside(geometry, out, warm, use_lcb, rho, g, safe, vecs[W], vecs[TRIAL]):
        fallbacks[0] += 1
        fallbacks[NOT_MEMBER] += 1
        for k in range(out.shape[0]):
            out[k] = baseline[k]
    return EXPLORE_LCB if use_lcb else EXPLORE_BASELINE


@njit(inline="always")
def scratch(policy, d):
    """A :class:`SEGEScratch` for dimension ``d``."""
    return SEGEScratch(mats=np.empty((SHIFTED + 1, d, d)), vecs=np.empty((ZETA + 1, d)),
                       learn=learn_scratch(d))


@njit(inline="always")
def run_view(policy, i):
    """Run ``i``'s :class:`SEGERun`."""
    rows, counts, points, inverse = policy.warm
    return SEGERun(confidence=run_confidence(policy.confidence, i), safe=policy.last_safe[i],
                   exploration=policy.last_exploration[i], fallbacks=policy.fallbacks[i],
                   warm=(rows[i], counts[i], points[i], inverse[i]))


@njit(inline="always")
def learn(policy, run, work, i, arm, y, code, z) -> bool:
    """Line 11: the confidence set's update with ``(arm, y)``
    (:func:`~sege_cvx.confidence.state.learn`)."""
    return update_confidence(policy.confidence, run.confidence, i, arm, y, work.learn)


# stage_one is the choose_arm hook itself: one level of inlining less to compile.
register_stage_hooks(SEGEStages, StageHooks(scratch, run_view, stage_one, learn))
