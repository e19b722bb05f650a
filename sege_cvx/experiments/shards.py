"""Deprecated: moved to :mod:`sege_cvx.experiments.sweeps.shards` (a shard is a sweep's unit of
work).  Kept for one release: each public name still resolves here, with a
``DeprecationWarning`` naming its new module."""

from .._deprecation import deprecated_names, moved

_NAMES = ("CURVES", "DECISION_COLUMNS", "METADATA_KEY", "ShardTask", "build_problem", "cell_key",
          "check_shard_table", "checkpoints_of", "run_seed", "run_shard", "shard_metadata",
          "shard_schema", "shard_statistics", "shard_table", "task_seeds")

__all__ = sorted(_NAMES)

__getattr__ = deprecated_names(__name__, moved(dict.fromkeys(
    _NAMES, "sege_cvx.experiments.sweeps.shards")))
