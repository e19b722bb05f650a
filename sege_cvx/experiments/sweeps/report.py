"""A sweep's report: its table per cell (:func:`report_table`; as Markdown, :func:`report_markdown`,
with the helpers :func:`mean_pm_se` and :func:`markdown_table`) and its regret and reward figures
(:meth:`~.store.SweepResults.plot_regret`, :meth:`~.store.SweepResults.plot_reward`), written into
a report directory with a record of them (:func:`write_report`; :func:`check_report_dir` and
:func:`check_stages` check its arguments before anything is drawn)."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..bands import check_band
from ..files import Directory, read_regular
from ..outputs import MANIFEST, OutputPathError, check_writable_under, refuse_link
from .store import MAX_MANIFEST_BYTES, MAX_TABLE_BYTES, SweepResults, cell_label, is_missing

#: Files :func:`write_report` writes; the last, its record of the others.
REPORT_FILES = ("table.md", "table.csv", "regret.png", "regret.pdf", "reward.png", "reward.pdf",
                "report.json")


def mean_pm_se(mean: float, se: float) -> str:
    """``mean ± se`` with the standard error to two significant digits and the mean to the same
    decimal place (``257 ± 19``, ``112.4 ± 2.1``); the mean alone, to 4 digits, if ``se`` is 0
    or at the level of the mean's rounding (below 1e-12 of it: runs equal but for rounding).

    >>> mean_pm_se(257.205, 18.58), mean_pm_se(112.352, 2.148), mean_pm_se(0.01234, 0.000456)
    ('257 ± 19', '112.4 ± 2.1', '0.01234 ± 0.00046')
    >>> mean_pm_se(91.62, 0.0), mean_pm_se(6.39999999999994618, 6.3e-16)
    ('91.62', '6.400')
    """
    if not (np.isfinite(se) and se > 1e-12 * abs(mean)):
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
    out = pd.DataFrame({c: [cell_label(v) if not is_missing(v) else
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
    out["first violation"] = ["none" if is_missing(v) else str(int(v)) for v in table["first_violation"]]
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
        f"# Sweep results: {results.path if results.path is not None else 'a study'}", "",
        f"{results._runs_text()} x {_horizon(results)} stages{seed}. Regret: cumulative regret at "
        "the stage shown, mean ± standard error over runs. A violation is a stage whose expected "
        "reward is below the threshold b (under a linear constraint: whose constraint value "
        "exceeds its limit c); violating pairs count (run, stage) pairs, first violation is the "
        "earliest such stage over the cell's runs.", "",
        markdown_table(table, right=table.attrs["right"]), "",
    ]
    if problems:
        def number(p, key):
            return f"{p[key]:.6g}" if isinstance(p.get(key), int | float) else "-"

        rows = pd.DataFrame([{"problem": name, "dim": p.get("dim", "-"),
                              "b0": number(p, "baseline_reward"), "b": number(p, "threshold"),
                              "limit c": number(p, "constraint_limit"),
                              "optimal reward": number(p, "optimal_reward"),
                              "assumptions": ("misspecified: " + "; ".join(
                                  p.get("assumption_violations") or ["by its factory"])
                                  if p.get("misspecified") else "met"),
                              "description": p.get("description", "")}
                             for name, p in problems.items()])
        lines += ["Problems: baseline reward b0 and safety threshold b (the stagewise floor), or "
                  "the limit c of an unknown linear constraint, the optimal reward (within the "
                  "constraint), and whether the assumptions (||theta*|| <= S, <x0, theta*> >= b0; "
                  "||gamma*|| <= S) hold; a misspecified problem breaks them on purpose, and its "
                  "runs carry no guarantee.",
                  "", markdown_table(rows, right=["dim", "b0", "b", "limit c", "optimal reward"]),
                  ""]
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


def write_report(results: SweepResults, out_dir: str | os.PathLike,
                 by: str | Sequence[str] | None = "problem",
                 band: str | None = "auto", stages: Sequence[int] | None = None) -> list[Path]:
    """Write a sweep's table and figures into ``out_dir`` (made if missing; these files replaced).

    Parameters
    ----------
    results : SweepResults
        From :func:`~.store.load_results`.
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
    from .._plotting import save_figure

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

    from ..outputs import provenance

    files = []
    for name in names:
        data = directory.read(name, MAX_TABLE_BYTES)
        files.append({"path": name, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()})
    if results.path is not None:
        manifest = read_regular(results.path / MANIFEST, MAX_MANIFEST_BYTES)
    else:  # a study's sweep, whose directory was temporary: the manifest it kept
        manifest = (json.dumps(results.manifest, indent=2) + "\n").encode("utf-8")
    record = {"files": files,
              "results": {"path": None if results.path is None else str(results.path),
                          "manifest_sha256": hashlib.sha256(manifest).hexdigest()},
              "options": options, "provenance": provenance()}
    directory.write("report.json", (json.dumps(record, indent=2) + "\n").encode("utf-8"))
    directory.fsync()
    return directory.path / "report.json"

