"""Every figure the package draws keeps its text on the canvas and its legends clear of other text
(:func:`~sege_cvx.experiments._plotting.layout_problems`): the study's figures, a sweep's panels
in every arrangement, with long labels (an import path and two grid parameters), and the ROFUL
study's statistic across problems; and the labels name a policy as it is registered."""

import sys

import matplotlib
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from sege_cvx.experiments import figures, run_study  # noqa: E402
from sege_cvx.experiments._plotting import LineStyles, layout_problems  # noqa: E402
from sege_cvx.experiments.bands import band_limits  # noqa: E402
from sege_cvx.experiments.sweeps.run import run_sweep  # noqa: E402

MODULE = "figure_layout_policies"
POLICIES = '''
import numpy as np
import sege_cvx as sc


class ADescriptivelyNamedBaselinePolicy(sc.Policy):
    """Plays the baseline arm scaled by ``1 - eps * delta``."""

    decision_names = ("baseline",)

    def __init__(self, setting, *, lam=0.1, eps: float = 0.0, delta: float = 0.0, n_runs=1,
                 seed=None):
        super().__init__(setting, lam=lam, n_runs=n_runs, seed=seed)
        self.eps, self.delta = eps, delta

    def select(self):
        self.last_decision[:] = 0
        return np.tile((1 - self.eps * self.delta) * self.setting.safe_arm, (self.n_runs, 1))

    def observe(self, arms, rewards, constraint_values):
        pass


@sc.register_policy("Shrunk")
class Shrunk(ADescriptivelyNamedBaselinePolicy):
    """The same, registered by name."""
'''
LONG = f"{MODULE}:ADescriptivelyNamedBaselinePolicy"


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    folder = tmp_path_factory.mktemp("layout")
    (folder / f"{MODULE}.py").write_text(POLICIES)
    sys.path.insert(0, str(folder))
    try:
        spec = {"seed": 0, "runs": 3, "horizon": 60,
                "problems": [{"name": "paper"}, {"name": "box"}],
                "algorithms": [{"name": "SEGE"},
                               {"name": LONG, "grid": {"eps": [0.1, 0.2], "delta": [0.05, 0.1]}},
                               {"name": f"{MODULE}:Shrunk", "grid": {"eps": [0.5]}}]}
        yield run_sweep(spec, folder / "out", workers=1, progress=False)
    finally:
        sys.path.remove(str(folder))


#: A package of policies named by import paths of 88 to 92 characters.
LONG_PACKAGE = "a_long_research_module_for_layout"
LONG_PATHS = [f"{LONG_PACKAGE}.subpackage:{name}" for name in (
    "MyVeryLongConservativePolicyClassNameForTheLayoutTest",
    "AnotherEvenLongerAggressivelyExploringPolicyClassName",
    "YetAnotherQuiteLongPolicyClassNameThatOverflowsLegends")]


@pytest.fixture(scope="module")
def long_package(tmp_path_factory):
    """A folder on the import path holding :data:`LONG_PATHS`' package."""
    folder = tmp_path_factory.mktemp("long_layout")
    package = folder / LONG_PACKAGE / "subpackage"
    package.mkdir(parents=True)
    (folder / LONG_PACKAGE / "__init__.py").write_text("")
    classes = "".join(f"\n\nclass {path.split(':')[1]}(ADescriptivelyNamedBaselinePolicy):\n"
                      f"    pass\n" for path in LONG_PATHS)
    (package / "__init__.py").write_text(POLICIES.split("@sc.register_policy")[0] + classes)
    sys.path.insert(0, str(folder))
    try:
        yield folder
    finally:
        sys.path.remove(str(folder))


@pytest.fixture(scope="module")
def long_sweep(long_package):
    spec = {"seed": 0, "runs": 2, "horizon": 30,
            "problems": [{"name": "paper"}, {"name": "box"}],
            "algorithms": [{"name": "SEGE"},
                           *({"name": path, "grid": {"eps": [0.1, 0.2]}} for path in LONG_PATHS)]}
    return run_sweep(spec, long_package / "out", workers=1, progress=False)


def joined(text):
    """``text`` without its whitespace: a wrapped label read again as one line."""
    return "".join(text.split())


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_the_layout_check_finds_cut_text_and_a_legend_over_tick_labels():
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1], [0, 1], label="a line")
    ax.set_title("a title", y=1.4)
    fig.legend(loc="lower center", bbox_to_anchor=(0.55, 0.02))
    found = layout_problems(fig)
    assert "axes 0 ('a title') title 'a title' reaches outside the canvas" in found
    assert any(p.startswith("the figure's legend overlaps axes 0 ('a title') tick label")
               for p in found), found
    assert any(p == "the figure's legend lies over axes 0" for p in found), found
    fig.subplots_adjust(bottom=0.2, top=0.8)
    ax.set_title("a title")
    fig.legends.clear()
    assert layout_problems(fig) == []


@pytest.mark.parametrize("kind", ["regret", "reward"])
@pytest.mark.parametrize("by", ["problem", None, ["problem", "algorithm"], "delta"])
def test_a_sweep_s_figures_keep_their_text_inside_and_apart(sweep, kind, by):
    fig = getattr(sweep, f"plot_{kind}")(by=by)
    assert layout_problems(fig) == []
    texts = {t.get_text() for legend in [*fig.legends, *(a.get_legend() for a in fig.axes)]
             if legend is not None for t in legend.get_texts()}
    # An import path is labelled by its class's registered name; an unregistered class by its
    # path, with its grid values in full.
    assert any(t.endswith("Shrunk eps=0.5") for t in texts), texts
    assert not any(f"{MODULE}:Shrunk" in t for t in texts), texts
    assert any(f"{LONG} eps=0.2" in t for t in texts), texts


@pytest.mark.parametrize("kind", ["regret", "reward"])
@pytest.mark.parametrize("by", ["eps", None, "algorithm", ["algorithm", "eps"]])
def test_long_import_paths_are_wrapped_not_cut(long_sweep, kind, by):
    # Panels split by a grid parameter (or none) put the problem and the whole path in each
    # legend label; split by algorithm, the path is the panel's title.
    fig = getattr(long_sweep, f"plot_{kind}")(by=by)
    assert layout_problems(fig) == []
    texts = [t.get_text() for legend in [*fig.legends, *(a.get_legend() for a in fig.axes)]
             if legend is not None for t in legend.get_texts()]
    texts += [ax.get_title() for ax in fig.axes]
    for path in LONG_PATHS:  # nothing of a label left out
        assert any(joined(path) in joined(t) for t in texts), (path, texts)
    assert any("\n" in t for t in texts), texts  # wrapped, not shrunk


def line_style(line):
    """What tells a line apart from another: its colour, line style and marker."""
    return (matplotlib.colors.to_hex(line.get_color()), line.get_linestyle(), line.get_marker())


@pytest.mark.parametrize("algorithms", [["A"], ["SEGE", "A", "B"], ["SEGE", "CLUCB", "ROFUL"]])
def test_thirty_lines_get_thirty_styles(algorithms):
    # Registered colours for SEGE, CLUCB and ROFUL; an algorithm's labels take turns.
    styles = LineStyles({"SEGE": "tab:blue", "CLUCB": "tab:green", "ROFUL": "tab:purple"},
                        algorithms)
    given = [styles(f"{algorithms[k % len(algorithms)]} x={k}", algorithms[k % len(algorithms)])
             for k in range(40)]
    assert len(set(given)) == len(given), given
    assert styles(f"{algorithms[0]} x=0", algorithms[0]) == given[0]  # asked again: the same
    if algorithms[0] == "SEGE":  # its first label in its registered colour, a solid line
        assert given[0][:2] == ("tab:blue", "-")


def test_a_panel_of_twelve_cells_draws_twelve_distinct_lines(tmp_path, monkeypatch):
    (tmp_path / f"{MODULE}_twelve.py").write_text(POLICIES.replace('"Shrunk"', '"Twelve"'))
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = {"seed": 0, "runs": 1, "horizon": 5, "problems": [{"name": "paper"}],
            "algorithms": [{"name": f"{MODULE}_twelve:Shrunk",
                            "grid": {"eps": [k / 20 for k in range(12)]}}]}
    results = run_sweep(spec, tmp_path / "out", workers=1, progress=False)
    for kind in ("regret", "reward"):
        fig = getattr(results, f"plot_{kind}")(band=None)
        lines = [line for line in fig.axes[0].get_lines() if line.get_label().startswith("Tw")]
        assert len(lines) == 12
        assert len({line_style(line) for line in lines}) == 12, [line_style(x) for x in lines]
        legend = fig.axes[0].get_legend() or fig.legends[0]
        assert len({line_style(h) for h in legend.legend_handles[:12]}) == 12
        assert layout_problems(fig) == []
        assert "\n1 run per cell, no band" in fig._suptitle.get_text()  # not "1 runs"


def test_the_default_band_is_quantiles_for_two_cells_and_intervals_for_more(sweep):
    many = sweep.plot_regret()  # six cells a panel
    assert "band: 95 % confidence interval of the mean" in many._suptitle.get_text()
    few = sweep.plot_regret(by=["problem", "algorithm"])  # at most four... of one algorithm
    assert "band: 95 % confidence interval of the mean" in few._suptitle.get_text()
    one = sweep.plot_regret(by=["problem", "algorithm", "eps", "delta"])
    assert "band: 5-95 % of runs" in one._suptitle.get_text()


def test_confidence_bands_stay_within_the_range_over_runs(sweep):
    curves = sweep.curves
    for kind in ("regret", "reward"):
        for _, rows in curves.groupby(["problem", "algorithm", "eps", "delta"], dropna=False):
            low, high = band_limits(rows, kind, "ci", int(rows["runs"].iloc[0]))
            least, most = band_limits(rows, kind, "minmax", int(rows["runs"].iloc[0]))
            assert (np.asarray(low) >= np.asarray(least)).all()
            assert (np.asarray(high) <= np.asarray(most)).all()
    # Three runs of a cumulative regret starting at 0: mean - 1.96 se goes below the least run
    # at some stage of some cell, and is cut there.
    rows = curves[curves["algorithm"] == "SEGE"]
    mean, se = rows["regret_mean"].to_numpy(), rows["regret_sd"].to_numpy() / np.sqrt(3)
    assert (mean - 1.96 * se < rows["regret_min"].to_numpy()).any()


def test_the_study_s_figures_keep_their_text_inside_and_apart(tmp_path, monkeypatch):
    sys.path.insert(0, str(tmp_path))
    (tmp_path / f"{MODULE}_study.py").write_text(POLICIES.replace('"Shrunk"', '"StudyShrunk"'))
    try:
        study = run_study(runs=2, horizon=500, seed=1,
                          algorithms=("SEGE", "CLUCB", "ROFUL", f"{MODULE}_study:Shrunk"))
        checked = []
        save = figures._save

        def checking_save(fig, out, name):
            checked.append((name, layout_problems(fig),
                            [t.get_text() for t in fig.axes[0].get_legend().get_texts()]))
            return save(fig, out, name)

        monkeypatch.setattr(figures, "_save", checking_save)
        (tmp_path / "figures").mkdir()
        figures.write_figures(study, tmp_path / "figures")
    finally:
        sys.path.remove(str(tmp_path))
    assert [name for name, _, _ in checked] == [
        "fig2a_sege_reward", "fig2b_clucb_reward", "roful_reward",
        f"{MODULE}_study_shrunk_reward", "fig2c_regret", "fig3_safe_sets"]
    assert all(problems == [] for _, problems, _ in checked), checked
    assert "StudyShrunk mean" in checked[-2][2]  # the registered name, not the import path


def test_the_study_s_figures_wrap_long_import_paths(long_package, tmp_path, monkeypatch):
    # Another problem than the paper's: its name starts each title too.
    study = run_study(runs=2, horizon=50, seed=1, problem="box", algorithms=("SEGE", *LONG_PATHS))
    checked = []
    save = figures._save

    def checking_save(fig, out, name):
        ax = fig.axes[0]
        checked.append((name, layout_problems(fig), ax.get_title(),
                        [t.get_text() for t in ax.get_legend().get_texts()]))
        return save(fig, out, name)

    monkeypatch.setattr(figures, "_save", checking_save)
    figures.write_figures(study, tmp_path)
    assert [problems for _, problems, _, _ in checked] == [[]] * 5, checked
    for path, (_, _, title, legend) in zip(LONG_PATHS, checked[1:4], strict=True):
        assert joined(title) == joined(f"box: {path}: stagewise expected reward (2 runs)")
        assert joined(f"{path} mean") in map(joined, legend)
    regret_legend = checked[-1][3]
    assert all(joined(f"{path} mean") in map(joined, regret_legend) for path in LONG_PATHS)


def test_the_statistic_across_problems_keeps_its_band_above_its_floor():
    rng = np.random.default_rng(0)
    t = np.arange(1, 101)
    rows = [{"problem": f"p{k}", "algorithm": name, "t": s, "regret_mean": value}
            for k in range(30) for name, scale in (("ROFUL", 1.0), ("A long policy name:Cls", 9.0))
            for s, value in zip(t, scale * rng.exponential(size=t.size), strict=True)]
    fig = figures.across_problems_figure(pd.DataFrame(rows), ["ROFUL", "A long policy name:Cls"],
                                         floor=0.0, title="R_t / sqrt(t) over 30 problems")
    assert layout_problems(fig) == []
    for band in fig.axes[0].collections:
        assert band.get_paths()[0].vertices[:, 1].min() >= 0.0
