"""Peak memory and wall time of the paper's study far beyond its size: both algorithms at
10,000 runs x 100,000 stages (the issue's target: peak RSS <= 3 GiB).

The simulations keep per-run running statistics and per-run values at about 200 checkpoint
stages, so memory grows with runs x checkpoints, not with the horizon.  Each algorithm runs in
this process one after the other (both results kept, as ``run_study`` does), then the summary
and the aggregates of ``arrays.npz`` are computed.  Peak RSS is the process's high-water mark
(``resource.getrusage``, kilobytes on Linux).

    python benchmarks/bench_memory.py                       # 10,000 x 100,000: minutes
    python benchmarks/bench_memory.py --runs 1000 --horizon 20000
    python benchmarks/bench_memory.py --quick               # a smoke test (CI)
"""

from __future__ import annotations

import argparse
import resource
import time

from _machine import machine

import sege_cvx as sc
from sege_cvx.experiments.paper import summarize, warm_up


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--horizon", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true",
                        help="a smoke test: 100 runs x 1,000 stages")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.horizon = 100, 1000

    print("\n".join(machine()))
    warm_up()
    print(f"paper setup, {args.runs} runs x {args.horizon} stages; after imports and kernels: "
          f"peak RSS {peak_rss_mib():.0f} MiB")
    setup = sc.paper_problem()
    policy_seeds, noise_seeds = sc.run_seeds(args.seed, args.runs)
    start = time.perf_counter()
    results = {}
    print(f"| {'step':<28} | {'wall s':>8} | {'us per run-stage':>16} | {'peak RSS MiB':>12} |")
    print(f"|{'-' * 30}|{'-' * 9}:|{'-' * 17}:|{'-' * 13}:|")
    for name in ("SEGE", "CLUCB"):
        policy = setup.policy(name, args.runs, policy_seeds)
        bandit = setup.bandit(noise_seeds)
        result = sc.simulate(policy, bandit, args.horizon)
        results[name] = result
        per = 1e6 * result.wall_seconds / (args.runs * args.horizon)
        print(f"| {name + ' simulation':<28} | {result.wall_seconds:>8.1f} | {per:>16.3f} | "
              f"{peak_rss_mib():>12.0f} |", flush=True)
    s = time.perf_counter()
    for name, result in results.items():
        summary = summarize(result, setup.setting.safety.threshold, args.seed)
        aggregates = result.stats.aggregates()
        print(f"  {name}: regret at T {summary['regret_mean'][str(args.horizon)]:.1f} "
              f"(q05 {aggregates['regret_q05'][-1]:.1f}, q95 {aggregates['regret_q95'][-1]:.1f}), "
              f"violating pairs {summary['safety_violations']}, "
              f"runs with a violation {int(aggregates['violating_runs'][-1])}")
    print(f"| {'summary and aggregates':<28} | {time.perf_counter() - s:>8.1f} | {'':>16} | "
          f"{peak_rss_mib():>12.0f} |")
    total = time.perf_counter() - start
    print(f"total {total:.1f} s; peak RSS {peak_rss_mib():.0f} MiB "
          f"({peak_rss_mib() / 1024:.2f} GiB)  [target <= 3 GiB]")


if __name__ == "__main__":
    main()
