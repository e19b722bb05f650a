"""A finished sweep's results as pandas DataFrames: per-run rows, per-checkpoint curves, tables."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .outputs import MANIFEST

#: Columns that identify a cell besides the grid parameters.
CELL_COLUMNS = ("problem", "algorithm")


class ResultsError(ValueError):
    """A directory that holds no complete sweep results; the message names it."""


@dataclass
class SweepResults:
    """The results of :func:`~sege_cvx.experiments.sweep.run_sweep`.

    Attributes
    ----------
    runs : pandas.DataFrame
        ``runs.parquet``: one row per cell x run.
    curves : pandas.DataFrame
        ``curves.parquet``: one row per cell x checkpoint stage ``t``.
    manifest : dict
        ``manifest.json``: the spec, problems, shard status, files and provenance.
    path : Path
        The results directory.
    """

    runs: pd.DataFrame
    curves: pd.DataFrame
    manifest: dict
    path: Path

    @property
    def cell_columns(self) -> list[str]:
        """``problem``, ``algorithm`` and the grid parameters: the columns naming a cell."""
        grid = [c for c in self.runs.columns if c not in CELL_COLUMNS and c != "run"]
        grid = grid[:grid.index("seed")] if "seed" in grid else grid
        return [*CELL_COLUMNS, *grid]

    def table(self, by: str | list[str] | None = None) -> pd.DataFrame:
        """Per group of runs: mean final regret and its standard error, safety figures.

        Parameters
        ----------
        by : str or list of str, optional
            Columns of :attr:`runs` to group by (default: the cell columns, one row per cell).

        Returns
        -------
        pandas.DataFrame
            Indexed by ``by``, with columns ``runs``, ``regret_mean``, ``regret_se`` (standard
            error of the mean, ``sd / sqrt(runs)``), ``violating_runs`` (runs with any stage
            below ``b``), ``violating_pairs`` (run-stage pairs below ``b``), ``first_violation``
            (earliest violating stage, ``<NA>`` if none) and ``fallbacks``.
        """
        keys = self.cell_columns if by is None else [by] if isinstance(by, str) else list(by)
        missing = [k for k in keys if k not in self.runs.columns]
        if missing:
            raise KeyError(f"by names no column of runs: {missing} (columns: "
                           f"{', '.join(self.runs.columns)})")
        groups = self.runs.groupby(keys, sort=False, dropna=False)
        out = pd.DataFrame({
            "runs": groups.size(),
            "regret_mean": groups["regret"].mean(),
            "regret_se": groups["regret"].sem(ddof=1).fillna(0.0),
            "violating_runs": groups["violations"].apply(lambda v: int((v > 0).sum())),
            "violating_pairs": groups["violations"].sum(),
            "first_violation": groups["first_violation"].min(),
            "fallbacks": groups["fallbacks"].sum(),
        })
        return out


def load_results(path: str | os.PathLike) -> SweepResults:
    """Read a finished sweep's directory (``runs.parquet``, ``curves.parquet``, ``manifest.json``).

    Raises
    ------
    ResultsError
        If ``path`` holds no finished sweep (no ``manifest.json``: still running, killed, or
        not a sweep; rerunning the sweep's command resumes it), or a manifest without the
        sweep's tables or that cannot be read.
    """
    path = Path(path)
    manifest_path = path / MANIFEST
    if not manifest_path.is_file():
        hint = (" (a sweep was started there but has not finished: rerun its command to resume)"
                if (path / "sweep.json").exists() else "")
        raise ResultsError(f"{str(path)!r} holds no finished sweep results{hint}")
    missing = [name for name in ("runs.parquet", "curves.parquet") if not (path / name).is_file()]
    if missing:  # e.g. results of a release before sweeps, or files removed since
        raise ResultsError(f"{str(path)!r} holds no sweep results: its manifest is there but not "
                           f"{' or '.join(missing)}")
    try:
        manifest = json.loads(manifest_path.read_text())
    except ValueError as exc:
        raise ResultsError(f"{str(path)!r} holds an unreadable {MANIFEST} ({exc})") from None
    runs = pd.read_parquet(path / "runs.parquet")
    # Stages are integers; a run without a violation has none (<NA>, not a float NaN).
    runs["first_violation"] = runs["first_violation"].astype("Int64")
    curves = pd.read_parquet(path / "curves.parquet")
    return SweepResults(runs, curves, manifest, path)
