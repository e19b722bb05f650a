"""Second-order-cone sets: compiled cone programs against Clarabel, per solve and per run-stage
(SEGE, SafeTS, Safe-LUCB).

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
The reference line: QOCO (``pip install qoco``, in the test extra) on the same instances as
Clarabel and the same cone rows (:class:`QOCOPrograms`), per solve from Python and inside its C
code (its own ``solve_time_sec``), how many it reports solved and how many of its objectives are
within 1e-7 of Clarabel's; dashes where it is not installed.

Part 2, SEGE per run-stage: ``sc.simulate`` of ``--runs`` runs for ``--stages`` stages (both
cores) on each set, compiled stages against ``lcb_method="solver"`` (Clarabel from Python per
run and stage), after an untimed warm-up; the ratio of one bare Clarabel LCB solve (part 1) to
the compiled stage.  ``theta* = (0.5, 0.4, 0.3, ...)/||.||``, the safe arm a tenth of the
exploration's first vertex... the problem of ``tests/arm_sets/test_cone_arms.py`` generalized.

Part 3, SafeTS per run-stage under an unknown constraint ``<x, gamma*> <= 0.3`` (the origin
safe): compiled (its program over the estimated safe set solved in the stages,
:func:`~sege_cvx.arm_sets.cone.arms.safe_set_one`) against the same set without
``compiled=True`` (Clarabel from Python per run and stage), and one bare Clarabel solve of its
program from Python.

Part 4, Safe-LUCB per run-stage under its model, the constraint on ``theta*`` itself (``<x,
theta*> <= 0.1``, ``B = I``), after 20 exploring stages: compiled (``--lucb-runs`` x
``--lucb-stages``; its ``2 d`` programs a stage over the set cut by the estimated safe set
solved in the stage, :func:`~sege_cvx.arm_sets.cone.arms.greedy_within_one`, each exploring
arm's witness solved there too) against the same set without ``compiled=True`` (``2 d``
Clarabel solves from Python per run and stage), and one bare Clarabel solve of one of its
programs.

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


class QOCOPrograms:
    """QOCO (Chari & Acikmese's C solver for small second-order cone programs, through its Python
    interface), the reference line: the set's greedy and LCB programs in the same cone rows as
    the compiled arms (:class:`~sege_cvx.conic.cone_form.ConeForm`, and for the LCB the
    confidence cone ``(tau, r L^{-1} x)`` over the columns ``(x, tau)``), set up once, then per
    instance the objective (and the confidence block's values) updated and solved, at QOCO's
    default tolerances (1e-7): at 1e-9 it ended ``QOCO_SOLVED_INACCURATE`` on most LCB
    instances, at 1e-10 on every set but the ball with cuts, with objectives off by up to 5.6."""

    SETTINGS = {"verbose": 0}

    def __init__(self, form) -> None:
        import qoco
        import scipy.sparse as sp

        d, n, G = form.dim, form.n, form.dense_G()
        kinds, rows = form.blocks.kind, form.blocks.rows
        self.d, self.n = d, n
        l_rows = int(np.sum(kinds == 0))  # cvxpy's order, QOCO's: nonnegative rows first
        socs = [int(rows[j + 1] - rows[j]) for j in range(kinds.size) if kinds[j] == 1]
        A = sp.csc_matrix(form.A) if form.A.shape[0] else None
        b = form.b if form.A.shape[0] else None

        def setup(Gd, h, c, q):
            solver = qoco.QOCO()
            # Every entry of the pattern stored, so that updates keep its structure.
            rr, cc = np.nonzero(Gd)
            Gs = sp.csc_matrix((Gd[rr, cc], (rr, cc)), shape=Gd.shape)
            solver.setup(Gd.shape[1], Gd.shape[0], form.A.shape[0], None, c,
                         None if A is None else sp.hstack(
                             [A, sp.csc_matrix((A.shape[0], Gd.shape[1] - n))], format="csc"),
                         b, Gs, h, l_rows, len(q), np.array(q, dtype=np.int64), **self.SETTINGS)
            coo = Gs.tocoo()
            order = np.lexsort((coo.row, coo.col))  # CSC: by column, then row
            return solver, (coo.row[order], coo.col[order])

        self.greedy, _ = setup(G, form.h, np.zeros(n), socs)
        Gl = np.zeros((G.shape[0] + d + 1, n + 1))
        Gl[:G.shape[0], :n] = G
        Gl[G.shape[0], n] = -1.0
        Gl[G.shape[0] + 1:, :d] = 1.0  # the pattern of r L^{-1}, dense
        self._Gl, self._m = Gl, G.shape[0]
        self.lcb, self._pattern = setup(Gl, np.r_[form.h, np.zeros(d + 1)], np.zeros(n + 1),
                                        socs + [d + 1])

    def solve_greedy(self, theta):
        c = np.zeros(self.n)
        c[:self.d] = -theta
        self.greedy.update_vector_data(c=c)
        return self.greedy.solve()

    def solve_lcb(self, theta, chol, r):
        d, n, m = self.d, self.n, self._m
        self._Gl[m + 1:, :d] = -r * np.linalg.inv(chol)
        self.lcb.update_matrix_data(G=self._Gl[self._pattern])
        c = np.zeros(n + 1)
        c[:d], c[n] = -theta, 1.0
        self.lcb.update_vector_data(c=c)
        return self.lcb.solve()


def qoco_solves(form, thetas, chols, radii, repeats: int) -> list | None:
    """QOCO on the instances: per program ``(seconds per solve from Python (median of
    repeats), QOCO's own solve_time_sec (median), how many it reports solved, the arms)``;
    None where QOCO is not installed."""
    try:
        programs = QOCOPrograms(form)
    except ImportError:
        return None
    out = []
    for solve, data in ((programs.solve_greedy, (thetas,)),
                        (programs.solve_lcb, (thetas, chols, radii))):
        t, results = timed(lambda solve=solve, data=data: [solve(*row) for row in zip(
            *data, strict=True)], repeats)
        out.append((t / len(results), float(np.median([r.solve_time_sec for r in results])),
                    sum(r.status == "QOCO_SOLVED" for r in results),
                    np.array([r.x[:form.dim] for r in results])))
    return out


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
            g_time, greedy = timed(partial(arms.greedy_all, thetas), args.repeats)
            l_time, lcb = timed(partial(arms.lcb_all, thetas, chols, radii), args.repeats)
            g_arms, g_codes, l_arms, l_codes = greedy.arms, greedy.codes, lcb.arms, lcb.codes
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
            qoco = qoco_solves(arms.form, thetas[:k], chols[:k], radii[:k], args.repeats)
            q_cols = [["-"] * 4, ["-"] * 4]
            if qoco is not None:
                q_err = (np.abs(np.einsum("ij,ij->i", qoco[0][3] - ref_g[:k], thetas[:k]))
                         / g_scale[:k],
                         np.abs(cholesky.lcb_values(qoco[1][3], thetas[:k], chols[:k], radii[:k])
                                - cholesky.lcb_values(ref_l[:k], thetas[:k], chols[:k],
                                                      radii[:k])) / l_scale[:k])
                q_cols = [[f"{t * 1e6:.0f}", f"{inside * 1e6:.0f}", f"{solved}/{k}",
                           f"{int((e <= 1e-7).sum())}/{k}"]
                          for (t, inside, solved, _), e in zip(qoco, q_err, strict=True)]
            for program, t, tc, codes, err, q in (
                    ("greedy", g_time, gc_time, g_codes, g_err, q_cols[0]),
                    ("LCB", l_time, lc_time, l_codes, l_err, q_cols[1])):
                rows.append([name, str(d), program, f"{t / n * 1e6:.1f}", f"{tc / k * 1e6:.0f}",
                             f"{tc / k / (t / n):.1f}x", f"{int((codes == VERIFIED).sum())}/{n}",
                             f"{int((err <= 1e-7).sum())}/{n}", f"{np.nanmax(err):.1e}", *q])
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


def constrained_problem_on(name: str, d: int, compiled: bool) -> sc.BanditProblem:
    """SafeTS's problem on set ``name``: ``theta*`` as :func:`problem_on`'s, an unknown
    constraint ``<x, gamma*> <= 0.3`` with ``gamma* = (0.7, 0.5, 0.1, ...)/||.||``, the origin
    safe."""
    arm_set = sc.ConvexArmSet(d, SETS[name], compiled=compiled)
    theta = np.linspace(0.5, 0.3, d)
    gamma = np.r_[0.7, 0.5, np.full(d - 2, 0.1)]
    constraint = sc.LinearConstraint(0.3, gamma_star=gamma / np.linalg.norm(gamma),
                                     noise_sd=0.1)
    return sc.BanditProblem.from_truth(arm_set, theta_star=0.9 * theta / np.linalg.norm(theta),
                                       safe_arm=np.zeros(d), S=1.0, noise_sd=0.1,
                                       constraint=constraint, name=name)


def bench_safe_ts(args) -> list:
    """SafeTS per run-stage, compiled (``compiled=True``) and on Clarabel, and one bare Clarabel
    solve of its program (the policy's compiled conic program on its own instances)."""
    rows = []
    for name in SETS:
        for d in args.dims:
            out = {}
            for compiled, runs, stages in ((True, args.runs, args.stages),
                                           (False, args.solver_runs, args.solver_stages)):
                problem = constrained_problem_on(name, d, compiled)
                seeds = sc.run_seeds(args.seed, runs)
                sc.simulate(problem.policy("SafeTS", runs, seeds[0]), problem.bandit(seeds[1]),
                            min(stages, 50))  # warm-up
                policy = problem.policy("SafeTS", runs, seeds[0])
                t0 = time.perf_counter()
                result = sc.simulate(policy, problem.bandit(seeds[1]), stages)
                per = (time.perf_counter() - t0) / (runs * stages)
                out[compiled] = (per, policy, result)
            fast, slow = out[True], out[False]
            # The bare solve: Clarabel's program at the Clarabel policy's last state.
            policy = slow[1]
            conf, beta = policy.confidence, policy.radii()
            inv = np.linalg.inv(conf.chol[0])
            rng = np.random.default_rng(args.seed)
            samples = conf.theta_hat[0] + 0.1 * rng.normal(size=(args.clarabel, d))
            program, gamma_hat, M = policy._program, policy.gamma_hat[0], beta[0] * inv
            bare, _ = timed(partial(solve_each, program,
                                    (samples, [gamma_hat] * len(samples), [M] * len(samples))),
                            args.repeats)
            bare /= args.clarabel
            rows.append([name, str(d), f"{fast[0] * 1e6:.1f}", f"{slow[0] * 1e6:.0f}",
                         f"{slow[0] / fast[0]:.1f}x", f"{bare * 1e6:.0f}",
                         f"{bare / fast[0]:.1f}x", str(fast[1].compiled_stages),
                         f"{int(fast[1].solver_fallbacks.sum())}/"
                         f"{int(fast[2].stats.total_violations.sum())}"])
    return rows


def lucb_problem_on(name: str, d: int, compiled: bool) -> sc.BanditProblem:
    """Safe-LUCB's model on set ``name``: ``theta*`` as :func:`problem_on`'s, the constraint on
    ``theta*`` itself, ``<x, theta*> <= 0.1`` (``B = I``: active at the optimum; its exploration
    ball, radius 0.1, inside every set), the origin safe."""
    arm_set = sc.ConvexArmSet(d, SETS[name], compiled=compiled)
    theta = np.linspace(0.5, 0.3, d)
    return sc.BanditProblem.from_truth(arm_set, theta_star=0.9 * theta / np.linalg.norm(theta),
                                       safe_arm=np.zeros(d), S=1.0, noise_sd=0.1,
                                       constraint=sc.LinearConstraint(0.1, B=np.eye(d)),
                                       name=name)


def bench_safe_lucb(args) -> list:
    """Safe-LUCB per run-stage after ``EXPLORATION`` exploring stages (each stage ``2 d``
    programs over the set cut by the estimated safe set), compiled (``compiled=True``) and on
    Clarabel, and one bare Clarabel solve of one of its programs (the policy's compiled conic
    program from Python, at the Clarabel policy's last state)."""
    rows = []
    for name in SETS:
        for d in args.dims:
            out = {}
            for compiled, runs, stages in ((True, args.lucb_runs, args.lucb_stages),
                                           (False, args.solver_runs, args.solver_stages)):
                problem = lucb_problem_on(name, d, compiled)
                seeds = sc.run_seeds(args.seed, runs)
                make = partial(problem.policy, "Safe-LUCB", runs, seeds[0],
                               exploration_stages=EXPLORATION)
                sc.simulate(make(), problem.bandit(seeds[1]), EXPLORATION + 10)  # warm-up
                t0 = time.perf_counter()
                sc.simulate(make(), problem.bandit(seeds[1]), EXPLORATION)
                exploring = time.perf_counter() - t0
                policy = make()
                t0 = time.perf_counter()
                result = sc.simulate(policy, problem.bandit(seeds[1]), EXPLORATION + stages)
                per = (time.perf_counter() - t0 - exploring) / (runs * stages)
                out[compiled] = (per, policy, result)
            fast, slow = out[True], out[False]
            policy = slow[1]
            program = policy._program
            corners = policy.vertices()[0]
            cuts = corners @ policy.B
            k = args.clarabel
            rng = np.random.default_rng(args.seed)
            thetas = corners[rng.integers(0, 2 * d, size=k)]
            bare, _ = timed(partial(solve_each, program, (thetas, [cuts] * k)), args.repeats)
            bare /= k
            rows.append([name, str(d), f"{fast[0] * 1e6:.1f}", f"{slow[0] * 1e6:.0f}",
                         f"{slow[0] / fast[0]:.1f}x", f"{bare * 1e6:.0f}",
                         f"{bare / fast[0]:.1f}x", str(fast[1].compiled_stages),
                         f"{int(fast[1].solver_fallbacks.sum())}/"
                         f"{int(fast[2].stats.total_violations.sum())}"])
    return rows


#: Safe-LUCB's exploring stages in part 4 (not timed).
EXPLORATION = 20


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", type=int, nargs="+", default=[3, 10])
    parser.add_argument("--instances", type=int, default=2000)
    parser.add_argument("--clarabel", type=int, default=200, help="part 1's Clarabel instances")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--stages", type=int, default=2000)
    parser.add_argument("--lucb-runs", type=int, default=8, help="part 4's compiled runs")
    parser.add_argument("--lucb-stages", type=int, default=300, help="part 4's compiled stages")
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
        args.lucb_runs, args.lucb_stages = 4, 30
    start = time.perf_counter()
    print("\n".join(machine()))
    print(f"{load()} (at start)")
    solves, clarabel_lcb = bench_solves(args)
    sege = bench_sege(args, clarabel_lcb)
    safe_ts = bench_safe_ts(args)
    safe_lucb = bench_safe_lucb(args)
    print()
    print(f"1. Per solve, {args.instances} cold instances (Clarabel: {args.clarabel}), "
          f"median of {args.repeats}")
    print(render(["set", "d", "program", "compiled us", "Clarabel us", "ratio", "certified",
                  "within 1e-7", "largest", "QOCO us", "in C", "solved", "within 1e-7"], solves,
                 args.markdown, left=3))
    print()
    print(f"2. SEGE per run-stage (us), compiled: {args.runs} x {args.stages}, solver: "
          f"{args.solver_runs} x {args.solver_stages}, {numba.get_num_threads()} threads")
    print(render(["set", "d", "compiled", "solver", "speed-up", "Clarabel LCB / stage",
                  "compiled", "fallbacks/violations"], sege, args.markdown, left=1))
    print()
    print(f"3. SafeTS per run-stage (us) under an unknown constraint, compiled: {args.runs} x "
          f"{args.stages}, on Clarabel: {args.solver_runs} x {args.solver_stages}; one bare "
          f"Clarabel solve of its program (us, median of {args.repeats} x {args.clarabel})")
    print(render(["set", "d", "compiled", "Clarabel", "speed-up", "bare solve",
                  "bare solve / stage", "compiled", "fallbacks/violations"], safe_ts,
                 args.markdown, left=1))
    print()
    print(f"4. Safe-LUCB per run-stage (us) after {EXPLORATION} exploring stages, compiled: "
          f"{args.lucb_runs} x {args.lucb_stages}, on Clarabel: {args.solver_runs} x {args.solver_stages}; "
          f"one bare Clarabel solve of one of its 2d programs (us, median of {args.repeats} x "
          f"{args.clarabel})")
    print(render(["set", "d", "compiled", "Clarabel", "speed-up", "bare solve",
                  "bare solve / stage", "compiled", "fallbacks/violations"], safe_lucb,
                 args.markdown, left=1))
    print(f"\n{load()} (at end); total {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
