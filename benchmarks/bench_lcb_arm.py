"""Benchmark the LCB arm over an ellipsoid: cvxpy DPP vs compiled Clarabel vs the closed form.

The LCB (pessimistic) arm is ``argmax_{x in E} <x, theta_hat> - r ||x||_{V^{-1}}`` (paper eq.
(lcb arm)) over ``E = {x : (x - c)^T H^{-1} (x - c) <= 1}``.  For each dimension ``d`` the script
draws one anisotropic ellipsoid (random rotation, eigenvalues of ``H`` in ``logspace(-1, 1)``,
random centre) and random instances: ``theta_hat ~ N(0, I)``, ``V`` SPD with a random rotation
and eigenvalues spanning two decades (condition number 100, random overall scale), and
``r ~ U(0, 3)``.  It reports the median time per LCB-arm call, in microseconds, of

* ``cvxpy DPP``: a ``cp.Problem`` with parameters ``theta_hat`` and ``M = r P^T``
  (``V^{-1} = P P^T``) built once; per call the parameter values are set and
  ``problem.solve(solver=cp.CLARABEL)`` re-solves it (cvxpy's standard DPP path, Clarabel's
  default tolerances);
* ``Clarabel (ours)``: :class:`sege_cvx.conic.CompiledConicProgram` from
  :func:`sege_cvx.conic.lcb_arm_program`, ``.solve(theta_hat, M)`` per call (one mat-vec, an
  in-place Clarabel update and a solve asking for a 1e-12 gap, with fallback tiers).  Next to it:
  the median of ``ConicSolution.solve_seconds`` (Clarabel's reported ``solve_time`` of the final
  tier; it exceeds the wall time of Clarabel's ``solve()``, apparently because Clarabel 0.11
  adds its one-off setup time) and the wall time of Clarabel's bare ``solve()`` re-run in place
  for the same instance, over every tier the call went through, so ``wall - bare`` is the
  overhead of our data path (mat-vec and ``update``);
* ``closed form, public``: ``Ellipsoid.lcb_arm(theta_hat, V, r, method="closed_form")`` on one
  instance (input validation, Cholesky inverse of ``V`` and membership check included);
* ``closed form, kernel n=1``: :class:`sege_cvx.arm_sets.ellipsoid.lcb.EllipsoidLCBKernel` on a batch of one
  (``V^{-1}`` given);
* ``closed form, batched``: the kernel on a batch of ``--batch`` fresh instances (default 1000),
  time divided by the batch size (a mean over the batch, so slow instances count in full).

``theta_hat`` and ``M`` (resp. ``V`` or ``V^{-1}``) are prepared before timing for every method.
Per-call times are medians over all instances and ``--repeats`` repeats; the batched time is a
median over repeats.  Every method is warmed up first (cvxpy's first solve canonicalizes the
problem; the kernel is numba-compiled), and the garbage collector is off while timing.

Accuracy: the largest relative disagreement, over the instances, between the solver path
(``Clarabel (ours)``) and the closed form (kernel), in objective ``|f_cf - f_sv| / max(1, |f_sv|)``
and in arm ``||x_cf - x_sv|| / max(1, ||x_sv||)``.  Failures are counted, never dropped silently:
cvxpy statuses other than ``optimal`` (or a ``SolverError``), ``SolverFailure`` or a point outside
``E`` (tolerance 1e-7) for our solver, a raised ``SolverFailure`` for the public closed form and a
non-finite or outside arm for the kernel.  Solves that needed one of the compiled program's
looser fallback tiers are counted too.

Run from the repository root::

    python benchmarks/bench_lcb_arm.py                     # d = 2, 10, 50; under a minute
    python benchmarks/bench_lcb_arm.py --dims 2 --instances 500 --repeats 5 --markdown
    python benchmarks/bench_lcb_arm.py --quick             # a smoke test
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import cvxpy as cp
import numpy as np
from _machine import machine

import sege_cvx as sc
from sege_cvx.arm_sets.ellipsoid.lcb import EllipsoidLCBKernel
from sege_cvx.confidence.ellipsoid import lcb_from_precision
from sege_cvx.conic import CompiledConicProgram, ConicSolution, SolverFailure, lcb_arm_program

TARGET_SPEEDUP = 100.0  # closed form vs cvxpy DPP at d = 2
TARGET_BATCHED_US = 5.0  # batched closed form, per instance, at d = 2
TARGETS = "closed form >= 100x faster than cvxpy DPP at d=2; batched <= 5 us per instance at d=2"

FOOTNOTE = ("* ConicSolution.solve_seconds is Clarabel's reported solve_time, of the final tier only; "
            "it exceeds the wall\n  time of solve() (Clarabel 0.11 appears to add its one-off setup "
            "time).  The bare solve() row is the wall time\n  of Clarabel's solve() alone, over "
            "every tier the call ran.")

#: Membership slack for arms checked here: the kernel keeps arms inside E by its own H^{-1/2},
#: which rounds differently from ``Ellipsoid.gauge`` (by ~1e-16).
ROUNDING_TOL = 1e-12


@dataclass(frozen=True)
class Instances:
    """``n`` LCB-arm instances in every form the methods take."""

    theta: np.ndarray  # (n, d)
    V: np.ndarray  # (n, d, d)
    V_inv: np.ndarray  # (n, d, d)
    radius: np.ndarray  # (n,)
    M: np.ndarray  # (n, d, d), r P^T with V^{-1} = P P^T


def random_rotation(rng: np.random.Generator, d: int) -> np.ndarray:
    """Haar-distributed orthogonal matrix."""
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return q * np.sign(np.diag(r))


def random_ellipsoid(rng: np.random.Generator, d: int) -> sc.Ellipsoid:
    rot = random_rotation(rng, d)
    shape = (rot * np.logspace(-1.0, 1.0, d)) @ rot.T
    center = 0.5 * rng.standard_normal(d) / np.sqrt(d)
    return sc.Ellipsoid(center, 0.5 * (shape + shape.T))


def random_instances(rng: np.random.Generator, d: int, n: int) -> Instances:
    theta = rng.standard_normal((n, d))
    eig = 10.0 ** (rng.uniform(-0.5, 0.5, (n, 1)) + np.linspace(0.0, 2.0, d))
    rot = np.stack([random_rotation(rng, d) for _ in range(n)])
    rot_t = np.swapaxes(rot, 1, 2)
    V = (rot * eig[:, None, :]) @ rot_t
    V_inv = (rot / eig[:, None, :]) @ rot_t
    V = 0.5 * (V + np.swapaxes(V, 1, 2))
    V_inv = 0.5 * (V_inv + np.swapaxes(V_inv, 1, 2))
    radius = rng.uniform(0.0, 3.0, n)
    M = np.swapaxes(np.linalg.cholesky(V_inv), 1, 2) * radius[:, None, None]
    return Instances(theta, V, V_inv, radius, M)


def time_each(call: Callable, args: Sequence[tuple], repeats: int) -> tuple[np.ndarray, list]:
    """Time ``call(*a)`` for each ``a`` in ``args``, ``repeats`` times; return seconds and outputs.

    Outputs are indexed ``[repeat][instance]``.  The first few instances are run once untimed.
    """
    for a in args[:5]:
        call(*a)
    seconds = np.empty((repeats, len(args)))
    outputs: list[list] = [[None] * len(args) for _ in range(repeats)]
    gc.disable()
    try:
        for rep in range(repeats):
            for i, a in enumerate(args):
                start = time.perf_counter()
                out = call(*a)
                seconds[rep, i] = time.perf_counter() - start
                outputs[rep][i] = out
    finally:
        gc.enable()
    return seconds, outputs


def bare_clarabel_seconds(program: CompiledConicProgram, theta: np.ndarray, M: np.ndarray) -> float:
    """Wall time of Clarabel's own ``solve()`` calls for one instance, without our data path.

    Loads the instance with ``program.solve``, then re-runs in place every tier that call went
    through (reaching into the program's private solvers: Clarabel's reported ``solve_time``
    exceeds the wall time of ``solve()``, so it is no measure of the per-call cost).
    Returns NaN if the instance failed.
    """
    try:
        tier = program.solve(theta, M).tier
    except SolverFailure:
        return np.nan
    gc.disable()
    try:
        start = time.perf_counter()
        for solver in program.solvers[:tier + 1]:
            solver.solve()
        return time.perf_counter() - start
    finally:
        gc.enable()


def bench_dim(d: int, n_inst: int, n_batch: int, repeats: int, rng: np.random.Generator) -> dict:
    """All measurements for one dimension; times in seconds."""
    ell = random_ellipsoid(rng, d)
    inst = random_instances(rng, d, n_inst)
    res: dict = {"n": n_inst, "zero_inside": bool(ell.contains(np.zeros(d)))}

    # 1. cvxpy DPP re-solve.
    x = cp.Variable(d)
    theta_p = cp.Parameter(d)
    M_p = cp.Parameter((d, d))
    problem = cp.Problem(cp.Maximize(theta_p @ x - cp.norm(M_p @ x, 2)), ell.constraints(x))

    def cvxpy_call(theta: np.ndarray, M: np.ndarray) -> str:
        theta_p.value = theta
        M_p.value = M
        try:
            problem.solve(solver=cp.CLARABEL)
        except cp.error.SolverError:
            return "SolverError"
        return problem.status

    secs, statuses = time_each(cvxpy_call, list(zip(inst.theta, inst.M, strict=True)), repeats)
    res["cvxpy"] = np.median(secs)
    res["cvxpy_fail"] = sum(s != cp.OPTIMAL for rep in statuses for s in rep)

    # 2. Our compiled program on Clarabel.
    program = lcb_arm_program(d, ell.constraints)

    def ours_call(theta: np.ndarray, M: np.ndarray) -> ConicSolution | SolverFailure:
        try:
            return program.solve(theta, M)
        except SolverFailure as exc:
            return exc

    secs, sols = time_each(ours_call, list(zip(inst.theta, inst.M, strict=True)), repeats)
    res["ours"] = np.median(secs)
    solved = [s for rep in sols for s in rep if isinstance(s, ConicSolution)]
    res["ours_clarabel"] = np.median([s.solve_seconds for s in solved]) if solved else np.nan
    res["ours_fallback"] = sum(s.tier > 0 for s in solved)
    res["ours_bare"] = np.nanmedian([bare_clarabel_seconds(program, theta, M)
                                     for theta, M in zip(inst.theta, inst.M, strict=True)])
    # Failures as the library reports them: a non-accepted status, or a point that pull_inside
    # (contraction toward the centre by at most 1e-5) cannot move exactly into E.
    res["ours_fail"] = 0
    for rep in sols:
        raw = np.array([s.x if isinstance(s, ConicSolution) else np.full(d, np.nan) for s in rep])
        finite = np.all(np.isfinite(raw), axis=1)
        x_sv, sv_ok = np.full_like(raw, np.nan), np.zeros(len(raw), dtype=bool)
        if finite.any():  # the last repeat's arms are compared below
            x_sv[finite], sv_ok[finite] = ell.pull_inside(raw[finite])
        res["ours_fail"] += int(np.sum(~sv_ok))
    res["calls"] = repeats * n_inst

    # 3. Closed form: public API, then the raw kernel on one instance.
    def public_call(theta: np.ndarray, V: np.ndarray, r: float) -> np.ndarray | None:
        try:
            return ell.lcb_arm(theta, V, r, method="closed_form")
        except SolverFailure:
            return None

    secs, arms = time_each(public_call, list(zip(inst.theta, inst.V, inst.radius, strict=True)),
                           repeats)
    res["public"] = np.median(secs)
    res["public_fail"] = sum(a is None for rep in arms for a in rep)

    kernel = EllipsoidLCBKernel(ell.center, ell.shape)
    singles = [(inst.theta[i:i + 1].copy(), inst.V_inv[i:i + 1].copy(), inst.radius[i:i + 1].copy())
               for i in range(n_inst)]
    secs, _ = time_each(kernel, singles, repeats)
    res["kernel1"] = np.median(secs)

    # 4. Kernel on a batch, per instance.
    batch = random_instances(rng, d, n_batch)
    batch_args = (batch.theta, batch.V_inv, batch.radius)
    secs, outs = time_each(kernel, [batch_args], repeats)
    res["batched"] = np.median(secs) / n_batch
    batch_arms = outs[0][0][0]
    batch_ok = np.all(np.isfinite(batch_arms), axis=1)
    batch_ok[batch_ok] = ell.contains(batch_arms[batch_ok], tol=ROUNDING_TOL)
    res["kernel_fail"] = int(np.sum(~batch_ok))

    # 5. Solver path (last repeat) vs closed form, on the instances both solved.
    x_cf, _ = kernel(inst.theta, inst.V_inv, inst.radius)
    cf_ok = np.all(np.isfinite(x_cf), axis=1)
    cf_ok[cf_ok] = ell.contains(x_cf[cf_ok], tol=ROUNDING_TOL)
    res["kernel_fail"] += int(np.sum(~cf_ok))
    res["kernel_calls"] = n_batch + n_inst
    both = sv_ok & cf_ok
    args = (inst.theta[both], inst.V_inv[both], inst.radius[both])
    f_cf = lcb_from_precision(x_cf[both], *args)
    f_sv = lcb_from_precision(x_sv[both], *args)
    obj_err = np.abs(f_cf - f_sv) / np.maximum(1.0, np.abs(f_sv))
    arm_err = np.linalg.norm(x_cf[both] - x_sv[both], axis=1) / np.maximum(
        1.0, np.linalg.norm(x_sv[both], axis=1))
    res["obj_err"] = obj_err.max() if both.any() else np.nan
    res["arm_err"] = arm_err.max() if both.any() else np.nan
    return res


def fmt_us(seconds: float) -> str:
    us = 1e6 * seconds
    return f"{us:.2f}" if us < 10 else f"{us:.1f}" if us < 1000 else f"{us:.0f}"


def fmt_ratio(ratio: float) -> str:
    return f"{ratio:.0f}x" if ratio >= 10 else f"{ratio:.1f}x"


def table_rows(results: dict[int, dict]) -> list[tuple[str, list[str]]]:
    def row(label: str, fn: Callable[[dict], str]) -> tuple[str, list[str]]:
        return label, [fn(r) for r in results.values()]

    return [
        row("instances (solver / per-call timings)", lambda r: str(r["n"])),
        row("0 inside the ellipsoid", lambda r: "yes" if r["zero_inside"] else "no"),
        row("cvxpy DPP [us/call]", lambda r: fmt_us(r["cvxpy"])),
        row("Clarabel (ours), wall [us/call]", lambda r: fmt_us(r["ours"])),
        row("Clarabel (ours), Clarabel's solve_seconds* [us]", lambda r: fmt_us(r["ours_clarabel"])),
        row("Clarabel (ours), bare Clarabel solve() [us]", lambda r: fmt_us(r["ours_bare"])),
        row("closed form (one), public lcb_arm [us/call]", lambda r: fmt_us(r["public"])),
        row("closed form (one), kernel n=1 [us/call]", lambda r: fmt_us(r["kernel1"])),
        row("closed form batched, kernel [us/instance]", lambda r: fmt_us(r["batched"])),
        row("speedup cvxpy DPP / public lcb_arm", lambda r: fmt_ratio(r["cvxpy"] / r["public"])),
        row("speedup cvxpy DPP / kernel n=1", lambda r: fmt_ratio(r["cvxpy"] / r["kernel1"])),
        row("speedup cvxpy DPP / batched", lambda r: fmt_ratio(r["cvxpy"] / r["batched"])),
        row("max rel. objective error, ours vs closed form", lambda r: f"{r['obj_err']:.1e}"),
        row("max rel. arm error, ours vs closed form", lambda r: f"{r['arm_err']:.1e}"),
        row("failures: cvxpy DPP (status != optimal)",
            lambda r: f"{r['cvxpy_fail']}/{r['calls']}"),
        row("failures: Clarabel (ours) (SolverFailure/outside E)",
            lambda r: f"{r['ours_fail']}/{r['calls']}"),
        row("Clarabel (ours) solves on a fallback tier",
            lambda r: f"{r['ours_fallback']}/{r['calls']}"),
        row("failures: public closed form (raised)",
            lambda r: f"{r['public_fail']}/{r['calls']}"),
        row("failures: kernel (non-finite/outside E)",
            lambda r: f"{r['kernel_fail']}/{r['kernel_calls']}"),
    ]


def render(results: dict[int, dict], markdown: bool) -> str:
    header = ["metric"] + [f"d={d}" for d in results]
    rows = table_rows(results)
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|---" + "|---:" * len(results) + "|"]
        lines += ["| " + " | ".join([label, *cells]) + " |" for label, cells in rows]
        return "\n".join(lines)
    widths = [max(len(header[0]), *(len(label) for label, _ in rows))]
    widths += [max(len(header[j + 1]), *(len(cells[j]) for _, cells in rows))
               for j in range(len(results))]

    def line(cells: list[str]) -> str:
        return "  ".join([cells[0].ljust(widths[0])]
                         + [c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True)])

    rule = "-" * len(line(header))
    return "\n".join([line(header), rule] + [line([label, *cells]) for label, cells in rows])


def targets(results: dict[int, dict]) -> list[str]:
    lines = [f"Targets (issue): {TARGETS}"]
    r = results.get(2)
    if r is None:
        return [*lines, "  d=2 was not run."]
    for name, key in (("public lcb_arm", "public"), ("kernel n=1", "kernel1")):
        speedup = r["cvxpy"] / r[key]
        verdict = "met" if speedup >= TARGET_SPEEDUP else "NOT met"
        lines.append(f"  d=2 cvxpy DPP / closed form ({name}): {fmt_ratio(speedup)} "
                     f"(target >= {TARGET_SPEEDUP:.0f}x): {verdict}")
    us = 1e6 * r["batched"]
    verdict = "met" if us <= TARGET_BATCHED_US else "NOT met"
    lines.append(f"  d=2 batched closed form: {fmt_us(r['batched'])} us/instance "
                 f"(target <= {TARGET_BATCHED_US:.0f} us): {verdict}")
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", type=int, nargs="+", default=[2, 10, 50])
    parser.add_argument("--instances", type=int, default=None,
                        help="instances per dimension (default: 200 for d <= 10, 100 above)")
    parser.add_argument("--repeats", type=int, default=5, help="timed passes over the instances")
    parser.add_argument("--batch", type=int, default=1000, help="batch size of the batched kernel")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke test: d = 2 and 5, 10 instances, 1 repeat, batch 50")
    args = parser.parse_args(argv)
    if args.quick:
        args.dims, args.instances, args.repeats, args.batch = [2, 5], 10, 1, 50
    if min(args.dims) < 1 or args.repeats < 1 or args.batch < 1 or (
            args.instances is not None and args.instances < 1):
        parser.error("--dims, --instances, --repeats and --batch must be positive")

    print("\n".join(machine()))
    print(f"seed {args.seed}, repeats {args.repeats}, batch {args.batch}; "
          "times are medians in microseconds")
    rng = np.random.default_rng(args.seed)
    results = {}
    for d in args.dims:
        n_inst = args.instances or (200 if d <= 10 else 100)
        start = time.perf_counter()
        results[d] = bench_dim(d, n_inst, args.batch, args.repeats, rng)
        print(f"  d={d}: done in {time.perf_counter() - start:.1f} s", flush=True)
    print()
    print(render(results, args.markdown))
    print(FOOTNOTE)
    print()
    print("\n".join(targets(results)))


if __name__ == "__main__":
    main()
