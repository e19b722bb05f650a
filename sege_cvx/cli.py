"""Command line: ``sege-cvx {demo,reproduce,run,sweep,report}`` (also ``python -m sege_cvx``)."""

from __future__ import annotations

import argparse
import atexit
import gc
import re
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

import numpy as np

from ._random import MAX_RUNS
from ._validation import MAX_HORIZON

#: The studies ``sege-cvx reproduce`` regenerates (the first is the default).
STUDIES = ("khezeli-bitar-2020", "roful-2024")
#: Per study: the default policies, horizon and --out.
_STUDY_DEFAULTS = {"khezeli-bitar-2020": (["SEGE", "CLUCB"], 20_000, "results"),
                   "roful-2024": (["ROFUL", "GNOP"], None, "results-roful-2024")}

#: ``--arm-set`` choices: the keys of :data:`sege_cvx.problems.examples.EXAMPLES` (a test keeps
#: them equal), listed here so that parsing arguments (``--help``, a bad option) imports neither
#: the examples nor numba and the policies they need.
EXAMPLE_NAMES = ("box", "ellipsoid", "lp-ball", "paper", "polytope", "treatment-mix")


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
    for name in (key for key in study.summary if key != "setup"):
        s = study.summary[name]
        last = str(max(int(k) for k in s["regret_mean"])) if s["regret_mean"] else None
        regret = f"{s['regret_mean'][last]:.1f} at t={last}" if last else "n/a"
        n = s["safety_violations"]
        safety = (f"{n} safety violation{'s' if n != 1 else ''} (first at stage "
                  f"{s['first_violation_stage']})" if n else "no safety violation")
        print(f"{name:>5}: {s['wall_seconds']:.1f} s, {safety}, min expected reward "
              f"{s['min_expected_reward']:.4f} (b = {study.setup.setting.safety.threshold:.4f}), "
              f"mean regret {regret}")
        if s.get("solver_fallbacks"):
            # Safe, but the study then measured the fallbacks, not the algorithm: say so loudly.
            print(f"{name:>5}: warning: {s['solver_fallbacks']} arm computations failed and fell "
                  f"back to safe arms ({s.get('fallback_reasons', {})})")


def _write(study, args: argparse.Namespace) -> list:
    """The study's files into ``--out``, published whole (see :func:`write_outputs`)."""
    from .experiments import write_outputs

    paths = write_outputs(study, args.out, overwrite=args.overwrite, command_line=args.command_line)
    args.published = True
    print(f"wrote {len(paths)} files to {args.out}: " + ", ".join(p.name for p in paths))
    return paths


def _prepare_kernels(lcb_method: str, problem, algorithms) -> None:
    """Compile the numba kernels of ``algorithms`` on ``problem`` (None: the paper's) before any
    progress bar, and say how long that took."""
    from .experiments.paper import warm_up

    print("preparing the compiled kernels ...", end=" ", flush=True)
    seconds, compiled = warm_up(lcb_method, problem, algorithms, processes=True)
    print(f"compiled once in {seconds:.1f} s (cached for later runs)" if compiled
          else f"loaded from the cache in {seconds:.2f} s", flush=True)


def _study(args: argparse.Namespace, **settings):
    """:func:`~sege_cvx.experiments.run_study` with the command's seed, progress and workers; a
    study that stops is one line (nothing is written to ``--out``)."""
    from .experiments import run_study
    from .experiments.sweeps.errors import SweepError

    try:
        return run_study(seed=args.seed, progress=not args.no_progress, workers=args.workers,
                         **settings)
    except SweepError as exc:
        raise _StoppedError(f"{exc}; nothing was written to {args.out}") from None


def _reproduce(args: argparse.Namespace) -> int:
    """The paper's Section 6 study: figures, summary.json, arrays.npz and manifest.json in
    ``--out``; with ``--study roful-2024``, Figures 2a and 2b of the ROFUL paper (Hutchinson,
    Turan and Alizadeh, AISTATS 2024) with their authors' problems and noise."""
    import json

    from .experiments import PAPER_HORIZON, PAPER_RUNS

    if args.study == "roful-2024":
        return _reproduce_roful(args)

    runs, horizon = (PAPER_RUNS, PAPER_HORIZON) if args.full else (args.runs, args.horizon)
    lcb_note = (f", LCB arms by {args.lcb_method}" if any(
        "lcb_method" in args.grid_parameters[a] for a in args.algorithms) else "")
    names = ", ".join(args.algorithms[:-1]) + " and " if len(args.algorithms) > 1 else ""
    print(f"{names}{args.algorithms[-1]} on the paper's setup: {runs} runs x {horizon} stages, "
          f"seed {args.seed}{lcb_note}", flush=True)
    _prepare_kernels(args.lcb_method, None, args.algorithms)
    args.compile_reported = True
    study = _study(args, runs=runs, horizon=horizon, lcb_method=args.lcb_method,
                   algorithms=args.algorithms)
    _print_study(study)
    paths = _write(study, args)
    if args.print_summary:
        print(json.dumps(json.loads(paths[0].read_text()), indent=2))
    return 0


def _reproduce_roful(args: argparse.Namespace) -> int:
    """ROFUL and GNOP on the ROFUL paper's 30 problems per figure (:mod:`.experiments.roful2024`),
    each figure's files in ``--out`` (written whole, once every figure is computed)."""
    from .experiments.outputs import atomic_output_dir, provenance, write_manifest
    from .experiments.roful2024 import N_TRIALS, run_roful_study, write_roful_study

    algorithms = args.algorithms
    studies = []
    for figure in args.figure:
        horizon = args.horizon
        print(f"ROFUL paper, Figure {figure}: {', '.join(algorithms)} on its {N_TRIALS} problems"
              f"{'' if horizon is None else f', {horizon} stages'} (their generator, seed 0)",
              flush=True)
        study = run_roful_study(figure, horizon=horizon, algorithms=algorithms)
        summary = study.summary()
        for name, row in summary["algorithms"].items():
            print(f"  {name:>5}: R_T/sqrt(T) = {row['R_T_over_sqrt_T_mean']:.3f} "
                  f"(sd {row['R_T_over_sqrt_T_sd']:.3f}) at T = {study.horizon}, "
                  f"violating stages {row['violating_stages']}, fallbacks {row['fallbacks']}")
        print(f"  swept in {study.seconds:.1f} s (simulations {study.simulation_seconds:.1f} s)",
              flush=True)
        studies.append(study)
    with atomic_output_dir(args.out, args.overwrite, name="--out",
                           overwrite_hint="--overwrite") as tmp:
        paths = write_roful_study(studies, tmp)
        write_manifest(tmp, provenance(args.command_line, seed=0))
    args.published = True
    print(f"wrote {len(paths) + 1} files to {args.out}: "
          + ", ".join(p.name for p in paths) + ", manifest.json")
    if args.print_summary:
        print(Path(args.out, "summary.json").read_text(), end="")
    return 0


def _run(args: argparse.Namespace) -> int:
    """SEGE and CLUCB (or --algorithms) on an example arm set: violations, regret, and the
    figures."""
    from .problems.examples import EXAMPLES

    problem = EXAMPLES[args.arm_set]()
    print(f"{problem.name}: {problem.description}")
    print(f"  arm set {problem.arm_set!r}")
    floor = problem.setting.safety
    print(f"  theta* = {problem.theta_star}, baseline arm {problem.setting.safe_arm.tolist()}, "
          f"b0 = {floor.baseline_reward:.4f}, b = {floor.threshold:.4f}; "
          f"{args.runs} runs x {args.horizon} stages, seed {args.seed}", flush=True)
    # Sets without compiled arms run SEGE's rule around their own arms: warm that path.
    compiled = problem.arm_set.compiled_arms is not None
    _prepare_kernels(args.lcb_method if compiled else "solver", problem, args.algorithms)
    args.compile_reported = True
    study = _study(args, runs=args.runs, horizon=args.horizon, lcb_method=args.lcb_method,
                   problem=args.arm_set, algorithms=args.algorithms)
    setup = study.summary["setup"]
    for name in args.algorithms:  # each policy's constants, as its summary block gives them
        block = study.summary[name]
        if "rho" in block:
            print(f"  {name}: rho = {block['rho']:.4f} (rho_bar), L = {setup['L']:.4f}, "
                  f"exploration {setup['exploration']} with sigma^2 = {setup['sigma2']:.4f}")
        if "n_arms" in block:
            print(f"  {name}: {block['n_arms']} arms, discretization error "
                  f"{block['discretization_error']:.2e}")
        if "n_directions" in block:
            print(f"  {name}: {block['n_directions']} directions, radius {block['radius']}")
    _print_study(study)
    _write(study, args)
    return 0


def _sweep(args: argparse.Namespace) -> int:
    """Every cell of a study spec (problems x algorithms x parameter grids) over its seeded runs:
    runs.parquet, curves.parquet and manifest.json in ``--out``; rerun to resume."""
    from .experiments.outputs import OutputPathError
    from .experiments.spec import SpecError
    from .experiments.sweeps.errors import SweepError
    from .experiments.sweeps.report import markdown_table, report_table
    from .experiments.sweeps.run import run_sweep

    spec = args.spec_object
    cells = spec.cells()
    print(f"{len(cells)} cells x {spec.runs} runs x {spec.horizon} stages, seed {spec.seed}; "
          "checking every cell and preparing the compiled kernels ...", flush=True)
    args.published = False
    try:
        results = run_sweep(spec, args.out, workers=args.workers, scheduler=args.scheduler,
                            shard_runs=args.shard_runs, overwrite=args.overwrite,
                            progress=not args.no_progress, command_line=args.command_line)
    except (SpecError, OutputPathError) as exc:  # found before any simulation
        raise _UserError(str(exc)) from None
    except SweepError as exc:  # after shards ran: they are kept
        raise _StoppedError(str(exc)) from None
    args.published = True
    table = report_table(results)
    print(markdown_table(table, right=table.attrs["right"]))
    print(f"wrote {args.out}/runs.parquet, curves.parquet and manifest.json "
          f"({len(results.runs)} runs of {len(cells)} cells)")
    return 0


class _UserError(Exception):
    """A user's mistake found by a command itself: reported as one line, exit status 2."""


class _StoppedError(Exception):
    """A command that stopped after it started: reported as one line, exit status 1."""


def _report(args: argparse.Namespace) -> int:
    """A finished sweep's table per cell (Markdown, printed, and CSV) and its regret and reward
    figures (PNG and PDF), written into --out."""
    import matplotlib

    matplotlib.use("Agg")  # files only; no display needed
    from .experiments.outputs import OutputPathError
    from .experiments.sweeps.report import write_report

    try:
        paths = write_report(args.results, args.out, by=args.by,
                             band=None if args.band == "none" else args.band, stages=args.at)
    except OSError as exc:  # e.g. the directory made read-only, or a disk full, meanwhile
        raise _StoppedError(f"cannot write {exc.filename or args.out}: {exc.strerror or exc}; the "
                            f"report in {args.out} may be incomplete") from None
    except OutputPathError as exc:  # e.g. a link put in the report directory's place meanwhile
        raise _StoppedError(f"{exc}; the report in {args.out} may be incomplete") from None
    print(paths[0].read_text(encoding="utf-8"), end="")
    print(f"wrote {len(paths)} files to {args.out}: " + ", ".join(p.name for p in paths))
    return 0


def _int_at_least(low: int, high: int | None = None):
    """An argparse ``type=``: an integer in ``[low, high]``, else a message naming the value."""
    want = f"an integer >= {low}" if high is None else f"an integer from {low} to {high}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {want}, got {text!r}") from None
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"must be {want}, got {value}")
        return value

    return parse


positive_int, nonnegative_int = _int_at_least(1), _int_at_least(0)
run_count = _int_at_least(1, MAX_RUNS)


class _Parser(argparse.ArgumentParser):
    """Errors as one line, ``sege-cvx: error: ...``, exit status 2 (also from subcommands)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"sege-cvx: error: {' '.join(str(message).split())}\n")


def _add_output_options(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument("--out", default=default,
                        help="results directory; must be new or empty unless --overwrite"
                             + ("" if default is not None else
                                " (default: results; roful-2024: results-roful-2024)"))
    parser.add_argument("--overwrite", action="store_true",
                        help="replace an existing non-empty --out whole (its old files are deleted)")


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows an option's default where it tells something: not for required options, flags,
    options without one (``None``), or help that already states it."""

    def _get_help_string(self, action: argparse.Action) -> str:
        if (action.required or action.default in (None, False, argparse.SUPPRESS)
                or "default" in (action.help or "")):
            return action.help or ""
        return super()._get_help_string(action)


def _add_algorithms_option(parser: argparse.ArgumentParser, default=("SEGE", "CLUCB")) -> None:
    parser.add_argument("--algorithms", nargs="+", default=None if default is None else
                        list(default), metavar="NAME",
                        help="the policies to run, in this order, each once: registered names "
                             "(built in: SEGE, CLUCB, ROFUL; under a linear constraint ROFUL, GNOP, "
                             "SafeTS, Safe-LUCB) or import paths module:Class of "
                             "a module in the current directory or on PYTHONPATH (default: SEGE "
                             "CLUCB; roful-2024: ROFUL GNOP)")


def _plain(doc: str) -> str:
    """A docstring as ``--help`` prints it: reStructuredText's markup (double back-quotes,
    roles such as ``:func:`x```) taken out, the words kept."""
    doc = re.sub(r":[a-z]+:`~?([^`<]*?)(?: <[^`]*>)?`", r"\1", doc)
    return doc.replace("``", "")


def build_parser() -> argparse.ArgumentParser:
    """The ``sege-cvx`` argument parser (every option documented, defaults shown by ``--help``)."""
    from . import __version__

    fmt = _HelpFormatter
    parser = _Parser(prog="sege-cvx", formatter_class=fmt, description=(
        "Safe linear stochastic bandits, every arm chosen by a certified convex program. "
        "Two safety models: a stagewise reward floor (SEGE of Khezeli & Bitar, AAAI 2020; "
        "CLUCB; ROFUL adapted) and an unknown linear constraint (ROFUL, GNOP, SafeTS, "
        "Safe-LUCB); your own policy by its import path."),
        epilog=("exit status: 0 done; 2 a user's error, found before any simulation; 1 stopped "
                "after it started (a sweep's finished shards are kept: the same command "
                "resumes it); 130 interrupted"))
    parser.add_argument("--version", action="version", version=f"sege-cvx {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{demo,reproduce,run,sweep,report}")
    demo = sub.add_parser("demo", help="LCB arms by closed form and by Clarabel, side by side",
                          description=_plain(_demo.__doc__), formatter_class=fmt)
    demo.add_argument("--cases", type=positive_int, default=5, help="random instances to compare")
    demo.add_argument("--seed", type=nonnegative_int, default=0, help="seed of the random instances")
    demo.set_defaults(func=_demo)

    rep = sub.add_parser("reproduce", help="the paper's Section 6 study with its figures",
                         description=_plain(_reproduce.__doc__), formatter_class=fmt)
    rep.add_argument("--study", choices=STUDIES, default=STUDIES[0],
                     help="the study: khezeli-bitar-2020, this paper's Section 6 (the default), "
                          "or roful-2024, Figures 2a and 2b of the ROFUL paper (an unknown "
                          "linear constraint)")
    rep.add_argument("--figure", nargs="+", choices=("2a", "2b"), default=["2a", "2b"],
                     help="roful-2024 only: the figures to reproduce (default: both)")
    rep.add_argument("--runs", type=run_count, default=250, help="independent runs (paper: 250)")
    rep.add_argument("--horizon", type=positive_int, default=None,
                     help="stages per run (default 20,000; the paper: 50,000; roful-2024: "
                          "each figure's own, 50,000 and 100,000)")
    rep.add_argument("--seed", type=nonnegative_int, default=0, help="root seed of every run")
    _add_output_options(rep, None)
    rep.add_argument("--full", action="store_true",
                     help="the paper's scale, 250 runs x 50,000 stages (overrides --runs, --horizon)")
    rep.add_argument("--lcb-method", choices=("auto", "closed_form", "solver"), default="closed_form",
                     help="SEGE's LCB arms by the exact fast path, by Clarabel, or automatically")
    rep.add_argument("--no-progress", action="store_true", help="no progress bars")
    rep.add_argument("--print-summary", action="store_true", help="also print summary.json")
    rep.add_argument("--workers", type=positive_int, default=1,
                     help="local worker processes (1: this process, whose kernels use every core)")
    _add_algorithms_option(rep, None)
    rep.set_defaults(func=_reproduce)

    run = sub.add_parser("run", help="SEGE and CLUCB (or --algorithms) on an example arm set",
                         description=_plain(_run.__doc__), formatter_class=fmt)
    run.add_argument("--arm-set", choices=EXAMPLE_NAMES, required=True, help="the example problem")
    run.add_argument("--runs", type=run_count, default=20, help="independent runs")
    run.add_argument("--horizon", type=positive_int, default=3000, help="stages per run")
    run.add_argument("--seed", type=nonnegative_int, default=0, help="root seed of every run")
    _add_output_options(run, "results-run")
    run.add_argument("--lcb-method", choices=("auto", "closed_form", "solver"), default="auto",
                     help="SEGE's LCB arms by the exact fast path, by Clarabel, or automatically")
    run.add_argument("--no-progress", action="store_true", help="no progress bars")
    run.add_argument("--workers", type=positive_int, default=1,
                     help="local worker processes (1: this process, over every core)")
    _add_algorithms_option(run)
    run.set_defaults(func=_run)

    sweep = sub.add_parser("sweep", help="a study spec's problems x algorithms x grids x seeds",
                           description=_plain(_sweep.__doc__), formatter_class=fmt)
    sweep.add_argument("spec", help="the study spec, a TOML file")
    sweep.add_argument("--out", required=True,
                       help="results directory: new, empty, or this spec's sweep to resume")
    sweep.add_argument("--overwrite", action="store_true",
                       help="delete an existing --out that holds anything but this spec's sweep "
                            "(or this spec's sweep of a problem or software that has changed)")
    sweep.add_argument("--workers", type=positive_int, default=None,
                       help="local worker processes (default: every core)")
    sweep.add_argument("--scheduler", default=None,
                       help="a Dask scheduler's address, e.g. tcp://HOST:8786 (instead of local "
                            "workers); a Dask cluster runs whatever code is sent to it: connect "
                            "only to clusters you control")
    sweep.add_argument("--shard-runs", type=positive_int, default=None,
                       help="runs per shard (default 50; results do not depend on it)")
    sweep.add_argument("--no-progress", action="store_true", help="no progress bar")
    sweep.set_defaults(func=_sweep)

    report = sub.add_parser("report", help="a finished sweep's table and figures",
                            description=_plain(_report.__doc__), formatter_class=fmt)
    report.add_argument("dir", metavar="DIR", help="the sweep's results directory (run_sweep's out)")
    # SUPPRESS: no "(default: None)" in --help; _validate sets DIR/report.
    report.add_argument("--out", default=argparse.SUPPRESS,
                        help="report directory, made if missing, its report files replaced "
                             "(default: DIR/report)")
    report.add_argument("--by", nargs="+", metavar="COL", default="problem",
                        help="the figures' panels: one per value of these cell columns (problem, "
                             "algorithm, grid parameters); the table has one row per cell")
    report.add_argument("--band", choices=("auto", "quantile", "minmax", "ci", "none"),
                        default="auto",
                        help="the figures' bands: 5-95 %% quantiles over runs, the range over "
                             "runs, 95 %% confidence interval of the mean, or none; auto (the "
                             "default): quantiles for up to two cells a panel, else the interval")
    report.add_argument("--at", nargs="+", type=_int_at_least(1), metavar="T", default=None,
                        help="also report the regret at these checkpoint stages")
    report.set_defaults(func=_report)
    return parser


def _import_beside(spec: str) -> None:
    """Put the spec's directory on the import path, last (installed modules keep their names),
    so that a factory module beside the spec imports without ``PYTHONPATH``: here, and in the
    local worker processes, which start with this process's path; Dask workers that lack the
    module are sent it."""
    folder = str(Path(spec).resolve().parent)
    if folder not in sys.path:
        sys.path.append(folder)


def _algorithm_parameters(algorithms: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """Each of ``--algorithms``'s grid parameters, by name; a ValueError naming a policy that is
    not registered or cannot be imported (an import path's module is looked for in the current
    directory too)."""
    from .policies.registry import grid_parameters, policy_entry

    if any(":" in name for name in algorithms) and "" not in sys.path and "." not in sys.path:
        sys.path.append(str(Path.cwd()))
    try:
        return {name: grid_parameters(policy_entry(name)) for name in algorithms}
    except (ImportError, TypeError, ValueError) as exc:
        raise ValueError(f"argument --algorithms: {exc}") from None


def _validate(args: argparse.Namespace) -> None:
    """Every check that needs no simulation, so a user's mistake costs no computing time."""
    if args.command == "sweep":
        # The spec's shape, then --out (a sweep of this spec there resumes); run_sweep then
        # checks every cell's values, all before any simulation.
        from .experiments.spec import StudySpec
        from .experiments.sweeps.directory import check_sweep_dir

        _import_beside(args.spec)  # first: reading the spec imports its policies' modules
        args.spec_object = StudySpec.from_toml(args.spec)
        check_sweep_dir(args.out, args.spec_object, args.overwrite, args.shard_runs, name="--out",
                   overwrite_hint="--overwrite")
        return
    if args.command == "reproduce":
        algorithms, horizon, out = _STUDY_DEFAULTS[args.study]
        args.algorithms = algorithms if args.algorithms is None else args.algorithms
        args.horizon = horizon if args.horizon is None else args.horizon
        args.out = out if args.out is None else args.out
        if len(set(args.figure)) != len(args.figure):
            raise ValueError(f"argument --figure: each at most once, got {' '.join(args.figure)}")
        # Options of one study only: given to the other, they would be silently ignored.
        own = {"roful-2024": {"figure": ["2a", "2b"]},
               "khezeli-bitar-2020": {"runs": 250, "seed": 0, "full": False,
                                      "lcb_method": "closed_form", "workers": 1}}
        for study, options in own.items():
            if study == args.study:
                continue
            for name, default in options.items():
                if getattr(args, name) != default:
                    raise ValueError(f"argument --{name.replace('_', '-')}: does not apply to "
                                     f"--study {args.study}")
        if args.study == "roful-2024" and args.horizon is not None:
            from .experiments.roful2024 import FIGURES

            shortest = min(FIGURES[f][0] for f in args.figure)
            if args.horizon > shortest:
                raise ValueError(f"argument --horizon: at most {shortest} for Figure(s) "
                                 f"{' '.join(args.figure)}, got {args.horizon}")
    algorithms = getattr(args, "algorithms", None)
    if algorithms is not None and len(set(algorithms)) != len(algorithms):
        raise ValueError(f"argument --algorithms: each at most once, got {' '.join(algorithms)}")
    if algorithms is not None:
        args.grid_parameters = _algorithm_parameters(algorithms)
        model = ("linear_constraint" if getattr(args, "study", None) == "roful-2024"
                 else "stagewise")
        from .policies.registry import safety_model_problem

        for name in algorithms:
            if (wrong := safety_model_problem(name, model)) is not None:
                raise ValueError(f"argument --algorithms: {wrong}")
    if (getattr(args, "horizon", 0) or 0) > MAX_HORIZON:
        raise ValueError(f"argument --horizon: must be at most 2**53 = {MAX_HORIZON}, got "
                         f"{args.horizon}")
    if args.command == "report":  # the results are read here: a directory without is an error
        from pathlib import Path

        from .experiments.sweeps.report import check_report_dir, check_stages
        from .experiments.sweeps.store import load_results

        args.results = load_results(args.dir)
        args.results.panel_keys(args.by)
        check_stages(args.results, args.at)
        out = getattr(args, "out", None)
        if out == "":
            raise ValueError("--out must be a nonempty path, got ''")
        args.out = str(check_report_dir(Path(args.dir) / "report" if out is None else Path(out)))
        return
    if getattr(args, "out", None) is not None:
        from .experiments.outputs import check_output_dir

        check_output_dir(args.out, args.overwrite, name="--out", overwrite_hint="--overwrite")


def _sweep_started(out: str) -> bool:
    """Whether ``out`` holds a sweep's record (a sweep interrupted while checking its cells has
    written nothing)."""
    from pathlib import Path

    try:
        return (Path(out) / "sweep.json").is_file()
    except OSError:
        return False


def _one_line_warnings(message, category, filename, lineno, file=None, line=None) -> None:
    """``warnings.showwarning`` for the command line: sege_cvx's own warnings as one line."""
    from .experiments.sweeps.errors import SweepWarning

    if issubclass(category, SweepWarning):
        print(f"sege-cvx: warning: {message}", file=sys.stderr if file is None else file)
    else:
        _SHOW_WARNING(message, category, filename, lineno, file, line)


_SHOW_WARNING = warnings.showwarning


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``sege-cvx`` console script.

    Exit status: 0 when the command completed; 2 for a user's error (a bad option value, an
    unusable ``--out``, a problem or parameter value of the study that cannot run), found before
    any simulation starts; 1 when a command stopped after it started (a worker process died, a
    shard failed, a file could not be written: a sweep's finished shards are kept, and the same
    command resumes it); 130 when interrupted.  Each error is one line ``sege-cvx: error: ...``
    on stderr.
    """
    # Once per process (unregister first: main may be called more than once, as tests do).
    atexit.unregister(_exit_without_collecting)
    atexit.register(_exit_without_collecting)
    with warnings.catch_warnings():
        warnings.showwarning = _one_line_warnings
        return _main(argv)


def _exit_without_collecting() -> None:
    """At the interpreter's exit: move every object to the collector's permanent generation
    (:func:`gc.freeze`), so that the collections the interpreter runs as it tears its modules
    down skip the objects of numba, matplotlib and pandas (about half a second of a study's
    exit on a 2-core machine: ``benchmarks/bench_paper_scale.py``).  Objects still go when
    their last reference does; every file the command wrote is already closed."""
    gc.freeze()


def _main(argv: Sequence[str] | None) -> int:
    from ._numba import compile_timer
    from .experiments.outputs import OutputPathError
    from .experiments.spec import SpecError

    parser = build_parser()
    args = parser.parse_args(argv)
    args.command_line = ["sege-cvx", *argv] if argv is not None else list(sys.argv)
    try:
        _validate(args)
    except (ValueError, TypeError) as exc:
        parser.error(str(exc))
    try:
        with compile_timer() as compiling:
            status = args.func(args)
        if compiling.seconds >= 1.0 and not getattr(args, "compile_reported", False):
            print(f"(numba compiled kernels for {compiling.seconds:.1f} s of this command, once "
                  "on this machine: they are cached for later runs)")
        return status
    except _StoppedError as exc:
        print(f"sege-cvx: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
    except _UserError as exc:
        parser.error(str(exc))
    except SpecError as exc:  # a problem or cell that cannot run, found before any simulation
        parser.error(str(exc))
    except ConnectionError as exc:
        from .experiments.sweeps.workers import SchedulerError  # loaded already if it raised this

        if not isinstance(exc, SchedulerError):
            raise
        parser.error(str(exc))  # --scheduler unreachable, found before anything is written
    except OutputPathError as exc:  # --out changed while the study ran; nothing was published
        parser.error(f"--out {args.out!r} changed while the study ran, nothing was published: {exc}")
    except KeyboardInterrupt:
        done = f"results are complete in {args.out}" if getattr(args, "published", False) else (
            f"the finished shards are saved in {args.out}: rerun the same command to resume"
            if args.command == "sweep" and _sweep_started(args.out) else
            "no results were written" if getattr(args, "out", None) is None else
            f"the report's files in {args.out} may be incomplete" if args.command == "report" else
            f"nothing was written to {args.out}")
        print(f"sege-cvx: interrupted; {done}", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

