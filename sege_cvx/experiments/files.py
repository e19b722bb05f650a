"""Reading and writing our files safely: never through a symbolic link, never blocking on a FIFO,
never half-written.

* :class:`Directory` is a directory of ours opened once (not through a link).  Every file is
  created, read, replaced and removed relative to that open directory, so a link swapped in
  at its path while a sweep or a report runs receives nothing.
* :meth:`Directory.write` writes a new hidden sibling exclusively, flushes it and renames it
  onto the name: a reader sees the old file or the new one, never part of one.
* :func:`read_regular` and :meth:`Directory.read` read regular files only (a FIFO or a device
  would block or never end), up to a size limit, without blocking on open.

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as tmp, Directory(tmp, "results") as d:
...     d.write("a.txt", b"hello")
...     d.read("a.txt", max_bytes=100)
b'hello'
"""

from __future__ import annotations

import hashlib
import os
import secrets
import stat
from pathlib import Path

#: Whether this platform resolves names relative to an open directory (POSIX); elsewhere the
#: same checks are made on paths.
_AT = ({os.open, os.rename, os.unlink, os.mkdir, os.stat, os.link} <= os.supports_dir_fd
       and os.listdir in os.supports_fd and hasattr(os, "fwalk"))  # os.replace is os.rename's
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


class OutputPathError(ValueError):
    """An output path that cannot receive results; the message is one line naming the path."""


class FileKindError(OutputPathError):
    """A path of ours that holds the wrong kind of file (a link, a directory where a file goes,
    a FIFO or device) or a file larger than it may be; the message names it and what to do."""


class ChecksumError(ValueError):
    """A file whose bytes do not match the SHA-256 recorded for it; the message names it."""


def _kind(mode: int) -> str:
    return ("a symbolic link" if stat.S_ISLNK(mode) else "a directory" if stat.S_ISDIR(mode)
            else "a regular file" if stat.S_ISREG(mode) else "a FIFO" if stat.S_ISFIFO(mode)
            else "a device or socket")


def _read_fd(fd: int, label: str, max_bytes: int) -> bytes:
    """Read the open ``fd`` (closed afterwards) if it is a regular file of at most ``max_bytes``."""
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise FileKindError(f"{label} is {_kind(info.st_mode)}, not a regular file")
        # One byte more than allowed, or than it has: a file still growing is cut off here.
        data = f.read(min(max_bytes, info.st_size) + 1)
    if len(data) > max_bytes:
        raise FileKindError(f"{label} is too large: {max(info.st_size, len(data)):,} bytes, more "
                            f"than the {max_bytes:,} it may have")
    return data


def read_regular(path: str | os.PathLike, max_bytes: int, label: str | None = None) -> bytes:
    """The bytes of the regular file at ``path`` (links followed: it is the user's path), of at
    most ``max_bytes``.  Opening does not block (a FIFO would wait for a writer).

    Raises
    ------
    FileKindError
        Not a regular file, or larger than ``max_bytes``; ``OSError`` if it cannot be opened.
    """
    return _read_fd(os.open(path, os.O_RDONLY | _NONBLOCK), label or str(path), max_bytes)


class Directory:
    """A directory of ours, opened once and not through a symbolic link.

    Parameters
    ----------
    path : str or path-like
        The directory (it must exist).
    label : str
        How messages name it (e.g. ``"--out 'results'"``); inside a ``parent``, messages name
        the parent and the path below it (``"--out 'results': shards/x.parquet"``).
    parent : Directory, optional
        Open ``path`` (then a single name) inside this directory, relative to it.

    Raises
    ------
    FileKindError
        If ``path`` is a symbolic link or not a directory.
    """

    def __init__(self, path: str | os.PathLike, label: str, *, parent: Directory | None = None):
        self.path = parent.path / path if parent is not None else Path(path)
        #: How messages name the top directory, and this one's path below it ('' or 'a/b/').
        self.label, self.prefix = (parent.label, f"{parent.prefix}{path}/") if parent else (label, "")
        self.fd = None
        if _AT:
            where = {"dir_fd": parent.fd} if parent is not None else {}
            try:
                self.fd = os.open(path, os.O_RDONLY | _DIRECTORY | _NOFOLLOW, **where)
            except OSError as exc:
                info = self._lstat_or_none(path, parent)
                if info is None or stat.S_ISDIR(info.st_mode):
                    raise
                raise FileKindError(f"{label} is {_kind(info.st_mode)}, not a directory; sege-cvx "
                                    "never writes through a link: remove it, or choose another "
                                    "path") from exc
        else:
            info = os.lstat(self.path)
            if not stat.S_ISDIR(info.st_mode):
                raise FileKindError(f"{label} is {_kind(info.st_mode)}, not a directory")

    @staticmethod
    def _lstat_or_none(name, parent: Directory | None):
        try:
            if parent is not None and parent.fd is not None:
                return os.stat(name, dir_fd=parent.fd, follow_symlinks=False)
            return os.lstat(name)
        except OSError:
            return None

    # --- names relative to the open directory -----------------------------------------------------

    def _at(self, name: str) -> dict:
        return {"dir_fd": self.fd} if self.fd is not None else {}

    def _name(self, name: str):
        return name if self.fd is not None else self.path / name

    def _named(self, name: str) -> str:
        """How messages name the entry ``name`` of this directory."""
        return f"{self.label}: {self.prefix}{name}"

    def lstat(self, name: str) -> os.stat_result | None:
        """``name``'s status (a link's own), or None if there is none."""
        try:
            return os.stat(self._name(name), follow_symlinks=False, **self._at(name))
        except FileNotFoundError:
            return None

    def check_file_place(self, name: str) -> None:
        """Raise :class:`FileKindError` unless ``name`` is missing or a regular file: where a
        file of ours goes, a link, a directory or a FIFO is refused."""
        info = self.lstat(name)
        if info is not None and not stat.S_ISREG(info.st_mode):
            raise FileKindError(f"{self._named(name)} is {_kind(info.st_mode)}, where sege-cvx "
                                "keeps a file; sege-cvx never writes through a link or replaces "
                                "what it did not write: remove it, or choose another path")

    def names(self) -> list[str]:
        """The entries of the directory (sorted)."""
        return sorted(os.listdir(self.fd if self.fd is not None else self.path))

    def subdir(self, name: str, *, create: bool = False) -> Directory:
        """The directory ``name`` inside this one, made first with ``create`` (if missing)."""
        if create:
            try:
                os.mkdir(self._name(name), **self._at(name))
            except FileExistsError:
                pass
        return Directory(name, self._named(name), parent=self)

    def read(self, name: str, max_bytes: int) -> bytes:
        """The bytes of the regular file ``name`` (not through a link) of at most ``max_bytes``.

        Raises
        ------
        FileNotFoundError
            If there is no ``name``.
        FileKindError
            A link, a directory, a FIFO or device, or a file larger than ``max_bytes``.
        """
        label = self._named(name)
        try:
            fd = os.open(self._name(name), os.O_RDONLY | _NOFOLLOW | _NONBLOCK, **self._at(name))
        except FileNotFoundError:
            raise
        except OSError as exc:  # ELOOP for a link, EISDIR and the like
            info = self.lstat(name)
            if info is None or stat.S_ISREG(info.st_mode):
                raise
            raise FileKindError(f"{label} is {_kind(info.st_mode)}, not a regular file") from exc
        return _read_fd(fd, label, max_bytes)

    def write(self, name: str, data: bytes) -> None:
        """Write ``data`` as ``name``, whole or not at all.

        A new hidden sibling is created exclusively (never following a link), flushed to disk
        and renamed onto ``name``.  ``name`` must be missing or a regular file
        (:meth:`check_file_place`).

        Raises
        ------
        FileKindError
            ``name`` is a link, a directory or another kind of file.
        OSError
            The write failed; its ``filename`` is ``name``'s path, not the hidden sibling's.
        """
        self.check_file_place(name)
        tmp = f".{name}.partial-{secrets.token_hex(4)}"
        try:
            fd = os.open(self._name(tmp), os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW,
                         0o666, **self._at(tmp))
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(self._name(tmp), self._name(name),
                           **({"src_dir_fd": self.fd, "dst_dir_fd": self.fd} if self.fd is not None
                              else {}))
            finally:
                self.unlink(tmp)
        except OSError as exc:  # named by the file meant, not by its hidden temporary
            raise OSError(exc.errno, exc.strerror, str(self.path / name)) from None

    def unlink(self, name: str) -> None:
        """Remove the file ``name`` if there is one (a link is removed itself)."""
        try:
            os.unlink(self._name(name), **self._at(name))
        except FileNotFoundError:
            pass

    def open(self, name: str, flags: int = os.O_RDONLY) -> int:
        """An fd of the file ``name``, opened without following a link (ELOOP if it is one)."""
        return os.open(self._name(name), flags | _NOFOLLOW, **self._at(name))

    def link(self, source: str, name: str) -> None:
        """Make ``name`` a hard link to ``source`` (FileExistsError if ``name`` exists)."""
        if self.fd is not None:
            os.link(source, name, src_dir_fd=self.fd, dst_dir_fd=self.fd, follow_symlinks=False)
        else:
            os.link(self.path / source, self.path / name)

    def files(self, digests: bool = False) -> list[dict]:
        """Every regular file below this directory: ``{"path": relative POSIX path, "bytes":
        size}`` and, with ``digests``, its ``"sha256"``; in sorted order.

        Raises
        ------
        FileKindError
            At the first symbolic link, FIFO or device found: nothing of ours is one, and
            hashing a FIFO would block.
        """
        out = []
        for top, names, where, at in self._walk():
            for name in names:
                info = os.stat(at(name), follow_symlinks=False, **where)
                if stat.S_ISDIR(info.st_mode):
                    continue
                path = Path(top, name).as_posix()
                if not stat.S_ISREG(info.st_mode):
                    raise FileKindError(f"{self._named(path)} is {_kind(info.st_mode)}; sege-cvx "
                                        "keeps only directories and regular files there: remove "
                                        "it")
                entry = {"path": path, "bytes": info.st_size}
                if digests:
                    entry["sha256"] = _sha256_fd(
                        os.open(at(name), os.O_RDONLY | _NOFOLLOW | _NONBLOCK, **where))
                out.append(entry)
        return sorted(out, key=lambda e: e["path"])

    def _walk(self):
        """Per directory below this one, links never followed: its path relative to this one,
        its entries, and how to name an entry (keywords and a name mapper)."""
        if self.fd is not None:
            for top, dirs, files, dirfd in os.fwalk(".", dir_fd=self.fd, follow_symlinks=False):
                yield top, sorted(dirs + files), {"dir_fd": dirfd}, lambda name: name
        else:
            for top, dirs, files in os.walk(self.path, followlinks=False):
                yield (os.path.relpath(top, self.path), sorted(dirs + files), {},
                       lambda name, top=top: os.path.join(top, name))

    def fsync(self) -> None:
        """Flush the directory's entries to disk where the platform allows it."""
        if self.fd is not None:
            try:
                os.fsync(self.fd)
            except OSError:
                pass

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> Directory:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _sha256_fd(fd: int) -> str:
    """The SHA-256 of the open regular file ``fd`` (closed afterwards), read in blocks, once
    the file is flushed to disk (a manifest vouches for files that are complete on disk)."""
    digest = hashlib.sha256()
    with os.fdopen(fd, "rb") as f:
        try:
            os.fsync(f.fileno())
        except OSError:
            pass  # e.g. a filesystem that cannot; the bytes hashed are still the file's
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_sha256(data: bytes, sha256: str, label: str) -> bytes:
    """``data`` if its SHA-256 is ``sha256``; :class:`ChecksumError` naming ``label`` if not."""
    if hashlib.sha256(data).hexdigest() != sha256:
        raise ChecksumError(f"{label} does not match the SHA-256 recorded for it: it was changed "
                            "or damaged after it was written")
    return data
