"""Wall time of the paper's full study: SEGE and CLUCB, 250 runs x 50,000 stages.

Times the simulation loop only (no figures), as medians over ``--repeats`` runs, for CLUCB and
for SEGE with its LCB arms by the exact closed form and by Clarabel (``--lcb-method solver``), on
the same seeds.  The issue's target: both algorithms at full scale in <= 30 s on a 2-core machine.

    python benchmarks/bench_paper_scale.py                         # full scale
    python benchmarks/bench_paper_scale.py --runs 50 --horizon 5000 --repeats 1
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from _machine import machine

import sege_cvx as sc
from sege_cvx.experiments import PAPER_HORIZON, PAPER_RUNS, BanditProblem, paper_problem


def time_one(setup: BanditProblem, algorithm: str, runs: int, horizon: int, seed: int,
             lcb_method: str) -> tuple[float, dict]:
    policy_seeds, noise_seeds = sc.run_seeds(seed, runs)
    policy = setup.sege(runs, policy_seeds, lcb_method) if algorithm == "SEGE" else setup.clucb(runs)
    bandit = sc.LinearBandit(setup.theta_star, setup.noise_sd, noise_seeds)
    start = time.perf_counter()
    result = sc.simulate(policy, bandit, horizon)
    wall = time.perf_counter() - start
    info = {
        "violations": int(result.stats.total_violations.sum()),
        "regret": float(result.stats.cum_regret.mean()),
        "explorations": float(result.stats.decision_counts[:, 1:].sum(axis=1).mean()),
        "fallbacks": int(getattr(policy, "solver_fallbacks", np.zeros(1)).sum()),
    }
    return wall, info


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=PAPER_RUNS)
    parser.add_argument("--horizon", type=int, default=PAPER_HORIZON)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--solver-repeats", type=int, default=1,
                        help="repeats of the (slow) solver-path SEGE run; 0 to skip it")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    print("\n".join(machine()))
    print(f"paper setup, {args.runs} runs x {args.horizon} stages, seed {args.seed}")
    setup = paper_problem()
    for algorithm in ("SEGE", "CLUCB"):  # JIT warm-up (compiles or loads the kernels), not timed
        time_one(setup, algorithm, 2, 50, args.seed, "closed_form")
    rows = [("CLUCB", "-", args.repeats), ("SEGE", "closed_form", args.repeats),
            ("SEGE", "solver", args.solver_repeats)]
    medians = {}
    print(f"{'algorithm':<10} {'LCB arms':<12} {'median s':>9} {'all s':>22} {'violations':>10} "
          f"{'mean regret':>12} {'explorations/run':>17} {'fallbacks':>9}")
    for algorithm, method, repeats in rows:
        if repeats < 1:
            continue
        walls, info = [], {}
        for _ in range(repeats):
            wall, info = time_one(setup, algorithm, args.runs, args.horizon, args.seed,
                                  method if method != "-" else "closed_form")
            walls.append(wall)
        medians[(algorithm, method)] = statistics.median(walls)
        print(f"{algorithm:<10} {method:<12} {statistics.median(walls):>9.2f} "
              f"{' '.join(f'{w:.2f}' for w in walls):>22} {info['violations']:>10} "
              f"{info['regret']:>12.2f} {info['explorations']:>17.1f} {info['fallbacks']:>9}")
    both = medians[("CLUCB", "-")] + medians[("SEGE", "closed_form")]
    print(f"both algorithms (closed form): {both:.2f} s  [target <= 30 s at 250 x 50,000]")
    if ("SEGE", "solver") in medians:
        ratio = medians[("SEGE", "solver")] / medians[("SEGE", "closed_form")]
        print(f"SEGE solver path / closed form: {ratio:.1f}x")


if __name__ == "__main__":
    main()
