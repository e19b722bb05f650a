"""
SEGE, SafeTS and ROFUL on a second-order-cone set
=================================================

A demand-response arm set: ``x`` is the change of three loads' consumption, kept
within a power budget ``||x|| <= 1``, a joint limit ``x1 + x2 <= 0.9`` and a
line-flow limit ``||F x|| <= 0.8`` (``F`` the flows the loads cause on two lines).
Its cvxpy form has only linear rows and second-order cones, so with
``compiled=True`` SEGE's greedy and LCB programs run inside the compiled stage loop
(:doc:`../user_guide/arm_sets`), each arm proven in the set in exact arithmetic
with its witness; every arm from Clarabel is proven too, by ``contains(x, tol=0)``
(:doc:`../user_guide/safety`).

Left: the stagewise floor (reward at least half the baseline's), SEGE on its
compiled stages and with ``lcb_method="solver"`` (one Clarabel solve from Python per
run and stage); the two curves coincide, their arms agreeing to about 1e-8. Right:
an unknown linear constraint ``<x, gamma*> <= 0.3`` observed with noise, SafeTS
(its program over the estimated safe set solved in the compiled stages, as SEGE's)
and ROFUL (a fan of rays from the safe arm, each arm's witness solved in the
compiled stages and the pair proven in the set). The printed table gives each
one's microseconds per run-stage, measured here (a first short run of each,
which compiles its stages, is left out).
"""

import time

import cvxpy as cp
import matplotlib.pyplot as plt
import numpy as np

import sege_cvx as sc

F = np.array([[1.0, 0.5, 0.0], [0.0, 1.0, -0.3]])


def demand_response(x):
    return [cp.norm(x) <= 1, x[0] + x[1] <= 0.9,
            cp.norm(F @ x) <= 0.8]


arm_set = sc.ConvexArmSet(3, demand_response, compiled=True)
theta_star = [0.5, 0.4, 0.3]
floor = sc.BanditProblem.from_truth(
    arm_set, theta_star=theta_star, safe_arm=[0.2, 0.1, 0.1],
    S=1.0, noise_sd=0.1, threshold_fraction=0.5, name="floor")
unknown = sc.LinearConstraint(0.3, gamma_star=[0.7, 0.5, 0.1],
                              noise_sd=0.1)
constrained = sc.BanditProblem.from_truth(
    arm_set, theta_star=theta_star, safe_arm=[0.0, 0.0, 0.0],
    S=1.0, noise_sd=0.1, constraint=unknown, name="constraint")
runs, horizon = 6, 1000
policy_seeds, noise_seeds = sc.run_seeds(0, runs)
_, warm_up_noise = sc.run_seeds(1, 1)

# (panel, problem, label, algorithm, keywords)
solver = {"lcb_method": "solver"}
cells = [(0, floor, "SEGE, compiled", "SEGE", {}),
         (0, floor, "SEGE, Clarabel", "SEGE", solver),
         (1, constrained, "SafeTS", "SafeTS", {}),
         (1, constrained, "ROFUL", "ROFUL", {})]

fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
print(f"{'':16} {'us/run-stage':>12} {'regret':>7} {'violations':>10}")
for panel, problem, label, algorithm, keywords in cells:
    # Untimed: compiles the policy's stages on first use.
    sc.simulate(problem.policy(algorithm, 1, 0, **keywords),
                problem.bandit(warm_up_noise), 5)
    policy = problem.policy(algorithm, runs, policy_seeds, **keywords)
    start = time.perf_counter()
    stats = sc.simulate(policy, problem.bandit(noise_seeds),
                        horizon).stats
    per = (time.perf_counter() - start) / (runs * horizon) * 1e6
    color = sc.policies.registry.policy_color(algorithm)
    axes[panel].plot(stats.checkpoints, stats.regret.mean(axis=1),
                     label=label, color=color,
                     linestyle="--" if "Clarabel" in label else "-")
    violations = int(stats.total_violations.sum())
    print(f"{label:16} {per:12.1f} {stats.regret[-1].mean():7.1f} "
          f"{violations:10d}")
titles = ("reward floor, half the baseline's",
          "unknown constraint <x, gamma*> <= 0.3")
for ax, title in zip(axes, titles, strict=True):
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("stage t")
    ax.legend(fontsize=8, loc="upper left")
axes[0].set_ylabel("mean cumulative regret")
fig.tight_layout()
