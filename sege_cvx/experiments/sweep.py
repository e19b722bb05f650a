"""Run a study spec: every cell's runs, sharded over local worker processes or a Dask cluster.

Work is split into shards, blocks of runs of one cell (:mod:`.shards`).  Shards go to a
``concurrent.futures`` executor: this process (one worker), a pool of local worker processes,
or a ``dask.distributed`` client's executor; the scheduling is theirs.  This process writes
each finished shard atomically under ``DIR/shards/`` with its SHA-256 beside it
(``NAME.sha256``, in ``sha256sum`` format) and, once all are there, merges them into
``DIR/runs.parquet`` (one row per cell x run), ``DIR/curves.parquet`` (one row per cell x
checkpoint) and, last, ``DIR/manifest.json``.

Rerunning the same sweep into the same directory resumes it: a shard is reused only if its
bytes match their checksum and it holds its task's runs, seeds and checkpoints, computed on the
problem the sweep builds now (its fingerprint) under the same software versions; any other is
computed again (a :class:`SweepWarning` says which).  So a resumed sweep gives the same files
as an uninterrupted one, bit for bit, whatever was damaged, and a sweep whose problems or
software changed since it started is refused (or, with ``overwrite``, restarted).
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import gc
import hashlib
import importlib
import importlib.util
import json
import math
import multiprocessing
import os
import shutil
import signal
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from tqdm.auto import tqdm

from .files import ChecksumError, Directory, FileKindError, check_sha256, read_regular
from .outputs import (
    MANIFEST,
    OutputPathError,
    check_output_dir,
    check_writable_under,
    provenance,
    runtime_versions,
    write_manifest,
)
from .shards import (
    DECISION_COLUMNS,
    ShardTask,
    build_problem,
    check_shard_table,
    run_shard,
    shard_metadata,
    shard_statistics,
)
from .spec import SpecError, StudySpec


class SchedulerError(ConnectionError):
    """The Dask scheduler given by address cannot be reached; nothing was written."""


class SweepError(RuntimeError):
    """A sweep stopped after it started: a worker died, a shard failed, a file could not be
    written.  The message is one line: ``reason``, then what is saved and how to resume (the
    finished shards are kept; rerunning the same sweep resumes it)."""

    def __init__(self, reason: str, resume: str = ""):
        super().__init__(f"{reason}; {resume}" if resume else reason)
        self.reason = reason


class SweepWarning(UserWarning):
    """Something a sweep did that its user should know (a damaged shard computed again)."""


#: The sweep's record of what it runs, written first; a rerun must match it to resume.
SWEEP_RECORD = "sweep.json"
#: Runs per shard unless given: small enough to spread a cell over workers and to lose little
#: work when a sweep is killed, large enough for the compiled loops to amortize a call.
DEFAULT_SHARD_RUNS = 50
#: A shard's checksum file beside it: ``<sha256>  <name>.parquet`` (``sha256sum -c`` reads it).
CHECKSUM_SUFFIX = ".sha256"
#: Largest files the sweep reads back: its record, a checksum file, a shard (effectively any).
MAX_RECORD_BYTES, MAX_CHECKSUM_BYTES, MAX_SHARD_BYTES = 64 << 20, 4096, 1 << 40


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
        :func:`~sege_cvx.experiments.results.load_results` of ``out``.

    Raises
    ------
    SpecError
        A spec, problem or parameter value that cannot run, or a factory the Dask workers
        cannot import: raised before any simulation.
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
    from .results import load_results

    spec = _as_spec(spec)
    workers = _worker_count(workers)
    out, previous = check_sweep_dir(out, spec, overwrite, shard_runs)
    problems = check_cells(spec)
    algorithms = describe_algorithms(spec)
    record = {"spec": spec.to_dict(),
              "shard_runs": int(shard_runs or (previous or {}).get("shard_runs")
                                or DEFAULT_SHARD_RUNS),
              "problems": {label: p["fingerprint"] for label, p in problems.items()},
              "policies": {name: a["code"] for name, a in algorithms.items()},
              "versions": runtime_versions()}
    resume = previous is not None and _same_sweep(previous, record, out, overwrite)
    # The lock on sweep.json, the open results directory and its shards/, held from the start
    # of the sweep in out to its manifest: every file is written relative to them.
    lock = out_dir = shards = None
    saved = _Progress(out)
    try:
        with _executor(workers, client, scheduler) as (executor, threads, dask_client):
            if dask_client is not None:
                _ship_modules(dask_client, spec, algorithms)
            # Once a scheduler answered and its workers can import the factories: nothing is
            # written otherwise.
            lock, out_dir = _start_dir(out, record, resume, overwrite)
            shards = out_dir.subdir("shards")
            tasks = plan_shards(spec, record["shard_runs"], threads, record["problems"],
                                record["versions"], algorithms)
            todo = _unfinished(shards, tasks)
            saved.total, saved.done = len(tasks), len(tasks) - len(todo)
            with tqdm(total=len(tasks), initial=saved.done, unit="shard", desc="sweep",
                      disable=not progress, smoothing=0.1) as bar:
                for task, table in _finished(executor, todo, saved):
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
                              "algorithms": algorithms, "shard_runs": record["shard_runs"],
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


class _Progress:
    """How many of a sweep's shards are saved, for messages (``"3 of 12 shards are saved in
    OUT"``)."""

    def __init__(self, out: Path):
        self.out, self.total, self.done = out, None, 0

    def __str__(self) -> str:
        if self.total is None:
            return f"no shard was computed in {self.out}"
        return f"{self.done} of {self.total} shards are saved in {self.out}"


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


def check_sweep_dir(out, spec: StudySpec, overwrite: bool, shard_runs: int | None, *,
                    name: str = "out",
                    overwrite_hint: str = "overwrite") -> tuple[Path, dict | None]:
    """Check ``out`` without writing: ``(target, previous)``, ``previous`` the record of this
    spec's sweep found there (to resume) or None.

    ``out`` may be new or empty, hold this spec's sweep (its ``sweep.json``), or, with
    ``overwrite``, anything (deleted when the sweep starts).  A symbolic link at ``out``, or
    anything :func:`_check_sweep_files` refuses in a sweep to resume, is refused.  ``name``
    and ``overwrite_hint`` are how messages name ``out`` and the way to allow deleting it (the
    command line's ``--out`` and ``--overwrite``).
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
        # In order: the cells are numbered in the order of the spec's grids.
        same_spec = json.dumps(previous.get("spec")) == json.dumps(spec.to_dict())
        same_shards = shard_runs is None or shard_runs == previous.get("shard_runs")
        if same_spec and same_shards:
            _check_sweep_files(target, given)  # resumed: written into as it is
            return target, previous
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
    return target, None


def _check_sweep_files(target: Path, given: str) -> None:
    """Refuse what the sweep cannot write or list in ``target``: a symbolic link, FIFO or
    device anywhere in it (the manifest vouches for every file), ``shards/`` that is not a
    directory, or a directory where a file of the sweep goes (OutputPathError naming it)."""
    if not target.is_dir() or target.is_symlink():
        return  # a new directory (check_output_dir refused a link or a file at target)
    with Directory(target, given) as directory:
        directory.files()  # FileKindError at a link, a FIFO or a device
        for name in (SWEEP_RECORD, MANIFEST, "runs.parquet", "curves.parquet"):
            directory.check_file_place(name)
        info = directory.lstat("shards")
        if info is None:
            return
        with directory.subdir("shards") as shards:  # FileKindError if not a directory
            for name in shards.names():
                if name.endswith((".parquet", CHECKSUM_SUFFIX)):
                    shards.check_file_place(name)


def _read_record(path: Path) -> dict:
    """A sweep's ``sweep.json``: its spec, shard size, problem fingerprints and versions;
    ValueError if damaged (OSError if it cannot be read)."""
    try:
        record = json.loads(read_regular(path, MAX_RECORD_BYTES, SWEEP_RECORD))
    except RecursionError:
        raise ValueError("nested too deeply") from None
    if not isinstance(record, dict) or not isinstance(record.get("spec"), dict):
        raise ValueError("no spec in it")
    size = record.get("shard_runs")
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"shard_runs {size!r} is not a positive int")
    for key in ("problems", "policies", "versions"):
        table = record.get(key, {})
        if not isinstance(table, dict) or not all(
                isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in table.items()):
            raise ValueError(f"{key} is not a table of names and strings")
    return record


def _same_sweep(previous: dict, record: dict, out: Path, overwrite: bool) -> bool:
    """Whether the sweep recorded in ``out`` (``previous``, of the same spec) is resumed: it is
    if its problems have the fingerprints they have now and the versions are the same.  If
    not, it is restarted with ``overwrite`` (False) and refused without (OutputPathError)."""
    then, now = previous.get("problems"), record["problems"]
    if not isinstance(then, dict):
        change = "it was started by a sege_cvx that recorded no problem fingerprints"
    elif changed := [label for label in now if then.get(label) != now[label]]:
        change = (f"problem {changed[0]!r} is not the one it was started with (fingerprint "
                  f"{str(then.get(changed[0]))[:12]} then, {now[changed[0]][:12]} now: its "
                  "factory's code, data or environment changed)")
    elif changed := [name for name, code in record["policies"].items()
                     if previous.get("policies", {}).get(name) != code]:
        change = (f"the code of policy {changed[0]!r} changed since it started (fingerprint "
                  f"{str(previous.get('policies', {}).get(changed[0]))[:12]} then, "
                  f"{str(record['policies'][changed[0]])[:12]} now)")
    elif differ := [f"{k} {previous.get('versions', {}).get(k)} then, {v} now"
                    for k, v in record["versions"].items()
                    if previous.get("versions", {}).get(k) != v]:
        change = f"it was started under other versions ({'; '.join(differ)})"
    else:
        return True
    if overwrite:
        return False
    raise OutputPathError(f"out {str(out)!r} holds this spec's sweep, but {change}: its runs "
                          "would mix with new ones; pass overwrite (--overwrite) to restart it, "
                          "or choose a new directory")


def _start_dir(target: Path, record: dict, resume: bool, overwrite: bool):
    """Start the sweep in ``target`` (checked by :func:`check_sweep_dir`), or resume it there:
    ``(lock, directory)``, the lock held on its ``sweep.json`` until the sweep ends (None where
    the platform has no ``flock``) and the open results directory
    (:class:`~sege_cvx.experiments.files.Directory`), through which every file is written.

    A finished sweep's ``manifest.json`` is removed first, so that it is present only while
    every file it lists is complete; so are the partial files of a killed sweep's writes.

    Sweeps into one directory exclude each other: a new sweep claims ``sweep.json`` by creating
    it exclusively, so that one started there meanwhile (after ``target`` was checked) is
    neither deleted nor joined, and a sweep running there holds the lock, so that another
    neither deletes its partial files nor its directory.
    """
    label = f"out {str(target)!r}"
    if resume:
        _check_sweep_files(target, label)  # again: links may have appeared meanwhile
    if not resume and overwrite and target.exists() and any(target.iterdir()):
        if (target / SWEEP_RECORD).exists():
            with Directory(target, label) as old:
                if (running := _lock(old, target)) is not None:
                    running.close()  # not running: _lock refuses to let a running sweep go
        shutil.rmtree(target)  # not through links: target is none, and rmtree follows none
    target.mkdir(parents=True, exist_ok=True)
    directory = Directory(target, label)
    try:
        if resume:
            lock = _lock(directory, target)
            directory.subdir("shards", create=True).close()  # e.g. deleted to save space
            directory.unlink(MANIFEST)
            with directory.subdir("shards") as shards:
                for place in (directory, shards):
                    for name in place.names():
                        if name.startswith(".") and (".partial-" in name or ".claim-" in name):
                            place.unlink(name)
            return lock, directory
        directory.subdir("shards", create=True).close()
        claim = f".{SWEEP_RECORD}.claim-{os.getpid()}"
        try:
            directory.write(claim, (json.dumps(record, indent=2) + "\n").encode())
            directory.link(claim, SWEEP_RECORD)  # fails if another sweep claimed it meanwhile
        except FileExistsError:
            raise OutputPathError(f"{label}: another sweep started there while this one was "
                                  "being checked; rerun to resume it (if of the same spec), or "
                                  "choose another directory") from None
        finally:
            directory.unlink(claim)
        return _lock(directory, target), directory
    except BaseException:
        directory.close()
        raise


def _lock(directory: Directory, target: Path):
    """An exclusive ``flock`` on ``directory``'s ``sweep.json`` (an open file to close to
    release it), or an :class:`OutputPathError` if another sweep holds it; None where locks
    are unavailable."""
    try:
        import fcntl
    except ImportError:  # not POSIX
        return None
    handle = os.fdopen(directory.open(SWEEP_RECORD), "rb")
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
        reward, description), its ``fingerprint``, whether it is ``misspecified`` and the
        paper's assumptions it breaks.
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
            # Plain Python values: a factory's numpy scalars (a float32 threshold fraction)
            # would make the manifest, written after every simulation, fail to serialize.
            problems.setdefault(problem_spec.label, {
                "dim": int(problem.arm_set.dim), "baseline_reward": float(problem.baseline_reward),
                "threshold": float(problem.threshold),
                "optimal_reward": float(problem.arm_set.support(np.asarray(problem.theta_star))),
                "description": str(problem.description), "fingerprint": problem.fingerprint,
                "misspecified": problem.misspecified,
                "assumption_violations": problem.assumption_violations()})
        except SpecError:
            raise
        except (ValueError, TypeError) as exc:
            raise SpecError(f"{where}: {exc}") from None
        except Exception as exc:  # e.g. a user's arm set whose own code fails: named, with its
            # traceback kept as the cause for Python users
            raise SpecError(f"{where}: {type(exc).__name__}: {exc}") from exc
    return problems


def plan_shards(spec: StudySpec, shard_runs: int, threads: int | None = None,
                fingerprints: dict[str, str] | None = None,
                versions: dict[str, str | None] | None = None,
                policies: dict[str, dict] | None = None) -> list[ShardTask]:
    """Every cell's runs in blocks of ``shard_runs``, cell by cell.  With the problems'
    ``fingerprints`` (by label), the sweep's ``versions`` and its ``policies``
    (:func:`describe_algorithms`: each one's class and code fingerprint, by name), each task
    carries those of its cell, which workers and :func:`read_shard` check."""
    pinned = tuple(sorted(versions.items())) if versions is not None else None
    policies = policies or {}
    return [ShardTask(spec, cell, start, min(start + shard_runs, spec.runs), threads,
                      None if fingerprints is None else fingerprints[problem.label], pinned,
                      policies.get(algorithm.name, {}).get("class"),
                      policies.get(algorithm.name, {}).get("code"))
            for cell, (problem, algorithm, _) in enumerate(spec.cells())
            for start in range(0, spec.runs, shard_runs)]


def describe_algorithms(spec: StudySpec) -> dict[str, dict]:
    """Per algorithm of ``spec`` (by its name in the spec): what results need of its policy
    class without importing it: ``class`` (its import path), ``grid_parameters``,
    ``decision_names``, ``color`` (registered, or None) and ``code``
    (:func:`~sege_cvx.policies.registry.policy_code_fingerprint`)."""
    from ..policies.registry import (
        grid_parameters,
        policy_code_fingerprint,
        policy_color,
        policy_entry,
    )

    described = {}
    for algorithm in spec.algorithms:
        cls = policy_entry(algorithm.name).cls
        described.setdefault(algorithm.name, {
            "class": f"{cls.__module__}:{cls.__qualname__}",
            "grid_parameters": list(grid_parameters(cls)),
            "decision_names": list(cls.decision_names), "color": policy_color(algorithm.name),
            "code": policy_code_fingerprint(cls)})
    return described


# --- shards on disk: written with their checksum, used only once checked -------------------------


class ShardError(ValueError):
    """A shard file that cannot be used: missing, damaged, or not its task's."""


def write_shard(shards: Directory, task: ShardTask, table: pa.Table) -> None:
    """Check ``table`` against ``task`` (:func:`~.shards.check_shard_table`; ShardError if it
    fails), then write it as ``NAME.parquet`` and its SHA-256 as ``NAME.sha256`` into the open
    ``shards`` directory, each atomically, the data first: a shard without its checksum is
    computed again on resume."""
    try:
        check_shard_table(table, task)
    except ValueError as exc:
        raise ShardError(str(exc)) from None
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    data = sink.getvalue().to_pybytes()
    name = f"{task.name}.parquet"
    shards.write(name, data)
    shards.write(f"{task.name}{CHECKSUM_SUFFIX}",
                 f"{hashlib.sha256(data).hexdigest()}  {name}\n".encode())


def read_shard(shards: Directory, task: ShardTask) -> pa.Table:
    """``task``'s shard table from the open ``shards`` directory, once its bytes match its
    checksum and its content its task.

    Raises
    ------
    ShardError
        Saying why the shard cannot be used (``FileNotFoundError`` if it was never written).
    """
    name = f"{task.name}.parquet"
    checksum = f"{task.name}{CHECKSUM_SUFFIX}"
    if shards.lstat(name) is None and shards.lstat(checksum) is None:
        raise FileNotFoundError(shards.path / name)
    try:
        digest = shards.read(checksum, MAX_CHECKSUM_BYTES).decode("ascii").split()[0]
        table = pq.read_table(pa.BufferReader(check_sha256(shards.read(name, MAX_SHARD_BYTES),
                                                           digest, name)))
    except FileNotFoundError as exc:
        raise ShardError("it has no checksum: its write was interrupted" if exc.filename is None
                         or str(exc.filename).endswith(CHECKSUM_SUFFIX)
                         else "its data file is missing") from None
    except ChecksumError:
        raise ShardError("its content does not match its SHA-256") from None
    except FileKindError as exc:
        raise ShardError(str(exc).removeprefix(f"{shards.label}: ")) from None
    except (OSError, IndexError, UnicodeDecodeError, pa.ArrowException) as exc:
        raise ShardError(f"it cannot be read ({type(exc).__name__}: {exc})") from None
    try:
        check_shard_table(table, task)
    except ValueError as exc:
        raise ShardError(str(exc)) from None
    return table


def _unfinished(shards: Directory, tasks: list[ShardTask]) -> list[ShardTask]:
    """The tasks whose shard is not on disk, checked; one :class:`SweepWarning` lists those
    that were there but failed their checks (computed again)."""
    todo, damaged = [], []
    for task in tasks:
        try:
            read_shard(shards, task)
        except FileNotFoundError:
            todo.append(task)
        except ShardError as exc:
            todo.append(task)
            damaged.append(f"{task.name} ({exc})")
    if damaged:
        listed = "; ".join(damaged[:3]) + (f"; and {len(damaged) - 3} more" if len(damaged) > 3
                                           else "")
        warnings.warn(f"{len(damaged)} saved shard{'s' if len(damaged) > 1 else ''} failed "
                      f"{'their' if len(damaged) > 1 else 'its'} check and "
                      f"{'are' if len(damaged) > 1 else 'is'} computed again: {listed}",
                      SweepWarning, stacklevel=3)
    return todo


def read_cell(shards: Directory, tasks: list[ShardTask]) -> list[pa.Table]:
    """The checked shard tables of ``tasks`` (one cell's, in run order) from the open
    ``shards`` directory; a shard that fails its check now (changed since it was written) is a
    :class:`SweepError`."""
    tables = []
    for task in tasks:
        try:
            tables.append(read_shard(shards, task))
        except (ShardError, FileNotFoundError) as exc:
            reason = str(exc) if isinstance(exc, ShardError) else "it is missing"
            raise SweepError(f"shard {task.name} in {shards.path.parent} changed after it was "
                             f"checked: {reason}",
                             "rerun the same command to compute it again") from None
    return tables


# --- running shards: in this process, on local worker processes, or on Dask ---------------------

#: In a local worker process: the pipe on which it reports the shards it starts (set by
#: _init_worker).
_STARTED = None


def _init_worker(started, parent: int) -> None:
    """Set up a local worker process: report started shards on ``started``, and
    :func:`follow_parent`."""
    global _STARTED
    _STARTED = started
    follow_parent(parent)


def follow_parent(parent: int) -> None:
    """Make this helper process one its parent (pid ``parent``) ends: leave Ctrl-C to the parent
    (which ends its helpers itself, without their tracebacks), and exit when the parent dies,
    even by SIGKILL, rather than live on as an orphan."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # A thread lock for tqdm (the simulation's disabled progress bar): its default is a
    # multiprocessing lock, a semaphore that a helper ended by its parent would leave behind.
    tqdm.set_lock(threading.RLock())
    threading.Thread(target=_exit_with_parent, args=(parent,), name="sege-cvx-parent-watch",
                     daemon=True).start()


def _exit_with_parent(parent: int) -> None:
    # Polling the parent pid works on every POSIX platform (prctl's death signal is Linux's
    # alone, and fires when the forking *thread* ends).  The check runs whenever the worker's
    # main thread leaves compiled code, at least every few stages.
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


def _run_in_worker(task: ShardTask):
    """:func:`run_shard` in a local worker process, having said which shard it starts."""
    # One short message: a single write to the pipe, whole even with other workers writing.
    _STARTED.send_bytes(f"{os.getpid()} {task.name}".encode())
    try:
        return run_shard(task)
    except KeyboardInterrupt:  # workers ignore Ctrl-C: this one came from the shard's own code
        raise RuntimeError("KeyboardInterrupt raised by the shard's code (a factory?)") from None


def _finished(executor, tasks: list[ShardTask], saved: _Progress):
    """Each task with its shard table, as they finish (in order, in this process, without an
    executor); pending tasks are cancelled if the caller stops early or fails.

    A shard that raises, or a local worker process that dies, ends the sweep with a one-line
    :class:`SweepError` naming the shard (``KeyboardInterrupt`` is left to the caller).
    """
    if executor is None:
        for task in tasks:
            try:
                table = run_shard(task)
            except Exception as exc:
                raise _shard_failed(task.name, exc, saved) from exc
            yield task, table
        return
    local = isinstance(executor, _LocalPool)
    submit = executor.submit
    futures = {submit(_run_in_worker if local else run_shard, task): task for task in tasks}
    pending = set(futures)
    try:
        with _deferred_interrupt() as interrupted:
            while pending:
                done, pending = cf.wait(pending, timeout=0.2, return_when=cf.FIRST_COMPLETED)
                for future in sorted(done, key=lambda f: futures[f].name):
                    task = futures[future]
                    try:
                        table = future.result()
                    except cf.process.BrokenProcessPool:
                        raise SweepError(executor.death_report(futures),
                                         f"{saved}: rerun the same command to resume") from None
                    except Exception as exc:
                        raise _shard_failed(task.name, exc, saved) from exc
                    yield task, table
                if interrupted():
                    raise KeyboardInterrupt
    finally:
        for future in futures:
            future.cancel()


@contextlib.contextmanager
def _deferred_interrupt():
    """Ctrl-C while shards run elsewhere, noted by a signal handler and raised by the caller
    (``if interrupted(): raise KeyboardInterrupt``) between waits: a ``KeyboardInterrupt``
    raised at any instruction could leave a future's lock held, and the executor's thread,
    which needs it, would then hang the sweep's shutdown.  Outside the main thread (where no
    handler can be set) Ctrl-C is left as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda: False
        return
    seen = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: seen.append(signum))
    try:
        yield lambda: bool(seen)
    finally:
        signal.signal(signal.SIGINT, previous)


def _shard_failed(name: str, exc: BaseException, saved: _Progress) -> SweepError:
    what = str(exc) if isinstance(exc, SpecError) else f"{type(exc).__name__}: {exc}"
    return SweepError(f"shard {name} failed: {' '.join(what.split())}",
                      f"{saved}: fix the cause and rerun the same command to resume")


class _LocalPool(cf.ProcessPoolExecutor):
    """Local worker processes (``spawn``) that report the shards they start and exit with the
    sweep's process, so that a dead worker is named with its shard."""

    def __init__(self, workers: int):
        context = multiprocessing.get_context("spawn")
        # A pipe, not a queue: nothing (no semaphore) is left to clean up if the sweep is cut.
        self.started, writer = context.Pipe(duplex=False)
        super().__init__(workers, mp_context=context, initializer=_init_worker,
                         initargs=(writer, os.getpid()))
        self.seen: dict[int, multiprocessing.Process] = {}

    def submit(self, fn, /, *args, **kwargs):
        future = super().submit(fn, *args, **kwargs)
        # The pool's processes, kept to read their exit codes once the pool is broken (it
        # forgets them); spawned pools start all of them at the first submit.
        self.seen.update(getattr(self, "_processes", None) or {})
        return future

    def end_workers(self) -> None:
        """Terminate the worker processes (SIGTERM: no traceback), e.g. on Ctrl-C."""
        for process in self.seen.values():
            if process.is_alive():
                process.terminate()

    def death_report(self, futures: dict) -> str:
        """``"worker process 123 was killed by SIGKILL while computing shard NAME"``."""
        last = {}
        while self.started.poll():
            pid, name = self.started.recv_bytes().decode().split(" ", 1)
            last[int(pid)] = name
        done = {task.name for future, task in futures.items()
                if future.done() and not future.cancelled() and future.exception() is None}
        deadline = time.monotonic() + 5.0
        for process in self.seen.values():
            process.join(timeout=max(0.0, deadline - time.monotonic()))
            # The pool's own thread may be reaping this process at the same moment: then our
            # wait finds no child (ECHILD) and exitcode stays None until that thread stores it.
            while process.exitcode is None and time.monotonic() < deadline:
                time.sleep(0.01)
        # The pool ends the other workers by SIGTERM once one died: a worker that ended
        # otherwise is the one; failing that, one that was computing a shard.
        ended = [(pid, p.exitcode) for pid, p in self.seen.items() if p.exitcode is not None]
        died = ([(pid, code) for pid, code in ended if code != -signal.SIGTERM]
                or [(pid, code) for pid, code in ended if last.get(pid) not in (None, *done)])
        if not died:
            return "a worker process died"
        pid, code = died[0]
        how = (f"was killed by {_signal_name(-code)}" if code < 0 else
               f"exited with status {code}")
        shard = last.get(pid)
        where = (f" while computing shard {shard}" if shard and shard not in done
                 else " between shards")
        return f"worker process {pid} {how}{where}"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


@contextlib.contextmanager
def _executor(workers: int, client, scheduler: str | None) -> Iterator[tuple]:
    """The executor for the shards (None: this process), the numba threads per shard, and the
    Dask client (None for local work)."""
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
            yield client.get_executor(), None, client
        finally:
            if owned is not None:
                owned.close()
        return
    if workers == 1:
        yield None, None, None
        return
    threads = max(1, (os.cpu_count() or 1) // workers)
    # spawn, not fork: the parent's OpenMP and noise-drawing threads do not survive a fork.
    # Each shard sets its numba threads itself (ShardTask.threads).
    pool = _LocalPool(workers)
    try:
        yield pool, threads, None
    except BaseException:
        pool.end_workers()  # their shards are lost anyway: do not wait for them
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _ship_modules(client, spec: StudySpec, algorithms: dict[str, dict]) -> None:
    """Make sure the Dask workers can import each problem factory's module and the module of
    each policy outside sege_cvx (``algorithms``: :func:`describe_algorithms`; registered or
    named by import path), before any shard runs: a module they cannot import is uploaded to
    them (``Client.upload_file``) if it is a single file this process imports it from;
    otherwise a :class:`SpecError` says how.  A policy defined in the running script
    (``__main__``) cannot be sent: a one-line SpecError says to move it into a module."""
    modules = {p.factory.split(":")[0] for p in spec.problems if p.factory}
    for name, described in algorithms.items():
        if described["code"] is None:  # sege_cvx's own
            continue
        module = described["class"].split(":")[0]
        if module == "__main__":
            raise SpecError(f"policy {name!r} is defined in the running script (__main__), which "
                            "Dask workers cannot import: put it in a module beside the script "
                            "and register or name it from there")
        modules.add(module)
    for module in sorted(modules):
        failures = _import_failures(client, module)
        origin = getattr(importlib.util.find_spec(module), "origin", None)
        single_file = origin is not None and origin.endswith(".py") and not origin.endswith(
            "__init__.py")
        if failures and single_file:
            try:
                client.upload_file(origin)
            except Exception as exc:  # e.g. a worker's directory it cannot write
                failures = {"upload": f"sending {origin} failed: {type(exc).__name__}: {exc}"}
            else:
                failures = _import_failures(client, module)
        if failures:
            worker, error = next(iter(sorted(failures.items())))
            hint = ("" if single_file else "; it is a package, which cannot be uploaded: ")
            raise SpecError(f"the Dask workers cannot import {module!r}, the module of a problem "
                            f"factory or policy ({worker}: {error}){hint or '; '}install it where the "
                            "workers run, or put it on their PYTHONPATH")


def _import_failures(client, module: str) -> dict[str, str]:
    """Per Dask worker that cannot import ``module``: why."""
    try:
        results = client.run(_try_import, module)
    except Exception as exc:  # e.g. workers that cannot import sege_cvx itself
        return {"workers": f"{type(exc).__name__}: {exc}"}
    return {worker: error for worker, error in results.items() if error is not None}


def _try_import(module: str) -> str | None:
    """On a worker: None if ``module`` imports, else the error."""
    try:
        importlib.import_module(module)
    except BaseException as exc:  # noqa: BLE001 - reported, whatever it is
        return f"{type(exc).__name__}: {exc}"
    return None


# --- merging shards into the sweep's tables ----------------------------------------------------


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


def merge_shards(spec: StudySpec, tasks: list[ShardTask], out: Directory,
                 shards: Directory) -> list[dict]:
    """Write ``runs.parquet`` and ``curves.parquet`` into the open results directory ``out``
    from the checked shards of ``shards``, one cell at a time; return each shard's status for
    the manifest.

    Each policy's decision counts go in columns named by its ``decision_names`` (recorded in
    its shards): the union over the sweep's policies, in order of appearance, null where a
    cell's policy has no decision of that name."""
    names = grid_columns(spec)
    cells, status = [], []
    by_cell: dict[int, list[ShardTask]] = {}
    for task in tasks:
        by_cell.setdefault(task.cell, []).append(task)
    for cell, cell_tasks in by_cell.items():
        tables = read_cell(shards, cell_tasks)
        status += [_shard_status(task, shard) for task, shard in zip(cell_tasks, tables, strict=True)]
        table = pa.concat_tables(tables)
        cells.append((cell, table, shard_metadata(table)["decision_names"]))
    decisions = list(dict.fromkeys(n for _, _, own in cells for n in own if n is not None))
    runs_parts, curve_parts = [], []
    for cell, table, own in cells:
        stats = shard_statistics(table)
        n = table.num_rows
        counts = _decision_columns(own, decisions, n,
                                   lambda code, t=table: t.column(DECISION_COLUMNS[code]))
        columns = {**_cell_columns(spec, n, cell, names)}
        for c in table.column_names:
            if c == DECISION_COLUMNS[0]:
                columns.update(counts)
            elif not c.startswith("curve_") and c not in DECISION_COLUMNS:
                columns[c] = table.column(c)
        runs_parts.append(columns)
        curve_parts.append(_curve_columns(spec, cell, names, stats, own, decisions))
    for name, parts in (("runs", runs_parts), ("curves", curve_parts)):
        sink = pa.BufferOutputStream()
        pq.write_table(_stack(parts, names), sink)
        out.write(f"{name}.parquet", sink.getvalue().to_pybytes())
    return status


def _decision_columns(own: Sequence[str | None], decisions: Sequence[str], n: int,
                      counts) -> dict[str, pa.ChunkedArray]:
    """The decision columns of ``n`` rows of one cell whose policy names its codes ``own``:
    ``counts(code)`` under its name, nulls under the other ``decisions``."""
    codes = {name: code for code, name in enumerate(own) if name is not None}
    return {name: counts(codes[name]) if name in codes
            else pa.chunked_array([pa.nulls(n, pa.int64())]) for name in decisions}


def _curve_columns(spec: StudySpec, cell: int, names: list[str], stats,
                   own: Sequence[str | None], decisions: Sequence[str]) -> dict:
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
    columns.update(_decision_columns(
        own, decisions, C, lambda code: pa.chunked_array([pa.array(agg["decisions"][:, code])])))
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


def _shard_status(task: ShardTask, table: pa.Table) -> dict:
    """A shard's entry in the manifest."""
    meta = shard_metadata(table)
    return {"file": f"shards/{task.name}.parquet", "cell": task.cell,
            "runs": [task.start, task.stop], "status": "done",
            "wall_seconds": round(meta["wall_seconds"], 4),
            "fallback_reasons": meta["fallback_reasons"]}
