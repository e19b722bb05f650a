"""Per-run-stage cost of SEGE, CLUCB and ROFUL on the paper's setup (or other built-in
examples), with each confidence radius.

For each policy (on the paper's disk: SEGE with closed-form arms, CLUCB on its 41 boundary
points, ROFUL on the same 41 directions) and radius (``"theorem1"``, ``"self_normalized"``),
``simulate`` plays ``--runs`` runs of ``--horizon`` stages of the problem (``run_seeds(0,
runs)``) through the compiled multi-stage loops (runs spread over numba's threads).  One short
untimed simulation first loads (or compiles) the kernels.  Reported: the median, min and max
over ``--repeats`` fresh policies of the wall time, and the median per run-stage.  The
self-normalized radius adds ``d`` logarithms per run-stage (``log det V`` from the Cholesky
factor).  ``--examples box polytope treatment-mix`` measures the polyhedral examples instead
(their certified arms, and the exact membership test of every arm played).

    python benchmarks/bench_policies.py                 # 250 runs x 50,000 stages, 3 repeats
    python benchmarks/bench_policies.py --runs 50 --horizon 5000 --repeats 5
    python benchmarks/bench_policies.py --examples box polytope treatment-mix --radii theorem1
    python benchmarks/bench_policies.py --quick         # a smoke test (CI)
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

from _machine import machine

import sege_cvx as sc
from sege_cvx.problems.examples import EXAMPLES


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=250)
    parser.add_argument("--horizon", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--examples", nargs="+", default=["paper"], choices=sorted(EXAMPLES),
                        help="built-in examples (default: the paper's)")
    parser.add_argument("--radii", nargs="+", default=["theorem1", "self_normalized"],
                        choices=["theorem1", "self_normalized"])
    parser.add_argument("--quick", action="store_true",
                        help="a smoke test: 20 runs x 500 stages, 1 repeat")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.horizon, args.repeats = 20, 500, 1
    policy_seeds, noise_seeds = sc.run_seeds(0, args.runs)
    print("\n".join(machine()))
    print(f"{args.runs} runs x {args.horizon} stages, {args.repeats} repeats\n")
    print("| example | policy | radius | median s | min | max | ns per run-stage | regret at horizon |")
    print("|---|---|---|---|---|---|---|---|")
    for name, algorithm, radius in ((n, a, r) for n in args.examples
                                    for a in ("SEGE", "CLUCB", "ROFUL") for r in args.radii):
        problem = EXAMPLES[name]()
        def build(n_runs, seeds, problem=problem, algorithm=algorithm, radius=radius):
            return problem.policy(algorithm, n_runs, seeds, radius=radius)

        sc.simulate(build(2, policy_seeds[:2]), problem.bandit(noise_seeds[:2]), 20)
        times, regret = [], None
        for _ in range(args.repeats):
            policy = build(args.runs, policy_seeds)
            bandit = problem.bandit(noise_seeds)
            gc.disable()
            start = time.perf_counter()
            result = sc.simulate(policy, bandit, args.horizon)
            times.append(time.perf_counter() - start)
            gc.enable()
            regret = float(result.stats.regret[-1].mean())
        median = statistics.median(times)
        per = 1e9 * median / (args.runs * args.horizon)
        print(f"| {name} | {algorithm} | {radius} | {median:.2f} | {min(times):.2f} "
              f"| {max(times):.2f} | {per:.0f} | {regret:.1f} |", flush=True)


if __name__ == "__main__":
    main()
