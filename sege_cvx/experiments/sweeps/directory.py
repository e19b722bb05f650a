"""A sweep's directory: its record ``sweep.json`` (what the sweep runs, written first; a rerun
must match it to resume), the checks of ``out`` before any work (:func:`check_sweep_dir`),
whether a recorded sweep is resumed (:func:`is_same_sweep`), and the sweep's start there: the
claim of ``sweep.json`` and the lock held on it until the sweep ends (:func:`open_sweep_dir`)."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import numpy as np

from ..files import Directory, read_regular
from ..outputs import MANIFEST, OutputPathError, check_output_dir, check_writable_under
from ..spec import StudySpec
from .shard_files import CHECKSUM_SUFFIX

#: The sweep's record of what it runs, written first; a rerun must match it to resume.
SWEEP_RECORD = "sweep.json"
#: Largest record the sweep reads back.
MAX_RECORD_BYTES = 64 << 20
#: The files a sweep writes at the top of its directory (and ``shards/``, its shards' files).
SWEEP_FILES = (SWEEP_RECORD, MANIFEST, "runs.parquet", "curves.parquet")
#: Files that say nothing of what a directory holds: git's placeholders for an empty folder (a
#: results folder kept in the repository) and what file browsers leave.  At the top of a
#: sweep's directory they are as good as absent: a sweep starts beside them, and overwrite is
#: neither stopped by them nor deletes them.
PLACEHOLDERS = frozenset({".gitkeep", ".keep", ".gitignore", ".DS_Store", "Thumbs.db",
                          "desktop.ini"})


#: A shard's file (:attr:`~.shards.ShardTask.name`, then ``.parquet`` or the checksum's suffix).
_SHARD_FILE = re.compile(r"cell\d{4,}-runs\d{7,}-\d{7,}(\.parquet|" + re.escape(CHECKSUM_SUFFIX)
                         + ")")


def _sweep_wrote(name: str, in_shards: bool = False) -> bool:
    """Whether a sweep writes ``name`` in its directory (its files) or, ``in_shards``, in
    ``shards/`` (its shards and their checksums); or is a hidden partial file of one of those
    writes (``.NAME.partial-XXXXXXXX``) or the claim of its record (``.sweep.json.claim-PID``)."""
    own = (lambda n: _SHARD_FILE.fullmatch(n) is not None) if in_shards else SWEEP_FILES.__contains__
    if own(name):
        return True
    partial = re.fullmatch(r"\.(.+)\.partial-[0-9a-f]{8}", name)
    if partial is not None:
        return own(partial.group(1))
    return not in_shards and re.fullmatch(rf"\.{re.escape(SWEEP_RECORD)}\.claim-\d+",
                                          name) is not None


def _placeholder(entry: Path) -> bool:
    """Whether ``entry`` is a regular file (not a link) named as one of :data:`PLACEHOLDERS`."""
    return entry.name in PLACEHOLDERS and entry.is_file() and not entry.is_symlink()


def _entries(target: Path) -> list[Path]:
    """What ``target`` (an existing directory) holds, :data:`PLACEHOLDERS` left out, sorted."""
    return [entry for entry in sorted(target.iterdir()) if not _placeholder(entry)]


def foreign_entries(target: Path) -> list[str]:
    """What ``target`` holds that no sweep wrote (paths relative to it, sorted): what
    ``overwrite`` refuses to delete.  :data:`PLACEHOLDERS` at the top are left out: they are
    kept whatever the sweep does."""
    if not target.is_dir() or target.is_symlink():
        return []
    found = []
    for entry in _entries(target):
        if entry.name == "shards" and entry.is_dir() and not entry.is_symlink():
            found += [f"shards/{e.name}" for e in sorted(entry.iterdir())
                      if not (_sweep_wrote(e.name, in_shards=True) and e.is_file()
                              and not e.is_symlink())]
        elif not (_sweep_wrote(entry.name) and entry.is_file() and not entry.is_symlink()):
            found.append(entry.name + ("/" if entry.is_dir() else ""))
    return found


def _listed(found: list[str]) -> str:
    """The first three of ``found`` and how many more."""
    return ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")


def check_deletable(target: Path, given: str, overwrite_hint: str = "overwrite") -> None:
    """Refuse to restart a sweep over ``target`` if it holds anything no sweep wrote (a
    report, notes, data): ``overwrite`` deletes a sweep's own files only (OutputPathError
    naming what it found)."""
    if found := foreign_entries(target):
        raise OutputPathError(f"{given} holds {_listed(found)}, which no sweep wrote; "
                              f"{overwrite_hint} deletes only a sweep's own files: move "
                              f"{'it' if len(found) == 1 else 'them'} elsewhere (or delete "
                              f"{'it' if len(found) == 1 else 'them'}), or choose a new "
                              "directory")


def check_sweep_dir(out: str | os.PathLike, spec: StudySpec, overwrite: bool,
                    shard_runs: int | None, *, name: str = "out",
                    overwrite_hint: str = "overwrite") -> tuple[Path, dict | None]:
    """Check ``out`` without writing: ``(target, previous)``, ``previous`` the record of this
    spec's sweep found there (to resume) or None.

    ``out`` may be new or empty, hold this spec's sweep (its ``sweep.json``), or, with
    ``overwrite``, another sweep's files (deleted when the sweep starts); anything no sweep
    wrote is never deleted (:func:`check_deletable`).  A symbolic link at ``out``, or
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
        if overwrite:
            check_deletable(target, given, overwrite_hint)
        if not overwrite and not same_spec:
            raise OutputPathError(f"{given} holds a sweep of another spec; choose a new "
                                  f"directory, or pass {overwrite_hint} to delete it")
        if not overwrite:
            raise OutputPathError(f"{given} holds this sweep in shards of "
                                  f"{previous.get('shard_runs')} runs, not {shard_runs}: resume it "
                                  "with that shard size (results do not depend on it)")
    # A folder holding only a .gitkeep (a results folder kept in git) is empty to a sweep.
    if target.is_dir() and (entries := _entries(target)):
        found = foreign_entries(target)
        if not overwrite and not any(_sweep_wrote(e.name) or e.name == "shards" for e in entries):
            # Nothing a sweep writes: "pass overwrite to delete the sweep" would name none.
            them = "it" if len(found) == 1 else "them"
            raise OutputPathError(f"{given} holds no sweep, but {_listed(found)}, which no sweep "
                                  "wrote: "
                                  "a sweep starts in a new or empty directory (a .gitkeep "
                                  f"aside); choose another, or move {them} elsewhere")
        if not overwrite:
            raise OutputPathError(f"{given} already exists and holds no sweep of this spec; "
                                  f"choose a new directory, or pass {overwrite_hint} to delete "
                                  "the sweep in it")
        check_deletable(target, given, overwrite_hint)
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


def is_same_sweep(previous: dict, record: dict, out: Path,
                  overwrite: bool) -> tuple[bool, list[str]]:
    """Whether the sweep recorded in ``out`` (``previous``, of the same spec) is resumed, and
    the policies whose cells are computed again: ``(True, [])`` if its problems have the
    fingerprints they have now and the versions and every policy's code
    (:func:`~sege_cvx.policies.registry.policy_code_fingerprint`) are the same.  Where only
    policies' code changed, with ``overwrite`` it is resumed with their cells computed again
    (``(True, names)``; the other cells' shards are kept); where a problem or the versions
    changed, it is restarted (``(False, [])``).  Without ``overwrite``, a change is an
    OutputPathError naming it."""
    then, now = previous.get("problems"), record["problems"]
    hint = "pass overwrite (--overwrite) to restart it, or choose a new directory"
    if not isinstance(then, dict):
        change = "it was started by a sege_cvx that recorded no problem fingerprints"
    elif changed := [label for label in now if then.get(label) != now[label]]:
        change = (f"problem {changed[0]!r} is not the one it was started with (fingerprint "
                  f"{str(then.get(changed[0]))[:12]} then, {now[changed[0]][:12]} now: its "
                  "factory's code, data or environment changed)")
    elif differ := [f"{k} {previous.get('versions', {}).get(k)} then, {v} now"
                    for k, v in record["versions"].items()
                    if previous.get("versions", {}).get(k) != v]:
        change = f"it was started under other versions ({'; '.join(differ)})"
    elif changed := [name for name, code in record["policies"].items()
                     if previous.get("policies", {}).get(name) != code]:
        if overwrite:
            return True, changed
        was = previous.get("policies", {})
        change = "; ".join(f"the code of policy {name!r} changed since it started (fingerprint "
                           f"{str(was.get(name))[:12]} then, {str(record['policies'][name])[:12]}"
                           " now)" for name in changed)
        hint = ("pass overwrite (--overwrite) to compute again the cells of "
                f"{'that policy' if len(changed) == 1 else 'those policies'} only (the other "
                "cells are kept), or choose a new directory")
    else:
        return True, []
    if overwrite:
        return False, []
    raise OutputPathError(f"out {str(out)!r} holds this spec's sweep, but {change}: its runs "
                          f"would mix with new ones; {hint}")


def update_record(directory: Directory, record: dict) -> None:
    """Write ``record`` over the resumed sweep's ``sweep.json`` in place (its inode keeps the
    lock :func:`open_sweep_dir` holds; a rename would hand a new file to the next sweep): the
    policies' code fingerprints after their cells were reset to be computed again."""
    fd = directory.open(SWEEP_RECORD, os.O_WRONLY | os.O_TRUNC)
    with os.fdopen(fd, "wb") as handle:
        handle.write((json.dumps(record, indent=2) + "\n").encode())
        handle.flush()
        os.fsync(handle.fileno())


def delete_shards(shards: Directory, tasks) -> None:
    """Delete ``tasks``' shards (their data and checksum files, where present) from the open
    ``shards`` directory."""
    for task in tasks:
        for name in (f"{task.name}.parquet", f"{task.name}{CHECKSUM_SUFFIX}"):
            if shards.lstat(name) is not None:
                shards.unlink(name)


def open_sweep_dir(target: Path, record: dict, resume: bool, overwrite: bool):
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
    if not resume and overwrite and target.is_dir() and _entries(target):
        check_deletable(target, label, "--overwrite")  # again: files may have appeared
        if (target / SWEEP_RECORD).exists():
            with Directory(target, label) as old:
                if (running := _lock(old, target)) is not None:
                    running.close()  # not running: _lock refuses to let a running sweep go
        # A sweep's own files only (check_deletable found nothing else but placeholders,
        # which stay); not through links.
        shutil.rmtree(target / "shards", ignore_errors=True)
        for entry in target.iterdir():
            if _sweep_wrote(entry.name) and entry.is_file() and not entry.is_symlink():
                entry.unlink()
    target.mkdir(parents=True, exist_ok=True)
    directory = Directory(target, label)
    try:
        if resume:
            lock = _lock(directory, target)
            directory.subdir("shards", create=True).close()  # e.g. deleted to save space
            directory.unlink(MANIFEST)
            with directory.subdir("shards") as shards:
                for place, in_shards in ((directory, False), (shards, True)):
                    for name in place.names():
                        if name.startswith(".") and _sweep_wrote(name, in_shards):
                            place.unlink(name)  # a killed sweep's partial writes, not yours
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
