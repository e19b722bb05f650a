r"""SEGE's decision rule (paper Algorithm 1, lines 5-8) as per-run compiled functions.

Every engine calls these, so the rule exists once:

* :func:`exploits` (line 5's safety test of the greedy arm) and :func:`safe_exploration_arm`
  (eqs. (safe arm t) and (safe exp arm)) are the rule itself.  ``SEGE.select`` applies them
  to the greedy and LCB arms of any arm set (closed forms or Clarabel solves), through the
  batched :func:`exploit_all` and :func:`explore_all`.
* :func:`stage_one` is a whole stage of one run on a set whose greedy and LCB arms are
  compiled (:mod:`sege_cvx.fast_paths.stage_arms`: ellipsoids, boxes and polytopes): the
  information test, the greedy arm and its test, the LCB arm, the exploration point, the mix
  and its verification.
  :func:`select_all` is one stage of every run (``SEGE.select``); :func:`run_stages` is many
  stages of a block of runs against a linear bandit (blocks of runs on threads).

Each run is computed with its own data only, in the same order of operations whatever the
other runs, the number of threads or the engine: the results are bitwise the same.
"""

from __future__ import annotations

import numpy as np

from .._numba import borrow, keep_alive, njit
from ..arm_sets.exploration import exploration_point
from ..confidence.cholesky import factor, lcb_one, observe_one
from ..confidence.radius import radius_one
from ..fast_paths.stage_arms import greedy_arm, lcb_arm, pull_inside
from ..fast_paths.status import NOT_MEMBER, VERIFIED
from ..simulation.statistics import record_run_stage

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


@njit(inline="always")
def stage_one(bound, rule, stage_value, V, chol, theta_hat, draws, cursor, i, geometry,
              exploration, rho, baseline, b, b0, out, safe, U, fallbacks, warm, mats, vecs) -> int:
    """One stage of one run on a set with compiled arms: the arm into ``out``; returns the
    decision code.

    The arms are the geometry's (:mod:`sege_cvx.fast_paths.stage_arms`: an ellipsoid's closed
    forms, a polytope's certified active-set solves warm started from the run's ``warm`` state).
    The radius ``r_t`` is the run's :func:`~sege_cvx.confidence.radius.radius_one` of ``rule``
    and ``stage_value``.
    Line 5: exploit iff ``lambda_min(V_{t-1}) >= bound = c sqrt(t)`` (decided by factoring
    ``V - bound I``) and the greedy arm, verified in the set, passes :func:`exploits`.
    Otherwise lines 7-8 with the LCB arm and ``U_t`` from the run's next normal draw,
    ``draws[i, cursor[i]]`` (the cursor then advances: directions are drawn only when
    exploring).  A greedy or
    LCB arm that cannot be verified, or a mix that cannot be moved exactly into the set, is not
    played: the stage explores, the safe arm is the baseline, or the arm is the baseline; each
    such event adds one to ``fallbacks[0]`` (all events) and to ``fallbacks[status]`` (by
    status: :mod:`~sege_cvx.fast_paths.status`).  ``safe`` and ``U`` receive ``X^S_t`` and
    ``U_t`` (NaN when exploiting).  ``geometry``: the set's ``compiled_arms.geometry()``;
    ``exploration``: ``(center, B, cross)``; ``mats`` (6, d, d) and ``vecs`` (18, d): scratch.
    """
    r = radius_one(rule, stage_value, chol)
    if factor(V, bound, mats[5]):
        status = greedy_arm(geometry, theta_hat, warm, out, mats, vecs)
        if status != VERIFIED:
            fallbacks[0] += 1
            fallbacks[status] += 1
        elif exploits(out, theta_hat, chol, r, b, vecs[14]):
            safe[:] = np.nan
            U[:] = np.nan
            return EXPLOIT
    lcb_point = vecs[16]
    status = lcb_arm(geometry, theta_hat, chol, r, warm, lcb_point, mats, vecs)
    if status != VERIFIED:
        fallbacks[0] += 1
        fallbacks[status] += 1
    g = draws[i, cursor[i]]
    exploration_point(g, exploration[0], exploration[1], exploration[2], U, vecs[17])
    cursor[i] += 1
    use_lcb = safe_exploration_arm(lcb_point, status == VERIFIED, theta_hat, chol, r, b0,
                                   baseline, U, rho, vecs[14], safe, out)
    if not pull_inside(geometry, out, warm, use_lcb, rho, g, safe, vecs[14], vecs[15]):
        fallbacks[0] += 1
        fallbacks[NOT_MEMBER] += 1
        for k in range(out.shape[0]):
            out[k] = baseline[k]
    return EXPLORE_LCB if use_lcb else EXPLORE_BASELINE


@njit
def select_all(bound, rule, stage_value, V, chol, theta_hat, draws, cursor, geometry, exploration,
               rho, baseline, b, b0, out, safe, U, decision, fallbacks, warm) -> None:
    """:func:`stage_one` for every run (``SEGE.select``); ``warm``: ``(rows, counts, points,
    inverse)`` of every run."""
    n, d = theta_hat.shape
    mats = np.empty((6, d, d))
    vecs = np.empty((18, d))
    rows, counts, points, inverse = warm
    for i in range(n):
        decision[i] = stage_one(bound, rule, stage_value, V[i], chol[i], theta_hat[i], draws,
                                cursor, i, geometry, exploration, rho, baseline, b, b0, out[i],
                                safe[i], U[i], fallbacks[i], (rows[i], counts[i], points[i], inverse[i]),
                                mats, vecs)


@njit(nogil=True)
def run_stages(first, last, t0, bounds, rule, stage_values, draws, cursor, noise, state,
               geometry, exploration, rho, baseline, b, b0, theta_star, noise_sd, optimal, grid,
               row, stats, rows, traces, failed):
    """Stages ``t0 .. t0 + k - 1`` of runs ``first .. last - 1`` against the linear bandit
    (:func:`~sege_cvx._numba.over_runs` spreads blocks of runs over threads).

    Per run and stage, the step API's functions in its order: :func:`stage_one` (with the
    stage's ``c sqrt(t)`` and radius ``rule`` and value from ``bounds`` and ``stage_values``, and
    the run's normal
    draws ``draws[i]`` read from ``cursor[i]`` on, at least ``k`` of them unread), the reward ``<x, theta*>
    + noise_sd * noise`` (as :meth:`LinearBandit.pull`), the confidence update
    (:func:`observe_one`) and the running statistics (:func:`record_run_stage`).  A run's numbers are
    therefore bitwise those of ``select``/``observe``, whatever the thread that computed it.

    ``state``: ``(V, chol, xy_sum, theta_hat, counts, decision_counts, last_decision,
    last_safe, last_exploration, fallbacks, warm rows, counts, points, inverses)``; ``stats``: the arrays of
    :class:`~sege_cvx.simulation.statistics.RunStatistics`; ``rows[i]`` receives run ``i``'s
    next checkpoint row; ``failed[i]`` the stage at which its ``V`` lost definiteness (else 0).
    """
    # Every array borrowed (_numba.borrow): the caller holds the arguments, and ``scratch`` is
    # kept alive to the end.
    state, stats, traces = borrow(state), borrow(stats), borrow(traces)
    geometry, exploration = borrow(geometry), borrow(exploration)
    bounds, stage_values, draws, cursor, noise, baseline, theta_star, optimal, grid, rows, failed = (
        borrow((bounds, stage_values, draws, cursor, noise, baseline, theta_star, optimal, grid,
                rows, failed)))
    (V, chol, xy_sum, theta_hat, counts, decision_counts, last_decision, last_safe,
     last_exploration, fallbacks, warm_rows, warm_counts, warm_points, warm_inverse) = state
    (cum_regret, cum_reward, min_reward, reward_min, reward_max, first_violation, violations,
     conservative, decisions, regret_rows, reward_rows, violation_rows, decision_rows) = stats
    trace_reward, trace_decision = traces
    d = theta_hat.shape[1]
    k = bounds.shape[0]
    scratch = (np.empty((6, d, d)), np.empty((18, d)), np.empty(d), np.empty((d, d)),
               np.empty((d, d)), np.empty(d))
    mats, vecs, arm, V_new, L, w = borrow(scratch)
    for i in range(first, last):
        V_i, chol_i, xy_i, theta_i = V[i], chol[i], xy_sum[i], theta_hat[i]
        safe_i, U_i, fallbacks_i = last_safe[i], last_exploration[i], fallbacks[i]
        warm_i = (warm_rows[i], warm_counts[i], warm_points[i], warm_inverse[i])
        r_i = row
        for s in range(k):
            t = t0 + s
            code = stage_one(bounds[s], rule, stage_values[s], V_i, chol_i, theta_i, draws,
                             cursor, i, geometry, exploration, rho, baseline, b, b0, arm, safe_i,
                             U_i, fallbacks_i, warm_i, mats, vecs)
            mean = 0.0
            for m in range(d):
                mean += arm[m] * theta_star[m]
            y = mean + noise_sd * noise[i, s]
            if not observe_one(V_i, chol_i, xy_i, theta_i, arm, y, V_new, L, w):
                failed[i] = t
                break
            counts[i] += 1
            decision_counts[i, code] += 1
            last_decision[i] = code
            r_i = record_run_stage(i, t, s, mean, code, optimal, b, grid, r_i, cum_regret,
                                   cum_reward, min_reward, reward_min, reward_max,
                                   first_violation, violations, conservative, decisions,
                                   regret_rows, reward_rows, violation_rows, decision_rows,
                                   trace_reward, trace_decision)
        rows[i] = r_i
    keep_alive(scratch)
