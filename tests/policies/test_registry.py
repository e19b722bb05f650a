"""One registry names every policy: SEGE, CLUCB and ROFUL register like a user's; specs, the
command line, ``BanditProblem.policy``, the study and reports read it; a user's policy, named by
import path beside its spec, runs in a 2-worker sweep with a grid over its own parameter and
reports its own decision columns; a changed policy never mixes with its old shards."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from problems import constrained_problem, paper_problem, theta_constraint_problem

import sege_cvx as sc
from sege_cvx.experiments import OutputPathError, SpecError, load_results, run_sweep
from sege_cvx.experiments.spec import StudySpec
from sege_cvx.experiments.sweeps.errors import SweepWarning
from sege_cvx.policies import registry
from sege_cvx.policies.registry import grid_parameters, policy_code_fingerprint, policy_entry

#: A user's policy module, written beside a spec: the baseline arm, or with probability
#: ``share`` the exploration centre (inside every set), as a code of its own.
POLICY_MODULE = '''\
import numpy as np
import sege_cvx as sc


class Wanderer(sc.Policy):
    """Baseline, or the exploration centre with probability ``share``."""

    decision_names = ("stay", "wander")

    def __init__(self, setting, *, lam=0.1, share: float = 0.25, n_runs=1, seed=None):
        super().__init__(setting, lam=lam, n_runs=n_runs, seed=seed)
        self.share = float(share)
        self.centre = setting.arm_set.exploration().center

    def select(self):
        wander = np.array([rng.random() < self.share for rng in self.rngs])
        self.last_decision[:] = wander
        return np.where(wander[:, None], self.centre, self.setting.safe_arm)

    def observe(self, arms, rewards, constraint_values):
        pass
'''

SPEC_TOML = """\
seed = 5
runs = 4
horizon = 60
[[problems]]
name = "paper"
[[algorithms]]
name = "wanderer_policy:Wanderer"
[algorithms.grid]
share = [0.0, 0.5]
[[algorithms]]
name = "CLUCB"
"""


@pytest.fixture
def user_policy(tmp_path, monkeypatch):
    """The user's module beside a spec file; returns the spec's path."""
    (tmp_path / "wanderer_policy.py").write_text(POLICY_MODULE)
    (tmp_path / "study.toml").write_text(SPEC_TOML)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path / "study.toml"
    sys.modules.pop("wanderer_policy", None)



def _python(args, cwd=None, input=None):
    """``python args`` in a new process with this package on its import path."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (os.environ.get("PYTHONPATH"), str(Path(sc.__file__).parents[1])) if p)}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, input=input,
                          capture_output=True, text=True, timeout=300)

def test_the_built_ins_register_like_any_policy_with_their_grid_parameters():
    assert sc.registered_policies()[:3] == ("SEGE", "CLUCB", "ROFUL")
    assert sc.policy_class("SEGE") is sc.SEGE
    assert grid_parameters(sc.SEGE) == ("lam", "c", "rho", "L", "delta_bar", "radius",
                                        "lcb_method")
    assert grid_parameters(sc.CLUCB) == ("lam", "delta", "n_arms", "radius")
    assert grid_parameters(sc.StagewiseROFUL) == ("lam", "delta", "radius", "n_directions")
    # The registered name offers the parameters of both its classes.
    for roful in (sc.ROFUL, policy_entry("ROFUL")):
        assert grid_parameters(roful) == ("lam", "delta", "radius", "n_directions", "refine")
    assert policy_code_fingerprint(sc.SEGE) is None  # the package's version identifies it


def test_register_policy_refuses_what_it_cannot_name(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))

    class Mine(sc.Policy):
        decision_names = ("only",)

    assert sc.register_policy("Mine", Mine, color="tab:red") is Mine
    assert sc.register_policy("Mine", Mine) is Mine  # the same class again: fine
    with pytest.raises(ValueError, match="'SEGE' is registered to sege_cvx.policies.sege:SEGE on "
                                         "the same safety model; pass replace=True"):
        sc.register_policy("SEGE", Mine)
    with pytest.raises(ValueError, match="without ':'"):
        sc.register_policy("a:b", Mine)
    with pytest.raises(TypeError, match="needs a subclass of sege_cvx.Policy, got <class 'int'>"):
        sc.register_policy("Int", int)
    with pytest.raises(ValueError, match=r"^unknown policy 'SGE' \(registered: SEGE, CLUCB, "
                                         r"ROFUL, .*Mine; or an import path 'module:Class'\)$"):
        sc.policy_class("SGE")
    with pytest.raises(ImportError, match=r"policy 'no_such_module:X' cannot be loaded: no module "
                                          r"named 'no_such_module' on the import path: run from "
                                          r"the folder that holds no_such_module.py \(or the "):
        sc.policy_class("no_such_module:X")
    with pytest.raises(TypeError, match="'numpy:ndarray' is not a subclass of sege_cvx.Policy"):
        sc.policy_class("numpy:ndarray")


# ------------------------------------------------------------ one name, a class per safety model
def test_roful_names_the_class_of_each_problem_s_safety_model():
    assert type(paper_problem().policy("ROFUL", 1)) is sc.StagewiseROFUL
    assert type(constrained_problem().policy("ROFUL", 1)) is sc.ROFUL
    assert sc.policy_class("ROFUL") is sc.StagewiseROFUL  # its first class
    assert sc.policy_class("ROFUL", "linear_constraint") is sc.ROFUL
    entry = policy_entry("ROFUL")
    assert entry.classes == (sc.StagewiseROFUL, sc.ROFUL) and entry.cls is sc.StagewiseROFUL
    assert entry.safety_models == ("stagewise", "linear_constraint")
    assert entry.for_model("linear_constraint_on_theta") is None
    with pytest.raises(TypeError, match=r"^ROFUL runs on the stagewise floor .* and on an unknown "
                                        r"linear constraint .*: use Safe-LUCB"):
        sc.policy_class("ROFUL", "linear_constraint_on_theta")
    with pytest.raises(TypeError, match=r"use Safe-LUCB \(problem theta-constraint\)$"):
        theta_constraint_problem().policy("ROFUL", 1)


def test_registered_policies_of_a_safety_model():
    stagewise = sc.registered_policies("stagewise")
    assert stagewise[:3] == ("SEGE", "CLUCB", "ROFUL")
    assert not {"GNOP", "SafeTS", "Safe-LUCB"} & set(stagewise)
    assert sc.registered_policies("linear_constraint")[:3] == ("ROFUL", "GNOP", "SafeTS")
    assert sc.registered_policies("linear_constraint_on_theta")[0] == "Safe-LUCB"
    assert set(sc.registered_policies()) >= set(stagewise) | {"GNOP", "SafeTS", "Safe-LUCB"}


class ConstrainedStay(sc.Policy):
    """A user's policy of the linear-constraint model: the safe arm, always."""

    decision_names = ("stay",)
    safety_models = ("linear_constraint",)

    def select(self):
        self.last_decision[:] = 0
        return np.tile(self.setting.safe_arm, (self.n_runs, 1))

    def observe(self, arms, rewards, constraint_values):
        pass


def test_a_name_takes_a_class_for_another_safety_model(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    assert sc.register_policy("SEGE", ConstrainedStay) is ConstrainedStay  # no clash: another model
    entry = policy_entry("SEGE")
    assert entry.classes == (sc.SEGE, ConstrainedStay) and registry.policy_color("SEGE") == "tab:blue"
    assert type(paper_problem().policy("SEGE", 1)) is sc.SEGE
    assert type(constrained_problem().policy("SEGE", 1)) is ConstrainedStay
    assert "SEGE" in sc.registered_policies("linear_constraint")


def test_a_class_for_a_model_a_name_already_covers_needs_replace(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))

    class MyROFUL(ConstrainedStay):
        pass

    with pytest.raises(ValueError, match=r"^policy name 'ROFUL' is registered to "
                                         r"sege_cvx.policies.roful:ROFUL on the same safety model; "
                                         r"pass replace=True to register another class under it$"):
        sc.register_policy("ROFUL", MyROFUL)
    assert policy_entry("ROFUL").classes == (sc.StagewiseROFUL, sc.ROFUL)  # unchanged
    sc.register_policy("ROFUL", MyROFUL, replace=True)
    assert policy_entry("ROFUL").classes == (sc.StagewiseROFUL, MyROFUL)  # the other model's kept
    assert type(constrained_problem().policy("ROFUL", 1)) is MyROFUL
    assert type(paper_problem().policy("ROFUL", 1)) is sc.StagewiseROFUL


def test_grid_parameters_are_the_plain_keyword_parameters_of_the_signature():
    class Typed(sc.Policy):
        decision_names = ("a",)

        def __init__(self, setting, *, lam=0.1, k: int = 3, mode: str | None = None, prior=None,
                     scale=1.0, table: dict | None = None, n_runs=1, seed=None, **extra):
            super().__init__(setting, lam=lam, n_runs=n_runs, seed=seed)

    assert grid_parameters(Typed) == ("lam", "k", "mode", "prior", "scale")


def test_the_problem_gives_policy_keywords_by_parameter_name():
    problem = paper_problem()
    sege = problem.policy("SEGE", 2, seed=1, c=0.3, delta_bar=0.05, lam=0.2)
    assert (sege.c, sege.lam, sege.risk) == (0.3, 0.2, sc.policies.PaperRisk(0.05))
    assert problem.policy("SEGE", 1, c=0.7, delta_bar=0.2).risk.delta_bar == 0.2
    clucb = problem.policy("CLUCB", 1, delta=0.05, n_arms=40)
    assert (clucb.delta, clucb.arms.shape[0]) == (0.05, 40)
    # A class works as well as a name.
    assert problem.policy(sc.StagewiseROFUL, 1, n_directions=40).points.shape[0] == 40
    with pytest.raises(TypeError, match=r"^CLUCB has no parameter 'c' \(its grid parameters: "
                                        r"lam, delta, n_arms, radius\)$"):
        problem.policy("CLUCB", 1, c=0.5)


def test_sege_s_delta_bar_is_the_paper_schedule_and_excludes_risk():
    problem = paper_problem()
    a = sc.SEGE(problem.setting)
    assert all(a.risk(t) == sc.policies.paper_risk(t) for t in (1, 7, 10**6))
    with pytest.raises(ValueError, match="give risk .* or delta_bar .*, not both"):
        sc.SEGE(problem.setting, risk=sc.policies.paper_risk, delta_bar=0.1)
    with pytest.raises(ValueError, match="delta_bar"):
        problem.policy("SEGE", 1, delta_bar=1.5)


def test_a_spec_names_a_policy_by_import_path_and_grids_its_own_parameters(user_policy):
    spec = StudySpec.from_toml(user_policy)
    assert [(a.name, s) for _, a, s in spec.cells()] == [
        ("wanderer_policy:Wanderer", {"share": 0.0}), ("wanderer_policy:Wanderer", {"share": 0.5}),
        ("CLUCB", {})]
    bad = {"seed": 1, "runs": 1, "horizon": 5, "problems": [{"name": "paper"}]}
    with pytest.raises(SpecError, match=r"algorithms\[0\].grid: wanderer_policy:Wanderer has no "
                                        r"parameter 'c' to vary \(it can vary: lam, share\)"):
        StudySpec.from_dict({**bad, "algorithms": [{"name": "wanderer_policy:Wanderer",
                                                    "grid": {"c": [1.0]}}]})
    with pytest.raises(SpecError, match=r"algorithms\[0\]: unknown policy 'SEG' \(registered: "):
        StudySpec.from_dict({**bad, "algorithms": [{"name": "SEG"}]})
    with pytest.raises(SpecError, match=r"algorithms\[0\]: policy 'wanderer_policy:Nope' cannot "
                                        "be loaded"):
        StudySpec.from_dict({**bad, "algorithms": [{"name": "wanderer_policy:Nope"}]})


def test_a_user_policy_beside_its_spec_runs_in_a_two_worker_sweep_with_its_own_columns(
        user_policy, tmp_path):
    out = tmp_path / "out"
    run = _python(["-m", "sege_cvx", "sweep", str(user_policy), "--out", str(out), "--workers",
                   "2", "--shard-runs", "2", "--no-progress"], cwd=tmp_path.parent)
    assert run.returncode == 0, run.stderr
    results = load_results(out)
    runs = results.runs
    # The user's decisions under its own names; CLUCB's under its own; none under SEGE's.
    assert {"stay", "wander", "optimistic", "baseline"} <= set(runs.columns)
    assert "exploit" not in runs.columns
    mine = runs[runs["algorithm"] == "wanderer_policy:Wanderer"]
    clucb = runs[runs["algorithm"] == "CLUCB"]
    assert mine[["stay", "wander"]].sum(axis=1).eq(60).all()
    assert mine.loc[mine["share"] == 0.0, "wander"].eq(0).all()
    assert mine.loc[mine["share"] == 0.5, "wander"].between(10, 50).all()
    assert mine["optimistic"].isna().all() and clucb["stay"].isna().all()
    assert clucb[["optimistic", "baseline"]].sum(axis=1).eq(60).all()
    # The exploration centre (1, 1) earns 1.4 < b = 1.792: every wander is a violation, counted.
    assert mine["violations"].eq(mine["wander"]).all()
    gap = results.manifest["problems"]["paper"]["optimal_reward"] - 2.24
    np.testing.assert_allclose(mine.loc[mine["share"] == 0.0, "regret"], 60 * gap, rtol=1e-12)
    described = results.manifest["algorithms"]["wanderer_policy:Wanderer"]
    assert described["grid_parameters"] == ["lam", "share"]
    assert described["decision_names"] == ["stay", "wander"]
    assert len(described["code"]) == 64
    # Alone, a run's decisions are those of the sweep (its seed is in runs.parquet).
    row = mine[mine["share"] == 0.5].iloc[1]
    policy_seeds, noise_seeds = sc.run_seeds(int(row.seed), 1)
    problem = paper_problem()
    alone = sc.simulate(problem.policy("wanderer_policy:Wanderer", 1, policy_seeds, share=0.5),
                        problem.bandit(noise_seeds), 60)
    assert alone.stats.decision_counts[0].tolist() == [row.stay, row.wander]
    assert alone.stats.cum_regret[0] == row.regret
    # The report labels its lines and table by the policy's name.
    report = _python(["-m", "sege_cvx", "report", str(out)])
    assert report.returncode == 0, report.stderr
    table = pd.read_csv(out / "report" / "table.csv")
    assert "wanderer_policy:Wanderer" in set(table["algorithm"])
    assert (out / "report" / "regret.png").stat().st_size > 10_000


def test_a_policy_whose_code_changed_is_not_mixed_with_its_old_shards(user_policy, tmp_path):
    """Only what the code does counts (comments and docstrings do not); a change refuses the
    rerun, and overwrite computes again the changed policy's cells alone (issue 39, item 4)."""
    spec = StudySpec.from_toml(user_policy)
    out = tmp_path / "out"
    first = run_sweep(spec, out, workers=1, shard_runs=2, progress=False)
    module = Path(user_policy).with_name("wanderer_policy.py")
    # A comment and a docstring edited: the same code, the sweep resumes (nothing to compute).
    module.write_text(POLICY_MODULE.replace('"""Baseline, or', '"""Stays at the baseline, or')
                      .replace("    def observe(", "    # Nothing to learn.\n    def observe("))
    sys.modules.pop("wanderer_policy")
    same = run_sweep(StudySpec.from_toml(user_policy), out, workers=1, progress=False)
    pd.testing.assert_frame_equal(same.runs.drop(columns="wall_seconds"),
                                  first.runs.drop(columns="wall_seconds"))
    kept = {p.name: p.stat().st_mtime_ns for p in (out / "shards").glob("*.parquet")}
    (out / "manifest.json").unlink()
    module.write_text(POLICY_MODULE.replace("rng.random() < self.share",
                                            "rng.random() < self.share / 2"))
    sys.modules.pop("wanderer_policy")
    spec = StudySpec.from_toml(user_policy)
    with pytest.raises(OutputPathError, match="the code of policy 'wanderer_policy:Wanderer' "
                                              "changed since it started .*pass overwrite "
                                              r"\(--overwrite\) to compute again the cells of "
                                              "that policy only"):
        run_sweep(spec, out, workers=1, progress=False)
    with pytest.warns(SweepWarning, match=r"the code of 'wanderer_policy:Wanderer' changed since "
                                          r"the sweep started: 2 cells \(wanderer_policy:"
                                          r"Wanderer share=0.0 on paper, .*\) are "
                                          "computed again; the other cell is kept"):
        again = run_sweep(spec, out, workers=1, overwrite=True, progress=False)
    wander = again.runs.loc[again.runs["share"] == 0.5, "wander"]
    assert wander.between(0, 30).all()
    now = {p.name: p.stat().st_mtime_ns for p in (out / "shards").glob("*.parquet")}
    assert sorted(now) == sorted(kept)
    clucb = [name for name in kept if name.startswith("cell0002")]  # CLUCB, the third cell
    assert clucb and all(now[name] == kept[name] for name in clucb)  # its shards untouched
    assert all(now[name] != kept[name] for name in kept if name not in clucb)
    clucb_runs = again.runs[again.runs["algorithm"] == "CLUCB"].drop(columns="wall_seconds")
    pd.testing.assert_frame_equal(
        clucb_runs, first.runs[first.runs["algorithm"] == "CLUCB"].drop(columns="wall_seconds"))
    # The record holds the new code: the next rerun resumes with nothing to do.
    assert run_sweep(spec, out, workers=1, progress=False).runs.shape == again.runs.shape


REPLACING_FACTORY = '''
import sege_cvx as sc
from sege_cvx.problems.problem import paper_problem


@sc.register_policy("SEGE", replace=True)
class NotSEGE(sc.SEGE):
    """Takes the built-in's name when this module is imported."""


def make():
    return paper_problem()
'''


@pytest.mark.parametrize("workers", [1, 2])
def test_a_name_a_module_of_the_sweep_takes_over_is_an_error_naming_it(tmp_path, monkeypatch,
                                                                        workers):
    """A sweep resolves each name once: a factory module that registers another class under
    "SEGE" when the sweep imports it stops the sweep, naming the module (issue 39, item 5)."""
    from sege_cvx.experiments.sweeps.shards import build_problem

    build_problem.cache_clear()  # the factory is imported afresh
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    (tmp_path / "replacing_factory.py").write_text(REPLACING_FACTORY)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "replacing_factory", raising=False)
    spec = {"seed": 1, "runs": 2, "horizon": 20, "problems": [{"factory": "replacing_factory:make"}],
            "algorithms": [{"name": "SEGE"}]}
    with pytest.raises(SpecError, match=r"^policy 'SEGE' was resolved to "
                                        r"sege_cvx.policies.sege:SEGE, and then "
                                        r"replacing_factory:NotSEGE was registered under that name "
                                        r"\(by module 'replacing_factory', imported by the sweep\)"):
        run_sweep(spec, tmp_path / "out", workers=workers, progress=False)
    assert not (tmp_path / "out").exists()
    sys.modules.pop("replacing_factory", None)
    build_problem.cache_clear()


def test_a_policy_module_of_the_spec_that_takes_a_built_in_name_is_named(tmp_path, monkeypatch):
    """The spec's own policy module, imported when the spec is read, registers another class
    under "SEGE", which the spec also lists: refused before anything runs, naming the module
    that registered it (here one that imports the class from another)."""
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    monkeypatch.setattr(registry, "_REPLACED_BY", dict(registry._REPLACED_BY))
    (tmp_path / "plain_policy.py").write_text(POLICY_MODULE)
    (tmp_path / "taking_module.py").write_text(
        "import sege_cvx as sc\nfrom plain_policy import Wanderer\n\n"
        "sc.register_policy('SEGE', Wanderer, replace=True)\n\nclass Own(Wanderer):\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for module in ("plain_policy", "taking_module"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    spec = {"seed": 1, "runs": 2, "horizon": 20, "problems": [{"name": "paper"}],
            "algorithms": [{"name": "SEGE"}, {"name": "taking_module:Own"}]}
    with pytest.raises(SpecError, match=r"^algorithms\[0\]: policy 'SEGE' was resolved to "
                                        r"sege_cvx.policies.sege:SEGE, and then "
                                        r"plain_policy:Wanderer was registered under that name "
                                        r"\(by module 'taking_module', imported by the sweep\)"):
        run_sweep(spec, tmp_path / "out", workers=1, progress=False)
    assert not (tmp_path / "out").exists()


def test_reports_of_a_sweep_without_recorded_algorithms_read_the_registry(tmp_path):
    spec = {"seed": 1, "runs": 2, "horizon": 30, "problems": [{"name": "paper"}],
            "algorithms": [{"name": "SEGE", "grid": {"c": [0.5]}}, {"name": "ROFUL"}]}
    results = run_sweep(spec, tmp_path / "out", workers=1, progress=False)
    recorded = results.algorithms
    assert recorded["ROFUL"]["color"] == "tab:purple"
    assert recorded["ROFUL"]["decision_names"] == ["full_step", "scaled_step", "baseline"]
    results.manifest.pop("algorithms")  # as an earlier version wrote it
    earlier = ["exploit", "explore_lcb", "explore_baseline"]  # its columns, for every algorithm
    assert results.algorithms == {
        name: {"grid_parameters": a["grid_parameters"], "decision_names": earlier,
               "color": a["color"]} for name, a in recorded.items()}


def _named(*names):
    class Named(sc.Policy):
        decision_names = names
    return Named


@pytest.mark.parametrize(("names", "message"), [
    (("regret",), "'regret' would overwrite a column of the results tables"),
    (("seed", "stay"), "'seed' would overwrite a column"),
    (("reward_peak",), "'reward_peak' would overwrite a column"),
    (("x", "x"), "names 'x' twice; each decision code needs its own name"),
    (("two words",), "'two words' is not an identifier"),
    ((None,), "names no decision"),
    ((), "must be a nonempty tuple of str"),
])
def test_decision_names_that_would_overwrite_or_lose_columns_are_refused(names, message):
    problem = paper_problem()
    with pytest.raises(TypeError, match=message):
        problem.policy(_named(*names), 1)
    with pytest.raises(AssertionError, match=f"check_policy: Named.decision_names.*{message}"):
        sc.testing.check_policy(_named(*names))


def test_grid_parameters_that_would_overwrite_columns_are_spec_errors(tmp_path, monkeypatch):
    (tmp_path / "clashing.py").write_text(POLICY_MODULE.replace(
        "share: float = 0.25", "share: float = 0.25, runs: int = 1, c: float = 1.0"))
    monkeypatch.syspath_prepend(str(tmp_path))
    base = {"seed": 1, "runs": 1, "horizon": 5, "problems": [{"name": "paper"}]}
    with pytest.raises(SpecError, match=r"algorithms\[0\].grid: clashing:Wanderer's parameter "
                                        "'runs' cannot be varied: it would overwrite a column"):
        StudySpec.from_dict({**base, "algorithms": [{"name": "clashing:Wanderer",
                                                     "grid": {"runs": [1, 2]}}]})
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    sc.register_policy("Decides-c", _named("c", "d"))
    with pytest.raises(SpecError, match=r"algorithms\[1\].grid: 'c' is a parameter of SEGE and a "
                                        "decision of Decides-c"):
        StudySpec.from_dict({**base, "algorithms": [{"name": "Decides-c"},
                                                    {"name": "SEGE", "grid": {"c": [0.5]}}]})
    sys.modules.pop("clashing", None)


def test_annotations_decide_grid_parameters_as_written():
    from typing import Literal, Union  # noqa: UP035 - the forms users write

    class Annotated(sc.Policy):
        decision_names = ("a",)

        def __init__(self, setting, *, mode: Literal["fast", "exact"] = "fast",
                     k: int | None = None, arr: np.ndarray | None = None,
                     mix: Union[float, np.ndarray] = 0.5,  # noqa: UP007
                     n_runs=1, seed=None):
            super().__init__(setting, n_runs=n_runs, seed=seed)

    assert grid_parameters(Annotated) == ("mode", "k")


def test_a_policy_module_that_fails_to_import_is_one_line(tmp_path, monkeypatch):
    (tmp_path / "raising_policy.py").write_text(r"raise RuntimeError('no GPU\nfound')" + "\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ImportError, match=r"^policy 'raising_policy:P' cannot be loaded: importing "
                                          r"'raising_policy' raised RuntimeError: no GPU found$"):
        sc.policy_class("raising_policy:P")
    with pytest.raises(TypeError, match="must name a subclass of sege_cvx.Policy, got <class 'dict'>"):
        paper_problem().policy(dict, 1)


MISSING_PACKAGE = "sege_cvx_test_no_such_package"
NEEDY_POLICY = """\
import numpy as np
import {imports}  # noqa: F401
import sege_cvx as sc


class MyPolicy(sc.Policy):
    decision_names = ("baseline",)

    def select(self):
        self.last_decision[:] = 0
        return np.tile(self.setting.safe_arm, (self.n_runs, 1))

    def observe(self, arms, rewards, constraint_values):
        pass
"""


def test_a_policy_module_that_imports_a_package_not_installed_says_to_install_it(
        tmp_path, monkeypatch):
    # The user's module is found, beside the spec in the folder they run from: the package it
    # imports is what is missing, and "run from the folder that holds it" would mislead.
    (tmp_path / "needy_policy.py").write_text(NEEDY_POLICY.format(imports=MISSING_PACKAGE))
    (tmp_path / "needy_helper.py").write_text(f"import {MISSING_PACKAGE}.linalg  # noqa: F401\n")
    (tmp_path / "needy_through.py").write_text(NEEDY_POLICY.format(imports="needy_helper"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    install = (rf"which is not installed in this Python \({re.escape(sys.executable)}\): install "
               rf"it \(pip install {MISSING_PACKAGE}, if that is its package's name\)$")
    with pytest.raises(ImportError, match=r"^policy 'needy_policy:MyPolicy' cannot be loaded: "
                                          r"its module 'needy_policy' imports "
                                          rf"'{MISSING_PACKAGE}', " + install):
        sc.policy_class("needy_policy:MyPolicy")
    # Imported by a module the policy's module imports: both named.
    with pytest.raises(ImportError, match=r"^policy 'needy_through:MyPolicy' cannot be loaded: "
                                          r"its module 'needy_through' imports 'needy_helper', "
                                          rf"which imports '{MISSING_PACKAGE}', " + install):
        sc.policy_class("needy_through:MyPolicy")
    # A submodule an installed package lacks: not "install it".
    (tmp_path / "needy_sub.py").write_text(NEEDY_POLICY.format(imports="numpy.no_such_sub"))
    with pytest.raises(ImportError, match=r"^policy 'needy_sub:MyPolicy' cannot be loaded: its "
                                          r"module 'needy_sub' imports 'numpy.no_such_sub', "
                                          r"which 'numpy' \(found in this Python\) does not have$"):
        sc.policy_class("needy_sub:MyPolicy")
    spec = {"seed": 0, "runs": 2, "horizon": 10, "problems": [{"factory": "needy_policy:make"}],
            "algorithms": [{"name": "SEGE"}]}
    with pytest.raises(SpecError, match=r"problem factory 'needy_policy:make' cannot be loaded: "
                                        rf"its module 'needy_policy' imports '{MISSING_PACKAGE}', "
                                        + install):
        run_sweep(spec, tmp_path / "out", workers=1, progress=False)
    spec = {"seed": 0, "runs": 2, "horizon": 10, "problems": [{"name": "paper"}],
            "algorithms": [{"name": "needy_policy:MyPolicy"}]}
    with pytest.raises(SpecError, match=r"^algorithms\[0\]: policy 'needy_policy:MyPolicy' cannot "
                                        rf"be loaded: its module 'needy_policy' imports "
                                        rf"'{MISSING_PACKAGE}', " + install):
        run_sweep(spec, tmp_path / "out", workers=1, progress=False)
    assert not (tmp_path / "out").exists()
    # The policy's module itself not on the import path: where to run from, as before.
    spec["algorithms"] = [{"name": "not_here_policy:MyPolicy"}]
    with pytest.raises(SpecError, match=r"^algorithms\[0\]: policy 'not_here_policy:MyPolicy' "
                                        r"cannot be loaded: no module named 'not_here_policy' on "
                                        r"the import path: run from the folder that holds "
                                        r"not_here_policy.py \(or the package not_here_policy/\)"):
        run_sweep(spec, tmp_path / "out", workers=1, progress=False)
    assert not (tmp_path / "out").exists()


def test_names_that_share_a_file_stem_are_refused_in_a_study(monkeypatch):
    from sege_cvx.experiments.paper import study_algorithms

    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    sc.register_policy("sege", _named("stay"))
    with pytest.raises(ValueError, match="'SEGE' and 'sege' share the file stem 'sege'"):
        study_algorithms(["SEGE", "sege"])
    with pytest.raises(ValueError, match="printable"):
        sc.register_policy("My\nPolicy", _named("stay"))
    assert registry.policy_stem("探索") != registry.policy_stem("搜索")


SCRIPT = """\
import sys
import sege_cvx as sc
from sege_cvx.experiments import run_sweep

exec(open(sys.argv[2]).read())  # the Wanderer class, at the script's top level
sc.register_policy("Mine", Wanderer)

if __name__ == "__main__":
    spec = {"seed": 1, "runs": 4, "horizon": 30, "problems": [{"name": "paper"}],
            "algorithms": [{"name": "Mine", "grid": {"share": [0.5]}}]}
    results = run_sweep(spec, sys.argv[1], workers=2, shard_runs=2, progress=False)
    print(int(results.runs["wander"].sum()), results.manifest["algorithms"]["Mine"]["class"])
"""


def test_a_policy_registered_in_a_script_runs_on_spawned_workers(tmp_path):
    (tmp_path / "script.py").write_text(SCRIPT)
    (tmp_path / "policy_source.py").write_text(POLICY_MODULE)
    run = _python(["script.py", str(tmp_path / "out"), str(tmp_path / "policy_source.py")],
                  cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    wanders, path = run.stdout.split()
    assert 20 <= int(wanders) <= 100 and path == "__main__:Wanderer"


FILELESS_MAIN = """\
import sys
import numpy as np
import sege_cvx as sc
from sege_cvx.experiments import SpecError


class Mine(sc.Policy):
    decision_names = ("baseline",)

    def select(self):
        self.last_decision[:] = 0
        return np.tile(self.setting.safe_arm, (self.n_runs, 1))

    def observe(self, arms, rewards, constraint_values):
        pass


def make():
    return sc.paper_problem()


sc.register_policy("Mine", Mine)
spec = {"seed": 1, "runs": 4, "horizon": 5, "problems": [{"name": "paper"}],
        "algorithms": [{"name": "Mine"}]}
factory = {**spec, "problems": [{"factory": "__main__:make"}], "algorithms": [{"name": "SEGE"}]}
for refused in (spec, factory):
    try:
        sc.run_sweep(refused, sys.argv[1], workers=2, shard_runs=2, progress=False)
    except SpecError as exc:
        print(exc)
print(sc.run_sweep(spec, sys.argv[2], workers=1, progress=False).runs.shape[0])
"""


def test_a_policy_of_a_main_without_a_file_is_refused_before_workers_start(tmp_path):
    # python -c (or an interactive session, a notebook): spawned workers import the script's
    # __main__ from its file, and this one has none.  Refused before anything is written.
    run = _python(["-c", FILELESS_MAIN, str(tmp_path / "two"), str(tmp_path / "one")],
                  cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    policy, factory, runs = run.stdout.strip().splitlines()
    fix = ("which has no file (python -c, an interactive session or a notebook): the 2 worker "
           "processes cannot import it; define it in a module file and import it from there, "
           "or run with workers=1")
    assert policy == f"policy 'Mine' is class Mine of __main__, {fix}"
    assert factory == f"problem factory '__main__:make' is make of __main__, {fix}"
    assert not (tmp_path / "two").exists()
    assert runs == "4"  # in this process, it runs
    # Read from standard input: the workers would run '<stdin>' again, and die at their start
    # (whatever the policies).
    run = _python(["-", str(tmp_path / "two"), str(tmp_path / "one")], cwd=tmp_path,
                  input=FILELESS_MAIN)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().splitlines()[:2] == [
        "this program's __main__ was read from '<stdin>', not a file, and the 2 worker processes "
        "start by running it again: save the program in a file and run that, or run with "
        "workers=1"] * 2
    assert not (tmp_path / "two").exists()


GUARDED_MAIN = """\
import sys
import numpy as np
import sege_cvx as sc
from sege_cvx.experiments import SpecError

if __name__ == "__main__":
    class Mine(sc.Policy):
        decision_names = ("baseline",)

        def select(self):
            self.last_decision[:] = 0
            return np.tile(self.setting.safe_arm, (self.n_runs, 1))

        def observe(self, arms, rewards, constraint_values):
            pass

    sc.register_policy("Mine", Mine)
    spec = {"seed": 1, "runs": 4, "horizon": 5, "problems": [{"name": "paper"}],
            "algorithms": [{"name": "Mine"}]}
    try:
        sc.run_sweep(spec, sys.argv[1], workers=2, shard_runs=2, progress=False)
    except SpecError as exc:
        print(exc)
    print(sc.run_sweep(spec, sys.argv[2], workers=1, progress=False).runs.shape[0])
"""


def test_a_policy_defined_under_the_main_guard_is_refused_before_workers_start(tmp_path):
    # A script's workers run it again as __mp_main__, skipping its `if __name__ ==
    # "__main__":` block: a class defined there is missing in them (every shard failed, after
    # sweep.json was written).  Refused before anything is written; workers=1 runs it.
    script = tmp_path / "study.py"
    script.write_text(GUARDED_MAIN)
    run = _python([str(script), str(tmp_path / "two"), str(tmp_path / "one")], cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    refusal, runs = run.stdout.strip().splitlines()
    assert refusal == ("policy 'Mine' is class Mine of study.py, defined under 'if __name__ == "
                       "\"__main__\":', which the 2 worker processes skip when they run "
                       "study.py again: define it above that block (or in a module file), or "
                       "run with workers=1")
    assert not (tmp_path / "two").exists()
    assert runs == "4"


def test_the_command_line_takes_policies_by_import_path(user_policy, tmp_path, capsys):
    from sege_cvx.cli import main

    with pytest.raises(SystemExit):
        main(["reproduce", "--algorithms", "SEGE", "SGE", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("sege-cvx: error: argument --algorithms: unknown policy 'SGE' "
                          "(registered: SEGE, CLUCB, ROFUL")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        status = main(["reproduce", "--algorithms", "wanderer_policy:Wanderer", "--runs", "3",
                       "--horizon", "40", "--out", str(tmp_path / "r"), "--no-progress"])
    assert status == 0
    printed = capsys.readouterr().out
    assert "wanderer_policy:Wanderer: " in printed and " safety violations (first at " in printed
    summary = (tmp_path / "r" / "summary.json").read_text()
    assert '"stay"' in summary and '"wander"' in summary
    assert (tmp_path / "r" / "wanderer_policy_wanderer_reward.png").exists()


def test_workers_resolve_a_policy_registered_only_in_the_sweep_s_process(tmp_path, monkeypatch):
    (tmp_path / "registered_elsewhere.py").write_text(POLICY_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    import registered_elsewhere

    sc.register_policy("Wanderer", registered_elsewhere.Wanderer)
    spec = {"seed": 2, "runs": 4, "horizon": 30, "problems": [{"name": "paper"}],
            "algorithms": [{"name": "Wanderer", "grid": {"share": [0.5]}}]}
    two = run_sweep(spec, tmp_path / "two", workers=2, shard_runs=2, progress=False)
    one = run_sweep(spec, tmp_path / "one", workers=1, progress=False)
    pd.testing.assert_frame_equal(one.runs.drop(columns="wall_seconds"),
                                  two.runs.drop(columns="wall_seconds"), check_exact=True)
    assert two.manifest["algorithms"]["Wanderer"]["class"] == "registered_elsewhere:Wanderer"
    sys.modules.pop("registered_elsewhere", None)


def test_every_results_column_is_reserved():
    """Decision names and grid parameters may not take a column the tables already have."""
    from sege_cvx.experiments.sweeps.shards import shard_schema
    from sege_cvx.policies.base import reserved_name

    spec = {"seed": 1, "runs": 2, "horizon": 20, "problems": [{"name": "paper"}],
            "algorithms": [{"name": "CLUCB"}]}
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        results = run_sweep(spec, Path(tmp) / "out", workers=1, progress=False)
        own = {"optimistic", "baseline"}
        columns = [c for c in [*results.runs.columns, *results.curves.columns] if c not in own]
    assert all(reserved_name(c) for c in columns), [c for c in columns if not reserved_name(c)]
    assert all(reserved_name(c) for c in shard_schema(3, 4).names)


def test_a_policy_s_summary_enters_the_study_s_summary(user_policy):
    import wanderer_policy

    from sege_cvx.experiments import run_study

    class Counting(wanderer_policy.Wanderer):
        def summary(self, stats, stages):
            return {"share": self.share, "wanders_mean": float(stats.decision_counts[:, 1].mean())}

    wanderer_policy.Counting = Counting  # importable by path, as a study needs
    study = run_study(runs=3, horizon=40, seed=2, algorithms=["wanderer_policy:Counting"])
    block = study.summary["wanderer_policy:Counting"]
    assert block["share"] == 0.25
    assert block["wanders_mean"] == block["decision_counts"]["wander"] / 3
