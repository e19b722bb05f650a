"""Study specs: read from TOML or a dict, checked before any work, errors naming the key."""

import textwrap

import pytest

import sege_cvx as sc
from sege_cvx.experiments import SpecError, StudySpec

SPEC = """
seed = 11
runs = 250
horizon = 20000

[[problems]]
name = "paper"

[[problems]]
factory = "mypkg.problems:make"

[[algorithms]]
name = "SEGE"
[algorithms.grid]
c = [0.25, 0.5, 1.0]
lcb_method = ["closed_form", "solver"]

[[algorithms]]
name = "CLUCB"
"""


def _spec(**changes):
    data = {"seed": 1, "runs": 4, "horizon": 100, "problems": [{"name": "paper"}],
            "algorithms": [{"name": "SEGE"}]}
    data.update(changes)
    return data


def test_the_issue_example_reads_into_its_cells(tmp_path):
    path = tmp_path / "study.toml"
    path.write_text(SPEC)
    spec = StudySpec.from_toml(path)
    assert (spec.seed, spec.runs, spec.horizon, spec.checkpoints) == (11, 250, 20000, None)
    assert [p.label for p in spec.problems] == ["paper", "mypkg.problems:make"]
    cells = spec.cells()
    assert len(cells) == 2 * (3 * 2 + 1)
    assert cells[0][2] == {"c": 0.25, "lcb_method": "closed_form"}
    assert cells[5][2] == {"c": 1.0, "lcb_method": "solver"}
    assert cells[6][1].name == "CLUCB" and cells[6][2] == {}
    assert sc.StudySpec is StudySpec and sc.BanditProblem.__name__ == "BanditProblem"


@pytest.mark.parametrize("changes, match", [
    (dict(seeds=3), "unknown key 'seeds' in the spec"),
    (dict(runs=0), "runs must be >= 1"),
    (dict(horizon="10"), "horizon must be an integer"),
    (dict(problems=[]), "'problems' must not be empty"),
    (dict(problems=[{"name": "paper", "factory": "a:b"}]), r"problems\[0\] needs exactly one"),
    (dict(problems=[{"name": "moon"}]), r"problems\[0\]: unknown problem name 'moon'"),
    (dict(problems=[{"factory": "no_colon"}]), "factory must be 'module:callable'"),
    (dict(problems=[{"name": "paper"}, {"name": "paper"}]), "problems must be distinct"),
    (dict(algorithms=[{"name": "UCB"}]),
     r"algorithms\[0\]: unknown policy 'UCB' \(registered: SEGE, CLUCB, ROFUL"),
    (dict(algorithms=[{"name": "SEGE", "grid": {"delta": [0.1]}}]),
     r"algorithms\[0\]\.grid: SEGE has no parameter 'delta'"),
    (dict(algorithms=[{"name": "CLUCB", "grid": {"n_arms": []}}]),
     r"'algorithms\[0\]\.grid\.n_arms' must not be empty"),
    (dict(algorithms=[{"name": "SEGE", "extra": 1}]), r"unknown key 'extra' in algorithms\[0\]"),
    (dict(checkpoints=[10, 1000]), r"checkpoints must lie in 1\.\.100"),
])
def test_a_bad_spec_is_an_error_naming_the_key(changes, match):
    with pytest.raises(SpecError, match=match):
        StudySpec.from_dict(_spec(**changes))


def test_missing_keys_and_bad_files_are_named(tmp_path):
    data = _spec()
    del data["horizon"]
    with pytest.raises(SpecError, match="the spec needs 'horizon'"):
        StudySpec.from_dict(data)
    bad = tmp_path / "bad.toml"
    bad.write_text(textwrap.dedent("seed = = 1"))
    with pytest.raises(SpecError, match="is not valid TOML"):
        StudySpec.from_toml(bad)
    with pytest.raises(SpecError, match="cannot read the spec"):
        StudySpec.from_toml(tmp_path / "missing.toml")


def test_checkpoints_are_sorted_and_unique():
    spec = StudySpec.from_dict(_spec(checkpoints=[50, 10, 50, 100]))
    assert spec.checkpoints == (10, 50, 100)
