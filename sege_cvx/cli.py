"""Command line: ``sege-cvx {demo,reproduce,run}`` (also ``python -m sege_cvx``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import numpy as np


def _demo(args: argparse.Namespace) -> int:
    """LCB arms of the paper's disk by both paths, side by side."""
    from .arm_sets import Ellipsoid
    from .confidence import lcb

    disk = Ellipsoid(center=[1.0, 1.0], shape=np.eye(2))
    rng = np.random.default_rng(args.seed)
    print(f"LCB arms on the paper's disk (centre (1,1), radius 1), seed {args.seed}")
    print(f"{'case':>4} {'closed-form arm':>26} {'solver arm':>26} {'LCB closed':>11} "
          f"{'LCB solver':>11} {'|diff|':>9}")
    for case in range(args.cases):
        A = rng.standard_normal((2, 2))
        V = 0.1 * np.eye(2) + A @ A.T * rng.uniform(1, 50)
        theta_hat = np.array([0.6, 0.8]) + 0.3 * rng.standard_normal(2)
        radius = rng.uniform(0.1, 3.0)
        x_cf = disk.lcb_arm(theta_hat, V, radius, method="closed_form")
        x_sv = disk.lcb_arm(theta_hat, V, radius, method="solver")
        f_cf, f_sv = lcb(x_cf, theta_hat, V, radius), lcb(x_sv, theta_hat, V, radius)
        print(f"{case:>4} {np.array2string(x_cf, precision=8):>26} "
              f"{np.array2string(x_sv, precision=8):>26} {f_cf:>11.8f} {f_sv:>11.8f} "
              f"{np.linalg.norm(x_cf - x_sv):>9.2e}")
    return 0


def _print_study(study) -> None:
    """One line per algorithm: wall time, violations, worst reward and final mean regret."""
    for name in ("SEGE", "CLUCB"):
        s = study.summary[name]
        last = str(max(int(k) for k in s["regret_mean"])) if s["regret_mean"] else None
        regret = f"{s['regret_mean'][last]:.1f} at t={last}" if last else "n/a"
        print(f"{name:>5}: {s['wall_seconds']:.1f} s, safety violations {s['safety_violations']} "
              f"(first at stage {s['first_violation_stage']}), min expected reward "
              f"{s['min_expected_reward']:.4f} (b = {study.setup.threshold:.4f}), mean regret {regret}")


def _reproduce(args: argparse.Namespace) -> int:
    """The paper's Section 6 study: figures, summary.json and arrays.npz in ``--out``."""
    import json

    from .experiments import PAPER_HORIZON, PAPER_RUNS, run_study, write_outputs

    runs, horizon = (PAPER_RUNS, PAPER_HORIZON) if args.full else (args.runs, args.horizon)
    print(f"SEGE and CLUCB on the paper's setup: {runs} runs x {horizon} stages, seed {args.seed}, "
          f"LCB arms by {args.lcb_method}", flush=True)
    study = run_study(runs=runs, horizon=horizon, seed=args.seed, lcb_method=args.lcb_method,
                      progress=not args.no_progress)
    paths = write_outputs(study, args.out)
    _print_study(study)
    print("wrote", ", ".join(str(p) for p in paths))
    if args.print_summary:
        print(json.dumps(study.summary, indent=2))
    return 0


def _run(args: argparse.Namespace) -> int:
    """SEGE and CLUCB on an example arm set: violations, regret, and the figures."""
    from .experiments import run_study, write_outputs
    from .experiments.examples import EXAMPLES

    problem = EXAMPLES[args.arm_set]()
    print(f"{problem.name}: {problem.description}")
    print(f"  arm set {problem.arm_set!r}")
    print(f"  theta* = {problem.theta_star}, baseline arm {problem.baseline_arm}, "
          f"b0 = {problem.baseline_reward:.4f}, b = {problem.threshold:.4f}; "
          f"{args.runs} runs x {args.horizon} stages, seed {args.seed}", flush=True)
    study = run_study(runs=args.runs, horizon=args.horizon, seed=args.seed,
                      lcb_method=args.lcb_method, setup=problem, progress=not args.no_progress)
    setup, clucb = study.summary["setup"], study.summary["CLUCB"]
    print(f"  SEGE: rho = {study.summary['SEGE']['rho']:.4f} (rho_bar), L = {setup['L']:.4f}, "
          f"exploration {setup['exploration']} with sigma^2 = {setup['sigma2']:.4f}; CLUCB: "
          f"{clucb['n_arms']} arms, discretization error {clucb['discretization_error']:.2e}")
    _print_study(study)
    paths = write_outputs(study, args.out)
    print("wrote", ", ".join(str(p) for p in paths))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sege-cvx", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="LCB arms by closed form and by Clarabel, side by side")
    demo.add_argument("--cases", type=int, default=5)
    demo.add_argument("--seed", type=int, default=0)
    demo.set_defaults(func=_demo)

    rep = sub.add_parser("reproduce", help="the paper's Section 6 study with its figures")
    rep.add_argument("--runs", type=int, default=250, help="independent runs (paper: 250)")
    rep.add_argument("--horizon", type=int, default=20_000, help="stages per run (paper: 50,000)")
    rep.add_argument("--seed", type=int, default=0)
    rep.add_argument("--out", default="results", help="output directory (default: results)")
    rep.add_argument("--full", action="store_true", help="the paper's scale: 250 runs x 50,000")
    rep.add_argument("--lcb-method", choices=("closed_form", "solver"), default="closed_form",
                     help="SEGE's LCB arms by the exact fast path or by Clarabel")
    rep.add_argument("--no-progress", action="store_true", help="no progress bars")
    rep.add_argument("--print-summary", action="store_true", help="also print summary.json")
    rep.set_defaults(func=_reproduce)

    from .experiments.examples import EXAMPLES

    run = sub.add_parser("run", help="SEGE and CLUCB on an example arm set")
    run.add_argument("--arm-set", choices=sorted(EXAMPLES), required=True)
    run.add_argument("--runs", type=int, default=20)
    run.add_argument("--horizon", type=int, default=3000)
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--out", default="results-run", help="output directory")
    run.add_argument("--lcb-method", choices=("auto", "closed_form", "solver"), default="auto")
    run.add_argument("--no-progress", action="store_true", help="no progress bars")
    run.set_defaults(func=_run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``sege-cvx`` console script."""
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
