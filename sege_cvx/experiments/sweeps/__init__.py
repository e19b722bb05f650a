"""Sweeps: run a study spec's every cell over its seeded runs, sharded over local worker
processes or a Dask cluster, and read and report the results.

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
computed again (a :class:`~.errors.SweepWarning` says which).  So a resumed sweep gives the same
files as an uninterrupted one, bit for bit, whatever was damaged, and a sweep whose problems or
software changed since it started is refused (or, with ``overwrite``, restarted).

The modules, one step each, in the order a sweep takes them:

* :mod:`.run`: :func:`run_sweep`, which orders the steps below;
* :mod:`.plan`: the cells checked before any work, the algorithms described, the shards planned;
* :mod:`.directory`: the results directory, its record ``sweep.json`` and the lock on it;
* :mod:`.workers`: where shards run (this process, local worker processes, Dask);
* :mod:`.shards`: one shard, the unit of work: :class:`~.shards.ShardTask`, its table;
* :mod:`.shard_files`: shards on disk, with their checksums;
* :mod:`.merge`: the shards merged into ``runs.parquet`` and ``curves.parquet``;
* :mod:`.errors`: what a sweep says when it stops or warns;
* :mod:`.store`: the results read back (:func:`load_results`, :class:`SweepResults`);
* :mod:`.report`: their table and figures as files (:func:`write_report`).

Names load their modules on first use (PEP 562).
"""

from ..._lazy import lazy_exports

_EXPORTS = {"run_sweep": ".run", "SweepError": ".errors", "SweepWarning": ".errors",
            "SchedulerError": ".workers", "SweepResults": ".store", "load_results": ".store",
            "ResultsError": ".store", "write_report": ".report"}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
