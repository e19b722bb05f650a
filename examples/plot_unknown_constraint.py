"""
Four safe algorithms under an unknown linear constraint
=======================================================

The other safety model (:doc:`../user_guide/safety_models`): every stage must keep a linear
constraint on the arm, with the origin the known safe arm. On the left two panels the constraint
``<x_t, gamma*> <= c`` has its own unknown ``gamma*``, observed with noise beside the reward:
ROFUL and GNOP, as their authors' code defines them, and SafeTS (a sample from the confidence
ellipsoid, its best arm over the estimated safe set: one SOCP a stage on the box), on a box and
on the ROFUL paper's kind of arm set, a star of rays, with the same seeded runs. On the right the
constraint is on ``theta*`` itself, ``<B x_t, theta*> <= c`` with ``B`` known, Safe-LUCB's model
(a pure-exploration phase, then one linear program per vertex of its relaxed confidence set).
Regret is against the best arm meeting the constraint (on the box, ROFUL and GNOP scan 64
well-spread rays from the origin, so their regret also carries that discretization's error); no
algorithm breaks the constraint.
"""

import matplotlib.pyplot as plt
import numpy as np

import sege_cvx as sc

box = sc.Box([-1.0, -1.0], [1.0, 1.0])
angles = np.linspace(0.0, 2 * np.pi, 12, endpoint=False)
rays = np.array([[np.cos(a), np.sin(a)] for a in angles])
own_feedback = sc.LinearConstraint(0.3, gamma_star=[0.7, 0.5], noise_sd=0.1)
on_theta = sc.LinearConstraint(0.3, B=[[0.6, 1.8], [1.8, 0.4]])
panels = [("box [-1, 1]^2, gamma* learned", box, own_feedback,
           ("ROFUL", "GNOP", "SafeTS"), {}),
          ("star of 12 rays, gamma* learned", sc.StarSet(rays, 1.0),
           own_feedback, ("ROFUL", "GNOP", "SafeTS"), {}),
          ("box [-1, 1]^2, B known", box, on_theta,
           ("Safe-LUCB",), {"exploration_stages": 200})]
runs, horizon = 4, 1500
_, noise_seeds = sc.run_seeds(0, runs)

fig, axes = plt.subplots(1, 3, figsize=(11, 3.4), sharey=True)
for ax, panel in zip(axes, panels, strict=True):
    label, arm_set, constraint, algorithms, settings = panel
    problem = sc.BanditProblem.from_truth(arm_set, theta_star=[0.6, 0.3],
                                          safe_arm=[0.0, 0.0], S=1.0,
                                          noise_sd=0.1, constraint=constraint)
    for algorithm in algorithms:
        policy = problem.policy(algorithm, runs, seed=1, **settings)
        stats = sc.simulate(policy, problem.bandit(noise_seeds), horizon).stats
        ax.plot(stats.checkpoints, stats.regret.mean(axis=1), label=algorithm,
                color=sc.policies.registry.policy_color(algorithm))
        print(f"{label:32} {algorithm:9} "
              f"regret {stats.regret[-1].mean():6.1f}  "
              f"violating stages {int(stats.total_violations.sum())}  "
              f"best reward within the constraint {problem.optimal_reward:.3f}")
    ax.set_title(label, fontsize=9)
    ax.set_xlabel("stage t")
    ax.legend(fontsize=8, loc="upper left")
axes[0].set_ylabel("mean cumulative regret")
fig.tight_layout()
