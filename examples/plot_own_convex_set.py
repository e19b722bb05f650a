"""
Bring your own convex arm set
=============================

Any convex set can be an arm set. Here, in the plane:

* a :class:`~sege_cvx.Polytope` ``{x : A x <= b}`` (certified active-set arms, no solver);
* the same kind of set given by its vertices, as a cvxpy user writes a convex hull: weights
  ``w = cp.Variable(k, nonneg=True)`` with ``x == P.T @ w`` and ``sum(w) == 1``, a *lifted*
  :class:`~sege_cvx.ConvexArmSet` (arms from Clarabel, each certified with its weights);
* an l1.5 ball, ``cp.pnorm(x - c, 1.5) <= 1`` (Clarabel).

For each, the greedy arm ``argmax <x, theta>`` and the LCB arm ``argmax <x, theta_hat> - r
||x||_{V^-1}`` (the paper's eq. for SEGE's exploration), and SEGE played on it for a few
hundred stages: every arm it plays lies in the set exactly. (On the hull both arms are the
same vertex for these data.)
"""

import cvxpy as cp
import matplotlib.pyplot as plt
import numpy as np

import sege_cvx as sc

square_cut = sc.Polytope([[1, 0], [0, 1], [-1, 0], [0, -1], [1, 1]],
                         [2, 2, 0, 0, 3])
points = np.array([[0.2, 0.1], [1.8, 0.3], [2.0, 1.6], [0.9, 2.0], [0.1, 1.2]])


def hull_by_weights(x):
    # created per call: each program its own
    w = cp.Variable(len(points), nonneg=True)
    return [x == points.T @ w, cp.sum(w) == 1]


def l15_ball(x):
    return [cp.pnorm(x - 1.0, 1.5) <= 1.0]


sets = {"polytope": square_cut,
        "hull by weights (lifted)": sc.ConvexArmSet(2, hull_by_weights),
        "l1.5 ball": sc.ConvexArmSet(2, l15_ball)}

theta_hat = np.array([0.6, 0.8])
V = np.array([[40.0, 12.0], [12.0, 10.0]])
radius = 2.0

# %%
# The arms
# --------
# On the polytope, ``lcb_arm(..., cross_check=True)`` also solves the program on Clarabel and
# raises if the certified arm and Clarabel's disagree (the cvxpy sets have only Clarabel's);
# ``witness_dim`` is the size of a lifted set's auxiliary variables.

angles = np.linspace(0.0, 2 * np.pi, 181)
directions = np.column_stack([np.cos(angles), np.sin(angles)])
fig, axes = plt.subplots(1, 3, figsize=(11, 4.2), sharex=True, sharey=True,
                         layout="constrained")
for ax, (name, arm_set) in zip(axes, sets.items(), strict=True):
    # support points trace the boundary
    boundary = arm_set.greedy_arm(directions)
    greedy = arm_set.greedy_arm(theta_hat)
    lcb = arm_set.lcb_arm(theta_hat, V, radius,
                          cross_check=arm_set.has_closed_form_lcb)
    # Both arms were certified at tolerance 0 when computed (a lifted set's
    # with the weights they came with); contains() on a lifted set first finds
    # weights by a small solve, so it is asked within its default tolerance,
    # 1e-9.
    print(f"{name}: witness_dim {arm_set.witness_dim}, "
          f"greedy arm {np.round(greedy, 4)}, "
          f"LCB arm {np.round(lcb, 4)}, in the set: "
          f"{bool(arm_set.contains(np.vstack([greedy, lcb])).all())}")
    ax.fill(*boundary.T, alpha=0.15)
    ax.plot(*boundary.T, lw=1)
    ax.plot(*greedy, "o", label="greedy arm")
    ax.plot(*lcb, "s", label="LCB arm")
    ax.set_title(name)
    ax.set_aspect("equal")
# One legend below the panels; the constrained layout keeps room for it and
# the titles.
fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center",
           ncol=2)

# %%
# SEGE on each set
# ----------------
# The baseline arm is the centre of the set's certified exploration body; the threshold is
# 80 % of its reward. SEGE's compiled stages play the polytope; the cvxpy sets go through
# Clarabel stage by stage.

theta_star = np.array([0.5, 0.7])
for name, arm_set in sets.items():
    x0 = arm_set.exploration().center
    b0 = float(x0 @ theta_star)
    floor = sc.RewardFloor(baseline_reward=b0, threshold=0.8 * b0)
    setting = sc.SafeSetting(arm_set, x0, S=1.0, noise_sd=0.3, safety=floor)
    policy = sc.SEGE(setting, c=0.05, n_runs=2, seed=sc.run_seeds(1, 2)[0])
    noise_seeds = sc.run_seeds(1, 2)[1]
    bandit = sc.LinearBandit(theta_star, 0.3, noise_seeds,
                             threshold=floor.threshold)
    result = sc.simulate(policy, bandit, 300)
    print(f"{name}: regret after 300 stages "
          f"{result.stats.regret[-1].mean():.1f}, "
          f"violations {int(result.stats.total_violations.sum())}, "
          f"solver fallbacks {int(policy.solver_fallbacks.sum())}")
