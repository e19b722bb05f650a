"""Wall time of one sweep on each backend, and the check that every backend gives the same runs.

The sweep: 2 problems x (SEGE with c in {0.25, 0.5, 1.0}, CLUCB) x 250 runs x 20,000 stages, on
this process (1 worker, whose compiled loops use every core), on 2 local worker processes, and
on a 2-worker Dask LocalCluster (one thread each).  The default problems are the two whose SEGE
stage is compiled (the paper's disk and the example ellipsoid); on a set whose arms come from
Clarabel (the l1.5 ball) one cell of this size takes about 20 minutes of one core (about 240 us
per run-stage), see bench_arm_sets.py.

Each repeat is a fresh sweep into a new directory, timed from run_sweep's call to its return
(spawning workers, checking the cells, simulating, writing shards, merging).  The Dask cluster
is started before the clock and reused across repeats.  Per-run rows (all but wall_seconds) and
curves are compared bit for bit with the first backend's.

    python benchmarks/bench_sweep.py                         # 3 repeats per backend
    python benchmarks/bench_sweep.py --runs 50 --horizon 5000 --repeats 1
    python benchmarks/bench_sweep.py --quick                 # a smoke test (CI)
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import pandas as pd
from _machine import machine

from sege_cvx.experiments import run_sweep


def spec(problems: list[str], runs: int, horizon: int) -> dict:
    return {"seed": 11, "runs": runs, "horizon": horizon,
            "problems": [{"name": p} for p in problems],
            "algorithms": [{"name": "SEGE", "grid": {"c": [0.25, 0.5, 1.0]}}, {"name": "CLUCB"}]}


def same(a, b) -> bool:
    try:
        pd.testing.assert_frame_equal(a.runs.drop(columns="wall_seconds"),
                                      b.runs.drop(columns="wall_seconds"), check_exact=True)
        pd.testing.assert_frame_equal(a.curves, b.curves, check_exact=True)
    except AssertionError:
        return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", default="paper,ellipsoid")
    parser.add_argument("--runs", type=int, default=250)
    parser.add_argument("--horizon", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true",
                        help="a smoke test: 10 runs x 300 stages, 1 repeat")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.horizon, args.repeats = 10, 300, 1
    study = spec(args.problems.split(","), args.runs, args.horizon)
    cells = len(study["problems"]) * 4

    print("\n".join(machine()))
    print(f"sweep: {cells} cells ({args.problems}; SEGE c = 0.25, 0.5, 1.0; CLUCB) x "
          f"{args.runs} runs x {args.horizon} stages; median of {args.repeats} fresh sweeps")
    from distributed import Client, LocalCluster

    reference = None
    rows = []
    with tempfile.TemporaryDirectory() as tmp, \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                         dashboard_address=None) as cluster, Client(cluster) as client:
        backends = [("1 worker (this process)", {"workers": 1}),
                    ("2 local worker processes", {"workers": 2}),
                    ("Dask LocalCluster, 2 workers", {"client": client})]
        for label, kwargs in backends:
            times = []
            for k in range(args.repeats):
                out = Path(tmp) / f"{label[:6].strip()}-{k}"
                start = time.perf_counter()
                results = run_sweep(study, out, progress=False, **kwargs)
                times.append(time.perf_counter() - start)
                reference = reference or results
                identical = same(reference, results)
                if not identical:
                    print(f"  {label}, repeat {k}: per-run results DIFFER from the first backend's")
            run_stage = sum(times) / len(times) / (cells * args.runs * args.horizon) * 1e9
            rows.append((label, statistics.median(times), min(times), max(times), run_stage,
                         "yes" if identical else "NO"))
    print(f"{'backend':<30} {'median s':>9} {'min s':>7} {'max s':>7} {'ns/run-stage':>13} "
          f"{'identical':>10}")
    for label, med, lo, hi, ns, ok in rows:
        print(f"{label:<30} {med:>9.2f} {lo:>7.2f} {hi:>7.2f} {ns:>13.1f} {ok:>10}")
    print(f"identical = per-run rows (all but wall_seconds) and curves equal bit for bit to the "
          f"first backend's; {len(reference.runs)} runs per sweep")


if __name__ == "__main__":
    main()
