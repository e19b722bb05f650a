"""Result directories that never lie: checked before work starts, published whole or not at all.

A study's files are written into a hidden directory beside the target
(``.{name}.partial-XXXXXXXX``), ``manifest.json`` last, and the directory is then renamed into
place. A failure or an interrupt removes the hidden directory, so the target either holds a
complete set of results (listed, with sizes and SHA-256, in its manifest) or is left as it was.

Nothing is written or deleted through a symbolic link: a link where a results directory, or a
file or directory of ours inside it, is to go is refused (:func:`refuse_link`), and files are
written relative to their open directory by :meth:`.files.Directory.write`, which never
follows a link.

>>> import shutil, tempfile
>>> from pathlib import Path
>>> root = Path(tempfile.mkdtemp())
>>> with atomic_output_dir(root / "results") as tmp:
...     _ = (tmp / "a.txt").write_text("hello")
...     _ = write_manifest(tmp, {"seed": 0})
>>> [p.name for p in root.iterdir()], sorted(p.name for p in (root / "results").iterdir())
(['results'], ['a.txt', 'manifest.json'])
>>> check_output_dir(root / "results")
Traceback (most recent call last):
...
sege_cvx.experiments.files.OutputPathError: out_dir ... already exists and is not empty ...
>>> shutil.rmtree(root)
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import platform
import secrets
import shutil
import sys
import tempfile
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

from .._numba import source_digest
from .files import Directory, OutputPathError

__all__ = ["MANIFEST", "OutputPathError", "atomic_output_dir", "check_output_dir",
           "check_writable_under", "provenance", "refuse_link", "runtime_versions",
           "write_manifest"]

#: Written last: its presence means every file it lists was complete when it was written.
MANIFEST = "manifest.json"
#: Distributions whose versions are recorded in the provenance (besides sege_cvx itself).
PROVENANCE_PACKAGES = ("numpy", "scipy", "cvxpy", "clarabel", "numba")


def _nearest_existing(path: Path) -> Path:
    """``path`` or its closest ancestor that exists (files included)."""
    while not os.path.lexists(path) and path.parent != path:
        path = path.parent
    return path


def _probe_writable(directory: Path) -> None:
    """Create and remove a file in ``directory``: permission bits alone miss read-only mounts, ACLs."""
    fd, name = tempfile.mkstemp(prefix=".sege-cvx-probe-", dir=directory)
    os.close(fd)
    os.unlink(name)


def _listing(directory: Path, limit: int = 3) -> str:
    names = sorted(p.name for p in directory.iterdir())
    return ", ".join(names[:limit]) + (", ..." if len(names) > limit else "")


def check_output_dir(
    path: str | os.PathLike,
    overwrite: bool = False,
    *,
    name: str = "out_dir",
    overwrite_hint: str = "overwrite=True",
) -> Path:
    """Check, without writing anything, that results can be published at ``path``.

    Parameters
    ----------
    path : str or path-like
        The results directory; it may not exist yet (missing parents are created on writing).
    overwrite : bool
        Whether an existing non-empty directory may be replaced whole.
    name, overwrite_hint : str
        How error messages name the path and the way to allow overwriting (the command line
        passes ``"--out"`` and ``"--overwrite"``).

    Returns
    -------
    Path
        The absolute target, its parent's symlinks resolved (results are renamed onto it).

    Raises
    ------
    OutputPathError
        If ``path`` is a symbolic link (results are never written, nor old ones deleted,
        through one), an existing file, lies under a file, is the current directory or one of
        its ancestors, is a non-empty directory and ``overwrite`` is false, or if its parent
        directory cannot be written.
    """
    if not isinstance(path, str | os.PathLike) or str(path) == "":
        raise OutputPathError(f"{name} must be a nonempty path, got {path!r}")
    given = repr(str(path))
    try:
        return _check(Path(path), overwrite, name, given, overwrite_hint)
    except OSError as exc:  # e.g. a parent that cannot be searched, a symlink loop
        raise OutputPathError(f"{name} {given} cannot be used: {exc.strerror or exc}") from None
    except RuntimeError as exc:  # Python < 3.13 reports symlink loops so
        raise OutputPathError(f"{name} {given} cannot be used: {exc}") from None


def _check(path: Path, overwrite: bool, name: str, given: str, overwrite_hint: str) -> Path:
    target = path.expanduser().absolute()
    # Resolve the parent only: the target itself is ours to create, replace or delete, and a
    # link there would send that to wherever it points.
    target = target.resolve() if target.name in ("", ".", "..") else target.parent.resolve() / target.name
    refuse_link(target, f"{name} {given}")
    cwd = Path.cwd().resolve()
    # Publishing renames the target: never move away a root or the directory we stand in.
    where = ("is a filesystem root" if target.parent == target else "is the current directory"
             if target == cwd else "contains the current directory" if target in cwd.parents else None)
    if where:
        raise OutputPathError(f"{name} {given} {where}; choose a new directory for the results")
    if target.exists():
        if not target.is_dir():
            raise OutputPathError(f"{name} {given} is an existing file, not a directory")
        if any(target.iterdir()) and not overwrite:
            raise OutputPathError(f"{name} {given} already exists and is not empty ({_listing(target)}); "
                                  f"choose a new directory or pass {overwrite_hint} to replace it whole")
    check_writable_under(target.parent, f"{name} {given}")
    return target


def refuse_link(path: Path, label: str) -> None:
    """Raise :class:`OutputPathError` if ``path`` is a symbolic link (dangling or not): a file
    or directory of ours is never written, or deleted, through one.

    ``label`` names ``path`` in the message.
    """
    if path.is_symlink():
        raise OutputPathError(f"{label} is a symbolic link (to {os.readlink(path)!r}); sege-cvx "
                              "never writes or deletes through one: remove it, or choose "
                              "another path")


def check_writable_under(start: Path, label: str) -> None:
    """Check that files can be made at ``start``: its nearest existing ancestor (or itself) is a
    directory where a probe file can be created and removed.

    Raises
    ------
    OutputPathError
        Naming ``label`` (the path as messages call it) and what is wrong.
    """
    parent = _nearest_existing(start)
    if not parent.is_dir():
        raise OutputPathError(f"{label} lies under {str(parent)!r}, which is a file")
    try:
        _probe_writable(parent)
    except OSError as exc:
        raise OutputPathError(f"{label} cannot be written: creating a file in {str(parent)!r} "
                              f"failed ({exc.strerror or exc})") from None


def _fsync(path: Path) -> None:
    """Flush ``path`` (a file or a directory) to disk where the platform allows it."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # e.g. directories on Windows
    finally:
        os.close(fd)


def _sibling(target: Path, kind: str) -> Path:
    """An unused hidden name beside ``target``: ``.{name}.{kind}-XXXXXXXX``."""
    while True:
        candidate = target.parent / f".{target.name}.{kind}-{secrets.token_hex(4)}"
        if not os.path.lexists(candidate):
            return candidate


def _make_partial_dir(target: Path) -> Path:
    """A fresh hidden directory beside ``target`` (created with the umask's mode, unlike mkdtemp)."""
    while True:
        candidate = _sibling(target, "partial")
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        return candidate


def _publish(tmp: Path, target: Path, overwrite: bool, name: str, overwrite_hint: str) -> None:
    """Rename ``tmp`` onto ``target``; an old non-empty target (with ``overwrite``) goes away whole."""
    _fsync(tmp)
    if os.path.lexists(target) and not target.is_dir():
        raise OutputPathError(f"{name} {str(target)!r} became a file while the results were computed")
    if target.is_dir() and any(target.iterdir()):
        if not overwrite:
            raise OutputPathError(f"{name} {str(target)!r} received files while the results were "
                                  f"computed; pass {overwrite_hint} to replace it whole")
        old = _sibling(target, "old")
        os.rename(target, old)  # the old results leave together ...
        try:
            os.rename(tmp, target)  # ... and the new ones arrive together
        except BaseException:
            os.rename(old, target)
            raise
        shutil.rmtree(old, ignore_errors=True)
    else:
        try:
            os.replace(tmp, target)  # onto a missing or empty directory: one atomic rename (POSIX)
        except OSError:
            if not (target.is_dir() and not any(target.iterdir())):
                raise
            target.rmdir()  # platforms that cannot rename onto an empty directory
            os.rename(tmp, target)
    _fsync(target.parent)


@contextlib.contextmanager
def atomic_output_dir(
    path: str | os.PathLike,
    overwrite: bool = False,
    *,
    name: str = "out_dir",
    overwrite_hint: str = "overwrite=True",
) -> Iterator[Path]:
    """Yield a hidden directory beside ``path`` to write into; publish it at ``path`` on success.

    The target is checked first (:func:`check_output_dir`). On a normal exit the hidden
    directory is renamed onto the target (an existing non-empty target, allowed by
    ``overwrite``, is moved away first and then deleted); on an exception or interrupt it is
    deleted, with any parent directories this call created, and the target is left untouched.

    Parameters
    ----------
    path, overwrite, name, overwrite_hint
        As in :func:`check_output_dir`.

    Yields
    ------
    Path
        The hidden directory (same parent as the target, so the final rename is atomic).
    """
    target = check_output_dir(path, overwrite, name=name, overwrite_hint=overwrite_hint)
    created = []  # missing parents, removed again if nothing gets published
    for parent in reversed(target.parents):
        if not parent.exists():
            parent.mkdir()
            created.append(parent)
    tmp = _make_partial_dir(target)
    try:
        yield tmp
        _publish(tmp, target, overwrite, name, overwrite_hint)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        for parent in reversed(created):
            with contextlib.suppress(OSError):
                parent.rmdir()
        raise


def write_manifest(directory: str | os.PathLike | Directory, provenance: dict,
                   extra: dict | None = None) -> Path:
    """Write ``manifest.json``: every other file's path, size and SHA-256, and the provenance.

    Call it last: the files it lists are flushed to disk before it is written.

    Parameters
    ----------
    directory : str, path-like or Directory
        The directory whose files (recursively) are listed, by POSIX paths relative to it;
        an open :class:`~sege_cvx.experiments.files.Directory` is read and written through its
        descriptor.
    provenance : dict
        JSON-ready provenance (see :func:`provenance`).
    extra : dict, optional
        More JSON-ready entries (a sweep's spec and shard status).

    Returns
    -------
    Path
        The manifest's path.

    Raises
    ------
    OutputPathError
        If the directory holds a symbolic link (its target is not ours to vouch for), a FIFO or
        a device.
    """
    if not isinstance(directory, Directory):
        with Directory(directory, f"{str(directory)!r}") as opened:
            return write_manifest(opened, provenance, extra)
    files = [f for f in directory.files(digests=True) if f["path"] != MANIFEST]
    # Written whole or not at all (a hidden file renamed onto it): a resumable sweep's directory
    # is not published by one rename, and a truncated manifest would claim complete results.
    directory.write(MANIFEST, (json.dumps({"files": files, **(extra or {}),
                                           "provenance": provenance}, indent=2) + "\n").encode())
    directory.fsync()
    return directory.path / MANIFEST


@functools.cache
def _version(distribution: str) -> str | None:
    """The installed version of ``distribution`` (read once per process: reading a
    distribution's metadata parses its files, a few milliseconds each, and a sweep asks for
    every shard)."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def runtime_versions() -> dict[str, str | None]:
    """The versions of sege_cvx (of the imported code: the installed metadata may describe
    another checkout), Python and the numerical dependencies (``None`` for one not installed),
    and ``sege_cvx_source``, a SHA-256 of sege_cvx's own source files (an edited checkout keeps
    its version string): a run's numbers are promised bit for bit only under the same ones."""
    from .. import __version__

    versions = {"sege_cvx": __version__, "sege_cvx_source": source_digest(),
                "python": platform.python_version()}
    versions.update({pkg: _version(pkg) for pkg in PROVENANCE_PACKAGES})
    return versions


def provenance(command_line: Sequence[str] | None = None, seed: object = None) -> dict:
    """Where results came from: software versions, platform, command line and seed.

    Parameters
    ----------
    command_line : sequence of str, optional
        Default ``sys.argv``.
    seed : int, optional
        The study's root seed.

    Returns
    -------
    dict
        JSON-ready: ``versions`` (sege_cvx, Python and the numerical dependencies; ``None`` for
        one not installed), ``platform``, ``machine``, ``command_line``, ``seed`` and
        ``created_utc``.
    """
    return {
        "versions": runtime_versions(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "command_line": [str(a) for a in (sys.argv if command_line is None else command_line)],
        "seed": seed,
        "created_utc": datetime.now(UTC).isoformat(timespec="seconds"),
    }
