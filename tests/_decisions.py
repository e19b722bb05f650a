"""How decisive a SEGE trajectory's decisions are: the margin of each test from its threshold.

Two different arithmetic paths (a closed form and a solver) can make bitwise the same decisions
only while no decision is a near-tie; CPU-dependent rounding (BLAS kernels in a set-up, about
1e-16 relative) then cannot move a statistic across its threshold either.  Tests that compare
decision sequences of two paths exactly check that premise with :func:`sege_decision_margins`.
"""

from __future__ import annotations

import math

import numpy as np

from sege_cvx.confidence.cholesky import lcb_values, min_eigenvalue_at_least


def sege_decision_margins(policy, bandit, horizon: int) -> dict[str, float]:
    """Step a fresh SEGE ``policy`` through ``horizon`` stages against ``bandit``; return the
    smallest relative margin of each test of Algorithm 1 (lines 5-8) over all runs and stages.

    ``info``: ``|lambda_min(V) - c sqrt(t)| / (c sqrt(t))``; ``exploit``: ``|LCB(X^CE) - b| / |b|``
    over the runs that pass the information test; ``lcb``: ``|LCB(X^LCB) - b0| / |b0|`` over the
    runs that explore.  The arms are the arm set's own methods (the policy's rule uses the same
    ones, or, on an ellipsoid, the same compiled per-point functions); the stage played is the
    policy's.
    """
    n = policy.n_runs
    arm_set, floor = policy.setting.arm_set, policy.setting.safety
    worst = {"info": math.inf, "exploit": math.inf, "lcb": math.inf}
    for t in range(1, horizon + 1):
        conf = policy.confidence
        radii, bound = policy.radii_at(t), policy.c * math.sqrt(t)
        lam_min = np.array([np.linalg.eigvalsh(v)[0] for v in conf.V])
        worst["info"] = min(worst["info"], float(np.min(np.abs(lam_min - bound))) / bound)
        exploit = np.zeros(n, dtype=bool)
        ready = np.flatnonzero(min_eigenvalue_at_least(conf.V, bound))  # the policy's own test
        if ready.size:
            greedy = arm_set.greedy_arm_batch(conf.theta_hat[ready])
            ok = ready[greedy.ok]
            values = lcb_values(greedy.arms[greedy.ok], conf.theta_hat[ok], conf.chol[ok], radii[ok])
            if ok.size:
                worst["exploit"] = min(worst["exploit"], float(
                    np.min(np.abs(values - floor.threshold))) / abs(floor.threshold))
            exploit[ok] = values >= floor.threshold
        idx = np.flatnonzero(~exploit)
        if idx.size:
            lcb = arm_set.lcb_arm_batch(conf.theta_hat[idx], conf.chol[idx], radii[idx],
                                        policy.lcb_method)
            rows = idx[lcb.ok]
            values = lcb_values(lcb.arms[lcb.ok], conf.theta_hat[rows], conf.chol[rows], radii[rows])
            if rows.size:
                worst["lcb"] = min(worst["lcb"], float(
                    np.min(np.abs(values - floor.baseline_reward))) / abs(floor.baseline_reward))
        x = policy.select()
        policy.observe(x, bandit.pull(x.reshape(n, -1))[1])
    return worst
