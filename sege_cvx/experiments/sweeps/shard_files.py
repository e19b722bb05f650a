"""Shards on disk: each written under ``DIR/shards/`` with its SHA-256 beside it
(:func:`write_shard`), and used only once checked: its bytes against their checksum, its table
against its task (:func:`read_shard`; :func:`read_cell` for a cell's, :func:`unfinished_tasks` for
those a resumed sweep still has to compute)."""

from __future__ import annotations

import hashlib
import warnings

import pyarrow as pa
import pyarrow.parquet as pq

from ..files import ChecksumError, Directory, FileKindError, check_sha256
from .errors import SweepError, SweepWarning
from .shards import ShardTask, check_shard_table

#: A shard's checksum file beside it: ``<sha256>  <name>.parquet`` (``sha256sum -c`` reads it).
CHECKSUM_SUFFIX = ".sha256"
#: Largest files read back: a checksum file, a shard (effectively any).
MAX_CHECKSUM_BYTES, MAX_SHARD_BYTES = 4096, 1 << 40


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


def unfinished_tasks(shards: Directory, tasks: list[ShardTask]) -> list[ShardTask]:
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
