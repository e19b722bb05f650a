"""A sweep's results: the table per cell, the figures, the report directory and ``sege-cvx report``.

One tiny sweep (2 problems x 3 cells x 6 runs x 300 stages) serves every test.
"""

import hashlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest
from _cli_errors import one_line_error
from problems import paper_problem

from sege_cvx.cli import main
from sege_cvx.experiments.sweeps.report import (
    markdown_table,
    mean_pm_se,
    report_table,
    write_report,
)
from sege_cvx.experiments.sweeps.run import run_sweep
from sege_cvx.experiments.sweeps.store import ResultsError, load_results

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SPEC = {"seed": 3, "runs": 6, "horizon": 300,
        "problems": [{"name": "paper"}, {"name": "box"}],
        "algorithms": [{"name": "SEGE", "grid": {"c": [0.25, 0.5]}}, {"name": "CLUCB"}]}
LABELS = ["SEGE c=0.25", "SEGE c=0.5", "CLUCB"]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return run_sweep(SPEC, tmp_path_factory.mktemp("sweep") / "out", workers=1, progress=False)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _cell(runs, problem, algorithm, c):
    rows = runs[(runs["problem"] == problem) & (runs["algorithm"] == algorithm)]
    return rows[rows["c"].isna()] if c is None else rows[rows["c"] == c]


# --- the table ------------------------------------------------------------------------------------


def test_table_is_a_direct_computation_from_the_runs(results):
    table = results.table()
    assert table.index.names == ["problem", "algorithm", "c"]
    assert len(table) == 6
    for (problem, algorithm, c), row in table.iterrows():
        rows = _cell(results.runs, problem, algorithm, None if np.isnan(c) else c)
        regret = rows["regret"]
        assert row["runs"] == len(rows) == 6
        assert row["regret_mean"] == regret.mean()
        assert row["regret_se"] == regret.std(ddof=1) / math.sqrt(len(rows))
        assert row["violating_runs"] == (rows["violations"] > 0).sum()
        assert row["violating_pairs"] == rows["violations"].sum()
        assert row["fallbacks"] == rows["fallbacks"].sum()
        first = rows["first_violation"].dropna()
        if len(first):
            assert row["first_violation"] == first.min()
        else:
            assert row["first_violation"] is pd.NA


def test_first_violation_is_na_without_violations_and_an_integer_with(results):
    table = results.table()
    assert str(table["first_violation"].dtype) == "Int64"
    safe = table["violating_pairs"] == 0
    assert safe.any() and table.loc[safe, "first_violation"].isna().all()
    # CLUCB on the paper's problem leaves the safe set early in this sweep (as in the paper)
    violated = table.loc[~safe, "first_violation"]
    assert len(violated) and violated.notna().all()


def test_by_is_checked_with_the_allowed_columns_named(results):
    with pytest.raises(KeyError, match="nope"):
        results.table(by="nope")
    for bad in ("nope", "t", "regret_mean"):
        with pytest.raises(ValueError, match=rf"by must name cell columns \(problem, algorithm, c\), "
                                             rf"got '{bad}'"):
            results.plot_regret(by=bad)
    with pytest.raises(ValueError, match="got 'nope'"):
        results.plot_reward(by=["problem", "nope"])
    with pytest.raises(ValueError, match="twice"):
        results.panel_keys(["problem", "problem"])
    with pytest.raises(ValueError, match=r"band must be one of 'auto', 'quantile', 'minmax', "
                                         r"'ci', None; got 'iqr'"):
        results.plot_regret(band="iqr")
    assert plt.get_fignums() == []  # nothing was drawn


def test_mean_pm_se_and_markdown():
    assert mean_pm_se(257.205, 18.58) == "257 ± 19"
    assert mean_pm_se(1234.5, 0.0) == "1234"
    assert mean_pm_se(0.0, 0.0) == "0"
    text = markdown_table(pd.DataFrame({"a": ["x|y"], "n": [3]}), right=["n"])
    assert text.splitlines() == ["| a    |   n |", "| :--- | --: |", "| x\\|y |   3 |"]


# --- the figures ----------------------------------------------------------------------------------


def _data_lines(ax):
    return [line for line in ax.lines if line.get_label() in LABELS]


def test_plot_regret_one_panel_per_problem_one_line_per_cell(results):
    # Three cells a panel: the default band is the mean's confidence interval.
    assert "confidence interval" in results.plot_regret()._suptitle.get_text()
    fig = results.plot_regret(band="quantile")
    assert [ax.get_title() for ax in fig.axes] == ["paper", "box"]
    for ax in fig.axes:
        assert [line.get_label() for line in ax.lines] == LABELS
        assert len(ax.collections) == 3  # a band per cell
        assert ax.get_legend() is None  # the panels' legends would be the same: one for all
        assert ax.get_xscale() == "linear"
    assert len(fig.legends) == 1
    assert [t.get_text() for t in fig.legends[0].get_texts()] == LABELS
    # Each band has a solid edge in its cell's colour, so that overlapping bands stay readable.
    for band, line in zip(fig.axes[0].collections, fig.axes[0].lines, strict=True):
        assert np.allclose(band.get_edgecolor()[0][:3], matplotlib.colors.to_rgb(line.get_color()))
        assert band.get_edgecolor()[0][3] > 3 * band.get_facecolor()[0][3]
    curves = results.curves
    paper = curves[(curves["problem"] == "paper") & (curves["algorithm"] == "CLUCB")].sort_values("t")
    line, band = fig.axes[0].lines[2], fig.axes[0].collections[2]
    assert np.array_equal(line.get_xdata(), paper["t"]) and np.array_equal(line.get_ydata(),
                                                                          paper["regret_mean"])
    drawn = band.get_paths()[0].vertices[:, 1]
    assert np.isclose(drawn.min(), paper["regret_q05"].min())
    assert np.isclose(drawn.max(), paper["regret_q95"].max())


def test_confidence_band_and_no_band(results):
    curves = results.curves
    cell = curves[(curves["problem"] == "box") & (curves["algorithm"] == "CLUCB")]
    fig = results.plot_regret(band="ci")
    drawn = fig.axes[1].collections[2].get_paths()[0].vertices[:, 1]
    assert np.isclose(drawn.max(), (cell["regret_mean"] + 1.96 * cell["regret_se"]).max())
    assert "95 % confidence interval" in fig._suptitle.get_text()
    fig = results.plot_reward(band=None)
    assert all(len(ax.collections) == 0 for ax in fig.axes)
    assert all(len(_data_lines(ax)) == 3 for ax in fig.axes)


def test_plot_reward_draws_b_and_b0_of_each_panel_s_problem(results):
    fig = results.plot_reward()
    names = ["threshold $b$", "baseline reward $b_0$", "optimal reward"]
    for ax, problem in zip(fig.axes, ("paper", "box"), strict=True):
        p = results.manifest["problems"][problem]
        values = [p["threshold"], p["baseline_reward"], p["optimal_reward"]]
        assert ax.get_title() == problem and ax.get_xscale() == "log"
        references = {line.get_label(): line.get_ydata()[0] for line in ax.lines
                      if line.get_label() not in LABELS}
        assert references == dict(zip(names, values, strict=True))
        # The values differ by problem: written on each panel, at its line's height.
        notes = {t.get_text(): t.xy[1] for t in ax.texts}
        assert notes == {f"{v:.4g}": v for v in values}
        assert ax.get_legend() is None
    # The same cells and kinds of line in every panel: one legend for the figure.
    assert len(fig.legends) == 1
    assert [t.get_text() for t in fig.legends[0].get_texts()] == LABELS + names


def test_plot_reward_into_given_axes_labels_the_values_in_each_legend(results):
    fig, axes = plt.subplots(1, 2)
    results.plot_reward(ax=axes)
    assert not fig.legends
    for ax, problem in zip(axes, ("paper", "box"), strict=True):
        b = results.manifest["problems"][problem]["threshold"]
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        assert legend[:3] == LABELS and f"threshold $b$ = {b:.4g}" in legend and not ax.texts


def test_a_panel_mixing_problems_draws_no_reference_it_cannot_and_says_so(results):
    fig = results.plot_reward(by="algorithm")
    assert len(fig.axes) == 2
    sege, clucb = fig.axes
    assert sege.get_title().startswith("SEGE\n") and "differ by problem, not drawn" in sege.get_title()
    assert [line.get_label() for line in sege.lines] == [
        "paper SEGE c=0.25", "paper SEGE c=0.5", "box SEGE c=0.25", "box SEGE c=0.5"]
    assert [line.get_label() for line in clucb.lines] == ["paper CLUCB", "box CLUCB"]
    # the same label has the same colour in every figure; an algorithm's variants differ in style
    regret = results.plot_regret(by=None)
    assert len(regret.axes) == 1 and regret.axes[0].get_title() == "all cells"
    colors = {line.get_label(): (line.get_color(), line.get_linestyle()) for line in regret.axes[0].lines}
    assert len(colors) == 6 and len(set(colors.values())) == 6
    assert colors["paper CLUCB"] == (clucb.lines[0].get_color(), clucb.lines[0].get_linestyle())


def test_plot_into_given_axes(results):
    fig, axes = plt.subplots(1, 2)
    assert results.plot_regret(ax=axes) is fig
    assert [ax.get_title() for ax in axes] == ["paper", "box"]
    fig, ax = plt.subplots()
    assert results.plot_reward(by=None, ax=ax) is fig and len(ax.get_legend().get_texts()) == 6
    with pytest.raises(ValueError, match="ax must be 2 axes, one per panel"):
        results.plot_regret(ax=ax)


def test_panels_in_a_grid_are_titled_with_every_by_value(results):
    fig = results.plot_regret(by=["problem", "c"])
    assert [ax.get_title() for ax in fig.axes] == [
        "paper, c=0.25", "paper, c=0.5", "paper, c=n/a", "box, c=0.25", "box, c=0.5", "box, c=n/a"]
    assert [ax.get_ylabel() != "" for ax in fig.axes] == [True, False, False, True, False, False]


# --- the report and the command line --------------------------------------------------------------


def test_write_report_files_and_the_csv_round_trips(results, tmp_path):
    out = tmp_path / "new" / "report"
    paths = write_report(results, out)
    names = ["table.md", "table.csv", "regret.png", "regret.pdf", "reward.png", "reward.pdf",
             "report.json"]
    assert [p.name for p in paths] == names and all(p.parent == out for p in paths)
    assert all(p.stat().st_size > 0 for p in paths)
    record = json.loads((out / "report.json").read_text())  # what the report wrote, and of what
    assert [f["path"] for f in record["files"]] == names[:-1]
    for entry in record["files"]:
        data = (out / entry["path"]).read_bytes()
        assert entry["bytes"] == len(data) and entry["sha256"] == hashlib.sha256(data).hexdigest()
    manifest = (results.path / "manifest.json").read_bytes()
    assert record["results"] == {"path": str(results.path),
                                 "manifest_sha256": hashlib.sha256(manifest).hexdigest()}
    assert record["options"] == {"by": "problem", "band": "auto", "at": []}
    assert (out / "regret.png").stat().st_size > 20_000
    back = pd.read_csv(out / "table.csv")
    want = results.table().reset_index()
    assert list(back.columns) == list(want.columns)
    pd.testing.assert_frame_equal(back, want.astype({"first_violation": "float64"}), check_exact=True,
                                  check_dtype=False)
    text = (out / "table.md").read_text(encoding="utf-8")
    formatted = report_table(results)
    for row in formatted.itertuples(index=False):
        assert any(all(str(v) in line for v in row) for line in text.splitlines())
    assert "| problem | algorithm | c    | runs | regret at t=300 |" in text
    with pytest.raises(ValueError, match="got 'nope'"):
        write_report(results, tmp_path / "never", by="nope")
    assert not (tmp_path / "never").exists()
    (tmp_path / "file").write_text("")
    with pytest.raises(ValueError, match="is an existing file, not a directory"):
        write_report(results, tmp_path / "file")


def test_cli_report_prints_the_table_and_writes_the_files(results, tmp_path, capsys):
    assert main(["report", str(results.path), "--out", str(tmp_path), "--by", "algorithm",
                 "--band", "none"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# Sweep results: ")
    assert (tmp_path / "table.md").read_text(encoding="utf-8") in out
    assert f"wrote 7 files to {tmp_path}: table.md, table.csv, regret.png" in out
    assert out.rstrip().endswith("report.json")
    assert main(["report", str(results.path)]) == 0  # default --out: DIR/report
    assert (results.path / "report" / "reward.pdf").is_file()
    assert "| paper   | CLUCB     | -    |    6 |" in capsys.readouterr().out


def test_report_regret_at_earlier_checkpoints_comes_from_the_curves(results, tmp_path, capsys):
    table = report_table(results, stages=[100, 300, 100])  # the horizon and repeats: once
    assert [c for c in table.columns if c.startswith("regret")] == ["regret at t=100",
                                                                    "regret at t=300"]
    curves = results.curves
    for _, row in table.iterrows():
        rows = curves[(curves["problem"] == row["problem"]) & (curves["algorithm"] == row["algorithm"])
                      & (curves["t"] == 100)]
        rows = rows[rows["c"].isna()] if row["c"] == "-" else rows[rows["c"] == float(row["c"])]
        assert len(rows) == 1
        assert row["regret at t=100"] == mean_pm_se(rows["regret_mean"].iloc[0],
                                                    rows["regret_se"].iloc[0])
    assert main(["report", str(results.path), "--out", str(tmp_path), "--at", "100"]) == 0
    assert "| regret at t=100 | regret at t=300 |" in capsys.readouterr().out
    line = one_line_error(capsys, ["report", str(results.path), "--at", "99"], quiet_stdout=True)
    assert line.startswith("sege-cvx: error: stage 99 is not a checkpoint of this sweep (nearest: ")


def test_cli_report_on_a_dir_without_results_is_a_one_line_error(results, tmp_path, capsys):
    line = one_line_error(capsys, ["report", str(tmp_path / "missing")], quiet_stdout=True)
    assert line.endswith("holds no finished sweep results")
    (tmp_path / "manifest.json").write_text("{}")  # e.g. the results of `sege-cvx run`
    line = one_line_error(capsys, ["report", str(tmp_path)], quiet_stdout=True)
    assert "runs.parquet and curves.parquet are missing" in line
    with pytest.raises(ResultsError):
        load_results(tmp_path)
    line = one_line_error(capsys, ["report", str(results.path), "--by", "t"], quiet_stdout=True)
    assert line == "sege-cvx: error: by must name cell columns (problem, algorithm, c), got 't'"
    line = one_line_error(capsys, ["report", str(results.path), "--band", "iqr"], quiet_stdout=True)
    assert "argument --band: invalid choice: 'iqr'" in line
    line = one_line_error(capsys, ["report", str(results.path), "--out", ""], quiet_stdout=True)
    assert "--out must be a nonempty path" in line


def test_results_and_report_arguments_load_no_matplotlib():
    script = ("import sys\nfrom sege_cvx.cli import build_parser\n"
              "build_parser().parse_args(['report', 'x'])\n"
              "assert 'pandas' not in sys.modules and 'matplotlib' not in sys.modules\n"
              "import sege_cvx.experiments.sweeps.report, sege_cvx.experiments.sweeps.store\n"
              "print(sorted(m for m in sys.modules if m.startswith('matplotlib')))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT),
                                                                      os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                         cwd=ROOT, env=env)
    assert out.stdout.strip() == "[]"


def test_an_interrupted_report_says_its_files_may_be_incomplete(results, tmp_path, monkeypatch, capsys):
    import sege_cvx.experiments.sweeps.report as module

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(module, "write_report", interrupted)
    assert main(["report", str(results.path), "--out", str(tmp_path)]) == 130
    assert capsys.readouterr().err == (f"sege-cvx: interrupted; the report's files in {tmp_path} "
                                       "may be incomplete\n")


def test_one_band_vocabulary_in_both_figure_pipelines(results):
    """The study's figures and a sweep's draw the same bands from the same aggregates."""
    from sege_cvx.experiments.bands import BANDS
    from sege_cvx.experiments.figures import regret_figure, reward_figure
    from sege_cvx.simulation import run_seeds, simulate

    curves = results.curves
    cell = curves[(curves["problem"] == "box") & (curves["algorithm"] == "CLUCB")]
    drawn = results.plot_regret(band="minmax").axes[1].collections[2].get_paths()[0].vertices[:, 1]
    assert (drawn.min(), drawn.max()) == (cell["regret_min"].min(), cell["regret_max"].max())
    problem = paper_problem()
    policy_seeds, noise_seeds = run_seeds(0, 5)
    result = simulate(problem.policy("CLUCB", 5, policy_seeds), problem.bandit(noise_seeds), 200)
    agg = result.stats.aggregates()
    for band in BANDS:
        figures = (regret_figure({"CLUCB": result}, band=band),
                   reward_figure(result, problem.setting.safety.threshold, 2.0, None, "CLUCB",
                                 band=band))
        for fig in figures:
            assert len(fig.axes[0].collections) == (band is not None)
    fig = regret_figure({"CLUCB": result}, band="ci")
    edge = fig.axes[0].collections[0].get_paths()[0].vertices[:, 1].max()
    assert np.isclose(edge, (agg["regret_mean"] + 1.96 * agg["regret_sd"] / math.sqrt(5)).max(),
                      rtol=1e-12)
    with pytest.raises(ValueError, match="band must be one of 'auto', 'quantile', 'minmax', 'ci', None"):
        regret_figure({"CLUCB": result}, band="iqr")


# --- per-run statistics of one cell -----------------------------------------------------------


def test_run_statistics_of_a_cell_are_what_the_runs_table_summarizes(results):
    stats = results.run_statistics(problem="box", algorithm="SEGE", c=0.5)
    rows = _cell(results.runs, "box", "SEGE", 0.5).sort_values("run")
    assert stats.cum_regret.shape == (6,)
    np.testing.assert_array_equal(stats.cum_regret, rows["regret"].to_numpy())
    np.testing.assert_array_equal(stats.total_violations, rows["violations"].to_numpy())
    assert stats.checkpoints[-1] == 300
    # The checkpoint rows agree with curves.parquet's mean regret at each stage.
    curve = results.curves[(results.curves["problem"] == "box")
                           & (results.curves["algorithm"] == "SEGE")
                           & (results.curves["c"] == 0.5)].sort_values("t")
    np.testing.assert_array_equal(curve["t"].to_numpy(), stats.checkpoints)
    np.testing.assert_allclose(curve["regret_mean"].to_numpy(), stats.regret.mean(axis=1),
                               rtol=0, atol=1e-12)
    assert results.cell_index(problem="box", algorithm="SEGE", c=0.5) == 4
    assert results.fallback_reasons(problem="box", algorithm="CLUCB") == {}


def test_run_statistics_name_the_cells_when_the_selection_is_not_one(results):
    with pytest.raises(ResultsError, match=r"2 cells of .* match \{'algorithm': 'CLUCB'\}: the "
                                           r"cells are paper SEGE \{'c': 0.25\}"):
        results.run_statistics(algorithm="CLUCB")
    with pytest.raises(ResultsError, match=r"no cell of .* match \{'problem': 'paper', "
                                           r"'algorithm': 'SEGE', 'c': 0.3\}"):
        results.run_statistics(problem="paper", algorithm="SEGE", c=0.3)


def test_run_statistics_need_the_sweep_directory_and_say_so(results, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(results.path, copy)
    shutil.rmtree(copy / "shards")
    with pytest.raises(ResultsError, match="holds no shards/ directory"):
        load_results(copy).run_statistics(problem="box", algorithm="CLUCB")
    manifest = json.loads((copy / "manifest.json").read_text())
    del manifest["sweep"]
    moved = load_results(copy, verify=False)
    moved.manifest = manifest
    with pytest.raises(ResultsError, match="fallback_reasons needs a sweep's directory; .* no sweep"):
        moved.fallback_reasons(problem="box", algorithm="CLUCB")


OWN_POLICY = '''
import numpy as np
import sege_cvx as sc


class Baseline(sc.Policy):
    """Plays the baseline arm scaled by ``1 - shrink``."""

    decision_names = ("baseline",)

    def __init__(self, setting, *, lam=0.1, shrink: float = 0.0, n_runs=1, seed=None):
        super().__init__(setting, lam=lam, n_runs=n_runs, seed=seed)
        self.shrink = shrink

    def select(self):
        self.last_decision[:] = 0
        return np.tile((1 - self.shrink) * self.setting.safe_arm, (self.n_runs, 1))

    def observe(self, arms, rewards, constraint_values):
        pass
'''


def test_results_of_a_policy_by_import_path_read_from_any_folder(tmp_path, monkeypatch):
    """Reading a sweep imports none of its policies: the manifest records what results need of
    them, so a sweep run beside its own module reads from anywhere (issue 39, item 1)."""
    module = "results_own_policy"
    project = tmp_path / "project"
    project.mkdir()
    (project / f"{module}.py").write_text(OWN_POLICY)
    spec = {"seed": 1, "runs": 3, "horizon": 40, "problems": [{"name": "paper"}],
            "algorithms": [{"name": f"{module}:Baseline", "grid": {"shrink": [0.0, 0.5]}}]}
    with monkeypatch.context() as patch:
        patch.syspath_prepend(str(project))
        ran = run_sweep(spec, project / "out", workers=1, progress=False)
    sys.modules.pop(module)
    monkeypatch.chdir(tmp_path)
    results = load_results(project / "out")
    stats = results.run_statistics(algorithm=f"{module}:Baseline", shrink=0.5)
    rows = ran.runs[ran.runs["shrink"] == 0.5].sort_values("run")
    np.testing.assert_array_equal(stats.cum_regret, rows["regret"].to_numpy())
    # Half the baseline's reward lost at every stage: regret 40 (r* - b0 / 2) on each run.
    problem = paper_problem()
    gap = problem.optimal_reward - 0.5 * problem.setting.safety.baseline_reward
    np.testing.assert_allclose(stats.cum_regret, 40 * gap, rtol=1e-12)
    assert results.fallback_reasons(algorithm=f"{module}:Baseline", shrink=0.0) == {}
    assert main(["report", str(project / "out")]) == 0
    assert module not in sys.modules
    # Where code must be imported (a new sweep of it), the message says what to put on the path.
    with pytest.raises(Exception, match=rf"no module named '{module}' on the import path: run "
                                        rf"from the folder that holds {module}.py"):
        run_sweep(spec, tmp_path / "again", workers=1, progress=False)
