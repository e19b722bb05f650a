"""
SEGE, CLUCB and ROFUL with both confidence radii
================================================

The three algorithms on the paper's problem, each with Theorem 1's radius (the paper's
``r_t``) and the tighter self-normalized radius (Abbasi-Yadkori et al. 2011), on the same
seeded runs (common random numbers). SEGE and ROFUL are stagewise safe: no stage's expected
reward may fall below the threshold ``b``; CLUCB only keeps a cumulative budget.
"""

import matplotlib.pyplot as plt

import sege_cvx as sc
from sege_cvx.problems import paper_problem

problem = paper_problem()
runs, horizon = 16, 2000
policy_seeds, noise_seeds = sc.run_seeds(0, runs)

fig, ax = plt.subplots(figsize=(6.5, 4))
for colour, algorithm in enumerate(("SEGE", "CLUCB", "ROFUL")):
    for radius, style in (("theorem1", "-"), ("self_normalized", "--")):
        policy = problem.policy(algorithm, runs, policy_seeds, radius=radius)
        bandit = problem.bandit(noise_seeds)
        stats = sc.simulate(policy, bandit, horizon).stats
        ax.plot(stats.checkpoints, stats.regret.mean(axis=1), style,
                color=f"C{colour}", label=f"{algorithm}, {radius}")
        print(f"{algorithm:5} {radius:15} "
              f"regret {stats.regret[-1].mean():7.1f}  "
              f"violating stages {int(stats.total_violations.sum())}")
ax.set_xlabel("stage t")
ax.set_ylabel("mean cumulative regret")
ax.legend(fontsize=8)
fig.tight_layout()
