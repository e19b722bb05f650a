"""
The paper's study
=================

SEGE against the discretized CLUCB baseline on the paper's Section 6 problem: a disk of arms,
the baseline arm ``x0 = (1.2, 1.9)`` with reward ``b0 = 2.24``, and the safety threshold
``b = 0.8 b0``. Both algorithms play the same seeded runs; SEGE never plays an arm whose
expected reward may fall below ``b``, while CLUCB's stagewise budget is only met in aggregate.

This is the study of ``sege-cvx reproduce`` at a small size (the paper: 250 runs of 50,000
stages, ``sege-cvx reproduce --full``).
"""

import matplotlib.pyplot as plt
import numpy as np

import sege_cvx as sc
from sege_cvx.problems import paper_problem

problem = paper_problem()
runs, horizon = 20, 2000
policy_seeds, noise_seeds = sc.run_seeds(0, runs)

results = {}
for name in ("SEGE", "CLUCB"):
    policy = problem.policy(name, runs, policy_seeds)
    bandit = problem.bandit(noise_seeds)
    results[name] = sc.simulate(policy, bandit, horizon)

# %%
# Regret and safety
# -----------------
# ``result.stats`` holds per-run statistics at about 200 log-spaced checkpoints.

fig, ax = plt.subplots(figsize=(6, 4))
for name, result in results.items():
    stats = result.stats
    mean = stats.regret.mean(axis=1)
    ax.plot(stats.checkpoints, mean, label=name)
    low, high = np.quantile(stats.regret, [0.05, 0.95], axis=1)
    ax.fill_between(stats.checkpoints, low, high, alpha=0.2)
    print(f"{name}: regret at t={horizon} {mean[-1]:.1f}, "
          f"stage-wise violations {int(stats.total_violations.sum())}")
ax.set_xlabel("stage t")
ax.set_ylabel("cumulative regret (mean, 5-95 % of runs)")
ax.set_title(f"The paper's problem, {runs} runs")
ax.legend()
fig.tight_layout()
