"""The command line end to end, at a tiny size."""

import argparse
import json
from types import SimpleNamespace

import numpy as np
import pytest
from _cli_errors import one_line_error
from problems import paper_problem

import sege_cvx
import sege_cvx.experiments
from sege_cvx import cli
from sege_cvx.cli import main


def test_reproduce_writes_figures_summary_and_arrays(tmp_path, capsys):
    assert main(["reproduce", "--runs", "3", "--horizon", "600", "--seed", "5",
                 "--out", str(tmp_path), "--no-progress"]) == 0
    for name in ("fig2a_sege_reward", "fig2b_clucb_reward", "fig2c_regret", "fig3_safe_sets"):
        assert (tmp_path / f"{name}.png").stat().st_size > 10_000
        assert (tmp_path / f"{name}.pdf").stat().st_size > 5_000
    summary = json.loads((tmp_path / "summary.json").read_text())
    sege, clucb = summary["SEGE"], summary["CLUCB"]
    assert sege["runs"] == 3 and sege["horizon"] == 600 and sege["seed"] == 5
    assert sorted(sege["regret_mean"], key=int) == ["100", "250", "500", "600"]
    assert sege["safety_violations"] == 0 and sege["first_violation_stage"] is None
    assert sege["min_expected_reward"] >= summary["setup"]["threshold"]
    assert sege["regret_min"]["500"] <= sege["regret_mean"]["500"] <= sege["regret_max"]["500"]
    assert set(sege["exploration_over_sqrt_t"]) == {"100", "250", "500", "600"}
    assert abs(summary["setup"]["rho_bar"] - 0.224) < 1e-12 and sege["rho"] == summary["setup"]["rho_bar"]
    assert clucb["n_arms"] == 41
    arrays = np.load(tmp_path / "arrays.npz", allow_pickle=False)
    stages = arrays["sege_checkpoints"]
    assert stages[0] == 1 and stages[-1] == 600 and {100, 250, 500} <= set(stages.tolist())
    assert arrays["sege_reward_mean"].shape == stages.shape
    assert arrays["sege_regret_q05"].shape == stages.shape
    assert np.all(arrays["sege_regret_q05"] <= arrays["sege_regret_q95"])
    row = int(np.flatnonzero(stages == 500)[0])
    assert arrays["sege_regret_mean"][row] == sege["regret_mean"]["500"]
    assert arrays["sege_reward_window_min"].min() == sege["min_expected_reward"]
    assert arrays["clucb_violating_pairs"][-1] == clucb["safety_violations"]
    assert "sege_run0_stage500_V" in arrays
    assert "CLUCB" in capsys.readouterr().out


def test_demo_prints_both_paths(capsys):
    assert main(["demo", "--cases", "2"]) == 0
    out = capsys.readouterr().out
    assert "closed-form arm" in out and "solver arm" in out


# --- a user's error is one line and exit status 2, never a traceback ---------------------------

COMMANDS = (["demo"], ["reproduce"], ["run", "--arm-set", "box"])




@pytest.fixture
def no_simulation(monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("run_study was called")

    monkeypatch.setattr(sege_cvx.experiments, "run_study", forbidden)


@pytest.mark.parametrize("command", COMMANDS[1:])
@pytest.mark.parametrize("option, value, want", [
    ("--runs", "0", "argument --runs: must be an integer from 1 to 1000000, got 0"),
    ("--runs", "-4", "argument --runs: must be an integer from 1 to 1000000, got -4"),
    ("--runs", "2.5", "argument --runs: must be an integer from 1 to 1000000, got '2.5'"),
    ("--runs", "2000000", "argument --runs: must be an integer from 1 to 1000000, got 2000000"),
    ("--horizon", "0", "argument --horizon: must be an integer >= 1, got 0"),
    ("--seed", "-1", "argument --seed: must be an integer >= 0, got -1"),
])
def test_bad_numbers_are_one_line_errors(command, option, value, want, capsys, no_simulation):
    assert one_line_error(capsys, [*command, option, value]) == f"sege-cvx: error: {want}"


@pytest.mark.parametrize("argv, want", [
    (["demo", "--seed", "-1"], "argument --seed: must be an integer >= 0, got -1"),
    (["demo", "--cases", "-2"], "argument --cases: must be an integer >= 1, got -2"),
    (["demo", "--cases", "0"], "argument --cases: must be an integer >= 1, got 0"),
    (["reproduce", "--lcb-method", "fast"], "argument --lcb-method: invalid choice: 'fast'"),
    (["run"], "the following arguments are required: --arm-set"),
    ([], "the following arguments are required: {demo,reproduce,run,sweep,report}"),
    (["reproduce", "--out", ""], "--out must be a nonempty path, got ''"),
    (["reproduce", "--algorithms", "SEGE", "LinUCB"],
     "argument --algorithms: unknown policy 'LinUCB' (registered: SEGE, "),
    (["run", "--arm-set", "box", "--algorithms", "ROFUL", "ROFUL"],
     "argument --algorithms: each at most once, got ROFUL ROFUL"),
])
def test_other_user_errors_are_one_line(argv, want, capsys, no_simulation):
    assert one_line_error(capsys, argv).startswith(f"sege-cvx: error: {want}")


def test_value_error_while_validating_is_one_line(monkeypatch, capsys):
    def validate(args):
        raise ValueError("radius must be >= 0,\ngot -1")

    monkeypatch.setattr(cli, "_validate", validate)
    assert one_line_error(capsys, ["demo"]) == "sege-cvx: error: radius must be >= 0, got -1"


def test_errors_during_the_simulation_are_not_swallowed(monkeypatch, tmp_path):
    def broken(*args, **kwargs):
        raise ValueError("a genuine bug")

    monkeypatch.setattr(sege_cvx.experiments, "run_study", broken)
    with pytest.raises(ValueError, match="a genuine bug"):
        main(["reproduce", "--out", str(tmp_path / "r"), "--no-progress"])
    assert list(tmp_path.iterdir()) == []


def test_horizon_one_works(tmp_path, capsys):
    out = tmp_path / "r"
    assert main(["reproduce", "--runs", "2", "--horizon", "1", "--out", str(out), "--no-progress"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    for name in ("SEGE", "CLUCB"):
        assert summary[name]["regret_loglog_slope_last_decade"] is None
        assert list(summary[name]["regret_mean"]) == ["1"]
    assert "mean regret" in capsys.readouterr().out


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"sege-cvx {sege_cvx.__version__}"


def _subparsers(parser):
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices


def test_help_documents_every_option_and_its_default_once():
    parser = cli.build_parser()
    for name, sub in {"": parser, **_subparsers(parser)}.items():
        text = " ".join(sub.format_help().split())
        for action in sub._actions:
            if isinstance(action, argparse._SubParsersAction):
                continue
            assert action.help, (name, action.dest)
            shown = f"(default: {action.default})" in text
            if action.required or action.default in (None, False, argparse.SUPPRESS):
                # Required options, flags and options without a default show none.
                assert not shown and "(default: None)" not in text, (name, action.dest)
            else:  # given in the help's own words, or appended once
                assert shown or "default" in action.help, (name, action.dest)
                assert text.count(f"(default: {action.default})") <= 1, (name, action.dest)


def test_lcb_method_and_overwrite_options():
    parser = cli.build_parser()
    rep = parser.parse_args(["reproduce"])
    assert rep.lcb_method == "closed_form" and rep.overwrite is False
    assert parser.parse_args(["reproduce", "--lcb-method", "auto", "--overwrite"]).lcb_method == "auto"
    run = parser.parse_args(["run", "--arm-set", "box", "--overwrite"])
    assert run.lcb_method == "auto" and run.overwrite is True


def test_print_study_names_violations(capsys):
    common = {"wall_seconds": 1.0, "min_expected_reward": 2.0, "regret_mean": {"10": 3.0}}
    setting = SimpleNamespace(safety=SimpleNamespace(threshold=1.5))
    study = SimpleNamespace(setup=SimpleNamespace(setting=setting), summary={
        "SEGE": {**common, "safety_violations": 0, "first_violation_stage": None},
        "CLUCB": {**common, "safety_violations": 4, "first_violation_stage": 7},
    })
    cli._print_study(study)
    sege, clucb = capsys.readouterr().out.splitlines()
    assert "no safety violation" in sege and "None" not in sege
    assert "4 safety violations (first at stage 7)" in clucb


def test_out_filled_during_the_study_is_one_line_error(monkeypatch, tmp_path, capsys):
    out = tmp_path / "r"
    real = sege_cvx.experiments.run_study

    def meanwhile(*args, **kwargs):
        study = real(*args, **kwargs)
        out.mkdir()
        (out / "other.txt").write_text("someone else's")
        return study

    monkeypatch.setattr(sege_cvx.experiments, "run_study", meanwhile)
    line = one_line_error(capsys, ["reproduce", "--runs", "2", "--horizon", "20", "--out", str(out),
                                "--no-progress"])
    assert "changed while the study ran, nothing was published" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"] and (out / "other.txt").exists()


def test_arm_set_choices_are_the_examples():
    from sege_cvx.cli import EXAMPLE_NAMES
    from sege_cvx.problems.examples import EXAMPLES

    assert EXAMPLE_NAMES == tuple(sorted(EXAMPLES))


def test_run_with_roful_writes_its_figures_and_summary(tmp_path, capsys):
    out = tmp_path / "r"
    assert main(["run", "--arm-set", "box", "--algorithms", "ROFUL", "SEGE", "--runs", "3",
                 "--horizon", "200", "--seed", "4", "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "ROFUL:" in printed and "CLUCB" not in printed
    names = sorted(p.name for p in out.iterdir() if p.suffix == ".png")
    assert names == ["box_regret.png", "box_roful_reward.png", "box_sege_reward.png"]
    summary = json.loads((out / "summary.json").read_text())
    assert [k for k in summary if k not in ("setup", "provenance")] == ["ROFUL", "SEGE"]
    roful = summary["ROFUL"]
    assert set(roful["decision_counts"]) == {"full_step", "scaled_step", "baseline"}
    assert sum(roful["decision_counts"].values()) == 3 * 200
    with np.load(out / "arrays.npz") as arrays:
        assert {k.split("_")[0] for k in arrays.files} == {"roful", "sege", "quantile"}


def test_a_study_s_runs_do_not_depend_on_the_other_algorithms():
    from sege_cvx.experiments import run_study

    both = run_study(runs=3, horizon=150, seed=6, problem="polytope")
    three = run_study(runs=3, horizon=150, seed=6, problem="polytope",
                      algorithms=("ROFUL", "CLUCB", "SEGE"))
    assert list(three.results) == ["ROFUL", "CLUCB", "SEGE"]
    for name in ("SEGE", "CLUCB"):
        np.testing.assert_array_equal(three.results[name].stats.regret,
                                      both.results[name].stats.regret)
    with pytest.raises(ValueError, match="must name one or more policies, each once"):
        run_study(runs=3, horizon=10, algorithms=())


def test_warm_up_in_helper_processes_leaves_the_kernels_in_the_cache(monkeypatch):
    from sege_cvx.experiments import paper

    # Pretend CLUCB's stage loop is not cached, so that a helper process plays CLUCB (there it
    # loads the kernels this process compiled, or loaded, first) while this process plays SEGE.
    problem = paper_problem()
    paper.play_a_few_stages("CLUCB", problem)  # whatever ran before: CLUCB's kernels on disk
    monkeypatch.setattr(paper, "cached", lambda kernel: False)
    monkeypatch.setattr(paper.os, "cpu_count", lambda: 2)
    helpers = paper._compile_in_processes(["CLUCB"], problem, "closed_form")
    process, pipe = helpers["CLUCB"]
    assert process.daemon and paper._helper_seconds(process, pipe) == 0.0  # loaded there
    assert process.exitcode == 0
    for _ in range(2):  # the first may compile SEGE's kernels; the second only loads them
        seconds, compiled = paper.warm_up("closed_form", problem, ("SEGE", "CLUCB"),
                                          processes=True)
    assert seconds > 0.0 and compiled is False
    assert paper.play_a_few_stages("CLUCB", problem) == 0.0  # loaded, not compiled
    with pytest.raises(ValueError, match="each once"):
        paper.warm_up("closed_form", problem, ("SEGE", "SEGE"))


def test_a_study_without_sege_records_its_seed(tmp_path):
    out = tmp_path / "c"
    assert main(["run", "--arm-set", "paper", "--algorithms", "CLUCB", "--runs", "2",
                 "--horizon", "20", "--seed", "7", "--out", str(out), "--no-progress"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    manifest = json.loads((out / "manifest.json").read_text())
    assert summary["provenance"]["seed"] == manifest["provenance"]["seed"] == 7


@pytest.mark.parametrize("seconds, compiled, said", [
    (14.2, True, "preparing the compiled kernels ... compiled once in 14.2 s (cached for later runs)"),
    (1.2, False, "preparing the compiled kernels ... loaded from the cache in 1.20 s"),
])
def test_a_cold_start_says_it_compiles_before_simulating(monkeypatch, capsys, tmp_path, seconds,
                                                         compiled, said):
    import sege_cvx.experiments.paper as paper

    monkeypatch.setattr(paper, "warm_up",
                        lambda lcb_method="auto", problem=None, *args, **options: (seconds, compiled))
    for module in (paper, sege_cvx.experiments):  # the CLI imports it through the package
        monkeypatch.setattr(module, "run_study", _no_study)
    with pytest.raises(RuntimeError, match="stop here"):
        main(["reproduce", "--runs", "2", "--horizon", "5", "--out", str(tmp_path / "out"),
              "--no-progress"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == said  # after the plan, before any simulation


def _no_study(**kwargs):
    raise RuntimeError("stop here")


def test_figures_draw_quantile_bands_by_default_and_extremes_on_request():
    import matplotlib

    matplotlib.use("Agg")
    from sege_cvx.experiments import figures, run_study

    study = run_study(runs=4, horizon=300, seed=2)
    agg = study.sege.stats.aggregates()
    for band, low in (("quantile", agg["reward_q05"]), ("minmax", agg["reward_window_min"])):
        fig = figures.reward_figure(study.sege, study.setup.setting.safety.threshold, 2.4, "b",
                                    "SEGE", band=band)
        drawn = fig.axes[0].collections[0].get_paths()[0].vertices[:, 1]
        assert np.isclose(drawn.min(), low.min())
        figures.plt.close(fig)
    fig = figures.regret_figure(study.results)
    assert fig.axes[0].get_title() == "Cumulative regret (4 runs)"
    figures.plt.close(fig)
    with pytest.raises(ValueError, match="band must be one of"):
        figures.regret_figure(study.results, band="iqr")


def test_the_regret_figure_of_three_algorithms_keeps_its_legend_inside():
    from sege_cvx.experiments import figures, run_study

    study = run_study(runs=2, horizon=50, seed=1, algorithms=("SEGE", "CLUCB", "ROFUL"))
    for results in ({"SEGE": study.sege, "CLUCB": study.clucb}, study.results):
        fig = figures.regret_figure(results)
        fig.canvas.draw()
        legend = fig.axes[0].get_legend()
        box = legend.get_window_extent()
        assert len(legend.get_texts()) == 2 * len(results)
        assert box.y0 >= 0 and box.y1 <= fig.axes[0].get_window_extent().y0  # under the axes
        figures.plt.close(fig)


def test_another_problem_s_figures_are_named_and_titled_after_it(tmp_path, monkeypatch):
    from sege_cvx.experiments import figures, run_study

    study = run_study(runs=2, horizon=60, seed=1, problem="ellipsoid")
    titles = []
    save = figures._save

    def recording_save(fig, out, name):
        titles.append(fig.axes[0].get_title())
        return save(fig, out, name)

    monkeypatch.setattr(figures, "_save", recording_save)
    paths = figures.write_figures(study, tmp_path)
    assert sorted(p.name for p in paths) == sorted(
        f"ellipsoid_{kind}.{ext}" for kind in ("sege_reward", "clucb_reward", "regret")
        for ext in ("png", "pdf"))
    assert titles == ["ellipsoid: SEGE: stagewise expected reward (2 runs)",
                      "ellipsoid: CLUCB: stagewise expected reward (2 runs)",
                      "ellipsoid: Cumulative regret (2 runs)"]


def test_a_study_s_sweep_says_its_directory_is_gone_and_still_reports(tmp_path):
    import json

    from sege_cvx.experiments import ResultsError, run_study, write_report

    study = run_study(runs=2, horizon=50, seed=1)
    assert study.sweep.path is None  # it ran in a temporary directory, deleted since
    assert len(study.sweep.runs) == 4 and set(study.sweep.runs["algorithm"]) == {"SEGE", "CLUCB"}
    with pytest.raises(ResultsError, match="this sweep's directory was temporary"):
        study.sweep.run_statistics(algorithm="SEGE")
    assert study.sweep.fallback_reasons(algorithm="SEGE") == study.summary["SEGE"]["fallback_reasons"]
    write_report(study.sweep, tmp_path / "report")
    record = json.loads((tmp_path / "report" / "report.json").read_text())
    assert record["results"]["path"] is None
    assert (tmp_path / "report" / "table.md").read_text().startswith("# Sweep results: a study")



@pytest.mark.parametrize("calls", [0, 2])
def test_the_command_line_freezes_the_collector_at_exit(calls):
    # The interpreter's collections at exit, over every object numba, matplotlib and pandas
    # made, took half a second of the paper command: main moves them out of the collector's
    # reach at exit (gc.freeze). A handler registered before main's runs after it.
    import subprocess
    import sys
    from pathlib import Path

    script = ("import atexit, contextlib, gc, io\n"
              "atexit.register(lambda: print('frozen' if gc.get_freeze_count() else 'not frozen'))\n"
              "from sege_cvx.cli import main\n"
              f"for _ in range({calls}):\n"
              "    with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
              "        main(['--version'])\n")
    root = Path(sege_cvx.__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=root, check=True).stdout.splitlines()
    assert out[-1] == ("frozen" if calls else "not frozen"), out
