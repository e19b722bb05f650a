"""Second-order-cone sets: compiled cone programs against Clarabel, per solve and SEGE per run-stage.

Sets (``sc.ConvexArmSet``), each at every ``--dims``:

* ``p-norm``: the l1.5 ball ``||x||_1.5 <= 1`` (a rational p-norm: cvxpy's second-order form,
  ``3 d + 1`` auxiliary variables and one equality);
* ``ball-cuts``: the unit ball cut by ``x_1 - 2 x_2 <= 0.3`` and ``x >= -0.8``;
* ``lifted``: ``{x : exists t, ||x||_1 <= t <= 1.5, ||x|| <= 1.2}`` (an auxiliary variable of the
  user's).

Part 1, per solve.  ``--instances`` random instances (``theta ~ N(0, I)``; for the LCB arm ``V =
B B^T + 0.5 I`` with ``B ~ N(0, I)`` and ``r`` uniform on [0, 2]): the compiled, certified arm
(:mod:`sege_cvx.arm_sets.cone`, one compiled call over all instances, each solved cold) against
Clarabel through the set's compiled conic program (``program.solve`` from Python, data updated
in place: the bare solve, :mod:`sege_cvx.conic.compiled`); microseconds per solve (median of
``--repeats``), the compiled arms certified, and those whose objective is within 1e-7 of
Clarabel's (relative to the objective's scale, ``||theta|| max ||x|| + r ||L^{-1}|| max ||x||``).

Part 2, SEGE per run-stage: ``sc.simulate`` of ``--runs`` runs for ``--stages`` stages (both
cores) on each set, compiled stages against ``lcb_method="solver"`` (Clarabel from Python per
run and stage), after an untimed warm-up; the ratio of one bare Clarabel LCB solve (part 1) to
the compiled stage.  ``theta* = (0.5, 0.4, 0.3, ...)/||.||``, the safe arm a tenth of the
exploration's first vertex... the problem of ``tests/arm_sets/test_cone_arms.py`` generalized.

``--quick``: a smoke test (d = 3, few instances), what CI runs.  Run from the repository root::

    python benchmarks/bench_conic_arms.py            # about 3 minutes on 2 cores
    python benchmarks/bench_conic_arms.py --quick
"""

from __future__ import annotations

import argparse
import sys
import time
from functools import partial
from pathlib import Path

import cvxpy as cp
import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _machine import machine  # noqa: E402
from bench_arm_sets import load, render  # noqa: E402

import sege_cvx as sc  # noqa: E402
from sege_cvx.arm_sets.kernels.status import VERIFIED  # noqa: E402
from sege_cvx.arm_sets.scaling import scale_lcb_data  # noqa: E402
from sege_cvx.confidence import cholesky  # noqa: E402


def lifted(x):
    t = cp.Variable()
    return [cp.norm1(x) <= t, t <= 1.5, cp.norm(x) <= 1.2]


SETS = {
    "p-norm": lambda x: [cp.pnorm(x, 1.5) <= 1],
    "ball-cuts": lambda x: [cp.norm(x) <= 1, x[0] - 2 * x[1] <= 0.3, x >= -0.8],
    "lifted": lifted,
}


def instances(d: int, n: int, seed: int):
    rng = np.random.default_rng(seed)
    thetas = rng.normal(size=(n, d))
    chols = np.empty((n, d, d))
    for i in range(n):
        B = rng.normal(size=(d, d))
        chols[i] = np.linalg.cholesky(B @ B.T + 0.5 * np.eye(d))
    return thetas, chols, rng.uniform(0.0, 2.0, size=n)


def solve_each(program, data) -> list:
    """``program.solve`` per instance (the rows of ``data``'s arrays)."""
    return [program.solve(*row) for row in zip(*data, strict=True)]


def timed(call, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = call()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), out


def bench_solves(args) -> tuple[list, dict]:
    rows, clarabel_lcb = [], {}
    for name, constraints in SETS.items():
        for d in args.dims:
            arm_set = sc.ConvexArmSet(d, constraints, compiled=True)
            arms = arm_set.compiled_arms
            thetas, chols, radii = instances(d, args.instances, args.seed)
            n = args.instances
            arms.greedy_all(thetas[:2])  # compile
            arms.lcb_all(thetas[:2], chols[:2], radii[:2])
            g_time, (g_arms, _, g_codes) = timed(partial(arms.greedy_all, thetas), args.repeats)
            l_time, (l_arms, _, l_codes) = timed(partial(arms.lcb_all, thetas, chols, radii),
                                                 args.repeats)
            greedy_program, lcb_program = arm_set.greedy_program, arm_set.lcb_program
            k = min(n, args.clarabel)
            data = scale_lcb_data(thetas[:k], chols[:k], radii[:k])
            gc_time, _ = timed(partial(solve_each, greedy_program, (thetas[:k],)), args.repeats)
            lc_time, _ = timed(partial(solve_each, lcb_program, data), args.repeats)
            ref_g = arm_set.greedy_arm_batch(thetas).arms
            ref_l = arm_set.lcb_arm_batch(thetas, chols, radii, "solver").arms
            L = arm_set.norm_bound()
            g_scale = np.linalg.norm(thetas, axis=1) * L
            g_err = np.abs(np.einsum("ij,ij->i", g_arms - ref_g, thetas)) / g_scale
            l_scale = g_scale + radii * np.linalg.norm(np.linalg.inv(chols), axis=(1, 2)) * L
            l_err = np.abs(cholesky.lcb_values(l_arms, thetas, chols, radii)
                           - cholesky.lcb_values(ref_l, thetas, chols, radii)) / l_scale
            clarabel_lcb[(name, d)] = lc_time / k
            for program, t, tc, codes, err in (("greedy", g_time, gc_time, g_codes, g_err),
                                                ("LCB", l_time, lc_time, l_codes, l_err)):
                rows.append([name, str(d), program, f"{t / n * 1e6:.1f}", f"{tc / k * 1e6:.0f}",
                             f"{tc / k / (t / n):.1f}x", f"{int((codes == VERIFIED).sum())}/{n}",
                             f"{int((err <= 1e-7).sum())}/{n}", f"{np.nanmax(err):.1e}"])
    return rows, clarabel_lcb


def problem_on(name: str, d: int) -> sc.BanditProblem:
    arm_set = sc.ConvexArmSet(d, SETS[name], compiled=True)
    theta = np.linspace(0.5, 0.3, d)
    theta = 0.9 * theta / np.linalg.norm(theta)
    safe = 0.1 * arm_set.exploration().vertices()[0]
    return sc.BanditProblem.from_truth(arm_set, theta_star=theta, safe_arm=safe, S=1.0,
                                       noise_sd=0.1, threshold_fraction=0.5, name=name)


def bench_sege(args, clarabel_lcb: dict) -> list:
    rows = []
    for name in SETS:
        for d in args.dims:
            problem = problem_on(name, d)
            out = {}
            for method, runs, stages in (("auto", args.runs, args.stages),
                                         ("solver", args.solver_runs, args.solver_stages)):
                seeds = sc.run_seeds(args.seed, runs)
                sc.simulate(problem.policy("SEGE", runs, seeds[0], lcb_method=method),
                            problem.bandit(seeds[1]), min(stages, 50))  # warm-up
                policy = problem.policy("SEGE", runs, seeds[0], lcb_method=method)
                t0 = time.perf_counter()
                result = sc.simulate(policy, problem.bandit(seeds[1]), stages)
                per = (time.perf_counter() - t0) / (runs * stages)
                out[method] = (per, policy.compiled_stages, int(policy.solver_fallbacks.sum()),
                               int(result.stats.total_violations.sum()))
            fast, slow = out["auto"], out["solver"]
            lcb = clarabel_lcb.get((name, d), float("nan"))
            rows.append([name, str(d), f"{fast[0] * 1e6:.1f}", f"{slow[0] * 1e6:.0f}",
                         f"{slow[0] / fast[0]:.1f}x", f"{lcb / fast[0]:.1f}x",
                         str(fast[1]), f"{fast[2]}/{fast[3]}"])
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", type=int, nargs="+", default=[3, 10])
    parser.add_argument("--instances", type=int, default=2000)
    parser.add_argument("--clarabel", type=int, default=200, help="part 1's Clarabel instances")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--stages", type=int, default=2000)
    parser.add_argument("--solver-runs", type=int, default=4)
    parser.add_argument("--solver-stages", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="a smoke test")
    parser.add_argument("--markdown", action="store_true", help="print markdown tables")
    args = parser.parse_args(argv)
    if args.quick:
        args.dims, args.instances, args.clarabel, args.repeats = [3], 50, 20, 1
        args.runs, args.stages, args.solver_runs, args.solver_stages = 4, 100, 2, 30
    start = time.perf_counter()
    print("\n".join(machine()))
    print(f"{load()} (at start)")
    solves, clarabel_lcb = bench_solves(args)
    sege = bench_sege(args, clarabel_lcb)
    print()
    print(f"1. Per solve, {args.instances} cold instances (Clarabel: {args.clarabel}), "
          f"median of {args.repeats}")
    print(render(["set", "d", "program", "compiled us", "Clarabel us", "ratio", "certified",
                  "within 1e-7", "largest"], solves, args.markdown, left=3))
    print()
    print(f"2. SEGE per run-stage (us), compiled: {args.runs} x {args.stages}, solver: "
          f"{args.solver_runs} x {args.solver_stages}, {numba.get_num_threads()} threads")
    print(render(["set", "d", "compiled", "solver", "speed-up", "Clarabel LCB / stage",
                  "compiled", "fallbacks/violations"], sege, args.markdown, left=1))
    print(f"\n{load()} (at end); total {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
