"""Merging a sweep's checked shards into its tables: ``runs.parquet`` (one row per cell x run)
and ``curves.parquet`` (one row per cell x checkpoint: aggregates across runs), with the cell's
problem, algorithm and grid parameters as columns (:func:`grid_columns`); :func:`merge_shards`
returns each shard's status for the manifest."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..files import Directory
from ..spec import StudySpec
from .shard_files import read_cell
from .shards import DECISION_PREFIX, ShardTask, decision_columns, shard_metadata, shard_statistics


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
        own_columns = decision_columns(len(own))
        counts = _decision_columns(own, decisions, n,
                                   lambda code, t=table, c=own_columns: t.column(c[code]))
        columns = {**_cell_columns(spec, n, cell, names)}
        for c in table.column_names:
            if c == own_columns[0]:
                columns.update(counts)
            elif not c.startswith(("curve_", DECISION_PREFIX)):
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
    """One cell's rows of ``curves.parquet``: aggregates across runs at each checkpoint
    (:meth:`~sege_cvx.stages.statistics.RunStatistics.curves`) and the decisions."""
    C = len(stats.checkpoints)
    summed = stats.decisions.sum(axis=1)
    columns = {**_cell_columns(spec, C, cell, names), **stats.curves()}
    columns.update(_decision_columns(
        own, decisions, C, lambda code: pa.chunked_array([pa.array(summed[:, code])])))
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
