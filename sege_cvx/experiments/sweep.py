"""Deprecated: moved to :mod:`sege_cvx.experiments.sweeps` (:func:`run_sweep` to
:mod:`~sege_cvx.experiments.sweeps.run`, the cells and shards it plans to :mod:`~.sweeps.plan`,
its directory and record to :mod:`~.sweeps.directory`, shard files to :mod:`~.sweeps.shard_files`,
worker processes and Dask to :mod:`~.sweeps.workers`, merging to :mod:`~.sweeps.merge`, its
errors to :mod:`~.sweeps.errors`).  Kept for one release: each public name still resolves here,
with a ``DeprecationWarning`` naming its new module."""

from .._deprecation import deprecated_names, moved

_HOMES = {
    "run_sweep": "run",
    "DEFAULT_SHARD_RUNS": "plan", "check_cells": "plan", "describe_algorithms": "plan",
    "plan_shards": "plan",
    "SWEEP_RECORD": "directory", "MAX_RECORD_BYTES": "directory", "check_sweep_dir": "directory",
    "CHECKSUM_SUFFIX": "shard_files", "MAX_CHECKSUM_BYTES": "shard_files",
    "MAX_SHARD_BYTES": "shard_files", "ShardError": "shard_files", "read_cell": "shard_files",
    "read_shard": "shard_files", "write_shard": "shard_files",
    "SchedulerError": "workers", "follow_parent": "workers",
    "grid_columns": "merge", "merge_shards": "merge",
    "SweepError": "errors", "SweepWarning": "errors",
}

__all__ = sorted(_HOMES)

__getattr__ = deprecated_names(__name__, moved({name: f"sege_cvx.experiments.sweeps.{home}"
                                                for name, home in _HOMES.items()}))
