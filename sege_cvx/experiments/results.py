"""A finished sweep's results as pandas DataFrames: per-run rows, per-checkpoint curves, a table
per cell, figures with quantile or confidence bands, and a report directory of them.

matplotlib loads only when a figure is drawn, so reading results and their tables stays light.
"""

from __future__ import annotations

import io
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .._deprecation import deprecated_names
from . import bands as _bands
from .bands import BAND_NAMES, band_limits, check_band
from .files import ChecksumError, Directory, check_sha256, read_regular
from .outputs import MANIFEST, OutputPathError, check_writable_under, refuse_link

#: Columns that identify a cell besides the grid parameters.
CELL_COLUMNS = ("problem", "algorithm")
#: Files a finished sweep holds.
RESULT_FILES = ("runs.parquet", "curves.parquet")
#: Largest manifest and table read (a manifest lists every shard; tables grow with runs).
MAX_MANIFEST_BYTES, MAX_TABLE_BYTES = 1 << 30, 1 << 40
#: Files :func:`write_report` writes; the last, its record of the others.
REPORT_FILES = ("table.md", "table.csv", "regret.png", "regret.pdf", "reward.png", "reward.pdf",
                "report.json")
#: The reward figure's reference lines: manifest key, label, short name, style (figures.py's b and
#: optimum).
_REFERENCES = (
    ("threshold", "threshold $b$", "$b$", {"color": "red", "linestyle": "--"}),
    ("baseline_reward", "baseline reward $b_0$", "$b_0$", {"color": "dimgray", "linestyle": "-."}),
    ("optimal_reward", "optimal reward", "optimum", {"color": "black", "linestyle": ":"}),
)


class ResultsError(ValueError):
    """A directory that holds no complete sweep results; the message names it."""


def _value(value) -> str:
    """A cell parameter as labels and tables show it: ``0.25``, ``1e-06``, ``closed_form``."""
    if isinstance(value, float | np.floating):
        return f"{value:g}"
    return str(value)


def _missing(value) -> bool:
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
    """The results of :func:`~sege_cvx.experiments.sweep.run_sweep`, as read by :func:`load_results`.

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
    path : Path
        The results directory.
    """

    runs: pd.DataFrame
    curves: pd.DataFrame
    manifest: dict
    path: Path

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
        from ..policies.registry import grid_parameters, policy_entry

        known = {}
        for name in self.runs["algorithm"].unique():
            try:
                entry = policy_entry(name)
            except (ValueError, TypeError, ImportError):
                continue
            known[name] = {"grid_parameters": list(grid_parameters(entry.cls)),
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

    def plot_regret(self, by: str | Sequence[str] | None = "problem", band: str | None = "quantile",
                    ax=None):
        """Cumulative regret against the stage: mean over runs and a band, one line per cell.

        Parameters
        ----------
        by : str, sequence of str or None
            Cell columns: one panel per value (``"problem"``: one per problem; ``None``: one panel).
        band : {"quantile", "minmax", "ci", None}
            :mod:`~sege_cvx.experiments.bands`: ``"quantile"``, 5 % to 95 % quantiles over runs;
            ``"minmax"``, the range over runs; ``"ci"``, mean +- 1.96 standard errors (a 95 %
            confidence interval of the mean); ``None``, the mean alone.
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

    def plot_reward(self, by: str | Sequence[str] | None = "problem", band: str | None = "quantile",
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
        """A panel's cells in order of appearance: (label, algorithm, rows sorted by ``t``)."""
        cells = self.cell_columns
        out = []
        for values, rows in frame.groupby(cells, sort=False, dropna=False):
            cell = dict(zip(cells, values, strict=True))
            parts = [] if "problem" in keys else [str(cell["problem"])]
            parts.append(str(cell["algorithm"]))
            parts += [f"{k}={_value(v)}" for k, v in cell.items()
                      if k not in (*CELL_COLUMNS, *keys) and not _missing(v)]
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
        from matplotlib.colors import to_rgba

        from ._plotting import (
            PANEL_LEGEND_OFFSET,
            LineStyles,
            figure_legend,
            legend_below,
            panel_axes,
        )

        keys = self.panel_keys(by)
        check_band(band)
        panels = self._panels(keys)
        contents = [(values, self._cells(frame, keys),
                     self._references(frame) if kind == "reward" else ([], []))
                    for values, frame in panels]
        # One legend for the figure when every panel's would be the same (the same cells and
        # kinds of reference line: their values, which differ by problem, are then written on
        # each panel), else one under each panel.
        entries = [([c[0] for c in cells], [r[1] for r in refs]) for _, cells, (refs, _) in contents]
        shared = ax is None and len(panels) > 1 and all(e == entries[0] for e in entries)
        if ax is None:
            legend_rows = max(math.ceil((len(cells) + len(refs)) / 2) for _, cells, (refs, _) in contents)
            notes = any(differ for _, _, (_, differ) in contents)
            fig, axes = panel_axes(len(panels), 0 if shared else legend_rows,
                                   title_lines=2 if notes else 1,
                                   figure_legend_rows=legend_rows if shared else 0)
            offset = PANEL_LEGEND_OFFSET
        else:
            axes = [ax] if hasattr(ax, "plot") else list(ax)
            if len(axes) != len(panels):
                raise ValueError(f"ax must be {len(panels)} axes, one per panel of by={by!r}; "
                                 f"got {len(axes)}")
            fig, offset = axes[0].figure, -0.17
        colors = {name: a["color"] for name, a in self.algorithms.items() if a.get("color")}
        styles = LineStyles(colors, self.curves["algorithm"].unique())
        parameters = self._grid_parameters()
        for ax_, (values, cells, (refs, differ)) in zip(axes, contents, strict=True):
            handles, labels = [], []
            for label, algorithm, rows in cells:
                color, linestyle = styles(label, algorithm)
                t, mean = rows["t"].to_numpy(), rows[f"{kind}_mean"].to_numpy()
                (line,) = ax_.plot(t, mean, color=color, linestyle=linestyle, linewidth=1.2,
                                   label=label)
                handle = line
                if band is not None:
                    low, high = band_limits(rows, kind, band, int(rows["runs"].iloc[0]))
                    # A light fill with a solid edge: where bands overlap, each one's edges
                    # still show where it runs (blended fills alone make colours no legend has).
                    poly = ax_.fill_between(t, low, high, facecolor=to_rgba(color, 0.12),
                                            edgecolor=to_rgba(color, 0.7), linewidth=0.6,
                                            label=f"{label} band: {BAND_NAMES[band]}")
                    handle = (poly, line)
                handles.append(handle)
                labels.append(label)
            for value, name, style in refs:
                label = name if shared else f"{name} = {value:.4g}"
                handles.append(ax_.axhline(value, linewidth=1, label=label, **style))
                labels.append(label)
                if shared:  # the value on the panel, at the line's right end
                    ax_.annotate(f"{value:.4g}", xy=(1.0, value),
                                 xycoords=ax_.get_yaxis_transform(), xytext=(-2, 1.5),
                                 textcoords="offset points", ha="right", va="bottom",
                                 fontsize=7, color=style["color"],
                                 bbox={"facecolor": "white", "edgecolor": "none",
                                       "alpha": 0.8, "pad": 0.5})
            drawn = {c[1] for c in cells}
            title = ", ".join(_value(v) if k in CELL_COLUMNS else
                              f"{k}={_unset(k, drawn, parameters) if _missing(v) else _value(v)}"
                              for k, v in zip(keys, values, strict=True)) or "all cells"
            if differ:  # a second line, kept short enough for the panel's width
                title += f"\n({', '.join(differ)}: differ by problem, not drawn)"
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
                legend_below(ax_, handles, labels, offset=offset)
        if shared:
            figure_legend(fig, handles, labels)
        if ax is None:
            what = "cumulative regret" if kind == "regret" else "expected reward"
            # Two lines: one panel is narrower than the whole title on one line.
            shown = "no band" if band is None else f"band: {BAND_NAMES[band]}"
            fig.suptitle(f"{what.capitalize()}: mean over runs\n{self._runs_text()}, {shown}",
                         fontsize=10)
        return fig

    def _runs_text(self) -> str:
        counts = self.runs.groupby(self.cell_columns, sort=False, dropna=False).size()
        low, high = int(counts.min()), int(counts.max())
        return f"{low} runs per cell" if low == high else f"{low} to {high} runs per cell"


def load_results(path: str | os.PathLike, *, verify: bool = True) -> SweepResults:
    """Read a finished sweep's directory (``runs.parquet``, ``curves.parquet``, ``manifest.json``).

    Parameters
    ----------
    path : str or path-like
        The ``out`` directory of :func:`~sege_cvx.experiments.sweep.run_sweep` (or of
        ``sege-cvx reproduce`` and ``run``).
    verify : bool, default True
        Check each table's SHA-256 against the manifest before reading it (the bytes checked
        are the bytes read): a table changed or damaged after it was written is refused.

    Returns
    -------
    SweepResults

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


# --- the report: a table as Markdown and CSV, the figures as PNG and PDF ----------------------


def mean_pm_se(mean: float, se: float) -> str:
    """``mean ± se`` with the standard error to two significant digits and the mean to the same
    decimal place (``257 ± 19``, ``112.4 ± 2.1``); the mean alone, to 4 digits, if ``se`` is 0.

    >>> mean_pm_se(257.205, 18.58), mean_pm_se(112.352, 2.148), mean_pm_se(0.01234, 0.000456)
    ('257 ± 19', '112.4 ± 2.1', '0.01234 ± 0.00046')
    >>> mean_pm_se(91.62, 0.0)
    '91.62'
    """
    if not (np.isfinite(se) and se > 0):
        digits = 3 - math.floor(math.log10(abs(mean))) if np.isfinite(mean) and mean != 0 else 0
        return f"{mean:.{max(digits, 0)}f}"
    digits = max(0, 1 - math.floor(math.log10(se)))
    return f"{mean:.{digits}f} ± {se:.{digits}f}"


def markdown_table(frame: pd.DataFrame, right: Sequence[str] = ()) -> str:
    """A DataFrame as a Markdown table (no ``tabulate`` needed), columns padded to line up.

    Parameters
    ----------
    frame : pandas.DataFrame
        The cells, shown with ``str``; the index is not shown.
    right : sequence of str
        Columns to right-align (numbers); the others are left-aligned.

    Returns
    -------
    str
        The table's lines, without a final newline.

    Examples
    --------
    >>> print(markdown_table(pd.DataFrame({"cell": ["a", "bb"], "n": [1, 10]}), right=["n"]))
    | cell |   n |
    | :--- | --: |
    | a    |   1 |
    | bb   |  10 |
    """
    header = [str(c) for c in frame.columns]
    aligned = [c in right for c in frame.columns]
    rows = [[str(v).replace("|", "\\|") for v in row] for row in frame.itertuples(index=False)]
    widths = [max(3, len(h), *(len(r[j]) for r in rows)) for j, h in enumerate(header)]

    def line(cells):
        return "| " + " | ".join(c.rjust(w) if r else c.ljust(w)
                                 for c, w, r in zip(cells, widths, aligned, strict=True)) + " |"

    rule = ["-" * (w - 1) + ":" if r else ":" + "-" * (w - 1) for w, r in zip(widths, aligned, strict=True)]
    return "\n".join([line(header), "| " + " | ".join(rule) + " |", *map(line, rows)])


def _horizon(results: SweepResults) -> int:
    return int(results.manifest.get("spec", {}).get("horizon") or results.curves["t"].max())


def check_stages(results: SweepResults, stages: Sequence[int] | None) -> list[int]:
    """Validate checkpoint stages at which to report regret: each must be one of the sweep's
    checkpoints (``curves.parquet``'s ``t``), below the horizon (reported anyway)."""
    if stages is None:
        return []
    have = set(results.curves["t"].tolist())
    horizon = _horizon(results)
    out = []
    for t in stages:
        if isinstance(t, bool) or not isinstance(t, int | np.integer) or int(t) not in have:
            near = sorted(have, key=lambda c: abs(c - t) if isinstance(t, int | float) else 0)[:3]
            raise ValueError(f"stage {t!r} is not a checkpoint of this sweep (nearest: "
                             f"{sorted(near)}); its curves hold the stages of the spec's "
                             "checkpoints")
        if int(t) < horizon and int(t) not in out:
            out.append(int(t))
    return sorted(out)


def report_table(results: SweepResults, stages: Sequence[int] | None = None) -> pd.DataFrame:
    """:meth:`SweepResults.table`, one row per cell, formatted for reading: regret as
    ``mean ± se``, a parameter the cell's grid does not set as ``default`` (its algorithm's own
    default ran) or, if its algorithm has no such parameter, ``-``; no violation as ``none``.

    Parameters
    ----------
    results : SweepResults
    stages : sequence of int, optional
        Checkpoints before the horizon at which to report the regret too (a column each, from
        ``curves.parquet``: mean and standard error over the cell's runs).

    Returns
    -------
    pandas.DataFrame
        Strings; its ``attrs["right"]`` lists the numeric columns (right-aligned in Markdown).
    """
    earlier = check_stages(results, stages)
    table = results.table().reset_index()
    parameters = results._grid_parameters()
    out = pd.DataFrame({c: [_value(v) if not _missing(v) else
                            "default" if c in parameters.get(a, ()) else "-"
                            for v, a in zip(table[c], table["algorithm"], strict=True)]
                        for c in results.cell_columns})
    misspecified = _misspecified(results)
    out["problem"] = [f"{p} (misspecified)" if p in misspecified else p for p in out["problem"]]
    out["runs"] = table["runs"].astype(str)
    columns = []
    cells = results.cell_columns
    for t in earlier:
        # A left merge keeps the table's row order and matches a null grid value to a null one.
        at = results.curves.loc[results.curves["t"] == t, [*cells, "regret_mean", "regret_se"]]
        rows = table[cells].merge(at, on=cells, how="left", validate="one_to_one")
        columns.append(f"regret at t={t}")
        out[columns[-1]] = [mean_pm_se(m, s) for m, s in
                            zip(rows["regret_mean"], rows["regret_se"], strict=True)]
    regret = f"regret at t={_horizon(results)}"
    columns.append(regret)
    out[regret] = [mean_pm_se(m, s) for m, s in zip(table["regret_mean"], table["regret_se"], strict=True)]
    out["violating runs"] = table["violating_runs"].astype(str)
    out["violating pairs"] = table["violating_pairs"].astype(str)
    out["first violation"] = ["none" if _missing(v) else str(int(v)) for v in table["first_violation"]]
    out["fallbacks"] = table["fallbacks"].astype(str)
    out.attrs["right"] = ["runs", *columns, "violating runs", "violating pairs",
                          "first violation", "fallbacks"]
    return out


def _misspecified(results: SweepResults) -> set[str]:
    """The problems built with ``misspecified=True`` (a misspecification study)."""
    return {name for name, p in results.manifest.get("problems", {}).items()
            if isinstance(p, dict) and p.get("misspecified")}


def report_markdown(results: SweepResults, stages: Sequence[int] | None = None) -> str:
    """The text of ``table.md``: the sweep's size, what the columns mean, its problems and the
    table per cell (:func:`report_table`).

    Parameters
    ----------
    results : SweepResults
    stages : sequence of int, optional
        Earlier checkpoints at which the regret is reported too (:func:`report_table`).

    Returns
    -------
    str
        Markdown, ending with a newline.
    """
    spec = results.manifest.get("spec", {})
    table = report_table(results, stages)
    problems = results.manifest.get("problems", {})
    seed = f", seed {spec['seed']}" if "seed" in spec else ""
    lines = [
        f"# Sweep results: {results.path}", "",
        f"{results._runs_text()} x {_horizon(results)} stages{seed}. Regret: cumulative regret at "
        "the stage shown, mean ± standard error over runs. A violation is a stage whose expected "
        "reward is below the threshold b; violating pairs count (run, stage) pairs, first "
        "violation is the earliest such stage over the cell's runs.", "",
        markdown_table(table, right=table.attrs["right"]), "",
    ]
    if problems:
        def number(p, key):
            return f"{p[key]:.6g}" if isinstance(p.get(key), int | float) else "-"

        rows = pd.DataFrame([{"problem": name, "dim": p.get("dim", "-"),
                              "b0": number(p, "baseline_reward"), "b": number(p, "threshold"),
                              "optimal reward": number(p, "optimal_reward"),
                              "assumptions": ("misspecified: " + "; ".join(
                                  p.get("assumption_violations") or ["by its factory"])
                                  if p.get("misspecified") else "met"),
                              "description": p.get("description", "")}
                             for name, p in problems.items()])
        lines += ["Problems: baseline reward b0, safety threshold b, optimal reward, and whether "
                  "the paper's assumptions (||theta*|| <= S, <x0, theta*> >= b0) hold; a "
                  "misspecified problem breaks them on purpose, and its runs carry no guarantee.",
                  "", markdown_table(rows, right=["dim", "b0", "b", "optimal reward"]), ""]
    return "\n".join(lines)


def check_report_dir(out: Path) -> Path:
    """Check, leaving nothing behind, that ``out`` can receive a report: an existing directory
    or a new one that can be made, and that can be written (a probe file is made and removed),
    with no symbolic link at ``out`` or at a report file in it (nothing is written through one).

    Parameters
    ----------
    out : Path

    Returns
    -------
    Path
        ``out``.

    Raises
    ------
    OutputPathError
        A ``ValueError`` naming ``out`` and what is wrong.
    """
    label = f"report directory {str(out)!r}"
    refuse_link(out, label)
    if out.exists() and not out.is_dir():
        raise OutputPathError(f"{label} is an existing file, not a directory")
    if out.exists():
        with Directory(out, label) as directory:
            for name in REPORT_FILES:  # a link or a directory where a report file goes
                directory.check_file_place(name)
    check_writable_under(out, label)
    return out


def write_report(results: SweepResults, out_dir: str | os.PathLike, by="problem",
                 band: str | None = "quantile", stages: Sequence[int] | None = None) -> list[Path]:
    """Write a sweep's table and figures into ``out_dir`` (made if missing; these files replaced).

    Parameters
    ----------
    results : SweepResults
        From :func:`load_results`.
    out_dir : str or path-like
        The report directory.
    by, band
        The figures' panels and bands, as for :meth:`SweepResults.plot_regret`.
    stages : sequence of int, optional
        Earlier checkpoints at which ``table.md`` reports the regret too (:func:`report_table`).

    Returns
    -------
    list of Path
        ``table.md`` (:func:`report_markdown`), ``table.csv`` (:meth:`SweepResults.table` per
        cell, every number at full precision; ``pandas.read_csv`` reads it back),
        ``regret.png``, ``regret.pdf``, ``reward.png``, ``reward.pdf``, and ``report.json``
        (:func:`_write_record`: those files' sizes and SHA-256, the sweep's directory and
        manifest SHA-256, the options and the provenance).

    Raises
    ------
    ValueError
        A bad ``by`` or ``band``, or an ``out_dir`` that cannot be written: before writing anything.
    """
    from ._plotting import save_figure

    results.panel_keys(by)
    check_band(band)
    check_stages(results, stages)
    out = check_report_dir(Path(out_dir))
    out.mkdir(parents=True, exist_ok=True)
    # Every file is written into the directory opened here, not through a link (one at `out`,
    # or one that replaces it while the report is drawn, receives nothing).
    with Directory(out, f"report directory {str(out)!r}") as directory:
        directory.write("table.md", report_markdown(results, stages).encode("utf-8"))
        directory.write("table.csv",
                        results.table().reset_index().to_csv(index=False).encode("utf-8"))
        paths = [out / "table.md", out / "table.csv"]
        paths += save_figure(results.plot_regret(by=by, band=band), directory, "regret")
        paths += save_figure(results.plot_reward(by=by, band=band), directory, "reward")
        paths.append(_write_record(directory, results, [p.name for p in paths],
                                   {"by": by, "band": band, "at": list(stages or [])}))
    return paths


def _write_record(directory: Directory, results: SweepResults, names: list[str],
                  options: dict) -> Path:
    """``report.json``: the report's files (bytes, SHA-256), the sweep they describe (its
    directory and the SHA-256 of its manifest), the options and the provenance; written last,
    whole or not at all, so that a report directory says what it holds even inside a sweep's
    or a study's directory, whose manifest does not list it."""
    import hashlib

    from .outputs import provenance

    files = []
    for name in names:
        data = directory.read(name, MAX_TABLE_BYTES)
        files.append({"path": name, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()})
    manifest = read_regular(results.path / MANIFEST, MAX_MANIFEST_BYTES)
    record = {"files": files,
              "results": {"path": str(results.path),
                          "manifest_sha256": hashlib.sha256(manifest).hexdigest()},
              "options": options, "provenance": provenance()}
    directory.write("report.json", (json.dumps(record, indent=2) + "\n").encode("utf-8"))
    directory.fsync()
    return directory.path / "report.json"


__getattr__ = deprecated_names(__name__, {
    "BANDS": (lambda: _bands.BANDS, "sege_cvx.experiments.bands.BANDS"),
})
