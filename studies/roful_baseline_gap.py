"""ROFUL when the baseline reward it is given understates the baseline's true reward.

ROFUL works with ``y' = y - b0``, so it needs ``b0 = <x0, theta*>`` exactly; the paper (and SEGE)
only need ``b0 <= <x0, theta*>``.  This plays ROFUL on the paper's setup (true baseline reward
2.24, threshold b = 1.792) given ``b0 = 2.24 - g`` for a few gaps ``g``, 250 runs x 5,000 stages
(``run_seeds(0, 250)``), and prints regret and violations.

    python studies/roful_baseline_gap.py
"""

import numpy as np

import sege_cvx as sc


def main() -> None:
    problem = sc.paper_problem()
    setting, floor = problem.setting, problem.setting.safety
    _, noise_seeds = sc.run_seeds(0, 250)
    print("| gap g | radius | regret at t=5000 | violating runs | violating pairs | min reward |")
    print("| ---: | :--- | ---: | ---: | ---: | ---: |")
    for gap in (0.0, 0.1, 0.2, 0.3):
        for radius in ("theorem1", "self_normalized"):
            told = sc.SafeSetting(setting.arm_set, setting.safe_arm, S=setting.S,
                                 noise_sd=setting.noise_sd,
                                 safety=sc.RewardFloor(floor.baseline_reward - gap, floor.threshold))
            policy = sc.StagewiseROFUL(told, radius=radius, n_runs=250)
            stats = sc.simulate(policy, problem.bandit(noise_seeds), 5000).stats
            regret = stats.regret[-1]
            print(f"| {gap} | {radius} | {regret.mean():.1f} ± {regret.std(ddof=1) / np.sqrt(250):.1f}"
                  f" | {int((stats.total_violations > 0).sum())} | {int(stats.total_violations.sum())}"
                  f" | {stats.min_reward.min():.3f} |", flush=True)
    print(f"(threshold b = {floor.threshold:.3f}; true baseline reward {floor.baseline_reward:.2f})")


if __name__ == "__main__":
    main()
