"""Certified active-set arms of polyhedral sets: per solve against Clarabel, and SEGE per run-stage.

Part 1, per solve.  For each dimension ``d`` (default 2, 5, 10, 20) and polytope type

* ``box``: the unit cube ``[0, 1]^d``;
* ``cut box``: the unit cube with ``8d`` random cuts (normals ``N(0, I)``, each at a random
  distance between 0.2 and 0.5 times its norm from ``(0.5, ..., 0.5)``);
* ``degenerate``: ``2d`` random facets through the vertex ``(1, ..., 1)`` (normals ``|N(0, I)| +
  0.1``) and ``x >= 0``: a vertex where ``2d + `` rows are active;
* ``treatment-mix``: doses ``0 <= x_i <= u_i``, ``u = linspace(1, 0.5, d)``, and a budget
  ``sum(x) <= 0.6 sum(u)`` (0 is a vertex: faces through the origin),

``--runs`` independent sequences of ``--stages`` instances are solved as SEGE meets them: each
sequence's ``theta`` follows a random walk (``theta_t = theta_{t-1} + 0.003 N(0, I)``, from
``|N(0, I)| / ||.||``), its ``V`` grows by ``x x^T`` of its own LCB arms with ``lam = 0.1``, and its
radius is ``r = 2``.  Each solve is warm started from the sequence's previous one
(:mod:`sege_cvx.arm_sets.polytope.arms`), in one compiled loop per sequence.  Reported: the
median per solve (wall time of the loop over all sequences / solves), the fraction of solves
whose working set did not change (``warm``: the warm start was already optimal), the solves
whose certificate failed (``fallbacks``), and Clarabel's per-solve median on ``--clarabel``
instances of the same kind (the set's compiled conic programs, ``program.solve``, in place).

Part 2, SEGE per run-stage.  ``sc.simulate`` of ``--sege-runs`` runs for ``--sege-stages``
stages (both cores) on the disk (closed forms), the box, the polytope, the treatment-mix
example and a convex hull of ``max(20, 2d)`` points (certified arms), with the problems of
``benchmarks/bench_arm_sets.py`` (``theta* = 0.9 |g| / ||g||``, the baseline arm halfway between
the exploration centre and the greedy arm, ``b = 0.8 b0``, ``c = 2 rho^2 sigma^2``); the median
over ``--repeats`` of wall time / (runs x stages), after an untimed warm-up run.

Part 3, the paper's study size on the built-in examples.  SEGE alone (``problem.policy("SEGE", runs,
run_seeds(0, runs)[0])`` and ``simulate``, both cores) on ``paper``, ``box``, ``polytope`` and
``treatment-mix`` at ``--study-runs`` x ``--study-horizon`` (250 x 50,000), and on the l1.5 ball
(``lp-ball``, Clarabel) at 20 runs x 1,000 stages; wall seconds, per run-stage, mean regret,
violating (run, stage) pairs and fallbacks.

Part 4, CLUCB and ROFUL on the convex hull of part 2 (``--sege-dims``): CLUCB's construction
(its discretization certifies every arm with its weights); CLUCB's construction on the same
hull written as cvxpy users write it, ``x == P^T w, sum(w) == 1`` with ``w = cp.Variable(k,
nonneg=True)`` (a lifted ``ConvexArmSet``: arms from Clarabel, each pair ``(x, w)`` certified
through cvxpy's expressions, :mod:`sege_cvx.arm_sets.evaluation`); ROFUL's construction, and
ROFUL per run-stage over 20 runs x 500 stages after a warm-up.

``--parts`` picks the parts (default all); ``--quick``: a smoke test (d = 2 and 5, small sizes),
what CI runs.

Run from the repository root::

    python benchmarks/bench_polyhedral_arms.py            # about 5 minutes on 2 cores
    python benchmarks/bench_polyhedral_arms.py --quick
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
from bench_arm_sets import CASES, load, render  # noqa: E402

import sege_cvx as sc  # noqa: E402
from sege_cvx.arm_sets.kernels.status import VERIFIED  # noqa: E402
from sege_cvx.arm_sets.polytope import arms as polytope_arms  # noqa: E402
from sege_cvx.arm_sets.scaling import scale_lcb_data  # noqa: E402
from sege_cvx.confidence.cholesky import factor  # noqa: E402

LAM = 0.1
RADIUS = 2.0
STEP = 0.003


def polytope(kind: str, d: int, rng: np.random.Generator) -> sc.ArmSet:
    if kind == "box":
        return sc.Box(np.zeros(d), np.ones(d))
    if kind == "cut box":
        normals = rng.standard_normal((8 * d, d))
        offsets = normals @ np.full(d, 0.5) + np.linalg.norm(normals, axis=1) * rng.uniform(
            0.2, 0.5, 8 * d)
        return sc.Polytope(np.vstack([np.eye(d), -np.eye(d), normals]),
                           np.concatenate([np.ones(d), np.zeros(d), offsets]))
    if kind == "degenerate":
        normals = np.abs(rng.standard_normal((2 * d, d))) + 0.1
        return sc.Polytope(np.vstack([normals, -np.eye(d)]),
                           np.concatenate([normals @ np.ones(d), np.zeros(d)]))
    upper = np.linspace(1.0, 0.5, d)
    return sc.Polytope(np.vstack([np.eye(d), -np.eye(d), np.ones(d)]),
                       np.concatenate([upper, np.zeros(d), [0.6 * upper.sum()]]))


KINDS = ("box", "cut box", "degenerate", "treatment-mix")


@numba.njit
def _sequence(geometry, thetas, radius, lam, greedy):
    """One warm-started sequence: per instance its status and whether the working set changed;
    ``V`` grows by the LCB arms (or, for the greedy sequence, stays ``lam I``)."""
    n, d = thetas.shape
    W = np.zeros((2, d), dtype=np.int64)
    counts = np.zeros(2, dtype=np.int64)
    points = np.empty((2, d))
    points[0] = geometry[2]
    points[1] = geometry[2]
    inverse = np.zeros((d, d))
    V = lam * np.eye(d)
    chol = np.sqrt(lam) * np.eye(d)
    out = np.empty(d)
    mats = np.empty((2, d, d))
    vecs = np.empty((14, d))
    status = np.empty(n, dtype=np.int64)
    changed = np.zeros(n, dtype=np.bool_)
    slot = 0 if greedy else 1
    for t in range(n):
        before_k = counts[slot]
        before = W[slot].copy()
        if greedy:
            status[t] = polytope_arms.greedy_one(geometry, thetas[t], (W, counts, points, inverse),
                                                 out, mats, vecs)
        else:
            status[t] = polytope_arms.lcb_one(geometry, thetas[t], chol, radius,
                                              (W, counts, points, inverse), out, mats, vecs)
            for a in range(d):
                for c in range(d):
                    V[a, c] += out[a] * out[c]
            factor(V, 0.0, chol)
        same = counts[slot] == before_k
        for j in range(before_k):
            same = same and W[slot, j] == before[j]
        changed[t] = not same
    return status, changed


@numba.njit
def _sequences_timed(geometry, thetas, radius, lam, greedy):
    """The sequences without bookkeeping (the timed loop)."""
    runs, n, d = thetas.shape
    W = np.zeros((2, d), dtype=np.int64)
    counts = np.zeros(2, dtype=np.int64)
    points = np.empty((2, d))
    inverse = np.zeros((d, d))
    V = np.empty((d, d))
    chol = np.empty((d, d))
    out = np.empty(d)
    mats = np.empty((2, d, d))
    vecs = np.empty((14, d))
    failed = 0
    for i in range(runs):
        counts[:] = 0
        points[0] = geometry[2]
        points[1] = geometry[2]
        V[:] = lam * np.eye(d)
        chol[:] = np.sqrt(lam) * np.eye(d)
        for t in range(n):
            if greedy:
                s = polytope_arms.greedy_one(geometry, thetas[i, t], (W, counts, points, inverse),
                                             out, mats, vecs)
            else:
                s = polytope_arms.lcb_one(geometry, thetas[i, t], chol, radius,
                                          (W, counts, points, inverse), out, mats, vecs)
                for a in range(d):
                    for c in range(d):
                        V[a, c] += out[a] * out[c]
                factor(V, 0.0, chol)
            failed += s != VERIFIED
    return failed


def walks(rng: np.random.Generator, runs: int, stages: int, d: int) -> np.ndarray:
    start = np.abs(rng.standard_normal((runs, 1, d)))
    start /= np.linalg.norm(start, axis=2, keepdims=True)
    return np.ascontiguousarray(start + np.cumsum(STEP * rng.standard_normal((runs, stages, d)),
                                                  axis=1))


def clarabel_us(arm_set: sc.ArmSet, thetas: np.ndarray, greedy: bool) -> float:
    """Median wall time of the set's compiled Clarabel program per instance."""
    d = arm_set.dim
    times = []
    chol = np.sqrt(LAM + 5.0) * np.eye(d)[None]
    for theta in thetas:
        if greedy:
            args = (theta,)
            program = arm_set.greedy_program
        else:
            args = tuple(a[0] for a in scale_lcb_data(theta[None], chol, np.array([RADIUS])))
            program = arm_set.lcb_program
        start = time.perf_counter()
        program.solve(*args)
        times.append(time.perf_counter() - start)
    return 1e6 * float(np.median(times))


def bench_solves(args) -> list[list[str]]:
    rows = []
    for d in args.dims:
        for kind in KINDS:
            rng = np.random.default_rng([args.seed, d, KINDS.index(kind)])
            arm_set = polytope(kind, d, rng)
            geometry = arm_set.compiled_arms.geometry(LAM)
            thetas = walks(rng, args.runs, args.stages, d)
            for greedy in (True, False):
                _sequences_timed(geometry, thetas[:1, :5], RADIUS, LAM, greedy)  # compile
                stats = [_sequence(geometry, thetas[i], RADIUS, LAM, greedy)
                         for i in range(args.runs)]
                status = np.concatenate([s for s, _ in stats])
                changed = np.concatenate([c for _, c in stats])
                timings = []
                for _ in range(args.repeats):
                    start = time.perf_counter()
                    _sequences_timed(geometry, thetas, RADIUS, LAM, greedy)
                    timings.append((time.perf_counter() - start) / thetas[:, :, 0].size)
                solver = clarabel_us(arm_set, thetas[0, :: max(1, args.stages // args.clarabel)]
                                     [:args.clarabel], greedy)
                rows.append([kind, str(d), "greedy (LP)" if greedy else "LCB (SOCP)",
                             f"{1e6 * np.median(timings):.3f}",
                             f"{100 * (1 - changed[1:].mean()):.2f}%",
                             str(int((status != VERIFIED).sum())), f"{solver:.1f}"])
            print(f"  {kind}, d={d}: done", flush=True)
    return rows


def floor_setting(arm_set: sc.ArmSet, x0: np.ndarray, b0: float) -> sc.SafeSetting:
    """What SEGE is told here: ``S = 1``, noise sd 0.5, the floor ``b0``, ``b = 0.8 b0``."""
    return sc.SafeSetting(arm_set, x0, S=1.0, noise_sd=0.5, safety=sc.RewardFloor(b0, 0.8 * b0))


def sege(problem: tuple, runs: int, seed: int) -> sc.SEGE:
    """SEGE on ``problem = (setting, theta*)`` with ``c = 2 rho^2 sigma^2``."""
    setting, _ = problem
    seeds = list(np.random.SeedSequence(seed).spawn(runs))
    probe = sc.SEGE(setting, n_runs=1)
    return sc.SEGE(setting, c=2.0 * probe.rho**2 * probe.sigma2, n_runs=runs, seed=seeds)


def bandit(problem: tuple, runs: int, seed: int) -> sc.LinearBandit:
    setting, theta = problem
    return sc.LinearBandit(theta, 0.5, list(np.random.SeedSequence(seed + 1).spawn(runs)),
                           threshold=setting.safety.threshold)


def bench_sege(args) -> list[list[str]]:
    rows = []
    cases = {case.name: case for case in CASES}
    for d in args.sege_dims:
        g = np.random.default_rng([args.seed, d, 1]).standard_normal(d)
        theta = 0.9 * np.abs(g) / np.linalg.norm(g)
        for name in ("ball", "box", "polytope", "treatment-mix", "convex-hull"):
            arm_set = cases[name].build(d, np.random.default_rng([args.seed, d]))
            x0 = 0.5 * arm_set.exploration().center + 0.5 * arm_set.greedy_arm(theta)
            b0 = float(x0 @ theta)

            problem = (floor_setting(arm_set, x0, b0), theta)
            sc.simulate(sege(problem, 2, args.seed), bandit(problem, 2, args.seed), 5)
            times, policy = [], None
            for _ in range(args.repeats):
                policy = sege(problem, args.sege_runs, args.seed)
                result = sc.simulate(policy, bandit(problem, args.sege_runs, args.seed),
                                     args.sege_stages)
                times.append(result.wall_seconds / (args.sege_runs * args.sege_stages))
            counts = policy.decision_counts.sum(axis=0)
            rows.append([name if name != "ball" else "disk (ball)", str(d),
                         f"{1e6 * np.median(times):.3f}",
                         f"{1e6 * min(times):.3f}-{1e6 * max(times):.3f}",
                         "/".join(str(int(c)) for c in counts),
                         str(int(policy.solver_fallbacks.sum()))])
        print(f"  SEGE d={d}: done", flush=True)
    return rows


def bench_study(args) -> list[list[str]]:
    from sege_cvx.problems.examples import EXAMPLES

    rows = []
    for name in ("paper", "box", "polytope", "treatment-mix", "lp-ball"):
        problem = EXAMPLES[name]()
        runs, horizon = ((args.study_runs, args.study_horizon) if name != "lp-ball"
                         else (min(20, args.study_runs), min(1000, args.study_horizon)))
        policy_seeds, noise_seeds = sc.run_seeds(0, runs)
        sc.simulate(problem.policy("SEGE", 2, policy_seeds[:2]), problem.bandit(noise_seeds[:2]), 5)
        policy = problem.policy("SEGE", runs, policy_seeds)
        result = sc.simulate(policy, problem.bandit(noise_seeds), horizon)
        seconds = result.wall_seconds
        rows.append([name, f"{runs} x {horizon}", f"{seconds:.2f}",
                     f"{1e6 * seconds / (runs * horizon):.3f}",
                     f"{result.stats.cum_regret.mean():.1f}",
                     str(int(result.stats.total_violations.sum())),
                     str(int(policy.solver_fallbacks.sum()))])
        print(f"  study {name}: done", flush=True)
    return rows


def hull_by_weights(points: np.ndarray, x) -> list:
    """The hull of ``points`` as a cvxpy user writes it: ``x = P^T w``, ``w`` on the simplex."""
    w = cp.Variable(points.shape[0], nonneg=True)
    return [x == points.T @ w, cp.sum(w) == 1]


def bench_hull_policies(args) -> list[list[str]]:
    """Part 4: CLUCB's and ROFUL's construction, and ROFUL per run-stage, on the convex hull of
    ``bench_arm_sets.py`` (their pairs (x, w) certified by the compiled lifted check)."""
    from bench_arm_sets import convex_hull

    rows = []
    for d in args.sege_dims:
        rng = np.random.default_rng([args.seed, d])
        hull = convex_hull(d, rng)
        g = np.random.default_rng([args.seed, d, 1]).standard_normal(d)
        theta = 0.9 * np.abs(g) / np.linalg.norm(g)
        x0 = hull.exploration().center
        b0 = float(x0 @ theta)
        runs = min(20, args.sege_runs)
        # Each construction timed with its setting's (the safe arm's certification).
        start = time.perf_counter()
        clucb = sc.CLUCB(floor_setting(hull, x0, b0), n_runs=runs)
        clucb_s = time.perf_counter() - start
        # The same hull as users write it in cvxpy: a lifted ConvexArmSet (weights w >= 0),
        # its arms from Clarabel and their pairs (x, w) certified through cvxpy's expressions.
        lifted = sc.ConvexArmSet(d, partial(hull_by_weights, hull.points))
        start = time.perf_counter()
        lifted_clucb = sc.CLUCB(floor_setting(lifted, lifted.exploration().center, b0),
                                n_runs=runs)
        lifted_s = time.perf_counter() - start

        def roful(hull=hull, x0=x0, b0=b0, runs=runs):
            return sc.StagewiseROFUL(floor_setting(hull, x0, b0), n_runs=runs)

        _, noise_seeds = sc.run_seeds(args.seed, runs)
        threshold = 0.8 * b0
        sc.simulate(roful(), sc.LinearBandit(theta, 0.5, noise_seeds, threshold=threshold),
                    5)  # warm-up
        start = time.perf_counter()
        policy = roful()
        roful_s = time.perf_counter() - start
        stages = min(500, args.sege_stages)
        result = sc.simulate(policy, sc.LinearBandit(theta, 0.5, noise_seeds, threshold=threshold),
                             stages)
        rows.append([str(d), str(hull.points.shape[0]), f"{clucb_s:.2f}", str(clucb.arms.shape[0]),
                     f"{lifted_s:.2f}", str(lifted_clucb.arms.shape[0]),
                     f"{roful_s:.2f}", f"{1e6 * result.wall_seconds / (runs * stages):.1f}",
                     str(int(policy.solver_fallbacks.sum()))])
        print(f"  hull policies d={d}: done", flush=True)
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", type=int, nargs="+", default=[2, 5, 10, 20])
    parser.add_argument("--runs", type=int, default=50, help="part 1's warm-started sequences")
    parser.add_argument("--stages", type=int, default=2000, help="part 1's solves per sequence")
    parser.add_argument("--clarabel", type=int, default=30, help="part 1's Clarabel instances")
    parser.add_argument("--sege-dims", type=int, nargs="+", default=[2, 5, 20])
    parser.add_argument("--sege-runs", type=int, default=250)
    parser.add_argument("--sege-stages", type=int, default=2000)
    parser.add_argument("--study-runs", type=int, default=250)
    parser.add_argument("--study-horizon", type=int, default=50_000)
    parser.add_argument("--parts", type=int, nargs="+", default=[1, 2, 3, 4],
                        choices=[1, 2, 3, 4])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="a smoke test of every part")
    parser.add_argument("--markdown", action="store_true", help="print markdown tables")
    args = parser.parse_args(argv)
    if args.quick:
        args.dims, args.runs, args.stages, args.clarabel = [2, 5], 4, 100, 5
        args.sege_dims, args.sege_runs, args.sege_stages, args.repeats = [2, 5], 8, 100, 1
        args.study_runs, args.study_horizon = 4, 200
    if min(args.runs, args.stages, args.clarabel, args.sege_runs, args.sege_stages,
           args.repeats, args.study_runs, args.study_horizon) < 1 or min(
               args.dims + args.sege_dims) < 2:
        parser.error("sizes must be positive and dimensions at least 2")
    start = time.perf_counter()
    print("\n".join(machine()))
    print(f"{load()} (at start)")
    solves = bench_solves(args) if 1 in args.parts else None
    sege = bench_sege(args) if 2 in args.parts else None
    study = bench_study(args) if 3 in args.parts else None
    hull = bench_hull_policies(args) if 4 in args.parts else None
    if solves is not None:
        print()
        print(f"1. Per solve, warm started along {args.runs} sequences of {args.stages} instances "
              f"(median of {args.repeats} repeats)")
        print(render(["set", "d", "program", "us/solve", "warm", "fallbacks", "Clarabel us"],
                     solves, args.markdown, left=3))
        print("warm: solves whose working set was already optimal; fallbacks: certificates that "
              "failed (then the arm is not played)")
    if sege is not None:
        print()
        print(f"2. SEGE per run-stage: {args.sege_runs} runs x {args.sege_stages} stages, "
              f"{numba.get_num_threads()} threads (median of {args.repeats})")
        print(render(["set", "d", "us/run-stage", "range", "exploit/LCB/baseline", "fallbacks"],
                     sege, args.markdown, left=1))
    if study is not None:
        print()
        print(f"3. SEGE on the built-in examples, {numba.get_num_threads()} threads")
        print(render(["example", "runs x stages", "seconds", "us/run-stage", "mean regret",
                      "violating pairs", "fallbacks"], study, args.markdown, left=2))
    if hull is not None:
        print()
        print("4. CLUCB and ROFUL on the convex hull (20 runs; ROFUL: 500 stages after a warm-up)")
        print(render(["d", "points", "CLUCB build s", "CLUCB arms", "by weights: build s",
                      "arms", "ROFUL build s",
                      "ROFUL us/run-stage", "fallbacks"], hull, args.markdown, left=0))
    print(f"\n{load()} (at end); total {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
