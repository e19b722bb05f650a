"""Per-stage cost of SEGE on every arm-set type, and the overhead of compile-once conic solves.

Part 1, SEGE per run-stage.  For each dimension ``d`` (default 2, 5, 10, 20) and arm-set type

* ``ellipsoid``: a rotated ellipsoid around ``(1, ..., 1)``, semi-axes ``sqrt(logspace(-1, 0, d))``;
  greedy and LCB arms in closed form;
* ``ellipsoid (solver)``: the same set with ``lcb_method="solver"``: the LCB arm comes from the
  compiled SOCP on Clarabel, the greedy arm stays closed form;
* ``ball``: the unit ball around ``(1, ..., 1)`` (closed forms);
* ``box``: the unit cube ``[0, 1]^d`` (greedy and LCB arms by certified active-set solves,
  :mod:`sege_cvx.arm_sets.polytope.arms`, in SEGE's compiled stages);
* ``polytope``: ``[0, 1]^d`` cut by ``sum(x) <= 0.75 d`` and ``x_1 - x_2 <= 0.5`` (certified
  active-set arms; part 2 times its Clarabel programs);
* ``lp-ball``: ``ConvexArmSet(d, lambda x: [cp.pnorm(x - 1, 1.5) <= 1])`` (Clarabel);
* ``treatment-mix``: doses ``0 <= x_i <= u_i``, ``u = linspace(1, 0.5, d)``, and a total budget
  ``sum(x) <= 0.6 sum(u)``, as a ``Polytope`` (certified active-set arms);
* ``convex-hull``: ``ConvexHull`` of ``max(20, 2d)`` points around ``(1, ..., 1)`` at distances
  uniform in [0.5, 1] (the best point; certified active-set LCB arms over the weights,
  :mod:`sege_cvx.arm_sets.hull.arms`),

the script builds one problem: ``theta* = 0.9 |g| / ||g||`` (``g`` standard normal, the same for
every type at a given ``d``; ``S = 1``), the baseline arm halfway between the set's exploration
centre and its greedy arm for ``theta*`` (so ``b0 = <x0, theta*> > 0``), ``b = 0.8 b0``,
noise sd 0.5, and SEGE's ``c = 2 rho^2 sigma^2`` (``--c-factor``; SEGE's default,
:func:`sege_cvx.policies.default_c`, is about 20 rho^2 sigma^2; the paper's ``c = 0.5`` is far
larger for these sets), other constants SEGE's defaults.  SEGE computes the greedy arm only for
runs that pass its information test ``lambda_min(V) >= c sqrt(t)``, and the LCB arm for runs
that explore; with this ``c`` the test passes from the first stages, so every timed run-stage
computes a greedy arm and, while it explores (nearly always in a short window), an LCB arm as
well: the costliest phase of a run.  It reports

* ``setup ms``: building the set (the constructor, its exploration distribution and norm and
  diameter bounds) plus compiling the conic programs SEGE will call; ``compile ms``: compiling
  those programs alone (``greedy_program`` / ``lcb_arm_program`` from the set's constraints,
  timed afresh);
* ``us/run-stage``: wall time of ``simulate(policy, bandit, stages)`` for ``--runs`` runs in
  lockstep, divided by ``runs x stages``; the median, and the range, over ``--repeats`` repeats,
  each with a fresh policy on the same set and the same seeds (so the same trajectory).  One short
  untimed simulation first warms up numba and builds Clarabel's solvers; the garbage collector is
  off while timing.  ``simulate`` also takes one greedy arm for the optimal reward.  The per-stage
  Python overhead is shared by the runs, so closed-form sets get cheaper per run-stage as
  ``--runs`` grows, solver-backed ones hardly;
* ``Clarabel us``: the time spent inside Clarabel's own ``solve()`` per run-stage (every tier
  tried; ``CompiledConicProgram.solver_seconds``), and ``x Clarabel``: the mean run-stage time
  over it, side by side in the same runs (the issue's target for sets on the solver: <= 1.3x);
* ``explored``: the fraction of timed run-stages that explored (each took an LCB arm), and
  ``calls/run-stage``: calls of the compiled conic programs per run-stage (a call runs one
  Clarabel solve per accuracy tier it tries);
* per compiled program, the timed calls accepted at each accuracy tier
  (``sege_cvx.conic.compiled.TIERS``, ``t0/t1/t2``; a call accepted at tier 1 or 2 first failed
  at the tighter tiers) and those that failed at every tier; ``fallbacks``: failed or unverified
  arms SEGE replaced by a safe arm (``policy.solver_fallbacks``); ``errors``: exceptions raised
  building the set or simulating (listed under the table).

Part 2, compile once, solve many.  For the greedy program (``arm_set.greedy_program``,
``.solve(theta)``, ``theta ~ N(0, I)``) and the LCB-arm program (``arm_set.lcb_program``,
``.solve(theta_hat, M)`` with ``M = r P^T``, ``V^{-1} = P P^T``, ``theta_hat = theta* + N(0,
0.3^2 I)``, ``V`` SPD with a random rotation and eigenvalues spanning two decades, ``r ~ U(0.5,
3)``) of the polytope and the lp-ball, per instance: the median over ``--repeats`` of the wall
time of our ``.solve(...)`` (parameter map, Clarabel's in-place ``update``, the tiers' solves,
reading the point), and the median wall time of Clarabel's own ``solve()`` re-run in place on
the same data: ``program.solvers[k].solve()`` for every tier ``k`` the call ran (just the tier
that was used when there was no fallback), timed with ``perf_counter`` (``result.solve_time`` is
not used: in clarabel 0.11 it includes one-off setup).  Reported: the medians over the instances,
the median over instances of the per-instance ratio ours / Clarabel next to the issue's target
(<= 2x at d <= 10), tier counts of the timed calls and failures (``SolverFailure``).  Then the
public call on the same instance, validation included: ``arm_set.greedy_arm(theta)`` and
``arm_set.lcb_arm(theta_hat, V, r, method="solver")`` (``V = (P P^T)^{-1}``; the set scales and
factors the data itself, so Clarabel sees other numbers), its median wall time, and the median
over instances of its ratio to Clarabel's own ``solve()`` re-run in place after it (every tier
it ran), next to the issue's target (<= 1.5x on the polytope at d = 5).

Run from the repository root (about a minute on 2 cores with the defaults)::

    python benchmarks/bench_arm_sets.py
    python benchmarks/bench_arm_sets.py --dims 2 5 --runs 8 --stages 300 --markdown
    python benchmarks/bench_arm_sets.py --sets lp-ball --dims 2 5   # one set type
    python benchmarks/bench_arm_sets.py --quick                     # a smoke test (CI)
"""

from __future__ import annotations

import argparse
import gc
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial

import cvxpy as cp
import numpy as np
from _machine import machine

import sege_cvx as sc
from sege_cvx.arm_sets.base import ArmSet
from sege_cvx.conic import CompiledConicProgram, SolverFailure, greedy_program, lcb_arm_program
from sege_cvx.policies import rho_bar

TARGET_RATIO = 2.0  # our solve() / Clarabel's own solve(), at d <= TARGET_MAX_DIM
TARGET_MAX_DIM = 10
PUBLIC_TARGET_RATIO = 1.5  # the public call / Clarabel's own solve(), on PUBLIC_TARGET (set, d)
PUBLIC_TARGET = ("polytope", 5)
NOISE_SD = 0.5
S = 1.0
C_FACTOR = 2.0  # SEGE's c = C_FACTOR rho^2 sigma^2: the information test passes from the start
THRESHOLD_FRACTION = 0.8
EXPLOIT = sc.SEGE.decision_names.index("exploit")  # SEGE's decision code for exploiting


def ellipsoid(d: int, rng: np.random.Generator) -> sc.Ellipsoid:
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    rot = q * np.sign(np.diag(r))
    shape = (rot * np.logspace(-1.0, 0.0, d)) @ rot.T
    return sc.Ellipsoid(np.ones(d), 0.5 * (shape + shape.T))


def cut_cube(d: int, rng: np.random.Generator) -> sc.Polytope:
    cut = np.zeros(d)
    cut[:2] = (1.0, -1.0)
    A = np.vstack([np.eye(d), -np.eye(d), np.ones(d), cut])
    b = np.concatenate([np.ones(d), np.zeros(d), [0.75 * d, 0.5]])
    return sc.Polytope(A, b)


def lp_ball(d: int, rng: np.random.Generator) -> sc.ConvexArmSet:
    center = np.ones(d)
    return sc.ConvexArmSet(d, lambda x: [cp.pnorm(x - center, 1.5) <= 1])


def treatment_mix(d: int, rng: np.random.Generator) -> sc.Polytope:
    upper = np.linspace(1.0, 0.5, d)
    A = np.vstack([np.eye(d), -np.eye(d), np.ones(d)])
    return sc.Polytope(A, np.concatenate([upper, np.zeros(d), [0.6 * upper.sum()]]))


def convex_hull(d: int, rng: np.random.Generator) -> sc.ConvexHull:
    """``max(20, 2d)`` points around ``(1, ..., 1)``, at distances uniform in [0.5, 1]."""
    g = rng.standard_normal((max(20, 2 * d), d))
    radii = rng.uniform(0.5, 1.0, (g.shape[0], 1))
    return sc.ConvexHull(1.0 + radii * g / np.linalg.norm(g, axis=1, keepdims=True))


@dataclass(frozen=True)
class Case:
    """One arm-set type: a builder ``(d, rng) -> ArmSet`` and SEGE's ``lcb_method``."""

    name: str
    build: Callable[[int, np.random.Generator], ArmSet]
    lcb_method: str = "auto"


CASES = (
    Case("ellipsoid", ellipsoid),
    Case("ellipsoid (solver)", ellipsoid, "solver"),
    Case("ball", lambda d, rng: sc.Ball(np.ones(d), 1.0)),
    Case("box", lambda d, rng: sc.Box(np.zeros(d), np.ones(d))),
    Case("polytope", cut_cube),
    Case("lp-ball", lp_ball),
    Case("treatment-mix", treatment_mix),
    Case("convex-hull", convex_hull),
)
#: Arm-set types whose compiled arms are certified active-set solves (sege_cvx.arm_sets:
#: polytope.arms, hull.arms).
CERTIFIED_CASES = ("box", "polytope", "treatment-mix", "convex-hull")
#: Part 2's arm-set types (both programs on Clarabel).
SOLVER_CASES = ("polytope", "lp-ball")


def solver_programs(arm_set: ArmSet, lcb_method: str) -> dict[str, CompiledConicProgram]:
    """The compiled programs SEGE calls on ``arm_set`` (compiling them if need be)."""
    programs = {}
    if (type(arm_set).greedy_arm_batch is ArmSet.greedy_arm_batch
            and not arm_set.has_closed_form_greedy):
        programs["greedy"] = arm_set.greedy_program
    if lcb_method == "solver" or not arm_set.has_closed_form_lcb:
        programs["LCB"] = arm_set.lcb_program
    return programs


def fresh_compile_seconds(arm_set: ArmSet, names: Sequence[str]) -> float:
    start = time.perf_counter()
    for name in names:
        (greedy_program if name == "greedy" else lcb_arm_program)(arm_set.dim, arm_set.constraints)
    return time.perf_counter() - start


@contextmanager
def counted_calls(programs: dict[str, CompiledConicProgram]) -> Iterator[dict[str, list[int]]]:
    """Count each program's ``solve`` calls (its ``tier_counts`` only count accepted solves).

    Shadows ``solve`` by a counting wrapper on the instance (about 0.1 us a call) while active.
    """
    calls = {name: [0] for name in programs}

    def wrap(program: CompiledConicProgram, count: list[int]) -> Callable:
        solve = program.solve

        def counted(*values: np.ndarray):
            count[0] += 1
            return solve(*values)

        return counted

    for name, program in programs.items():
        program.solve = wrap(program, calls[name])
    try:
        yield calls
    finally:
        for program in programs.values():
            del program.solve


@dataclass
class StageResult:
    """Part 1's measurements for one arm-set type at one dimension (seconds)."""

    programs: list[str] | None = None  # the compiled programs SEGE calls ("greedy", "LCB")
    setup: float = np.nan
    compile: float = np.nan
    c: float = np.nan  # SEGE's exploitation constant
    per_run_stage: np.ndarray | None = None  # one entry per repeat
    explored: float = np.nan
    calls: int = 0  # program calls in the timed window
    run_stages: int = 0
    tiers: dict[str, np.ndarray] | None = None  # per program: accepted at t0, t1, t2; failed
    clarabel: float = 0.0  # seconds inside Clarabel's solve() in the timed window
    fallbacks: int = 0
    errors: list[str] = field(default_factory=list)


def bench_stages(case: Case, d: int, theta_star: np.ndarray, runs: int, stages: int,
                 repeats: int, c_factor: float, seed: int) -> tuple[StageResult, ArmSet | None]:
    """Part 1 for one case; also returns the arm set (``None`` if it could not be built)."""
    res = StageResult()
    start = time.perf_counter()
    try:
        arm_set = case.build(d, np.random.default_rng([seed, d]))
        programs = solver_programs(arm_set, case.lcb_method)
        exploration = arm_set.exploration()
        arm_set.norm_bound()
        diameter = arm_set.diameter_bound()
        baseline = 0.5 * (exploration.center + arm_set.greedy_arm(theta_star))
    except (ValueError, SolverFailure) as exc:
        res.errors.append(f"construction: {type(exc).__name__}: {exc}")
        return res, None
    res.setup = time.perf_counter() - start
    res.programs = list(programs)
    if programs:
        res.compile = fresh_compile_seconds(arm_set, list(programs))
    b0 = float(baseline @ theta_star)
    threshold = THRESHOLD_FRACTION * b0
    res.c = c_factor * rho_bar(b0, threshold, S, diameter) ** 2 * exploration.sigma2
    try:
        setting = sc.SafeSetting(arm_set, baseline, S=S, noise_sd=NOISE_SD,
                                 safety=sc.RewardFloor(b0, threshold))
    except ValueError as exc:
        res.errors.append(f"setting: {type(exc).__name__}: {exc}")
        return res, arm_set

    def run(horizon: int) -> tuple[sc.SEGE, float, np.ndarray]:
        policy_seeds, noise_seeds = sc.run_seeds(seed, runs)
        policy = sc.SEGE(setting, c=res.c, lcb_method=case.lcb_method, n_runs=runs,
                         seed=policy_seeds)
        bandit = sc.LinearBandit(theta_star, NOISE_SD, noise_seeds, threshold=threshold)
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            result = sc.simulate(policy, bandit, horizon, traces=True)
            return policy, time.perf_counter() - start, result.decisions
        finally:
            gc.enable()

    try:
        run(min(10, stages))  # warm-up: numba, Clarabel solvers
        before = {name: np.array(p.tier_counts) for name, p in programs.items()}
        inside = sum(p.solver_seconds for p in programs.values())
        walls, explored = [], 0
        with counted_calls(programs) as calls:
            for _ in range(repeats):
                policy, wall, decisions = run(stages)
                walls.append(wall)
                explored += int(np.sum(decisions != EXPLOIT))
                res.fallbacks += int(policy.solver_fallbacks.sum())
    except (ValueError, SolverFailure) as exc:
        res.errors.append(f"simulation: {type(exc).__name__}: {exc}")
        return res, arm_set
    res.tiers = {}
    for name, program in programs.items():
        accepted = np.array(program.tier_counts) - before[name]
        res.tiers[name] = np.append(accepted, calls[name][0] - accepted.sum())
    res.calls = sum(count[0] for count in calls.values())
    res.clarabel = sum(p.solver_seconds for p in programs.values()) - inside
    res.run_stages = repeats * runs * stages
    res.per_run_stage = np.array(walls) / (runs * stages)
    res.explored = explored / res.run_stages
    return res, arm_set


@dataclass
class SolveResult:
    """Part 2's measurements for one program (seconds, per instance)."""

    ours: np.ndarray
    bare: np.ndarray
    tiers: np.ndarray
    failures: int
    calls: int
    public: np.ndarray  # the public call's wall time, per instance it solved
    public_bare: np.ndarray  # Clarabel's solve() re-run after it, on its data
    public_failures: int


@dataclass(frozen=True)
class LCBInstance:
    """One LCB-arm instance: the public call's data and the program's ``(theta_hat, M)``."""

    theta_hat: np.ndarray
    V: np.ndarray
    radius: float
    M: np.ndarray


def random_lcb_instances(rng: np.random.Generator, theta_star: np.ndarray,
                         n: int) -> list[LCBInstance]:
    d = theta_star.size
    out = []
    for _ in range(n):
        q, r = np.linalg.qr(rng.standard_normal((d, d)))
        rot = q * np.sign(np.diag(r))
        eig = 10.0 ** (rng.uniform(-0.5, 0.5) + np.linspace(0.0, 2.0, d))
        V_inv = (rot / eig) @ rot.T
        P = np.linalg.cholesky(0.5 * (V_inv + V_inv.T))
        V = (rot * eig) @ rot.T
        theta_hat, radius = theta_star + 0.3 * rng.standard_normal(d), rng.uniform(0.5, 3.0)
        out.append(LCBInstance(theta_hat, 0.5 * (V + V.T), radius, radius * P.T))
    return out


def timed(call: Callable[[], object], repeats: int) -> float:
    """Median wall time of ``call()`` over ``repeats`` calls."""
    walls = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        walls.append(time.perf_counter() - start)
    return float(np.median(walls))


def rerun_clarabel(program: CompiledConicProgram, tier: int, repeats: int) -> float:
    """Median wall time of Clarabel's own ``solve()`` of tiers ``0..tier``, re-run in place on
    the data the last call left in them."""
    solvers = program.solvers[:tier + 1]
    return timed(lambda: [solver.solve() for solver in solvers], repeats)


def bench_solves(program: CompiledConicProgram, instances: Sequence[tuple], public: Sequence[Callable],
                 repeats: int) -> SolveResult:
    """Our ``solve`` and the public call vs Clarabel's own ``solve()`` on each instance (see the
    module docstring); ``public[i]()`` is the public call on instance ``i``."""
    for args in instances[:3]:  # warm-up
        try:
            program.solve(*args)
        except SolverFailure:
            pass
    tiers = np.zeros(len(program.tier_counts), dtype=int)
    ours, bare, failures = [], [], 0
    pub, pub_bare, pub_failures = [], [], 0
    gc.disable()
    try:
        for args, call in zip(instances, public, strict=True):
            walls, tier = [], None
            for _ in range(repeats):
                start = time.perf_counter()
                try:
                    tier = program.solve(*args).tier
                    tiers[tier] += 1
                except SolverFailure:
                    failures += 1
                    tier = None
                walls.append(time.perf_counter() - start)
            if tier is not None:  # else the last call failed: no point whose solve to re-run
                ours.append(np.median(walls))
                bare.append(rerun_clarabel(program, tier, repeats))
            counts = np.array(program.tier_counts)
            try:
                wall = timed(call, repeats)
            except SolverFailure:
                pub_failures += 1
                continue
            # Every repeat made one call, ending at the same tier (the same data).
            tier = int(np.argmax(np.array(program.tier_counts) - counts))
            pub.append(wall)
            pub_bare.append(rerun_clarabel(program, tier, repeats))
    finally:
        gc.enable()
    return SolveResult(np.array(ours), np.array(bare), tiers, failures, repeats * len(instances),
                       np.array(pub), np.array(pub_bare), pub_failures)


# ----------------------------------------------------------------------------- output
def fmt_us(seconds: float) -> str:
    if not np.isfinite(seconds):
        return "-"
    us = 1e6 * seconds
    return f"{us:.2f}" if us < 10 else f"{us:.1f}" if us < 1000 else f"{us:.0f}"


def fmt_ms(seconds: float) -> str:
    return "-" if not np.isfinite(seconds) else f"{1e3 * seconds:.1f}"


def fmt_tiers(counts: np.ndarray | None) -> str:
    return "-" if counts is None else "/".join(str(int(c)) for c in counts)


def render(header: list[str], rows: list[list[str]], markdown: bool, left: int = 1) -> str:
    """A table; the first ``left`` columns left-aligned, the others right-aligned."""
    if markdown:
        align = ["---"] * left + ["---:"] * (len(header) - left)
        return "\n".join("| " + " | ".join(r) + " |" for r in [header, align, *rows])
    widths = [max(len(r[j]) for r in [header, *rows]) for j in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if j < left else c.rjust(w)
                         for j, (c, w) in enumerate(zip(cells, widths, strict=True)))

    return "\n".join([line(header), "-" * len(line(header))] + [line(r) for r in rows])


def stage_rows(results: dict[tuple[str, int], StageResult]) -> list[list[str]]:
    rows = []
    for (name, d), r in results.items():
        if r.programs is None:
            greedy = lcb = "?"
        else:
            # Boxes and polytopes play certified active-set arms in SEGE's compiled stages.
            exact = "certified" if name in CERTIFIED_CASES else "closed"
            greedy, lcb = ("solver" if p in r.programs else exact for p in ("greedy", "LCB"))
        times = r.per_run_stage
        ok = times is not None
        rows.append([
            name, str(d), greedy, lcb, fmt_ms(r.setup), fmt_ms(r.compile),
            f"{r.c:.1e}" if np.isfinite(r.c) else "-",
            fmt_us(np.median(times)) if ok else "FAILED",
            f"{fmt_us(times.min())}-{fmt_us(times.max())}" if ok else "-",
            fmt_us(r.clarabel / r.run_stages) if ok and r.calls else "-",
            f"{np.mean(times) * r.run_stages / r.clarabel:.2f}x" if ok and r.clarabel else "-",
            f"{100 * r.explored:.0f}%" if ok else "-",
            f"{r.calls / r.run_stages:.2f}" if ok else "-",
            fmt_tiers(r.tiers.get("greedy")) if r.tiers else "-",
            fmt_tiers(r.tiers.get("LCB")) if r.tiers else "-",
            str(r.fallbacks), str(len(r.errors)),
        ])
    return rows


def solve_rows(results: dict[tuple[str, int, str], SolveResult]) -> list[list[str]]:
    rows = []
    for (name, d, prog), r in results.items():
        if r.ours.size:
            ratio = float(np.median(r.ours / r.bare))
            if d <= TARGET_MAX_DIM:
                verdict = "met" if ratio <= TARGET_RATIO else "NOT met"
                target = f"<= {TARGET_RATIO:.0f}x: {verdict}"
            else:
                target = f"n/a (d > {TARGET_MAX_DIM})"
            cells = [fmt_us(np.median(r.ours)), fmt_us(np.median(r.bare)),
                     fmt_us(np.median(r.ours - r.bare)), f"{ratio:.2f}x", target]
        else:
            cells = ["-", "-", "-", "-", "no solved instance"]
        if r.public.size:
            ratio = float(np.median(r.public / r.public_bare))
            target = "-"
            if (name, d) == PUBLIC_TARGET:
                verdict = "met" if ratio <= PUBLIC_TARGET_RATIO else "NOT met"
                target = f"<= {PUBLIC_TARGET_RATIO}x: {verdict}"
            cells += [fmt_us(np.median(r.public)), f"{ratio:.2f}x", target]
        else:
            cells += ["-", "-", "no solved instance"]
        rows.append([name, str(d), prog, str(r.calls), *cells, fmt_tiers(r.tiers),
                     f"{r.failures + r.public_failures}/{2 * r.calls}"])
    return rows


def load() -> str:
    return "load average (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", type=int, nargs="+", default=[2, 5, 10, 20])
    parser.add_argument("--runs", type=int, default=4, help="SEGE runs simulated in lockstep")
    parser.add_argument("--stages", type=int, default=None,
                        help="stages per simulation (default: 150 for d <= 10, 100 above)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="timed simulations per set; timed calls per instance in part 2")
    parser.add_argument("--instances", type=int, default=30, help="part 2's instances per program")
    parser.add_argument("--c-factor", type=float, default=C_FACTOR,
                        help="SEGE's c = c_factor rho^2 sigma^2 (default %(default)s)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--markdown", action="store_true", help="print markdown tables")
    parser.add_argument("--sets", nargs="+", choices=[case.name for case in CASES],
                        metavar="SET", default=[case.name for case in CASES],
                        help="arm-set types to time (default: all: %(default)s)")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke test: d = 2 and 5, 2 runs, 20 stages, 1 repeat, 3 instances")
    args = parser.parse_args(argv)
    if args.quick:
        args.dims, args.runs, args.stages, args.repeats, args.instances = [2, 5], 2, 20, 1, 3
    if min(args.dims) < 2:
        parser.error("--dims must be >= 2 (the polytope cuts with x_1 - x_2)")
    if args.c_factor <= 0:
        parser.error("--c-factor must be positive")
    if min(args.runs, args.repeats, args.instances) < 1 or (args.stages is not None and args.stages < 1):
        parser.error("--runs, --stages, --repeats and --instances must be positive")

    wall_start = time.perf_counter()
    print("\n".join(machine()))
    print(f"{load()} (at start)")
    print(f"seed {args.seed}, runs {args.runs}, repeats {args.repeats}, instances {args.instances}, "
          f"c-factor {args.c_factor}")
    stage_results: dict[tuple[str, int], StageResult] = {}
    solve_results: dict[tuple[str, int, str], SolveResult] = {}
    for d in args.dims:
        start = time.perf_counter()
        g = np.random.default_rng([args.seed, d, 1]).standard_normal(d)
        theta_star = 0.9 * np.abs(g) / np.linalg.norm(g)
        stages = args.stages or (150 if d <= 10 else 100)
        sets = {}
        for case in (case for case in CASES if case.name in args.sets):
            stage_results[(case.name, d)], sets[case.name] = bench_stages(
                case, d, theta_star, args.runs, stages, args.repeats, args.c_factor, args.seed)
        rng = np.random.default_rng([args.seed, d, 2])
        for name in SOLVER_CASES:
            arm_set = sets.get(name)
            if arm_set is None:
                continue
            thetas = [rng.standard_normal(d) for _ in range(args.instances)]
            solve_results[(name, d, "greedy")] = bench_solves(
                arm_set.greedy_program, [(theta,) for theta in thetas],
                [partial(arm_set.greedy_arm, theta) for theta in thetas], args.repeats)
            lcb = random_lcb_instances(rng, theta_star, args.instances)
            solve_results[(name, d, "LCB")] = bench_solves(
                arm_set.lcb_program, [(inst.theta_hat, inst.M) for inst in lcb],
                [partial(arm_set.lcb_arm, inst.theta_hat, inst.V, inst.radius, method="solver")
                 for inst in lcb], args.repeats)
        print(f"  d={d}: {stages} stages, done in {time.perf_counter() - start:.1f} s", flush=True)

    print()
    print("1. SEGE per run-stage (median over repeats; wall time of simulate / (runs x stages))")
    header = ["set", "d", "greedy", "LCB arm", "setup ms", "compile ms", "c", "us/run-stage",
              "range", "Clarabel us", "x Clarabel", "explored", "calls/run-stage",
              "greedy tiers", "LCB tiers", "fallbacks", "errors"]
    print(render(header, stage_rows(stage_results), args.markdown, left=4))
    print("tiers: timed calls accepted at accuracy tier t0/t1/t2, and failed at every tier; "
          "calls/run-stage: calls of the\ncompiled programs (one Clarabel solve per tier tried); "
          "ellipsoid (solver) keeps the closed-form greedy arm; certified: the\nactive-set arms of "
          "boxes and polytopes; simulate also takes one greedy arm for the optimal reward.")
    errors = [f"  {name}, d={d}: {e}" for (name, d), r in stage_results.items() for e in r.errors]
    print("errors:" if errors else "errors: none")
    if errors:
        print("\n".join(errors))

    print()
    print("2. Compile once, solve many: our CompiledConicProgram.solve vs Clarabel's own solve() "
          "(medians over instances)")
    header = ["set", "d", "program", "calls", "ours us", "Clarabel us", "overhead us", "ratio",
              "target", "public us", "public / Clarabel", "target", "tiers", "failures"]
    print(render(header, solve_rows(solve_results), args.markdown, left=3))
    print(f"ratio: median over instances of ours / Clarabel (all tiers a call ran); target "
          f"<= {TARGET_RATIO:.0f}x at d <= {TARGET_MAX_DIM}. public: greedy_arm(theta) or "
          "lcb_arm(theta_hat, V, r, method='solver'),\nvalidation included, over Clarabel's "
          f"solve() re-run on the data it left; target <= {PUBLIC_TARGET_RATIO}x on the "
          f"{PUBLIC_TARGET[0]} at d = {PUBLIC_TARGET[1]}. tiers: our solve's calls; failures: "
          "ours and the public call's.")
    print()
    print(f"{load()} (at end); total {time.perf_counter() - wall_start:.0f} s")


if __name__ == "__main__":
    main()
