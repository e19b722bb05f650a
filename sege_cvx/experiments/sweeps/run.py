"""Running a sweep (:func:`run_sweep`): its steps in order, each done by its own module.

Check the spec's cells (:mod:`.plan`) and ``out`` (:mod:`.directory`), pick where shards run
(:mod:`.workers`), start or resume the sweep's directory, compute the shards not saved yet and
save each as it comes back (:mod:`.shard_files`), merge them into the sweep's tables
(:mod:`.merge`) and write the manifest last; then read the results back (:mod:`.store`).
A failure after the start is one line (:class:`~.errors.SweepError`) saying how to resume.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tqdm.auto import tqdm

from ...policies.registry import renamed, resolution
from ..files import FileKindError
from ..outputs import provenance, runtime_versions, write_manifest
from ..spec import SpecError, StudySpec
from .directory import (
    check_sweep_dir,
    delete_shards,
    is_same_sweep,
    open_sweep_dir,
    update_record,
)
from .errors import SavedShards, SweepError, SweepWarning
from .merge import merge_shards
from .plan import DEFAULT_SHARD_RUNS, check_cells, describe_algorithms, plan_shards
from .shard_files import ShardError, unfinished_tasks, write_shard
from .workers import (
    SchedulerError,
    check_spawnable,
    finished_shards,
    shard_executor,
    ship_modules,
    worker_count,
)

if TYPE_CHECKING:
    from .store import SweepResults


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
) -> SweepResults:
    """Run every cell of ``spec`` (problems x algorithms x grid) over its seeded runs.

    Parameters
    ----------
    spec : StudySpec, dict or path
        The study (a path is read as TOML, see :class:`~sege_cvx.experiments.spec.StudySpec`).
    out : str or path-like
        The results directory: new, empty, or a sweep of the same spec to resume.  Not a
        symbolic link: nothing is written or deleted through one.
    workers : int, optional
        Local worker processes (default: every core).  ``1`` runs the shards in this process,
        whose compiled loops spread runs over all cores themselves.  Ignored with a Dask
        ``client`` or ``scheduler``.  Workers exit when this process dies.
    client : dask.distributed.Client, optional
        Run the shards on this Dask cluster.  Its workers must be able to import sege_cvx;
        a factory's module that they cannot import is uploaded to them if it is a single
        file (``Client.upload_file``).  A Dask cluster runs whatever code is sent to it:
        connect only to clusters you control.
    scheduler : str, optional
        A Dask scheduler's address (``"tcp://HOST:8786"``): a client is made for the sweep.
    shard_runs : int, optional
        Runs per shard (default 50, or the value a resumed sweep was started with).  Results
        are the same bit for bit whatever it is.
    overwrite : bool
        Delete an existing ``out`` that holds something else (another spec's sweep, other
        files, or this spec's sweep of a problem or software that has changed since).
    progress : bool
        One progress bar over shards on stderr.
    command_line : sequence of str, optional
        Recorded in the manifest; default ``sys.argv``.

    Returns
    -------
    SweepResults
        :func:`~sege_cvx.experiments.sweeps.store.load_results` of ``out``.

    Raises
    ------
    SpecError
        A spec, problem or parameter value that cannot run, a factory the Dask workers
        cannot import, or (with local workers) a policy or factory defined in a ``__main__``
        without a file (``python -c``, an interactive session, a notebook) or a program read
        from standard input, which they cannot import: raised before anything is written.
    OutputPathError
        ``out`` cannot hold the sweep, or holds this spec's sweep of another problem or under
        other versions (without ``overwrite``): raised before any simulation.
    SchedulerError
        ``scheduler`` cannot be reached (raised before anything is written to ``out``).
    SweepError
        The sweep stopped after it started (a worker died, a shard failed, a file could not be
        written); the finished shards are kept: rerun to resume.

    Warns
    -----
    SweepWarning
        Shards of a resumed sweep that failed their checks, computed again.

    Notes
    -----
    Run ``i`` of every cell on a problem uses the seed :func:`~.shards.run_seed` derives from
    the study seed, the problem and ``i``, so cells are compared on common random numbers and
    any run can be replayed alone.  Local worker processes are started by ``spawn``: call
    ``run_sweep`` from a script under ``if __name__ == "__main__":``.
    """
    from .store import load_results

    spec = _as_spec(spec)
    workers = worker_count(workers)
    out, previous = check_sweep_dir(out, spec, overwrite, shard_runs)
    # Each name resolved once: a module the cells import may not register another class under it.
    resolved = resolution(a.name for a in spec.algorithms)
    problems, cells = check_cells(spec)
    algorithms = describe_algorithms(spec)
    for name, was in resolved.items():
        if (why := renamed(name, was)) is not None:
            raise SpecError(why)
    if client is None and scheduler is None and workers > 1:  # spawned local workers
        check_spawnable(spec, algorithms, workers)
    record = {"spec": spec.to_dict(),
              "shard_runs": int(shard_runs or (previous or {}).get("shard_runs")
                                or DEFAULT_SHARD_RUNS),
              "problems": {label: p["fingerprint"] for label, p in problems.items()},
              "policies": {name: a["code"] for name, a in algorithms.items()},
              "versions": runtime_versions()}
    resume, recompute = (False, []) if previous is None else is_same_sweep(previous, record, out,
                                                                          overwrite)
    # The lock on sweep.json, the open results directory and its shards/, held from the start
    # of the sweep in out to its manifest: every file is written relative to them.
    lock = out_dir = shards = None
    saved = SavedShards(out)
    try:
        with shard_executor(workers, client, scheduler) as (executor, threads, dask_client):
            if dask_client is not None:
                ship_modules(dask_client, spec, algorithms)
            # Once a scheduler answered and its workers can import the factories: nothing is
            # written otherwise.
            lock, out_dir = open_sweep_dir(out, record, resume, overwrite)
            shards = out_dir.subdir("shards")
            tasks = plan_shards(spec, record["shard_runs"], threads, record["problems"],
                                record["versions"], algorithms)
            if recompute:  # only these policies' code changed: their cells again, no others
                _compute_again(out_dir, shards, record, spec, tasks, recompute)
            todo = unfinished_tasks(shards, tasks)
            saved.total, saved.done = len(tasks), len(tasks) - len(todo)
            with tqdm(total=len(tasks), initial=saved.done, unit="shard", desc="sweep",
                      disable=not progress, smoothing=0.1) as bar:
                for task, table in finished_shards(executor, todo, saved):
                    try:
                        write_shard(shards, task, table)
                    except ShardError as exc:
                        raise SweepError(f"shard {task.name} came back from its worker "
                                         f"unusable: {exc}",
                                         f"{saved}: rerun the same command to resume") from None
                    saved.done += 1
                    bar.update(1)
        status = merge_shards(spec, tasks, out_dir, shards)
        write_manifest(out_dir, provenance(command_line, spec.seed),
                       extra={"sweep": status, "spec": spec.to_dict(), "problems": problems,
                              "algorithms": algorithms, "cells": cells,
                              "shard_runs": record["shard_runs"],
                              "versions": record["versions"]})
    except OSError as exc:
        if isinstance(exc, SchedulerError):
            raise
        raise SweepError(f"cannot write {exc.filename or out!s}: {exc.strerror or exc}",
                         f"{saved}: make it writable (or free space) and rerun the same command "
                         "to resume") from exc
    except FileKindError as exc:
        if out_dir is None:  # found before the sweep started: nothing was computed
            raise
        raise SweepError(str(exc), f"{saved}: rerun the same command to resume") from None
    finally:
        for held in (shards, out_dir, lock):
            if held is not None:
                held.close()
    return load_results(out)


def _compute_again(out_dir, shards, record: dict, spec: StudySpec, tasks: list,
                   names: list[str]) -> None:
    """Delete the shards of the cells of policies ``names`` (their code changed), record their
    new code in ``sweep.json``, and say so (a :class:`SweepWarning` naming the cells computed
    again and those kept)."""
    cells = spec.cells()
    again = sorted({task.cell for task in tasks if cells[task.cell][1].name in names})
    delete_shards(shards, [task for task in tasks if task.cell in again])
    update_record(out_dir, record)
    listed = ", ".join(" ".join([a.name, *(f"{k}={v}" for k, v in settings.items()), "on",
                                 p.label]) for p, a, settings in (cells[k] for k in again[:4]))
    more = f" and {len(again) - 4} more" if len(again) > 4 else ""
    kept = len(cells) - len(again)
    kept_text = ("no other cell" if kept == 0 else "the other cell is kept" if kept == 1
                 else f"the other {kept} cells are kept")
    warnings.warn(f"the code of {', '.join(repr(n) for n in names)} changed since the sweep "
                  f"started: {len(again)} cell{'s' if len(again) > 1 else ''} "
                  f"({listed}{more}) {'are' if len(again) > 1 else 'is'} computed again; "
                  f"{kept_text}", SweepWarning, stacklevel=3)


def _as_spec(spec) -> StudySpec:
    if isinstance(spec, StudySpec):
        return spec
    if isinstance(spec, dict):
        return StudySpec.from_dict(spec)
    if isinstance(spec, str | os.PathLike):
        return StudySpec.from_toml(spec)
    raise TypeError(f"spec must be a StudySpec, a dict or a TOML path, got {type(spec).__name__}")
