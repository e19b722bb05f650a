"""
ROFUL, GNOP and SafeTS under an unknown linear constraint
=========================================================

The other safety model (:doc:`../user_guide/safety_models`): every stage must keep
``<x_t, gamma*> <= c`` for an unknown ``gamma*``, observed with noise beside the reward, and the
origin is the known safe arm. ROFUL and GNOP, as their authors' code defines them, and SafeTS
(a sample from the confidence ellipsoid, its best arm over the estimated safe set: one SOCP a
stage on the box), on a box and on the ROFUL paper's kind of arm set, a star of rays, with the
same seeded runs. Regret is against the best arm meeting the constraint (on the box, ROFUL and
GNOP scan 64 well-spread rays from the origin, so their regret also carries that
discretization's error; SafeTS solves its program over the box itself); no algorithm breaks the
constraint.
"""

import matplotlib.pyplot as plt
import numpy as np

import sege_cvx as sc

constraint = sc.LinearConstraint(0.3, gamma_star=[0.7, 0.5], noise_sd=0.1)
rays = np.array([[np.cos(a), np.sin(a)] for a in np.linspace(0.0, 2 * np.pi, 12, endpoint=False)])
arm_sets = {"box [-1, 1]^2": sc.Box([-1.0, -1.0], [1.0, 1.0]),
            "star of 12 rays": sc.StarSet(rays, radius=1.0)}
runs, horizon = 6, 1500
_, noise_seeds = sc.run_seeds(0, runs)

fig, axes = plt.subplots(1, 2, figsize=(8, 3.4), sharey=True)
for ax, (label, arm_set) in zip(axes, arm_sets.items(), strict=True):
    problem = sc.BanditProblem(arm_set, theta_star=[0.6, 0.3], baseline_arm=[0.0, 0.0], S=1.0,
                               noise_sd=0.1, lam=1.0, delta_bar=0.01, constraint=constraint)
    for algorithm in ("ROFUL", "GNOP", "SafeTS"):
        policy = problem.policy(algorithm, runs, seed=1)
        stats = sc.simulate(policy, problem.bandit(noise_seeds), horizon).stats
        ax.plot(stats.checkpoints, stats.regret.mean(axis=1), label=algorithm,
                color=sc.policies.registry.policy_color(algorithm))
        print(f"{label:16} {algorithm:6} regret {stats.regret[-1].mean():6.1f}  "
              f"violating stages {int(stats.total_violations.sum())}  "
              f"best reward within the constraint {problem.optimal_reward:.3f}")
    ax.set_title(label, fontsize=9)
    ax.set_xlabel("stage t")
axes[0].set_ylabel("mean cumulative regret")
axes[0].legend(fontsize=8)
fig.tight_layout()
