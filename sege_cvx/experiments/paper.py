"""The paper's study (Section 6): SEGE against the discretized CLUCB baseline on a BanditProblem."""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numba.core.dispatcher import Dispatcher

from .._validation import as_positive_int
from ..arm_sets import Ball
from ..policies.sege import EXPLOIT
from ..simulation import LinearBandit, SimulationResult, run_seeds, simulate
from ..simulation.statistics import PAPER_CHECKPOINTS, QUANTILES
from .outputs import atomic_output_dir, provenance, write_manifest
from .problem import BanditProblem, paper_problem
from .spec import StudySpec

if TYPE_CHECKING:
    from .results import SweepResults

#: Quantile levels of the per-checkpoint distributions over runs (``arrays.npz``, figures).
#: Stages of the safe-set figure (paper Figure 3), up to the horizon.
SAFE_SET_STAGES = (250, 500, 1000, 2000, 5000, 10000, 50000)
#: The paper's scale: 250 runs of 50,000 stages.
PAPER_RUNS, PAPER_HORIZON = 250, 50_000


@dataclass
class StudyResult:
    """Both algorithms' simulations, the summary written to ``summary.json``, and the sweep's
    per-run and per-checkpoint tables (``runs.parquet``, ``curves.parquet``)."""

    setup: BanditProblem
    sege: SimulationResult
    clucb: SimulationResult
    summary: dict = field(default_factory=dict)
    sweep: SweepResults | None = None


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


def warm_up(lcb_method: str = "auto", problem: BanditProblem | None = None) -> tuple[float, bool]:
    """Compile (or load from numba's cache) every kernel the study's simulations use.

    Runs SEGE (with LCB arms by ``lcb_method``) and CLUCB for a few stages of ``problem``
    (default the paper's); the kernels are specialized by array types and by the kind of arm
    set (an ellipsoid's compiled stages differ from a polytope's), so the same compiled code
    then serves any problem of that kind and any size.

    Returns
    -------
    seconds : float
        How long it took: tens of seconds the first time on a machine, a fraction of a second
        once the kernels are cached.
    compiled : bool
        Whether any kernel was compiled (rather than loaded from the cache).
    """
    start = time.perf_counter()
    misses = _cache_misses()
    setup = paper_problem() if problem is None else problem
    policy_seeds, noise_seeds = run_seeds(0, 2)
    for policy in (setup.sege(2, policy_seeds, lcb_method), setup.clucb(2)):
        simulate(policy, LinearBandit(setup.theta_star, setup.noise_sd, noise_seeds), 3)
    return time.perf_counter() - start, _cache_misses() > misses


def _cache_misses() -> int:
    """Kernels of this package compiled so far in this process (numba's cache misses)."""
    total = 0
    for name, module in list(sys.modules.items()):
        if name.startswith("sege_cvx") and module is not None:
            for value in vars(module).values():
                if isinstance(value, Dispatcher) and value._cache is not None:
                    total += sum(value.stats.cache_misses.values())
    return total


def study_spec(problem: str = "paper", runs: int = 100, horizon: int = 10_000, seed: int = 0,
               lcb_method: str = "auto") -> StudySpec:
    """The built-in spec of a study: SEGE (LCB arms by ``lcb_method``) and CLUCB on ``problem``
    (a built-in example's name, or a ``"module:callable"`` factory)."""
    problem_table = {"factory": problem} if ":" in problem else {"name": problem}
    return StudySpec.from_dict({
        "seed": seed, "runs": runs, "horizon": horizon, "problems": [problem_table],
        "algorithms": [{"name": "SEGE", "grid": {"lcb_method": [lcb_method]}}, {"name": "CLUCB"}]})


def run_study(
    runs: int = 100,
    horizon: int = 10_000,
    seed: int = 0,
    lcb_method: str = "auto",
    problem: str = "paper",
    progress: bool = False,
    workers: int = 1,
) -> StudyResult:
    """Simulate SEGE and CLUCB on the same seeds and summarize both: the sweep of
    :func:`study_spec`, run by :func:`~sege_cvx.experiments.sweep.run_sweep`.

    Parameters
    ----------
    runs, horizon : int
        Independent runs and stages per run (the paper: 250 and 50,000).
    seed : int
        The study seed; run ``i`` of both algorithms uses the seed
        :func:`~sege_cvx.experiments.shards.run_seed` derives from it, the problem and ``i``.
    lcb_method : {"auto", "closed_form", "solver"}
        How SEGE computes LCB arms.
    problem : str
        A built-in example (``"paper"``, see :data:`~sege_cvx.experiments.examples.EXAMPLES`)
        or a ``"module:callable"`` factory returning a :class:`BanditProblem`.
    progress : bool
        A tqdm progress bar over shards on stderr.
    workers : int
        Local worker processes; 1 (default) runs in this process, whose compiled loops spread
        the runs over every core.

    Returns
    -------
    StudyResult

    Raises
    ------
    SweepError
        A worker process died or a shard failed (:class:`~sege_cvx.experiments.sweep.SweepError`).
    """
    import pyarrow as pa

    from .files import Directory
    from .shards import build_problem, run_seed, shard_statistics
    from .sweep import SweepError, plan_shards, read_cell, run_sweep

    runs, horizon = as_positive_int("runs", runs), as_positive_int("horizon", horizon)
    spec = study_spec(problem, runs, horizon, seed, lcb_method)
    setup = build_problem(spec.problems[0])
    shard_runs = runs if workers == 1 else None
    with tempfile.TemporaryDirectory(prefix="sege-cvx-study-") as tmp:
        try:
            results = run_sweep(spec, Path(tmp) / "sweep", workers=workers,
                                shard_runs=shard_runs, progress=progress)
        except SweepError as exc:  # its shards go with the temporary directory: no resume
            raise SweepError(f"the study stopped: {exc.reason}") from exc
        manifest = results.manifest
        tasks = plan_shards(spec, manifest["shard_runs"], None,
                            {label: p["fingerprint"] for label, p in manifest["problems"].items()},
                            manifest["versions"])
        with Directory(results.path / "shards", "the study's shards") as shards:
            tables = [pa.concat_tables(read_cell(shards, [t for t in tasks if t.cell == cell]))
                      for cell in (0, 1)]
    optimal = results.manifest["problems"][spec.problems[0].label]["optimal_reward"]
    sege_result, clucb_result = (
        SimulationResult(shard_statistics(table), optimal, setup.threshold,
                         float(table.column("wall_seconds").to_numpy().sum()))
        for table in tables)
    reasons = Counter()
    for shard in results.manifest["sweep"]:
        if shard["cell"] == 0:
            reasons.update(shard["fallback_reasons"])
    sege = setup.sege(1, run_seeds(0, 1)[0], lcb_method)  # the constants (rho, L, sigma^2)
    clucb = setup.clucb(1)
    if isinstance(setup.arm_set, Ball) and setup.arm_set.dim == 2:
        sege_result.snapshots = _replay_snapshots(setup, run_seed(seed, spec.problems[0].label, 0),
                                                  lcb_method, horizon, sege_result.stats)

    s_sege = summarize(sege_result, setup.threshold, seed)
    st = sege_result.stats
    explored = st.decisions.sum(axis=2) - st.decisions[:, :, EXPLOIT]  # N_t per checkpoint, run
    s_sege.update({
        "lcb_method": lcb_method,
        "rho": sege.rho,
        "exploration_stages_mean": float(explored[-1].mean()),
        "exploration_over_sqrt_t": {str(c): float(explored[st.at(c)].mean() / np.sqrt(c))
                                    for c in _reported(horizon)},
        "decision_counts": {name: int(v) for name, v in zip(
            ("exploit", "explore_lcb", "explore_baseline"), st.decision_counts.sum(axis=0),
            strict=True)},
        "solver_fallbacks": int(tables[0].column("fallbacks").to_numpy().sum()),
        "fallback_reasons": dict(reasons),
    })
    s_clucb = summarize(clucb_result, setup.threshold, seed)
    s_clucb.update({
        "n_arms": int(clucb.arms.shape[0]),
        "discretization_error": clucb.discretization_error,
        # CLUCB's baseline plays carry decision code 2 (EXPLORE_BASELINE's column).
        "baseline_plays_mean": float(clucb_result.stats.decision_counts[:, 2].mean()),
    })
    summary = {"setup": {**setup.describe(), "rho_bar": sege.rho_bar, "L": sege.L,
                         "sigma2": sege.sigma2, "exploration": sege.exploration.kind},
               "SEGE": s_sege, "CLUCB": s_clucb}
    return StudyResult(setup, sege_result, clucb_result, summary, results)


def _replay_snapshots(setup: BanditProblem, seed: int, lcb_method: str, horizon: int,
                      stats) -> dict:
    """Run 0's ``(theta_hat, V, r_t)`` at the safe-set stages (paper Fig. 3), from replaying
    run 0 alone up to the last of them: a run's arithmetic is the same alone as in any batch,
    which the replay checks against the sweep's regret of run 0."""
    stages = [t for t in SAFE_SET_STAGES if t <= horizon]
    if not stages:
        return {}
    policy_seeds, noise_seeds = run_seeds(seed, 1)
    replay = simulate(setup.sege(1, policy_seeds, lcb_method),
                      LinearBandit(setup.theta_star, setup.noise_sd, noise_seeds), stages[-1],
                      snapshot_stages=stages, checkpoints=[stages[-1]])
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
    ``runs.parquet`` and ``curves.parquet`` (so that :func:`~sege_cvx.experiments.results.load_results`
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

    seed = study.summary.get("SEGE", {}).get("seed")
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
    (:meth:`~sege_cvx.simulation.statistics.RunStatistics.aggregates`, prefixed ``sege_`` and
    ``clucb_``), and run 0's safe-set snapshots.

    ``*_reward_window_min`` / ``*_reward_window_max`` are the extremes over runs *and* over the
    stages since the previous checkpoint, so no dip between checkpoints is lost.
    """
    arrays = {}
    for name, res in (("sege", study.sege), ("clucb", study.clucb)):
        arrays.update({f"{name}_{key}": value for key, value in res.stats.aggregates().items()})
    arrays["quantile_levels"] = np.array(QUANTILES)
    for t, (theta_hat, V, r) in study.sege.snapshots.items():
        arrays[f"sege_run0_stage{t}_theta_hat"] = theta_hat
        arrays[f"sege_run0_stage{t}_V"] = V
        arrays[f"sege_run0_stage{t}_radius"] = np.array(r)
    return arrays
