"""Run a study spec: every cell's runs, sharded over local worker processes or a Dask cluster.

Work is split into shards, blocks of runs of one cell (:mod:`.shards`).  Shards go to a
``concurrent.futures`` executor: this process (one worker), a pool of local worker processes,
or a ``dask.distributed`` client's executor; the scheduling is theirs.  This process writes
each finished shard atomically under ``DIR/shards/`` and, once all are there, merges them into
``DIR/runs.parquet`` (one row per cell x run), ``DIR/curves.parquet`` (one row per cell x
checkpoint) and, last, ``DIR/manifest.json``.  Rerunning the same sweep into the same directory
skips the shards already written, so a killed sweep resumes where it stopped.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import gc
import json
import math
import multiprocessing
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from tqdm.auto import tqdm

from .outputs import (
    MANIFEST,
    OutputPathError,
    check_output_dir,
    check_writable_under,
    provenance,
    write_manifest,
)
from .shards import (
    DECISION_COLUMNS,
    ShardTask,
    build_problem,
    run_shard,
    shard_metadata,
    shard_statistics,
)
from .spec import SpecError, StudySpec


class SchedulerError(ConnectionError):
    """The Dask scheduler given by address cannot be reached; nothing was written."""


#: The sweep's record of what it runs, written first; a rerun must match it to resume.
SWEEP_RECORD = "sweep.json"
#: Runs per shard unless given: small enough to spread a cell over workers and to lose little
#: work when a sweep is killed, large enough for the compiled loops to amortize a call.
DEFAULT_SHARD_RUNS = 50


def run_sweep(
    spec: StudySpec | dict | str | os.PathLike,
    out: str | os.PathLike,
    *,
    workers: int | None = None,
    client=None,
    scheduler: str | None = None,
    shard_runs: int | None = None,
    overwrite: bool = False,
    progress: bool = True,
    command_line: Sequence[str] | None = None,
):
    """Run every cell of ``spec`` (problems x algorithms x grid) over its seeded runs.

    Parameters
    ----------
    spec : StudySpec, dict or path
        The study (a path is read as TOML, see :class:`~sege_cvx.experiments.spec.StudySpec`).
    out : str or path-like
        The results directory: new, empty, or a sweep of the same spec to resume.
    workers : int, optional
        Local worker processes (default: every core).  ``1`` runs the shards in this process,
        whose compiled loops spread runs over all cores themselves.  Ignored with a Dask
        ``client`` or ``scheduler``.
    client : dask.distributed.Client, optional
        Run the shards on this Dask cluster (its workers must be able to import sege_cvx and
        any problem factory of the spec).
    scheduler : str, optional
        A Dask scheduler's address (``"tcp://HOST:8786"``): a client is made for the sweep.
    shard_runs : int, optional
        Runs per shard (default 50, or the value a resumed sweep was started with).  Results
        are the same bit for bit whatever it is.
    overwrite : bool
        Delete an existing ``out`` that holds something else (another spec's sweep, other files).
    progress : bool
        One progress bar over shards on stderr.
    command_line : sequence of str, optional
        Recorded in the manifest; default ``sys.argv``.

    Returns
    -------
    SweepResults
        :func:`~sege_cvx.experiments.results.load_results` of ``out``.

    Raises
    ------
    SpecError
        A spec, problem or parameter value that cannot run: raised before any simulation.
    OutputPathError
        ``out`` cannot hold the sweep.
    SchedulerError
        ``scheduler`` cannot be reached (raised before anything is written to ``out``).

    Notes
    -----
    Run ``i`` of every cell on a problem uses the seed :func:`~.shards.run_seed` derives from
    the study seed, the problem and ``i``, so cells are compared on common random numbers and
    any run can be replayed alone.  Local worker processes are started by ``spawn``: call
    ``run_sweep`` from a script under ``if __name__ == "__main__":``.
    """
    from .results import load_results

    spec = _as_spec(spec)
    workers = _worker_count(workers)
    out, record, resume = _check_dir(out, spec, overwrite, shard_runs)
    problems = check_cells(spec)
    lock = None  # held from the start of the sweep in out to its manifest
    try:
        with _executor(workers, client, scheduler) as (executor, threads):
            # Once a scheduler answered: nothing is written otherwise.
            lock = _start_dir(out, record, resume, overwrite)
            shard_runs = record["shard_runs"]
            tasks = plan_shards(spec, shard_runs, threads)
            shard_dir = out / "shards"
            todo = [t for t in tasks if not _shard_done(shard_dir / f"{t.name}.parquet", t)]
            with tqdm(total=len(tasks), initial=len(tasks) - len(todo), unit="shard",
                      desc="sweep", disable=not progress, smoothing=0.1) as bar:
                for task, table in _finished(executor, todo):
                    _write_atomic(shard_dir / f"{task.name}.parquet",
                                  lambda path, table=table: pq.write_table(table, path))
                    bar.update(1)
        merge_shards(spec, tasks, out, problems)
        record = {"sweep": _shard_status(tasks, out), "spec": spec.to_dict(),
                  "problems": problems, "shard_runs": shard_runs}
        write_manifest(out, provenance(command_line, spec.seed), extra=record)
    finally:
        if lock is not None:
            lock.close()
    return load_results(out)


def _as_spec(spec) -> StudySpec:
    if isinstance(spec, StudySpec):
        return spec
    if isinstance(spec, dict):
        return StudySpec.from_dict(spec)
    if isinstance(spec, str | os.PathLike):
        return StudySpec.from_toml(spec)
    raise TypeError(f"spec must be a StudySpec, a dict or a TOML path, got {type(spec).__name__}")


def _worker_count(workers) -> int:
    if workers is None:
        return os.cpu_count() or 1
    if isinstance(workers, bool) or not isinstance(workers, int | np.integer) or workers < 1:
        raise ValueError(f"workers must be a positive int, got {workers!r}")
    return int(workers)


def _check_dir(out, spec: StudySpec, overwrite: bool, shard_runs: int | None, *,
               name: str = "out", overwrite_hint: str = "overwrite") -> tuple[Path, dict, bool]:
    """Check ``out`` without writing: ``(target, record, resume)``.

    ``out`` may be new or empty, hold this spec's sweep (its ``sweep.json``: resumed), or, with
    ``overwrite``, anything (deleted when the sweep starts).  ``name`` and ``overwrite_hint``
    are how messages name ``out`` and the way to allow deleting it (the command line's
    ``--out`` and ``--overwrite``).
    """
    if shard_runs is not None and (isinstance(shard_runs, bool) or not isinstance(
            shard_runs, int | np.integer) or shard_runs < 1):
        raise ValueError(f"shard_runs must be a positive int, got {shard_runs!r}")
    target = check_output_dir(out, overwrite=True, name=name)
    given = f"{name} {str(out)!r}"
    # check_output_dir probed the parent (where a new directory goes); a sweep also writes in
    # an existing out (resumed, or started in an empty one) and its shards/.
    for directory in (target, target / "shards"):
        if directory.is_dir():
            check_writable_under(directory, given)
    record = {"spec": spec.to_dict(), "shard_runs": int(shard_runs or DEFAULT_SHARD_RUNS)}
    record_path = target / SWEEP_RECORD
    if record_path.exists():
        # This spec's sweep is resumed, with or without overwrite (which deletes only what is
        # not this spec's sweep).
        try:
            previous = _read_record(record_path)
        except (OSError, ValueError) as exc:
            if not overwrite:
                raise OutputPathError(f"{given} holds an unreadable {SWEEP_RECORD} ({exc}); "
                                      f"choose a new directory or pass {overwrite_hint}") from None
            previous = {}
        same_spec = previous.get("spec") == record["spec"]
        same_shards = shard_runs is None or shard_runs == previous.get("shard_runs")
        if same_spec and same_shards:
            return target, previous, True
        if not overwrite and not same_spec:
            raise OutputPathError(f"{given} holds a sweep of another spec; choose a new "
                                  f"directory, or pass {overwrite_hint} to delete it")
        if not overwrite:
            raise OutputPathError(f"{given} holds this sweep in shards of "
                                  f"{previous.get('shard_runs')} runs, not {shard_runs}: resume it "
                                  "with that shard size (results do not depend on it)")
    if target.exists() and any(target.iterdir()) and not overwrite:
        raise OutputPathError(f"{given} already exists and holds no sweep of this spec; choose "
                              f"a new directory, or pass {overwrite_hint} to delete it")
    return target, record, False


def _read_record(path: Path) -> dict:
    """A sweep's ``sweep.json``: its spec and its shard size; ValueError if damaged."""
    record = json.loads(path.read_text())
    if not isinstance(record, dict) or not isinstance(record.get("spec"), dict):
        raise ValueError("no spec in it")
    size = record.get("shard_runs")
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"shard_runs {size!r} is not a positive int")
    return record


def _start_dir(target: Path, record: dict, resume: bool, overwrite: bool):
    """Start the sweep in ``target`` (checked by :func:`_check_dir`), or resume it there, and
    return the lock held on its ``sweep.json`` until the sweep ends (None where the platform
    has no ``flock``).

    A finished sweep's ``manifest.json`` is removed first, so that it is present only while
    every file it lists is complete; so are the partial files of a killed sweep's writes.

    Sweeps into one directory exclude each other: a new sweep claims ``sweep.json`` by creating
    it exclusively, so that one started there meanwhile (after ``target`` was checked) is
    neither deleted nor joined, and a sweep running there holds the lock, so that another
    neither deletes its partial files nor its directory.
    """
    record_path = target / SWEEP_RECORD
    if resume:
        lock = _lock(record_path, target)
        (target / "shards").mkdir(exist_ok=True)  # e.g. deleted to save space after the merge
        (target / MANIFEST).unlink(missing_ok=True)
        for partial in target.rglob(".*.partial-*"):
            partial.unlink()
        return lock
    if overwrite and target.exists() and any(target.iterdir()):
        if record_path.exists() and (running := _lock(record_path, target)) is not None:
            running.close()  # not running: _lock refuses to let a running sweep be deleted
        shutil.rmtree(target)
    (target / "shards").mkdir(parents=True, exist_ok=True)
    claim = target / f".{SWEEP_RECORD}.partial-{os.getpid()}"
    try:
        claim.write_text(json.dumps(record, indent=2) + "\n")
        with claim.open("rb") as f:
            os.fsync(f.fileno())
        os.link(claim, record_path)  # fails if another sweep claimed the directory meanwhile
    except FileExistsError:
        raise OutputPathError(f"out {str(target)!r}: another sweep started there while this one "
                              "was being checked; rerun to resume it (if of the same spec), or "
                              "choose another directory") from None
    finally:
        claim.unlink(missing_ok=True)
    return _lock(record_path, target)


def _lock(record_path: Path, target: Path):
    """An exclusive ``flock`` on ``record_path`` (an open file to close to release it), or an
    :class:`OutputPathError` if another sweep holds it; None where locks are unavailable."""
    try:
        import fcntl
    except ImportError:  # not POSIX
        return None
    handle = record_path.open("rb")
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise OutputPathError(f"out {str(target)!r} is in use by another running sweep; rerun "
                              "once it has ended (to resume or complete it), or choose another "
                              "directory") from None
    except OSError:  # a filesystem without locks
        handle.close()
        return None
    return handle


def check_cells(spec: StudySpec) -> dict[str, dict]:
    """Build every problem and every cell's policy, and play two stages of one run of each.

    This catches a bad factory or parameter value before any work (as a :class:`SpecError`
    naming the cell) and compiles, or loads, every kernel the sweep will use, once, here.

    Returns
    -------
    dict
        Per problem label: what figures and tables need (dimension, ``b0``, ``b``, the optimal
        reward, description).
    """
    from ..simulation import LinearBandit, run_seeds, simulate

    problems = {}
    for index, (problem_spec, algorithm, settings) in enumerate(spec.cells()):
        where = f"cell {index} ({problem_spec.label}, {algorithm.name}, {settings or 'defaults'})"
        try:
            problem = build_problem(problem_spec)
            policy_seeds, noise_seeds = run_seeds(0, 1)
            policy = problem.policy(algorithm.name, 1, policy_seeds, **settings)
            simulate(policy, LinearBandit(problem.theta_star, problem.noise_sd, noise_seeds),
                     min(2, spec.horizon))
        except SpecError:
            raise
        except (ValueError, TypeError) as exc:
            raise SpecError(f"{where}: {exc}") from None
        # Plain Python values: a factory's numpy scalars (a float32 threshold fraction) would
        # make the manifest, written after every simulation, fail to serialize.
        problems.setdefault(problem_spec.label, {
            "dim": int(problem.arm_set.dim), "baseline_reward": float(problem.baseline_reward),
            "threshold": float(problem.threshold),
            "optimal_reward": float(problem.arm_set.support(np.asarray(problem.theta_star))),
            "description": str(problem.description)})
    return problems


def _shard_done(path: Path, task: ShardTask) -> bool:
    """Whether ``path`` holds ``task``'s finished shard: a readable parquet file with its runs
    (writes are atomic, so anything else was damaged afterwards and is computed again)."""
    if not path.exists():
        return False
    try:
        if pq.ParquetFile(path).metadata.num_rows == task.stop - task.start:
            return True
    except (OSError, pa.ArrowException):
        pass
    path.unlink()
    return False


def plan_shards(spec: StudySpec, shard_runs: int, threads: int | None = None) -> list[ShardTask]:
    """Every cell's runs in blocks of ``shard_runs``, cell by cell."""
    return [ShardTask(spec, cell, start, min(start + shard_runs, spec.runs), threads)
            for cell in range(len(spec.cells())) for start in range(0, spec.runs, shard_runs)]


def _finished(executor: cf.Executor | None, tasks: list[ShardTask]) -> Iterator[tuple[ShardTask, pa.Table]]:
    """Each task with its shard table, as they finish (in order, in this process, without an
    executor); pending tasks are cancelled if the caller stops early or fails."""
    if executor is None:
        for task in tasks:
            yield task, run_shard(task)
        return
    futures = {executor.submit(run_shard, task): task for task in tasks}
    try:
        for future in cf.as_completed(futures):
            yield futures[future], future.result()
    finally:
        for future in futures:
            future.cancel()


@contextlib.contextmanager
def _executor(workers: int, client, scheduler: str | None) -> Iterator[tuple[cf.Executor | None, int | None]]:
    """The executor for the shards (None: this process), and the numba threads per shard."""
    if client is not None or scheduler is not None:
        owned = None
        if client is None:
            from distributed import Client

            failure = None
            try:
                client = owned = Client(scheduler)
            except (OSError, ValueError, TypeError) as exc:  # unreachable, or not an address
                failure = f"cannot connect to the Dask scheduler {scheduler!r}: {exc}"
            if failure is not None:
                # The half-built Client lives on in the exception's frames until the garbage
                # collector finalizes it, at any later moment: its __del__ then closes its event
                # loop, which deadlocks if that moment is inside another Client's start (seen
                # when a sweep was retried). Finalize it here, and keep no traceback to it.
                gc.collect()
                raise SchedulerError(failure)
        try:
            yield client.get_executor(), None
        finally:
            if owned is not None:
                owned.close()
        return
    if workers == 1:
        yield None, None
        return
    threads = max(1, (os.cpu_count() or 1) // workers)
    # spawn, not fork: the parent's OpenMP and noise-drawing threads do not survive a fork.
    # Each shard sets its numba threads itself (ShardTask.threads).
    pool = cf.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
    try:
        yield pool, threads
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _write_atomic(path: Path, write: Callable[[Path], object]) -> None:
    """``write`` a hidden sibling of ``path``, flush it to disk, then rename it onto ``path``."""
    tmp = path.with_name(f".{path.name}.partial-{os.getpid()}")
    try:
        write(tmp)
        with tmp.open("rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def grid_columns(spec: StudySpec) -> list[str]:
    """The grid parameters of every algorithm, each once, in the spec's order."""
    names: list[str] = []
    for algorithm in spec.algorithms:
        names += [k for k in algorithm.grid if k not in names]
    return names


def _cell_columns(spec: StudySpec, n: int, index: int, names: list[str]) -> dict[str, list]:
    problem, algorithm, settings = spec.cells()[index]
    return {"problem": [problem.label] * n, "algorithm": [algorithm.name] * n,
            **{k: [settings.get(k)] * n for k in names}}


def read_cell(out: Path, tasks: list[ShardTask]) -> pa.Table:
    """The shards of ``tasks`` (one cell's, in run order) as one table."""
    return pa.concat_tables([pq.read_table(out / "shards" / f"{t.name}.parquet") for t in tasks])


def merge_shards(spec: StudySpec, tasks: list[ShardTask], out: Path, problems: dict) -> None:
    """Write ``runs.parquet`` and ``curves.parquet`` from the shards, one cell at a time."""
    names = grid_columns(spec)
    runs_parts, curve_parts = [], []
    by_cell: dict[int, list[ShardTask]] = {}
    for task in tasks:
        by_cell.setdefault(task.cell, []).append(task)
    for cell, cell_tasks in by_cell.items():
        table = read_cell(out, cell_tasks)
        stats = shard_statistics(table)
        n = table.num_rows
        run_columns = [c for c in table.column_names if not c.startswith("curve_")]
        runs_parts.append({**_cell_columns(spec, n, cell, names),
                           **{c: table.column(c) for c in run_columns}})
        curve_parts.append(_curve_columns(spec, cell, names, stats))
    _write_atomic(out / "runs.parquet", lambda p: pq.write_table(_stack(runs_parts, names), p))
    _write_atomic(out / "curves.parquet", lambda p: pq.write_table(_stack(curve_parts, names), p))


def _curve_columns(spec: StudySpec, cell: int, names: list[str], stats) -> dict:
    """One cell's rows of ``curves.parquet``: aggregates across runs at each checkpoint."""
    agg = stats.aggregates()
    C, n = len(stats.checkpoints), stats.regret.shape[1]
    columns = {**_cell_columns(spec, C, cell, names), "t": agg["checkpoints"],
               "runs": np.full(C, n, dtype=np.int64)}
    for kind in ("regret", "reward"):
        columns[f"{kind}_mean"] = agg[f"{kind}_mean"]
        columns[f"{kind}_sd"] = agg[f"{kind}_sd"]
        columns[f"{kind}_se"] = agg[f"{kind}_sd"] / math.sqrt(n)
        for key in sorted(k for k in agg if k.startswith(f"{kind}_q")):
            columns[key] = agg[key]
    for key in ("regret_min", "regret_max", "reward_window_min", "reward_window_max",
                "violating_pairs", "violating_runs"):
        columns[key] = agg[key]
    for code, name in enumerate(DECISION_COLUMNS):
        columns[name] = agg["decisions"][:, code]
    return columns


def _stack(parts: list[dict], names: list[str]) -> pa.Table:
    """Concatenate column dicts into one table; grid columns mixing types become strings."""
    columns = {}
    for key in parts[0]:
        values = [p[key] for p in parts]
        if isinstance(values[0], list):
            flat = [v for part in values for v in part]
            try:
                columns[key] = pa.array(flat)
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                columns[key] = pa.array([None if v is None else str(v) for v in flat])
        elif isinstance(values[0], pa.ChunkedArray):
            columns[key] = pa.chunked_array([c for v in values for c in v.chunks], values[0].type)
        else:
            columns[key] = pa.array(np.concatenate(values))
    return pa.table(columns)


def _shard_status(tasks: list[ShardTask], out: Path) -> list[dict]:
    status = []
    for task in tasks:
        path = out / "shards" / f"{task.name}.parquet"
        meta = shard_metadata(pq.read_schema(path))
        status.append({"file": f"shards/{path.name}", "cell": task.cell,
                       "runs": [task.start, task.stop], "status": "done",
                       "wall_seconds": round(meta["wall_seconds"], 4),
                       "fallback_reasons": meta["fallback_reasons"]})
    return status
