"""Cold start: seconds from a fresh Python process to an algorithm's first stages, per arm set.

For each algorithm (SEGE, CLUCB, ROFUL) and built-in example (``sege-cvx run --arm-set``), a new
process imports sege_cvx, builds the example's problem and the policy (4 runs), and simulates
10 stages, timing each step from the process's start.  It runs twice: with an empty numba cache
(``NUMBA_CACHE_DIR`` a new directory: every kernel the algorithm needs is compiled, **cold**),
then again on the cache the first run left (**warm**).  Compile time is the difference.  The
issue's target: the first stage within 15 s of a cold start, for any algorithm and example.

    python benchmarks/bench_cold_start.py                                  # every pair: minutes
    python benchmarks/bench_cold_start.py --algorithms SEGE --examples paper box
    python benchmarks/bench_cold_start.py --quick                          # SEGE on paper (CI)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from _machine import machine

ALGORITHMS = ("SEGE", "CLUCB", "ROFUL")
EXAMPLES = ("paper", "ellipsoid", "box", "polytope", "lp-ball", "treatment-mix")
TARGET_SECONDS = 15.0

#: The child: each step's end, in seconds from the moment its parent started it (one JSON line).
CHILD = r"""
import json, sys, time
algorithm, example, t0 = sys.argv[1], sys.argv[2], float(sys.argv[3])
marks = {"interpreter": time.time() - t0}
import sege_cvx as sc
from sege_cvx.problems.examples import EXAMPLES
marks["import"] = time.time() - t0
problem = EXAMPLES[example]()
policy_seeds, noise_seeds = sc.run_seeds(0, 4)
policy = problem.policy(algorithm, 4, policy_seeds)
marks["problem and policy"] = time.time() - t0
sc.simulate(policy, problem.bandit(noise_seeds), 10)
marks["first 10 stages"] = time.time() - t0
print(json.dumps(marks))
"""


def run_child(algorithm: str, example: str, cache: str) -> dict[str, float]:
    env = {**os.environ, "NUMBA_CACHE_DIR": cache}
    proc = subprocess.run([sys.executable, "-c", CHILD, algorithm, example, repr(time.time())],
                          env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{algorithm} on {example} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algorithms", nargs="+", choices=ALGORITHMS, default=list(ALGORITHMS))
    parser.add_argument("--examples", nargs="+", choices=EXAMPLES, default=list(EXAMPLES))
    parser.add_argument("--quick", action="store_true",
                        help="a smoke test: SEGE on the paper's problem only")
    args = parser.parse_args(argv)
    if args.quick:
        args.algorithms, args.examples = ["SEGE"], ["paper"]
    print("\n".join(machine()))
    print("seconds from the process's start; cold: empty numba cache, warm: the cache it left\n")
    print(f"| {'algorithm':<9} | {'example':<13} | {'import':>6} | {'problem+policy':>14} | "
          f"{'first stages, cold':>18} | {'warm':>6} | {'compiling':>9} | target <= 15 s |")
    print(f"|{'-' * 11}|{'-' * 15}|{'-' * 7}:|{'-' * 15}:|{'-' * 19}:|{'-' * 7}:|{'-' * 10}:|"
          f"{'-' * 16}|")
    for algorithm in args.algorithms:
        for example in args.examples:
            with tempfile.TemporaryDirectory() as cache:
                cold = run_child(algorithm, example, cache)
                warm = run_child(algorithm, example, cache)
            first, again = cold["first 10 stages"], warm["first 10 stages"]
            print(f"| {algorithm:<9} | {example:<13} | {cold['import']:>6.2f} | "
                  f"{cold['problem and policy']:>14.2f} | {first:>18.2f} | {again:>6.2f} | "
                  f"{first - again:>9.2f} | {'met' if first <= TARGET_SECONDS else 'missed':<14} |",
                  flush=True)


if __name__ == "__main__":
    main()
