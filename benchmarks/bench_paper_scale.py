"""Wall time of ``sege-cvx reproduce --full`` and of its phases, at the paper's scale.

Each repeat runs in a fresh Python process (as the command does) with numba's cache and
Python's bytecode cache warm (``PYTHONDONTWRITEBYTECODE`` is dropped from the children's
environment):

* **whole command**: ``python -m sege_cvx reproduce --full --no-progress --out TMP``, timed
  from outside, start to exit;
* **phases**, in a second process that does what the command does, timed inside: imports
  (``sege_cvx``, cvxpy when the arm set is built, matplotlib when the figures module is),
  loading the compiled kernels (``warm_up``), the SEGE and CLUCB simulations (with their
  microseconds per run-stage), the summary, ``summary.json`` + ``arrays.npz`` + manifest, and
  each figure.

Medians over ``--repeats``; the issue's targets are printed beside them (whole command <= 6 s,
both simulations <= 3 s, the whole command within 1.5 times the simulations' time: each
command's wall time over its own two simulations, as its ``summary.json`` records them).
``--threads`` sets ``NUMBA_NUM_THREADS`` for the child processes (default: all cores);
``--solver-repeats`` also times SEGE with LCB arms by Clarabel.

    python benchmarks/bench_paper_scale.py                          # 250 x 50,000, 3 repeats
    python benchmarks/bench_paper_scale.py --threads 1              # one core
    python benchmarks/bench_paper_scale.py --runs 50 --horizon 5000 --repeats 1
    python benchmarks/bench_paper_scale.py --quick                  # a smoke test (CI)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from _machine import machine

#: The child process: the command's steps with a timer around each (printed as one JSON line).
PHASES = r"""
import json, sys, time
t0 = time.perf_counter()
runs, horizon, seed = (int(a) for a in sys.argv[1:4])
lcb_method, out = sys.argv[4], sys.argv[5]
times = {}
import sege_cvx
from sege_cvx.experiments import paper
from sege_cvx.experiments import figures
setup = sege_cvx.paper_problem()
times["imports"] = time.perf_counter() - t0
try:
    warmed = paper.warm_up(lcb_method)
except TypeError:  # releases before warm_up took the LCB method
    warmed = paper.warm_up()
times["kernels (warm_up)"] = warmed[0] if isinstance(warmed, tuple) else warmed

start = time.perf_counter()
study = paper.run_study(runs=runs, horizon=horizon, seed=seed, lcb_method=lcb_method)
total = time.perf_counter() - start
walls = [study.summary[alg]["wall_seconds"] for alg in ("SEGE", "CLUCB")]  # the shards' own
times["SEGE simulation"], times["CLUCB simulation"] = walls
times["sweep machinery, run-0 replay, summary"] = total - sum(walls)

# Each figure by its public function, drawn and saved as PNG and PDF (write_outputs draws the
# same figures again below: its time less theirs is the rest of the writing).
import matplotlib.pyplot as plt
from sege_cvx.policies.registry import policy_color
sege, clucb = study.results["SEGE"], study.results["CLUCB"]
threshold = study.setup.setting.safety.threshold
drawing = {
    "fig2a_sege_reward": lambda: figures.reward_figure(sege, threshold, sege.optimal_reward,
                                                       policy_color("SEGE"), "SEGE"),
    "fig2b_clucb_reward": lambda: figures.reward_figure(clucb, threshold, clucb.optimal_reward,
                                                        policy_color("CLUCB"), "CLUCB"),
    "fig2c_regret": lambda: figures.regret_figure(study.results),
    "fig3_safe_sets": lambda: figures.safe_set_figure(study),
}
import tempfile as _tempfile
with _tempfile.TemporaryDirectory() as scratch:
    for name, draw in drawing.items():
        s = time.perf_counter()
        fig = draw()
        for suffix in ("png", "pdf"):
            fig.savefig(f"{scratch}/{name}.{suffix}")
        plt.close(fig)
        times["figure " + name] = time.perf_counter() - s
start = time.perf_counter()
paper.write_outputs(study, out, command_line=["bench_paper_scale"])
written = time.perf_counter() - start
times["summary.json + arrays.npz + manifest"] = max(0.0, written - sum(
    v for k, v in times.items() if k.startswith("figure ")))
times["total"] = time.perf_counter() - t0
for alg in ("SEGE", "CLUCB"):
    times["regret " + alg] = study.summary[alg]["regret_mean"][str(horizon)]
    times["violations " + alg] = study.summary[alg]["safety_violations"]
print(json.dumps(times))
"""


def run_child(args: list[str], env: dict) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(args, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args[:4])} failed:\n{proc.stdout}\n{proc.stderr}")
    return wall, proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=250)
    parser.add_argument("--horizon", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--solver-repeats", type=int, default=0,
                        help="repeats of the phases with SEGE's LCB arms by Clarabel (slow)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true",
                        help="a smoke test: 20 runs x 500 stages, 1 repeat")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.horizon, args.repeats = 20, 500, 1

    env = dict(os.environ)
    # Warm caches, Python's bytecode among them: an environment that turns its writing off
    # (PYTHONDONTWRITEBYTECODE) would have every process compile the package's modules anew.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if args.threads is not None:
        env["NUMBA_NUM_THREADS"] = str(args.threads)
    print("\n".join(machine()))
    print(f"paper setup, {args.runs} runs x {args.horizon} stages, seed {args.seed}, "
          f"numba threads: {args.threads or os.cpu_count()}")
    full = args.runs == 250 and args.horizon == 50_000
    with tempfile.TemporaryDirectory() as tmp:
        # Untimed runs compile (or load) the kernels for this checkout and write the bytecode of
        # the modules that the phases and the command import.
        run_child([sys.executable, "-c", PHASES, "4", "100", "0", "auto", f"{tmp}/warm"], env)
        run_child([sys.executable, "-m", "sege_cvx", "reproduce", "--runs", "4", "--horizon",
                   "100", "--no-progress", "--out", f"{tmp}/warmcli"], env)
        for method, repeats in (("auto", args.repeats), ("solver", args.solver_repeats)):
            if repeats < 1:
                continue
            rows: dict[str, list[float]] = {}
            for k in range(repeats):
                _, out = run_child([sys.executable, "-c", PHASES, str(args.runs),
                                    str(args.horizon), str(args.seed), method,
                                    f"{tmp}/{method}{k}"], env)
                for name, value in json.loads(out.strip().splitlines()[-1]).items():
                    rows.setdefault(name, []).append(value)
                if full and method == "auto":
                    cmd = [sys.executable, "-m", "sege_cvx", "reproduce", "--full",
                           "--no-progress", "--seed", str(args.seed), "--out", f"{tmp}/cli{k}"]
                    wall, _ = run_child(cmd, env)
                    rows.setdefault("whole command (sege-cvx reproduce --full)", []).append(wall)
                    # The command's own simulations (its shards' wall seconds, summary.json):
                    # its ratio, unmoved by how another process's simulations ran.
                    with open(f"{tmp}/cli{k}/summary.json") as f:
                        summary = json.load(f)
                    own = sum(summary[alg]["wall_seconds"] for alg in ("SEGE", "CLUCB"))
                    rows.setdefault("whole command / its own simulations", []).append(wall / own)
            print(f"\nSEGE LCB arms: {method}")
            print(f"| {'phase':<45} | {'median s':>9} | {'all':>22} |")
            print(f"|{'-' * 47}|{'-' * 11}:|{'-' * 24}:|")
            for name, values in rows.items():
                if name.startswith(("regret", "violations", "whole command /")):
                    continue
                print(f"| {name:<45} | {statistics.median(values):>9.3f} | "
                      f"{' '.join(f'{v:.2f}' for v in values):>22} |")
            run_stages = args.runs * args.horizon
            for alg in ("SEGE", "CLUCB"):
                wall = statistics.median(rows[f"{alg} simulation"])
                print(f"{alg}: {1e6 * wall / run_stages:.3f} us per run-stage; regret "
                      f"{rows[f'regret {alg}'][-1]:.1f}, violating pairs "
                      f"{rows[f'violations {alg}'][-1]}")
            sims = statistics.median(rows["SEGE simulation"]) + statistics.median(
                rows["CLUCB simulation"])
            print(f"both simulations: {sims:.2f} s  [target <= 3 s at 250 x 50,000]")
            if "whole command (sege-cvx reproduce --full)" in rows:
                whole = statistics.median(rows["whole command (sege-cvx reproduce --full)"])
                print(f"whole command: {whole:.2f} s  [target <= 6 s]")
                ratios = rows["whole command / its own simulations"]
                print(f"whole command / its own simulations: {statistics.median(ratios):.2f} "
                      f"({' '.join(f'{r:.2f}' for r in ratios)})  [target <= 1.5: the rest, "
                      "start-up to exit, at most half the simulations' time]")


if __name__ == "__main__":
    main()
