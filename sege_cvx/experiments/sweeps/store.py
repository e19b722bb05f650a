"""A finished sweep's results as pandas DataFrames: :func:`load_results` reads a results directory
(each table checked against the SHA-256 its manifest records) into :class:`SweepResults`: per-run
rows, per-checkpoint curves, a table per cell, and figures with quantile or confidence bands
(drawn with the layout of :mod:`~sege_cvx.experiments._plotting` and the bands of
:mod:`~sege_cvx.experiments.bands`, as the study's figures are).

matplotlib loads only when a figure is drawn, so reading results and their tables stays light.
"""

from __future__ import annotations

import io
import json
import math
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..bands import BAND_NAMES, check_band, resolve_band
from ..files import ChecksumError, check_sha256, read_regular
from ..outputs import MANIFEST

if TYPE_CHECKING:
    from ...stages.statistics import RunStatistics

#: Columns that identify a cell besides the grid parameters.
CELL_COLUMNS = ("problem", "algorithm")
#: Files a finished sweep holds.
RESULT_FILES = ("runs.parquet", "curves.parquet")
#: Largest manifest and table read (a manifest lists every shard; tables grow with runs).
MAX_MANIFEST_BYTES, MAX_TABLE_BYTES = 1 << 30, 1 << 40
#: The reward figure's reference lines: manifest key, label, short name, style (figures.py's b and
#: optimum).
_REFERENCES = (
    ("threshold", "threshold $b$", "$b$", {"color": "red", "linestyle": "--"}),
    ("baseline_reward", "baseline reward $b_0$", "$b_0$", {"color": "dimgray", "linestyle": "-."}),
    ("optimal_reward", "optimal reward", "optimum", {"color": "black", "linestyle": ":"}),
)


class ResultsError(ValueError):
    """A directory that holds no complete sweep results; the message names it."""


def cell_label(value) -> str:
    """A cell parameter as labels and tables show it: ``0.25``, ``1e-06``, ``closed_form``."""
    if isinstance(value, float | np.floating):
        return f"{value:g}"
    return str(value)


def is_missing(value) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float | np.floating) and np.isnan(value))


#: The decision columns of every algorithm in a sweep of an earlier version (by code).
_EARLIER_DECISION_COLUMNS = ("exploit", "explore_lcb", "explore_baseline")


def _unset(key: str, algorithms, parameters: dict[str, tuple[str, ...]]) -> str:
    """How a grid column left null reads for cells of ``algorithms`` (whose grid ``parameters``
    are given by name): ``default`` where each has the parameter (its grid did not set it: the
    algorithm's own default ran, which differs between algorithms, e.g. ROFUL's radius),
    ``n/a`` where none has it."""
    has = {key in parameters.get(a, ()) for a in algorithms}
    return "default" if has == {True} else "n/a" if has == {False} else "default or n/a"


@dataclass
class SweepResults:
    """The results of :func:`~sege_cvx.experiments.sweeps.run.run_sweep`, as read by :func:`load_results`.

    A *cell* is one problem x algorithm x setting of the algorithm's grid parameters
    (:attr:`cell_columns`); each cell ran the same number of independent runs.

    Usage::

        import sege_cvx as sc
        from sege_cvx.experiments import write_report

        res = sc.load_results("results-sweep")
        res.runs                         # one row per cell x run (final regret, violations, ...)
        res.curves                       # one row per cell x checkpoint stage t
        res.table()                      # per cell: mean final regret +- s.e., safety figures
        res.table(by="algorithm")        # the same pooled over other columns
        res.plot_regret()                # one panel per problem, one line per cell
        res.plot_reward(band="ci")       # expected reward with b, b0 and the optimum drawn
        write_report(res, "report")      # table.md, table.csv, regret/reward .png and .pdf

    Attributes
    ----------
    runs : pandas.DataFrame
        ``runs.parquet``: one row per cell x run.
    curves : pandas.DataFrame
        ``curves.parquet``: one row per cell x checkpoint stage ``t``.
    manifest : dict
        ``manifest.json``: the spec, problems (``dim``, ``baseline_reward`` b0, ``threshold`` b,
        ``optimal_reward``, ``description``), algorithms (their classes, grid parameters,
        decision names and colours), shard status, files and provenance.
    path : Path or None
        The results directory; None for the sweep of :func:`~sege_cvx.experiments.run_study`,
        whose directory was temporary (its tables and manifest are here, its shards are gone).
    """

    runs: pd.DataFrame
    curves: pd.DataFrame
    manifest: dict
    path: Path | None

    @property
    def where(self) -> str:
        """The results directory as messages name it."""
        return repr(str(self.path)) if self.path is not None else "a study's sweep (in memory)"

    @property
    def algorithms(self) -> dict[str, dict]:
        """Per algorithm name: ``grid_parameters``, ``decision_names`` and ``color``, as the
        sweep recorded them.  A sweep of an earlier version recorded none: its parameters and
        colours are read from the policy registry, and its decision columns are, for every
        algorithm, the three it wrote (``exploit``, ``explore_lcb``, ``explore_baseline``, by
        code)."""
        recorded = self.manifest.get("algorithms")
        if isinstance(recorded, dict):
            return recorded
        from ...policies.registry import grid_parameters, policy_entry

        known = {}
        for name in self.runs["algorithm"].unique():
            try:
                entry = policy_entry(name)
            except (ValueError, TypeError, ImportError):
                continue
            known[name] = {"grid_parameters": list(grid_parameters(entry)),
                           "decision_names": list(_EARLIER_DECISION_COLUMNS),
                           "color": entry.color}
        return known

    def _grid_parameters(self) -> dict[str, tuple[str, ...]]:
        return {name: tuple(a.get("grid_parameters", ())) for name, a in self.algorithms.items()}

    @property
    def cell_columns(self) -> list[str]:
        """``problem``, ``algorithm`` and the grid parameters: the columns naming a cell."""
        grid = [c for c in self.runs.columns if c not in CELL_COLUMNS and c != "run"]
        grid = grid[:grid.index("seed")] if "seed" in grid else grid
        return [*CELL_COLUMNS, *grid]

    def cell_index(self, problem: str | None = None, algorithm: str | None = None,
                   **grid) -> int:
        """The index of the one cell (in the spec's order) of ``problem`` (its label),
        ``algorithm`` (its name in the spec) and the grid values ``grid``; ``None`` matches any.

        Raises
        ------
        ResultsError
            If no cell or more than one matches (the message lists the cells).
        """
        from ..spec import StudySpec

        cells = StudySpec.from_dict(self.manifest["spec"], import_policies=False).cells()
        found = [k for k, (p, a, setting) in enumerate(cells)
                 if problem in (None, p.label) and algorithm in (None, a.name)
                 and all(k in setting and setting[k] == v for k, v in grid.items())]
        if len(found) != 1:
            listed = "; ".join(f"{p.label} {a.name} {setting or ''}".strip()
                               for p, a, setting in cells)
            wanted = {"problem": problem, "algorithm": algorithm, **grid}
            raise ResultsError(f"{'no cell' if not found else f'{len(found)} cells'} of "
                               f"{self.where} match "
                               f"{ {k: v for k, v in wanted.items() if v is not None} }: "
                               f"the cells are {listed}")
        return found[0]

    def _sweep_record(self, method: str, keys: tuple[str, ...]) -> dict:
        """The manifest, checked to hold what ``method`` reads of a sweep's record."""
        missing = [key for key in keys if key not in self.manifest]
        if missing:
            raise ResultsError(f"{method} needs a sweep's directory; the manifest of "
                               f"{self.where} has no {', '.join(missing)} (a study's "
                               "--out directory keeps its tables, not its shards)")
        return self.manifest

    def run_statistics(self, problem: str | None = None, algorithm: str | None = None,
                       **grid) -> RunStatistics:
        """Every run's statistics at every checkpoint in the one cell :meth:`cell_index`
        selects, read from the sweep's shards (``shards/``, each checked against the sweep's
        record as a resume checks it): what ``runs.parquet`` and ``curves.parquet`` summarize.

        Returns
        -------
        RunStatistics
            :class:`~sege_cvx.stages.statistics.RunStatistics` of the cell's runs, in run
            order.
        """
        import pyarrow as pa

        from ..files import Directory
        from ..spec import StudySpec
        from .plan import plan_shards
        from .shard_files import read_cell
        from .shards import shard_statistics

        cell = self.cell_index(problem, algorithm, **grid)
        m = self._sweep_record("run_statistics", ("shard_runs", "versions", "algorithms"))
        if self.path is None:
            raise ResultsError("run_statistics reads a sweep's shards, and this sweep's directory "
                               "was temporary (run_study); the study's own per-run statistics are "
                               "in StudyResult.results, and sege-cvx sweep --out DIR keeps a "
                               "sweep's shards")
        if not (self.path / "shards").is_dir():
            raise ResultsError(f"{str(self.path)!r} holds no shards/ directory: run_statistics "
                               "reads a sweep's shards (sege-cvx sweep --out DIR keeps them)")
        tasks = [task for task in plan_shards(
            StudySpec.from_dict(m["spec"], import_policies=False), m["shard_runs"], None,
            {label: p["fingerprint"] for label, p in m["problems"].items()}, m["versions"],
            m["algorithms"]) if task.cell == cell]
        with Directory(self.path / "shards", "the sweep's shards") as shards:
            return shard_statistics(pa.concat_tables(read_cell(shards, tasks)))

    def fallback_reasons(self, problem: str | None = None, algorithm: str | None = None,
                         **grid) -> Counter[str]:
        """How often each failure status forced a fallback, over the runs of the one cell
        :meth:`cell_index` selects (from the manifest's record of its shards)."""
        cell = self.cell_index(problem, algorithm, **grid)
        reasons: Counter[str] = Counter()
        for shard in self._sweep_record("fallback_reasons", ("sweep",))["sweep"]:
            if shard["cell"] == cell:
                reasons.update(shard["fallback_reasons"])
        return reasons

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
            error of the mean, ``sd / sqrt(runs)``, 0 for one run), ``violating_runs`` (runs with any stage
            below ``b``), ``violating_pairs`` (run-stage pairs below ``b``), ``first_violation``
            (earliest violating stage, ``<NA>`` if none) and ``fallbacks``.
        """
        keys = self.cell_columns if by is None else [by] if isinstance(by, str) else list(by)
        missing = [k for k in keys if k not in self.runs.columns]
        if missing:
            raise KeyError(f"by names no column of runs: {missing} (columns: "
                           f"{', '.join(self.runs.columns)})")
        groups = self.runs.groupby(keys, sort=False, dropna=False)
        # Each group's own Series.mean and .std: the numbers a user computes from its runs, to
        # the last bit (groupby's cython aggregations sum in another order).
        regret = groups["regret"]
        out = pd.DataFrame({
            "runs": groups.size(),
            "regret_mean": regret.apply(lambda r: r.mean()),
            "regret_se": regret.apply(lambda r: r.std(ddof=1) / math.sqrt(len(r)) if len(r) > 1 else 0.0),
            "violating_runs": groups["violations"].apply(lambda v: int((v > 0).sum())),
            "violating_pairs": groups["violations"].sum(),
            "first_violation": groups["first_violation"].min(),
            "fallbacks": groups["fallbacks"].sum(),
        })
        return out

    def panel_keys(self, by: str | Sequence[str] | None) -> list[str]:
        """The columns whose values make the panels of :meth:`plot_regret` and :meth:`plot_reward`.

        Parameters
        ----------
        by : str, sequence of str or None
            Cell columns (:attr:`cell_columns`); ``None``: one panel with every cell.

        Returns
        -------
        list of str

        Raises
        ------
        ValueError
            If ``by`` names anything but a cell column; the message names it and the cell columns.
        """
        keys = [] if by is None else [by] if isinstance(by, str) else list(by)
        allowed = self.cell_columns
        for key in keys:
            if not isinstance(key, str) or key not in allowed:
                raise ValueError(f"by must name cell columns ({', '.join(allowed)}), got {key!r}")
        if len(set(keys)) < len(keys):
            raise ValueError(f"by names a column twice: {keys}")
        return keys

    def plot_regret(self, by: str | Sequence[str] | None = "problem", band: str | None = "auto",
                    ax=None):
        """Cumulative regret against the stage: mean over runs and a band, one line per cell.

        Parameters
        ----------
        by : str, sequence of str or None
            Cell columns: one panel per value (``"problem"``: one per problem; ``None``: one panel).
        band : {"auto", "quantile", "minmax", "ci", None}
            :mod:`~sege_cvx.experiments.bands`: ``"quantile"``, 5 % to 95 % quantiles over runs;
            ``"minmax"``, the range over runs; ``"ci"``, mean +- 1.96 standard errors (a 95 %
            confidence interval of the mean, within the range over runs); ``None``, the mean
            alone; ``"auto"``, quantiles where a panel draws at most two cells, else ``"ci"``.
        ax : matplotlib Axes or sequence of Axes, optional
            Where to draw, one per panel (default: a new figure, panels side by side, each with
            its legend below it).

        Returns
        -------
        matplotlib.figure.Figure
            Each cell's line is labelled with its algorithm and grid parameters (``SEGE c=0.25``;
            the problem too when ``by`` leaves it out), and panels are titled with their values.
        """
        return self._plot("regret", by, band, ax)

    def plot_reward(self, by: str | Sequence[str] | None = "problem", band: str | None = "auto",
                    ax=None):
        """Expected reward ``<X_t, theta*>`` at the checkpoints, with the threshold ``b``, the
        baseline reward ``b0`` and the optimal reward of each panel's problem.

        Parameters
        ----------
        by, band, ax
            As for :meth:`plot_regret` (the bands are over the runs' expected rewards at ``t``;
            ``"minmax"`` over every stage since the previous checkpoint too).

        Returns
        -------
        matplotlib.figure.Figure
            In a panel that mixes problems (``by`` without ``problem``) a reference line is drawn
            only if its value is the same for all of them; the title says which are not drawn.
        """
        return self._plot("reward", by, band, ax)

    # --- drawing --------------------------------------------------------------------------------

    def _panels(self, keys: list[str]) -> list[tuple[tuple, pd.DataFrame]]:
        if not keys:
            return [((), self.curves)]
        return [(values if isinstance(values, tuple) else (values,), frame)
                for values, frame in self.curves.groupby(keys, sort=False, dropna=False)]

    def _cells(self, frame: pd.DataFrame, keys: list[str]) -> list[tuple[str, str, pd.DataFrame]]:
        """A panel's cells in order of appearance: (label, algorithm, rows sorted by ``t``); an
        algorithm by its recorded label (an import path by its registered name)."""
        cells, recorded = self.cell_columns, self.algorithms
        out = []
        for values, rows in frame.groupby(cells, sort=False, dropna=False):
            cell = dict(zip(cells, values, strict=True))
            parts = [] if "problem" in keys else [str(cell["problem"])]
            parts.append(str(recorded.get(cell["algorithm"], {}).get("label", cell["algorithm"])))
            parts += [f"{k}={cell_label(v)}" for k, v in cell.items()
                      if k not in (*CELL_COLUMNS, *keys) and not is_missing(v)]
            out.append((" ".join(parts), cell["algorithm"], rows.sort_values("t")))
        return out

    def _references(self, frame: pd.DataFrame) -> tuple[list[tuple[float, str, dict]], list[str]]:
        """The reward panel's lines (value, name, style) and the names of those not drawn."""
        problems = self.manifest.get("problems", {})
        drawn, differ = [], []
        for key, name, short, style in _REFERENCES:
            values = {problems.get(p, {}).get(key) for p in frame["problem"].unique()}
            if len(values) == 1 and None not in values:
                drawn.append((values.pop(), name, style))
            elif len(values) > 1:
                differ.append(short)
        return drawn, differ

    def _plot(self, kind: str, by, band, ax):
        from .._plotting import (
            PANEL,
            PANEL_LEGEND_OFFSET,
            LineStyles,
            figure_legend,
            legend_below,
            legend_columns,
            legend_labels,
            legend_rows,
            panel_axes,
        )
        from ..figures import draw_cell

        keys = self.panel_keys(by)
        check_band(band)
        panels = self._panels(keys)
        if ax is not None:
            axes = [ax] if hasattr(ax, "plot") else list(ax)
            if len(axes) != len(panels):
                raise ValueError(f"ax must be {len(panels)} axes, one per panel of by={by!r}; "
                                 f"got {len(axes)}")
        contents = [(values, self._cells(frame, keys),
                     self._references(frame) if kind == "reward" else ([], []))
                    for values, frame in panels]
        band = resolve_band(band, max(len(cells) for _, cells, _ in contents))
        # One legend for the figure when every panel's would be the same (the same cells and
        # kinds of reference line: their values, which differ by problem, are then written on
        # each panel), else one under each panel.
        entries = [([c[0] for c in cells], [r[1] for r in refs]) for _, cells, (refs, _) in contents]
        shared = ax is None and len(panels) > 1 and all(e == entries[0] for e in entries)
        # Entries a legend row: two where the longest label fits twice in a panel's width (or
        # the figure's, for the one shared legend), else one, with labels too long for it (an
        # import path) wrapped to it.  Given axes: their own width.
        def ref_label(name: str, value: float) -> str:  # a shared legend's values are on the panels
            return name if shared else f"{name} = {value:.4g}"

        panel_width = PANEL[0] if ax is None else axes[0].bbox.width / axes[0].figure.dpi
        legend_width = panel_width * (min(len(panels), 3) if shared else 1)
        texts = [label for names, _ in entries for label in names] + [
            ref_label(name, value) for _, _, (refs, _) in contents for value, name, _ in refs]
        ncol = legend_columns(texts, legend_width)
        wrapped = dict(zip(texts, legend_labels(texts, legend_width, ncol), strict=True))
        titles = [self._panel_title(keys, values, cells, differ, panel_width)
                  for values, cells, (_, differ) in contents]
        if ax is None:
            rows = max(legend_rows([wrapped[c[0]] for c in cells]
                                   + [wrapped[ref_label(r[1], r[0])] for r in refs], ncol)
                       for _, cells, (refs, _) in contents)
            fig, axes = panel_axes(len(panels), 0 if shared else rows,
                                   title_lines=max(title.count("\n") + 1 for title in titles),
                                   figure_legend_rows=rows if shared else 0)
            offset = PANEL_LEGEND_OFFSET
        else:
            fig, offset = axes[0].figure, -0.17
        colors = {name: a["color"] for name, a in self.algorithms.items() if a.get("color")}
        styles = LineStyles(colors, self.curves["algorithm"].unique())
        for ax_, title, (_, cells, (refs, _)) in zip(axes, titles, contents, strict=True):
            handles, labels = [], []
            for label, algorithm, rows in cells:
                color, linestyle, marker = styles(label, algorithm)
                handles.append(draw_cell(ax_, rows, kind, band, color, linestyle=linestyle,
                                         label=label, marker=marker))
                labels.append(wrapped[label])
            for value, name, style in refs:
                label = ref_label(name, value)
                handles.append(ax_.axhline(value, linewidth=1, label=label, **style))
                labels.append(wrapped[label])
                if shared:  # the value on the panel, at the line's right end
                    ax_.annotate(f"{value:.4g}", xy=(1.0, value),
                                 xycoords=ax_.get_yaxis_transform(), xytext=(-2, 1.5),
                                 textcoords="offset points", ha="right", va="bottom",
                                 fontsize=7, color=style["color"],
                                 bbox={"facecolor": "white", "edgecolor": "none",
                                       "alpha": 0.8, "pad": 0.5})
            ax_.set_title(title, fontsize=10)
            ax_.set_xlabel("stage t")
            if kind == "reward":
                # Log t, as the single study's reward figures: the first few hundred stages, where
                # exploration starts from the baseline and any dip below b happens, get half the
                # axis; on a linear axis they are a sliver at its left edge.
                ax_.set_xscale("log")
                ylabel = r"expected reward $\langle X_t, \theta^*\rangle$"
            else:
                # Linear t, as the paper's Figure 2(c): how fast the regret grows late in the run
                # (straight or bending) and its final value, the table's number, read directly;
                # a log axis would spend most of its width on the first stages.
                ylabel = "cumulative regret"
            spec = ax_.get_subplotspec()
            if ax is not None or spec is None or spec.is_first_col():
                ax_.set_ylabel(ylabel)
            ax_.grid(alpha=0.25, linewidth=0.5)
            if not shared:
                legend_below(ax_, handles, labels, offset=offset, ncol=ncol)
        if shared:
            figure_legend(fig, handles, labels, ncol=ncol)
        if ax is None:
            what = "cumulative regret" if kind == "regret" else "expected reward"
            # Two lines: one panel is narrower than the whole title on one line.
            shown = "no band" if band is None else f"band: {BAND_NAMES[band]}"
            fig.suptitle(f"{what.capitalize()}: mean over runs\n{self._runs_text()}, {shown}",
                         fontsize=10)
        return fig

    def _panel_title(self, keys: list[str], values: tuple, cells, differ: list[str],
                     width: float) -> str:
        """A panel's title: its values of ``keys`` (an unset grid parameter as :func:`_unset`
        says), wrapped to ``width`` inches at fontsize 10 (an import path is wider than a
        panel), and a line naming the reference lines ``differ`` does not draw."""
        from .._plotting import wrap_text

        drawn, parameters = {c[1] for c in cells}, self._grid_parameters()
        title = ", ".join(cell_label(v) if k in CELL_COLUMNS else
                          f"{k}={_unset(k, drawn, parameters) if is_missing(v) else cell_label(v)}"
                          for k, v in zip(keys, values, strict=True)) or "all cells"
        title = wrap_text(title, width, 10)
        if differ:  # a line of its own, short enough for the panel's width
            title += f"\n({', '.join(differ)}: differ by problem, not drawn)"
        return title

    def _runs_text(self) -> str:
        counts = self.runs.groupby(self.cell_columns, sort=False, dropna=False).size()
        low, high = int(counts.min()), int(counts.max())
        if low == high:
            return f"{low} run{'' if low == 1 else 's'} per cell"
        return f"{low} to {high} runs per cell"


def load_results(path: str | os.PathLike, *, verify: bool = True) -> SweepResults:
    """Read a finished sweep's directory (``runs.parquet``, ``curves.parquet``, ``manifest.json``).

    Parameters
    ----------
    path : str or path-like
        The ``out`` directory of :func:`~sege_cvx.experiments.sweeps.run.run_sweep` (or of
        ``sege-cvx reproduce`` and ``run``).
    verify : bool, default True
        Check each table's SHA-256 against the manifest before reading it (the bytes checked
        are the bytes read): a table changed or damaged after it was written is refused.

    Returns
    -------
    sege_cvx.experiments.sweeps.store.SweepResults

    Raises
    ------
    ResultsError
        If ``path`` holds no finished sweep (no ``manifest.json``: still running, killed, or
        not a sweep; rerunning the sweep's command resumes it), its manifest lists no sweep
        files (e.g. the results of an old release) or cannot be read, or (with ``verify``) a
        table does not match the SHA-256 its manifest records; the message names the file.
    """
    path = Path(path)
    manifest_path = path / MANIFEST
    if not manifest_path.is_file():
        hint = (" (a sweep was started there but has not finished: rerun its command to resume)"
                if (path / "sweep.json").exists() else "")
        raise ResultsError(f"{str(path)!r} holds no finished sweep results{hint}")
    missing = [name for name in RESULT_FILES if not (path / name).is_file()]
    if missing:
        raise ResultsError(f"{str(path)!r} holds no sweep results: {' and '.join(missing)} "
                           f"{'is' if len(missing) == 1 else 'are'} missing")
    try:
        manifest = _checked_manifest(json.loads(read_regular(manifest_path, MAX_MANIFEST_BYTES,
                                                             MANIFEST)))
    except RecursionError:
        raise ResultsError(f"{str(path)!r} holds an unreadable {MANIFEST} (nested too "
                           "deeply)") from None
    except (OSError, ValueError) as exc:  # damaged after it was written (it is written whole)
        raise ResultsError(f"{str(path)!r} holds an unreadable {MANIFEST} ({exc})") from None
    runs, curves = (pd.read_parquet(io.BytesIO(_table_bytes(path, name, manifest, verify)))
                    for name in RESULT_FILES)
    # Stages are integers; a run without a violation has none (<NA>, not a float NaN).
    runs["first_violation"] = runs["first_violation"].astype("Int64")
    return SweepResults(runs, curves, manifest, path)


def _checked_manifest(manifest) -> dict:
    """``manifest`` if its entries that results use have their types (ValueError if not)."""
    if not isinstance(manifest, dict):
        raise ValueError("not a JSON object")
    for key, kind in (("files", list), ("spec", dict), ("problems", dict), ("sweep", list)):
        if key in manifest and not isinstance(manifest[key], kind):
            raise ValueError(f"its {key!r} is not a {'list' if kind is list else 'table'}")
    if not all(isinstance(p, dict) for p in manifest.get("problems", {}).values()):
        raise ValueError("its 'problems' are not tables")
    return manifest


def _table_bytes(path: Path, name: str, manifest: dict, verify: bool) -> bytes:
    """The bytes of ``path/name``, checked against the manifest's SHA-256 with ``verify``."""
    try:
        data = read_regular(path / name, MAX_TABLE_BYTES, str(path / name))
    except (OSError, ValueError) as exc:
        raise ResultsError(f"{str(path / name)!r} cannot be read: {exc}") from None
    if not verify:
        return data
    files = manifest.get("files", [])
    listed = [f.get("sha256") for f in files if isinstance(f, dict) and f.get("path") == name]
    if len(listed) != 1 or not isinstance(listed[0], str):
        raise ResultsError(f"{str(path)!r}: {MANIFEST} records no SHA-256 for {name}, so it "
                           "cannot be verified (load_results(..., verify=False) reads it anyway)")
    try:
        return check_sha256(data, listed[0], repr(str(path / name)))
    except ChecksumError:
        raise ResultsError(f"{str(path / name)!r} does not match the SHA-256 in {MANIFEST}: it "
                           "was changed or damaged after the results were written") from None

