"""The paper's study (Section 6): SEGE against the discretized CLUCB baseline on a BanditProblem."""

from __future__ import annotations

import json
import multiprocessing
import os
import pickle
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .._numba import cached, compile_timer, has_disk_cache
from .._validation import as_positive_int
from ..arm_sets import Ball
from ..policies.registry import (
    grid_parameters,
    policy_entry,
    policy_stem,
)
from ..policies.sege import SEGE
from ..problems.problem import BanditProblem, paper_problem
from ..simulation import SimulationResult, run_seeds, simulate
from ..stages.statistics import PAPER_CHECKPOINTS, QUANTILES
from .outputs import atomic_output_dir, provenance, write_manifest
from .spec import StudySpec

if TYPE_CHECKING:
    from .sweeps.store import SweepResults

#: Quantile levels of the per-checkpoint distributions over runs (``arrays.npz``, figures).
#: Stages of the safe-set figure (paper Figure 3), up to the horizon.
SAFE_SET_STAGES = (250, 500, 1000, 2000, 5000, 10000, 50000)
#: The paper's scale: 250 runs of 50,000 stages.
PAPER_RUNS, PAPER_HORIZON = 250, 50_000


@dataclass
class StudyResult:
    """Each algorithm's simulation (``results``, by name, in the study's order), the summary
    written to ``summary.json``, and the sweep's per-run and per-checkpoint tables
    (``runs.parquet``, ``curves.parquet``) with its manifest: ``sweep``, a
    :class:`~sege_cvx.experiments.sweeps.store.SweepResults` whose ``path`` is None (the sweep
    ran in a temporary directory, its shards are gone)."""

    setup: BanditProblem
    results: dict[str, SimulationResult]
    summary: dict = field(default_factory=dict)
    sweep: SweepResults | None = None

    @property
    def sege(self) -> SimulationResult | None:
        """SEGE's simulation (None if the study did not run SEGE)."""
        return self.results.get("SEGE")

    @property
    def clucb(self) -> SimulationResult | None:
        """CLUCB's simulation (None if the study did not run CLUCB)."""
        return self.results.get("CLUCB")


def _loglog_slope(stages: np.ndarray, regret_mean: np.ndarray) -> float | None:
    """Least-squares slope of log(mean regret) against log(t) over the checkpoint stages of the
    last decade (``t >= T / 10``).

    Stages with zero regret have no logarithm and are left out; ``None`` (JSON ``null``) when
    fewer than two stages remain, e.g. for a horizon of 1.
    """
    keep = (stages >= max(1, stages[-1] // 10)) & (regret_mean > 0)
    if keep.sum() < 2:
        return None
    slope = float(np.polyfit(np.log(stages[keep]), np.log(regret_mean[keep]), 1)[0])
    return slope if np.isfinite(slope) else None


def _reported(horizon: int) -> list[int]:
    """The paper's checkpoints below the horizon, and the horizon."""
    return [c for c in PAPER_CHECKPOINTS if c < horizon] + [horizon]


def summarize(result: SimulationResult, threshold: float, seed: int) -> dict:
    """Safety and regret figures common to both algorithms (keys as in ``summary.json``).

    Counted at every stage from the running statistics (violations, smallest reward, the
    conservative constraint) and read at the checkpoint stages (regret).
    """
    if threshold != result.threshold:
        raise ValueError(f"threshold {threshold} differs from the simulation's {result.threshold}")
    st = result.stats
    first = st.first_violation[st.first_violation >= 0]
    rows = {c: st.at(c) for c in _reported(result.horizon)}
    return {
        "runs": result.n_runs,
        "horizon": result.horizon,
        "seed": seed,
        "wall_seconds": round(result.wall_seconds, 3),
        "safety_violations": int(st.total_violations.sum()),
        "first_violation_stage": int(first.min()) if first.size else None,
        "min_expected_reward": float(st.min_reward.min()),
        "regret_mean": {str(c): float(st.regret[r].mean()) for c, r in rows.items()},
        "regret_min": {str(c): float(st.regret[r].min()) for c, r in rows.items()},
        "regret_max": {str(c): float(st.regret[r].max()) for c, r in rows.items()},
        "conservative_constraint_met_all_runs": bool(st.conservative_met.all()),
        "runs_meeting_conservative_constraint": int(st.conservative_met.sum()),
        "regret_loglog_slope_last_decade": _loglog_slope(st.checkpoints, st.regret.mean(axis=1)),
    }


#: The paper's study (Section 6): SEGE against CLUCB, the default algorithms of a study.
PAPER_ALGORITHMS = ("SEGE", "CLUCB")


def warm_up(lcb_method: str = "auto", problem: BanditProblem | None = None,
            algorithms: Sequence[str] = PAPER_ALGORITHMS, *,
            processes: bool = False) -> tuple[float, bool]:
    """Compile (or load from numba's cache) every kernel the study's simulations use.

    Plays a few stages of each of ``algorithms`` (SEGE with LCB arms by ``lcb_method``) on
    ``problem`` (default the paper's); the kernels are specialized by array types and by the
    kind of arm set (an ellipsoid's compiled stages differ from a polytope's), so the same
    compiled code then serves any problem of that kind and any size.

    Parameters
    ----------
    lcb_method : str
        SEGE's ``lcb_method``.
    problem : BanditProblem, optional
        Default :func:`paper_problem`.
    algorithms : sequence of str
        Registered policy names or import paths (:meth:`BanditProblem.policy`).
    processes : bool
        With more than one core, compile the algorithms after the first whose stage loop is
        not in numba's cache in helper processes (started by ``spawn``: call from under
        ``if __name__ == "__main__":``) while this process compiles the first.  The helpers
        leave their kernels in the cache, from which this process then loads them; whatever a
        helper did not leave there is compiled here, so nothing rests on them.  No helper
        outlives this process or an interrupted warm-up.

    Returns
    -------
    seconds : float
        How long it took: seconds the first time on a machine, a fraction of a second once the
        kernels are cached.
    compiled : bool
        Whether any kernel was compiled (rather than loaded from the cache).
    """
    start = time.perf_counter()
    setup = paper_problem() if problem is None else problem
    names = study_algorithms(algorithms)
    helpers = _compile_in_processes(names[1:], setup, lcb_method) if processes else {}
    compiled = 0.0
    try:
        for name in names:
            if name in helpers:  # its kernels compiled there: this process then loads them
                compiled += _helper_seconds(*helpers.pop(name))
            compiled += play_a_few_stages(name, setup, lcb_method)
    finally:  # interrupted: no helper outlives the warm-up
        for process, _ in helpers.values():
            process.terminate()
            process.join()
    return time.perf_counter() - start, compiled > 0.0


def play_a_few_stages(algorithm: str, problem: BanditProblem, lcb_method: str = "auto") -> float:
    """Three stages of two runs of ``algorithm`` on ``problem``: every kernel its simulations use
    compiled or loaded.  Returns the seconds numba spent compiling (0 if all were cached)."""
    with compile_timer() as timer:
        policy_seeds, noise_seeds = run_seeds(0, 2)
        policy = problem.policy(algorithm, 2, policy_seeds, **_lcb_setting(algorithm, lcb_method))
        simulate(policy, problem.bandit(noise_seeds), 3, misspecified=problem.misspecified)
    return timer.seconds


def _compile_in_processes(algorithms: Sequence[str], problem: BanditProblem,
                          lcb_method: str) -> dict:
    """A started helper process, and the pipe it answers on, per algorithm of ``algorithms``
    whose stage loop numba's disk cache does not hold (none on one core, or without a disk
    cache, or for a problem that cannot be pickled)."""
    if (os.cpu_count() or 1) < 2:
        return {}
    todo = [name for name in algorithms
            if any(has_disk_cache(kernel) and not cached(kernel)
                   for kernel in _compiled_kernels(name, problem, lcb_method))]
    context = multiprocessing.get_context("spawn")
    helpers = {}
    for name in todo:
        receive, send = context.Pipe(duplex=False)
        # Daemonic: ended with this process; the helper also exits if this process is killed.
        process = context.Process(target=_compile_in_helper, daemon=True,
                                  name=f"sege-cvx-compile-{name}",
                                  args=(send, name, problem, lcb_method, os.getpid()))
        try:
            process.start()
        except (OSError, TypeError, AttributeError, pickle.PicklingError):  # compile it here
            receive.close()
            continue
        finally:
            send.close()
        helpers[name] = (process, receive)
    return helpers


def _compile_in_helper(send, algorithm: str, problem: BanditProblem, lcb_method: str,
                       parent: int) -> None:
    """A helper process of :func:`warm_up`: :func:`play_a_few_stages`, then the seconds it spent
    compiling (None if it failed) on ``send``; it follows its parent (pid ``parent``) as the
    sweep's workers do (:func:`~sege_cvx.experiments.sweeps.workers.follow_parent`)."""
    from .sweeps.workers import follow_parent

    follow_parent(parent)
    try:
        seconds = play_a_few_stages(algorithm, problem, lcb_method)
    except Exception:  # noqa: BLE001 - the parent compiles whatever this did not
        seconds = None
    send.send(seconds)
    send.close()


def _helper_seconds(process, receive) -> float:
    """The seconds a helper spent compiling, once it has finished (0 if it failed)."""
    try:
        seconds = receive.recv()
    except EOFError:  # it ended without an answer
        seconds = None
    finally:
        receive.close()
        process.join()
    return seconds or 0.0


def _compiled_kernels(algorithm: str, problem: BanditProblem, lcb_method: str) -> tuple:
    """The compiled kernels of ``algorithm``'s policy on ``problem`` (its stage loop on that kind
    of set: :attr:`~sege_cvx.Policy.compiled_kernels` of a one-run policy)."""
    return problem.policy(algorithm, 1, 0, **_lcb_setting(algorithm, lcb_method)).compiled_kernels


def _lcb_setting(algorithm: str, lcb_method: str) -> dict:
    """``{"lcb_method": lcb_method}`` for a policy that has that parameter (SEGE), else ``{}``."""
    return ({"lcb_method": lcb_method} if "lcb_method" in grid_parameters(policy_entry(algorithm))
            else {})


def study_algorithms(algorithms: Sequence[str]) -> tuple[str, ...]:
    """``algorithms`` checked: one or more policies (registered names, or import paths
    ``"module:Class"``), each once."""
    names = tuple(algorithms) if not isinstance(algorithms, str) else (algorithms,)
    if not names or len(set(names)) != len(names):
        raise ValueError(f"algorithms must name one or more policies, each once; got "
                         f"{list(names)!r}")
    stems: dict[str, str] = {}
    for name in names:
        policy_entry(name)  # a one-line error naming the known ones
        other = stems.setdefault(policy_stem(name), name)
        if other != name:  # their figures and arrays would overwrite each other's
            raise ValueError(f"algorithms {other!r} and {name!r} share the file stem "
                             f"{policy_stem(name)!r} of their figures and arrays; register one "
                             "under another name")
    return names


def study_spec(problem: str = "paper", runs: int = 100, horizon: int = 10_000, seed: int = 0,
               lcb_method: str = "auto",
               algorithms: Sequence[str] = PAPER_ALGORITHMS) -> StudySpec:
    """The built-in spec of a study: ``algorithms`` (SEGE's LCB arms by ``lcb_method``) on
    ``problem`` (a built-in example's name, or a ``"module:callable"`` factory), in that order."""
    problem_table = {"factory": problem} if ":" in problem else {"name": problem}
    cells = []
    for name in study_algorithms(algorithms):
        grid = {key: [value] for key, value in _lcb_setting(name, lcb_method).items()}
        cells.append({"name": name, "grid": grid} if grid else {"name": name})
    return StudySpec.from_dict({"seed": seed, "runs": runs, "horizon": horizon,
                                "problems": [problem_table], "algorithms": cells})


def run_study(
    runs: int = 100,
    horizon: int = 10_000,
    seed: int = 0,
    lcb_method: str = "auto",
    problem: str = "paper",
    progress: bool = False,
    workers: int = 1,
    algorithms: Sequence[str] = PAPER_ALGORITHMS,
) -> StudyResult:
    """Simulate ``algorithms`` (default SEGE and CLUCB, the paper's study) on the same seeds and
    summarize each: the sweep of :func:`study_spec`, run by
    :func:`~sege_cvx.experiments.sweeps.run.run_sweep`.

    Parameters
    ----------
    runs, horizon : int
        Independent runs and stages per run (the paper: 250 and 50,000).
    seed : int
        The study seed; run ``i`` of both algorithms uses the seed
        :func:`~sege_cvx.experiments.sweeps.shards.run_seed` derives from it, the problem and ``i``.
    lcb_method : {"auto", "closed_form", "solver"}
        How SEGE computes LCB arms.
    problem : str
        A built-in example (``"paper"``, see :data:`~sege_cvx.problems.examples.EXAMPLES`)
        or a ``"module:callable"`` factory returning a :class:`BanditProblem`.
    progress : bool
        A tqdm progress bar over shards on stderr.
    workers : int
        Local worker processes; 1 (default) runs in this process, whose compiled loops spread
        the runs over every core.
    algorithms : sequence of str
        One or more policies, each once: registered names
        (:func:`~sege_cvx.policies.registry.registered_policies`) or import paths
        ``"module:Class"`` (ROFUL with its default ``radius="self_normalized"``).

    Returns
    -------
    StudyResult

    Raises
    ------
    SweepError
        A worker process died or a shard failed (:class:`~sege_cvx.experiments.sweeps.errors.SweepError`).
    """
    from .sweeps.errors import SweepError
    from .sweeps.run import run_sweep
    from .sweeps.shards import build_problem, run_seed

    runs, horizon = as_positive_int("runs", runs), as_positive_int("horizon", horizon)
    names = study_algorithms(algorithms)
    spec = study_spec(problem, runs, horizon, seed, lcb_method, names)
    setup = build_problem(spec.problems[0])
    shard_runs = runs if workers == 1 else None
    # The study is a client of its sweep's results: statistics, wall times and fallbacks as
    # any reader of a sweep gets them (read before the temporary directory goes).
    with tempfile.TemporaryDirectory(prefix="sege-cvx-study-") as tmp:
        try:
            results = run_sweep(spec, Path(tmp) / "sweep", workers=workers,
                                shard_runs=shard_runs, progress=progress)
        except SweepError as exc:  # its shards go with the temporary directory: no resume
            raise SweepError(f"the study stopped: {exc.reason}") from exc
        stats = {name: results.run_statistics(algorithm=name) for name in names}
    # The tables and manifest stay in memory; nothing may read the deleted directory.
    results = replace(results, path=None)
    optimal = results.manifest["problems"][spec.problems[0].label]["optimal_reward"]
    rows = {name: results.runs[results.runs["algorithm"] == name] for name in names}
    threshold = setup.setting.safety.threshold
    simulations = {name: SimulationResult(stats[name], optimal, threshold,
                                          float(rows[name]["wall_seconds"].to_numpy().sum()))
                   for name in names}
    # SEGE's constants (rho, L, sigma^2)
    sege = setup.policy(SEGE, 1, run_seeds(0, 1)[0], lcb_method=lcb_method)
    summary = {"setup": {**setup.describe(), "rho_bar": sege.rho_bar, "L": sege.L,
                         "sigma2": sege.sigma2, "exploration": sege.exploration.kind}}
    for name in names:
        result = simulations[name]
        if name == "SEGE" and isinstance(setup.arm_set, Ball) and setup.arm_set.dim == 2:
            result.snapshots = _replay_snapshots(setup, run_seed(seed, spec.problems[0].label, 0),
                                                 lcb_method, horizon, result.stats)
        block = summarize(result, threshold, seed)
        block.update(_algorithm_summary(name, result, setup, lcb_method, horizon))
        block.update({"solver_fallbacks": int(rows[name]["fallbacks"].to_numpy().sum()),
                      "fallback_reasons": dict(results.fallback_reasons(algorithm=name))})
        summary[name] = block
    return StudyResult(setup, simulations, summary, results)


def _algorithm_summary(name: str, result: SimulationResult, setup: BanditProblem,
                       lcb_method: str, horizon: int) -> dict:
    """What ``summary.json`` says of one algorithm beyond :func:`summarize`: its own figures and
    constants (:meth:`~sege_cvx.Policy.summary`) and its decision counts by name."""
    st = result.stats
    policy = setup.policy(name, 1, run_seeds(0, 1)[0], **_lcb_setting(name, lcb_method))
    counts = {label: int(v) for label, v in zip(policy.decision_names,
                                                st.decision_counts.sum(axis=0), strict=False)
              if label is not None}
    return {**policy.summary(st, _reported(horizon)), "decision_counts": counts}


def _replay_snapshots(setup: BanditProblem, seed: int, lcb_method: str, horizon: int,
                      stats) -> dict:
    """Run 0's ``(theta_hat, V, r_t)`` at the safe-set stages (paper Fig. 3), from replaying
    run 0 alone up to the last of them: a run's arithmetic is the same alone as in any batch,
    which the replay checks against the sweep's regret of run 0."""
    stages = [t for t in SAFE_SET_STAGES if t <= horizon]
    if not stages:
        return {}
    policy_seeds, noise_seeds = run_seeds(seed, 1)
    replay = simulate(setup.policy("SEGE", 1, policy_seeds, lcb_method=lcb_method),
                      setup.bandit(noise_seeds), stages[-1],
                      snapshot_stages=stages, checkpoints=[stages[-1]],
                      misspecified=setup.misspecified)
    if replay.stats.cum_regret[0] != stats.regret[stats.at(stages[-1]), 0]:
        raise RuntimeError("replaying run 0 alone gave another regret than in the study: "
                           f"{replay.stats.cum_regret[0]!r} != "
                           f"{stats.regret[stats.at(stages[-1]), 0]!r}")
    return replay.snapshots


def write_outputs(
    study: StudyResult,
    out_dir: str | Path,
    overwrite: bool = False,
    *,
    command_line: Sequence[str] | None = None,
) -> list[Path]:
    """Write ``summary.json``, ``arrays.npz`` (no pickle), the figures, the sweep's
    ``runs.parquet`` and ``curves.parquet`` (so that :func:`~sege_cvx.experiments.sweeps.store.load_results`
    and ``sege-cvx report`` read the directory), and ``manifest.json``.

    All files are written into a hidden directory beside ``out_dir`` and published together by
    one rename (see :func:`~sege_cvx.experiments.outputs.atomic_output_dir`): an error or an
    interrupt leaves ``out_dir`` as it was, never half-written.

    Parameters
    ----------
    study : StudyResult
    out_dir : str or path-like
        The results directory: missing, empty, or (with ``overwrite``) replaced whole.
    overwrite : bool
        Replace an existing non-empty ``out_dir`` (its old files all disappear).
    command_line : sequence of str, optional
        Recorded in the provenance; default ``sys.argv``.

    Returns
    -------
    list of Path
        The files written, at their final location under ``out_dir``; ``manifest.json`` last.

    Raises
    ------
    OutputPathError
        A ``ValueError`` if ``out_dir`` is a file, lies under a file, cannot be written, or is a
        non-empty directory and ``overwrite`` is false.
    """
    from .figures import write_figures

    seed = next((block["seed"] for name, block in study.summary.items() if name != "setup"),
                None)
    prov = provenance(command_line, seed)
    with atomic_output_dir(out_dir, overwrite) as tmp:
        summary = {**study.summary, "provenance": prov}
        (tmp / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        np.savez_compressed(tmp / "arrays.npz", **_arrays(study))
        names = ["summary.json", "arrays.npz", *(p.name for p in write_figures(study, tmp))]
        extra = None
        if study.sweep is not None:
            for table in ("runs", "curves"):
                getattr(study.sweep, table).to_parquet(tmp / f"{table}.parquet", index=False)
                names.append(f"{table}.parquet")
            extra = {key: study.sweep.manifest[key] for key in ("spec", "problems")}
        names.append(write_manifest(tmp, prov, extra).name)
    return [Path(out_dir) / name for name in names]


def _arrays(study: StudyResult) -> dict[str, np.ndarray]:
    """``arrays.npz``'s contents: each algorithm's per-checkpoint aggregates across runs
    (:meth:`~sege_cvx.stages.statistics.RunStatistics.aggregates`, prefixed by the
    algorithm's :func:`~sege_cvx.policies.registry.policy_stem`: ``sege_``, ``clucb_``,
    ``roful_``), and SEGE's run 0's
    safe-set snapshots.

    ``*_reward_window_min`` / ``*_reward_window_max`` are the extremes over runs *and* over the
    stages since the previous checkpoint, so no dip between checkpoints is lost.
    """
    arrays = {}
    for name, res in study.results.items():
        arrays.update({f"{policy_stem(name)}_{key}": value
                       for key, value in res.stats.aggregates().items()})
    arrays["quantile_levels"] = np.array(QUANTILES)
    for t, (theta_hat, V, r) in (study.sege.snapshots if study.sege else {}).items():
        arrays[f"sege_run0_stage{t}_theta_hat"] = theta_hat
        arrays[f"sege_run0_stage{t}_V"] = V
        arrays[f"sege_run0_stage{t}_radius"] = np.array(r)
    return arrays

