"""Sweeps under attack: odd specs, factories that fail, racing sweeps, interrupted writes, and
the command line's promise of one-line errors (small sizes: every sweep here is a few runs of
a few stages)."""

from __future__ import annotations

import json
import textwrap

import pytest
from _cli_errors import one_line_error

from sege_cvx.cli import main
from sege_cvx.experiments import OutputPathError, SpecError, StudySpec, load_results, run_sweep
from sege_cvx.experiments.sweeps import run as run_module
from sege_cvx.experiments.sweeps import workers as workers_module
from sege_cvx.experiments.sweeps.errors import SweepError
from sege_cvx.experiments.sweeps.store import ResultsError
from sege_cvx.experiments.sweeps.workers import SchedulerError

SMALL = {"seed": 3, "runs": 2, "horizon": 20, "problems": [{"name": "paper"}],
         "algorithms": [{"name": "CLUCB"}]}

SMALL_TOML = """\
seed = 3
runs = 2
horizon = 20
[[problems]]
name = "paper"
[[algorithms]]
name = "CLUCB"
"""




def _toml(tmp_path, text: str, name: str = "spec.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def no_simulation(monkeypatch):
    """Fail if any shard is simulated or any cell is checked."""
    def forbidden(*args, **kwargs):
        raise AssertionError("work started")

    monkeypatch.setattr(workers_module, "run_shard", forbidden)
    monkeypatch.setattr(run_module, "check_cells", forbidden)


# --- the command line: user errors are one line, exit status 2 ---------------------------------

def test_cli_a_cell_value_error_is_one_line_and_writes_nothing(tmp_path, capsys):
    spec = _toml(tmp_path, SMALL_TOML.replace('name = "CLUCB"',
                                              'name = "SEGE"\n[algorithms.grid]\nc = [-1.0]'))
    out = tmp_path / "out"
    line = one_line_error(capsys, ["sweep", str(spec), "--out", str(out), "--workers", "1",
                                "--no-progress"])
    assert "cell 0 (paper, SEGE, {'c': -1.0}): c must be > 0.0" in line
    assert not out.exists()


def test_cli_run_with_a_method_the_arm_set_lacks_is_one_line(tmp_path, capsys):
    out = tmp_path / "out"
    line = one_line_error(capsys, ["run", "--arm-set", "lp-ball", "--lcb-method", "closed_form",
                                "--runs", "2", "--horizon", "20", "--out", str(out),
                                "--no-progress"])
    assert "ConvexArmSet has no closed-form LCB arm" in line
    assert not out.exists()


@pytest.mark.parametrize("where, want", [
    ("afile", "is an existing file"),
    ("afile/sub", "which is a file"),
])
def test_cli_sweep_out_errors_name_out_before_any_work(tmp_path, capsys, no_simulation, where,
                                                       want):
    spec = _toml(tmp_path, SMALL_TOML)
    (tmp_path / "afile").write_text("x")
    line = one_line_error(capsys, ["sweep", str(spec), "--out", str(tmp_path / where),
                                "--no-progress"])
    assert want in line and "--out" in line
    assert "changed while the study ran" not in line


def test_cli_sweep_into_another_spec_s_sweep_is_refused_before_any_work(tmp_path, capsys,
                                                                         monkeypatch):
    out = tmp_path / "out"
    run_sweep(SMALL, out, workers=1, progress=False)
    spec = _toml(tmp_path, SMALL_TOML.replace("seed = 3", "seed = 4"))

    def forbidden(*args, **kwargs):
        raise AssertionError("work started")

    monkeypatch.setattr(run_module, "check_cells", forbidden)
    line = one_line_error(capsys, ["sweep", str(spec), "--out", str(out), "--no-progress"])
    assert "holds a sweep of another spec" in line and "--overwrite" in line
    assert "changed while the study ran" not in line
    assert (out / "manifest.json").exists()


def test_cli_unreachable_scheduler_is_one_line_and_writes_nothing(tmp_path, capsys):
    pytest.importorskip("distributed")
    spec = _toml(tmp_path, SMALL_TOML)
    out = tmp_path / "out"
    line = one_line_error(capsys, ["sweep", str(spec), "--out", str(out), "--scheduler",
                                "not-an-address", "--no-progress"])
    assert "not-an-address" in line
    assert not out.exists()


def test_unreachable_scheduler_writes_nothing(tmp_path):
    dask = pytest.importorskip("dask")
    pytest.importorskip("distributed")
    out = tmp_path / "out"
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}), \
            pytest.raises(SchedulerError, match="tcp://127.0.0.1:1"):
        run_sweep(SMALL, out, scheduler="tcp://127.0.0.1:1", progress=False)
    assert not out.exists()


def test_cli_sweep_interrupted_before_it_started_says_nothing_was_written(tmp_path, capsys,
                                                                         monkeypatch):
    def interrupted(spec):
        raise KeyboardInterrupt

    monkeypatch.setattr(run_module, "check_cells", interrupted)
    out = tmp_path / "out"
    assert main(["sweep", str(_toml(tmp_path, SMALL_TOML)), "--out", str(out),
                 "--no-progress"]) == 130
    err = capsys.readouterr().err
    assert f"nothing was written to {out}" in err and "shards are saved" not in err
    assert not out.exists()


def test_an_unreachable_scheduler_leaves_no_client_to_finalize_later(tmp_path):
    """A Client whose construction failed, kept alive by the error's traceback, is finalized by
    the garbage collector at some later moment; if that is inside another Client's start, its
    __del__ deadlocks on the loop runner's lock (this suite hung so, retrying a sweep)."""
    import gc

    pytest.importorskip("distributed")
    from distributed import Client

    def clients() -> int:
        # type(o), not isinstance: isinstance reads __class__, which a weakref.proxy whose
        # referent died answers with ReferenceError (seen once in CI, from an object of an
        # earlier test).
        return sum(issubclass(type(o), Client) for o in gc.get_objects())

    gc.collect()
    before = clients()
    with pytest.raises(SchedulerError):
        run_sweep(SMALL, tmp_path / "out", scheduler="not-an-address", progress=False)
    assert clients() == before


# --- specs: sizes, names and cells -------------------------------------------------------------

@pytest.mark.parametrize("changes, match", [
    (dict(runs=10**9), "runs must be"),
    (dict(horizon=2**63), "horizon must be"),
    (dict(horizon=10**30), "horizon must be"),
])
def test_sizes_the_sweep_cannot_run_are_spec_errors(tmp_path, changes, match):
    with pytest.raises(SpecError, match=match):
        StudySpec.from_dict({**SMALL, **changes})
    with pytest.raises(SpecError, match=match):
        run_sweep({**SMALL, **changes}, tmp_path / "out", workers=1, progress=False)
    assert not (tmp_path / "out").exists()


def test_cli_reproduce_with_a_horizon_beyond_the_limit_is_one_line(tmp_path, capsys):
    out = tmp_path / "out"
    line = one_line_error(capsys, ["reproduce", "--runs", "2", "--horizon", str(10**20),
                                "--out", str(out), "--no-progress"])
    assert "--horizon" in line
    assert not out.exists()


@pytest.mark.parametrize("changes, match", [
    (dict(problems=[{"name": ["paper"]}]), r"problems\[0\]: name must be a string"),
    (dict(algorithms=[{"name": ["SEGE"]}]), r"algorithms\[0\]: name must be a string"),
    (dict(algorithms=[{"name": {"a": 1}}]), r"algorithms\[0\]: name must be a string"),
])
def test_names_that_are_not_strings_are_spec_errors_naming_the_key(changes, match):
    with pytest.raises(SpecError, match=match):
        StudySpec.from_dict({**SMALL, **changes})


@pytest.mark.parametrize("algorithms", [
    [{"name": "SEGE"}, {"name": "SEGE"}],
    [{"name": "SEGE", "grid": {"c": [0.25, 0.5]}}, {"name": "SEGE", "grid": {"c": [0.5, 1.0]}}],
    [{"name": "CLUCB", "grid": {"n_arms": [8]}}, {"name": "CLUCB", "grid": {"n_arms": [8]}}],
])
def test_a_cell_listed_twice_is_refused(algorithms):
    """Two identical cells would run the same seeds twice and be pooled by ``table()`` as if
    they were independent runs (twice the runs, a smaller standard error)."""
    with pytest.raises(SpecError, match="run twice on the same seeds"):
        StudySpec.from_dict({**SMALL, "algorithms": algorithms})


def test_cells_that_differ_are_allowed():
    spec = StudySpec.from_dict({**SMALL, "algorithms": [
        {"name": "SEGE"}, {"name": "SEGE", "grid": {"c": [0.5]}}, {"name": "CLUCB"}]})
    assert len(spec.cells()) == 3


def test_a_spec_file_that_is_not_utf8_is_a_spec_error_naming_it(tmp_path):
    path = tmp_path / "latin1.toml"
    path.write_bytes(b"seed = 1\n# caf\xe9\n")
    with pytest.raises(SpecError, match=r"latin1\.toml is not valid TOML: not UTF-8"):
        StudySpec.from_toml(path)


# --- problem factories --------------------------------------------------------------------------

FACTORIES = """\
from sege_cvx.problems.problem import paper_problem

def raises():
    raise RuntimeError("no data file")

def key_error():
    return {}["theta"]

def fine():
    return paper_problem()
"""


@pytest.mark.parametrize("factory, match", [
    ("adv_factories:raises", r"problem factory 'adv_factories:raises' raised RuntimeError: no data file"),
    ("adv_factories:key_error", r"problem factory 'adv_factories:key_error' raised KeyError"),
    ("adv_broken_module:make", r"problem factory 'adv_broken_module:make' cannot be loaded"),
])
def test_a_factory_that_raises_is_a_spec_error_naming_it(tmp_path, monkeypatch, capsys, factory,
                                                         match):
    (tmp_path / "adv_factories.py").write_text(FACTORIES)
    (tmp_path / "adv_broken_module.py").write_text("import no_such_dependency_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "out"
    spec = {**SMALL, "problems": [{"factory": factory}]}
    with pytest.raises(SpecError, match=match):
        run_sweep(spec, out, workers=1, progress=False)
    assert not out.exists()
    toml = _toml(tmp_path, SMALL_TOML.replace('name = "paper"', f'factory = "{factory}"'))
    line = one_line_error(capsys, ["sweep", str(toml), "--out", str(out), "--workers", "1",
                                "--no-progress"])
    assert factory in line
    assert not out.exists()


def test_a_module_failing_on_import_is_a_spec_error_naming_the_factory(tmp_path, monkeypatch):
    (tmp_path / "adv_failing_module.py").write_text("raise RuntimeError('config missing')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(SpecError, match=r"'adv_failing_module:make' cannot be loaded: importing "
                                        r"'adv_failing_module' raised RuntimeError: config missing"):
        run_sweep({**SMALL, "problems": [{"factory": "adv_failing_module:make"}]},
                  tmp_path / "out", workers=1, progress=False)
    assert not (tmp_path / "out").exists()


def test_a_factory_with_numpy_scalars_gets_a_manifest(tmp_path, monkeypatch):
    """The problems' figures go into manifest.json, written after every simulation: a numpy
    float32 from a factory made that write fail, so the sweep never completed."""
    (tmp_path / "adv_numpy_factory.py").write_text(
        "import numpy as np\n"
        "from sege_cvx.problems.problem import paper_problem\n\n"
        "def make():\n"
        "    return paper_problem(threshold_fraction=np.float32(0.8), description=np.str_('d'))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    results = run_sweep({**SMALL, "problems": [{"factory": "adv_numpy_factory:make"}]},
                        tmp_path / "out", workers=1, progress=False)
    assert results.manifest["problems"]["adv_numpy_factory:make"]["threshold"] == pytest.approx(
        0.8 * 2.24)


# --- directories: overwrite, races, interrupted writes -----------------------------------------

def _count_shards(monkeypatch) -> list:
    calls = []
    real = workers_module.run_shard
    monkeypatch.setattr(workers_module, "run_shard",
                        lambda task: calls.append(task.name) or real(task))
    return calls


def test_overwrite_resumes_a_sweep_of_the_same_spec(tmp_path, monkeypatch):
    """``overwrite`` deletes a directory holding anything *but* this spec's sweep (README, CLI
    help); this spec's sweep is resumed, not recomputed."""
    out = tmp_path / "out"
    first = run_sweep(SMALL, out, workers=1, shard_runs=1, progress=False)
    calls = _count_shards(monkeypatch)
    again = run_sweep(SMALL, out, workers=1, overwrite=True, progress=False)
    assert calls == []
    assert again.runs.drop(columns="wall_seconds").equals(first.runs.drop(columns="wall_seconds"))
    # ... and another spec there is still replaced.
    replaced = run_sweep({**SMALL, "seed": 4}, out, workers=1, overwrite=True, progress=False)
    assert replaced.manifest["spec"]["seed"] == 4


def test_overwrite_deletes_only_a_sweep_s_own_files(tmp_path):
    """A report (sege-cvx report writes DIR/report by default) and the user's notes in a sweep's
    directory stop a restart by overwrite, named; nothing is deleted (issue 39, item 4)."""
    import shutil

    out = tmp_path / "out"
    run_sweep(SMALL, out, workers=1, progress=False)
    assert main(["report", str(out)]) == 0
    (out / "notes.txt").write_text("mine")
    (out / "shards" / "keep.txt").write_text("mine too")
    # Files named like a sweep's, but not its: the user's table, a subset, a hidden draft.
    (out / "analysis.parquet").write_bytes(b"mine")
    (out / "shards" / "subset.parquet").write_bytes(b"mine")
    (out / ".draft.partial-notes").write_text("mine")
    assert run_sweep(SMALL, out, workers=1, progress=False).runs.shape[0] == 2  # resumed
    assert (out / ".draft.partial-notes").read_text() == "mine"  # a resume leaves them too
    with pytest.raises(OutputPathError, match=r"holds .draft.partial-notes, analysis.parquet, "
                                              "notes.txt and 3 more, which no sweep wrote; "
                                              "overwrite deletes only a sweep's own files: move "
                                              "them elsewhere"):
        run_sweep({**SMALL, "seed": 4}, out, workers=1, overwrite=True, progress=False)
    assert (out / "report" / "table.md").is_file() and (out / "notes.txt").read_text() == "mine"
    assert (out / "manifest.json").is_file() and len(list((out / "shards").iterdir())) == 4
    for name in ("report", "notes.txt", "shards/keep.txt", "analysis.parquet",
                 "shards/subset.parquet", ".draft.partial-notes"):
        shutil.move(out / name, tmp_path / name.replace("/", "_"))
    replaced = run_sweep({**SMALL, "seed": 4}, out, workers=1, overwrite=True, progress=False)
    assert replaced.manifest["spec"]["seed"] == 4


def test_a_folder_tracked_by_a_placeholder_takes_a_sweep_and_keeps_it(tmp_path, capsys):
    """A results folder kept in git by a ``.gitkeep`` (or holding what a file browser leaves,
    ``.DS_Store``) is empty to a sweep: the first sweep runs into it, and overwrite neither
    stops at nor deletes them (issue 39, leftovers)."""
    out = tmp_path / "results"
    out.mkdir()
    (out / ".gitkeep").write_text("")
    (out / ".DS_Store").write_bytes(b"Bud1 finder")
    spec = _toml(tmp_path, SMALL_TOML)
    assert main(["sweep", str(spec), "--out", str(out), "--workers", "1", "--no-progress"]) == 0
    capsys.readouterr()
    assert load_results(out).runs.shape[0] == 2
    assert run_sweep(SMALL, out, workers=1, progress=False).runs.shape[0] == 2  # resumed
    replaced = run_sweep({**SMALL, "seed": 4}, out, workers=1, overwrite=True, progress=False)
    assert replaced.manifest["spec"]["seed"] == 4
    assert (out / ".gitkeep").read_text() == ""
    assert (out / ".DS_Store").read_bytes() == b"Bud1 finder"
    # Anything else hidden is still the user's: named by overwrite, and no sweep starts beside
    # it (a folder that holds no sweep says so, not "pass overwrite to delete the sweep in it").
    (out / ".notes").write_text("mine")
    with pytest.raises(OutputPathError, match=r"holds .notes, which no sweep wrote"):
        run_sweep({**SMALL, "seed": 5}, out, workers=1, overwrite=True, progress=False)
    other = tmp_path / "other"
    other.mkdir()
    (other / ".notes").write_text("mine")
    with pytest.raises(OutputPathError, match=r"holds no sweep, but .notes, which no sweep "
                                              r"wrote: a sweep starts in a new or empty "
                                              r"directory \(a \.gitkeep aside\); choose "
                                              r"another, or move it"):
        run_sweep(SMALL, other, workers=1, progress=False)
    assert sorted(other.iterdir()) == [other / ".notes"]


@pytest.mark.parametrize("damage", [
    lambda record: [1, 2],
    lambda record: {"spec": record["spec"]},
    lambda record: {**record, "shard_runs": 0},
    lambda record: {**record, "shard_runs": "5"},
])
@pytest.mark.parametrize("shard_runs", [None, 1])
def test_a_damaged_sweep_record_is_named_not_a_crash(tmp_path, damage, shard_runs):
    out = tmp_path / "out"
    run_sweep(SMALL, out, workers=1, progress=False)
    record = json.loads((out / "sweep.json").read_text())
    (out / "sweep.json").write_text(json.dumps(damage(record)))
    with pytest.raises(OutputPathError, match="holds an unreadable sweep.json"):
        run_sweep(SMALL, out, workers=1, shard_runs=shard_runs, progress=False)
    replaced = run_sweep(SMALL, out, workers=1, shard_runs=shard_runs, overwrite=True,
                         progress=False)
    assert len(replaced.runs) == 2


def _immutable(path, on: bool) -> bool:
    """``chattr +i`` (no file can be created in ``path``, even by root), if available here."""
    import shutil
    import subprocess

    if shutil.which("chattr") is None:
        return False
    done = subprocess.run(["chattr", "+i" if on else "-i", str(path)], capture_output=True)
    return done.returncode == 0


@pytest.mark.parametrize("lock", ["out", "shards"])
def test_an_out_that_cannot_be_written_is_one_line_before_any_work(tmp_path, capsys, lock):
    out = tmp_path / "out"
    if lock == "out":
        out.mkdir()  # empty: a new sweep starts in it
    else:
        run_sweep(SMALL, out, workers=1, shard_runs=1, progress=False)
        for shard in (out / "shards").iterdir():
            shard.unlink()
    locked = out if lock == "out" else out / "shards"
    if not _immutable(locked, True):
        pytest.skip("chattr +i is not available here")
    try:
        line = one_line_error(capsys, ["sweep", str(_toml(tmp_path, SMALL_TOML)), "--out", str(out),
                                    "--workers", "1", "--no-progress"])
    finally:
        _immutable(locked, False)
    assert "cannot be written" in line and "--out" in line


def test_a_sweep_started_meanwhile_in_the_same_new_dir_is_not_deleted(tmp_path, monkeypatch):
    """Two sweeps launched at once into one new directory: both find it empty; the second to
    start must not delete the first's files (it did: ``shutil.rmtree`` of the target)."""
    out = tmp_path / "out"
    other = {**SMALL, "seed": 4}
    real = run_module.check_cells
    started = []

    def meanwhile(spec):
        problems = real(spec)
        if not started:  # while this sweep checks its cells, another one runs to the end there
            started.append(True)
            run_sweep(other, out, workers=1, progress=False)
        return problems

    monkeypatch.setattr(run_module, "check_cells", meanwhile)
    with pytest.raises(OutputPathError, match="another sweep"):
        run_sweep(SMALL, out, workers=1, progress=False)
    assert load_results(out).manifest["spec"]["seed"] == 4


def test_a_second_sweep_into_a_running_sweep_s_dir_is_refused(tmp_path, monkeypatch):
    """While a sweep runs, another one into its directory (same spec: it would resume) must not
    delete its partial files or manifest: it is refused, and the first finishes."""
    out = tmp_path / "out"
    real = workers_module.run_shard
    seen = []

    def meanwhile(task):
        if not seen:
            with pytest.raises(OutputPathError, match="another running sweep"):
                run_sweep(SMALL, out, workers=1, progress=False)
        seen.append(task.name)
        return real(task)

    monkeypatch.setattr(workers_module, "run_shard", meanwhile)
    results = run_sweep(SMALL, out, workers=1, shard_runs=1, progress=False)
    assert len(seen) == 2 and len(results.runs) == 2


def test_a_failed_manifest_write_leaves_no_manifest(tmp_path, monkeypatch):
    """``manifest.json`` means a complete sweep: a write cut short (disk full, a kill) must not
    leave a truncated one behind."""
    import os

    out = tmp_path / "out"
    real = os.fdopen

    class HalfWritten:
        """A file that takes half of the manifest, then reports a full disk."""

        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def write(self, data):
            if data.startswith(b'{\n  "files"'):
                self.f.write(data[:len(data) // 2])
                raise OSError(28, "No space left on device")
            return self.f.write(data)

        def __getattr__(self, name):
            return getattr(self.f, name)

    monkeypatch.setattr(os, "fdopen", lambda *args, **kwargs: HalfWritten(real(*args, **kwargs)))
    with pytest.raises(SweepError, match="No space left on device; 1 of 1 shards are saved in .*: "
                                           "make it writable"):
        run_sweep(SMALL, out, workers=1, progress=False)
    monkeypatch.undo()
    assert not (out / "manifest.json").exists()
    assert not list(out.rglob(".*partial*"))
    with pytest.raises(ResultsError, match="rerun its command to resume"):
        load_results(out)
    assert len(run_sweep(SMALL, out, workers=1, progress=False).runs) == 2


def test_resume_after_the_shards_dir_was_removed(tmp_path):
    out = tmp_path / "out"
    first = run_sweep(SMALL, out, workers=1, progress=False)
    for path in (out / "shards").iterdir():
        path.unlink()
    (out / "shards").rmdir()
    again = run_sweep(SMALL, out, workers=1, progress=False)
    assert again.runs.drop(columns="wall_seconds").equals(first.runs.drop(columns="wall_seconds"))
    assert json.loads((out / "manifest.json").read_text())["sweep"][0]["status"] == "done"


def test_load_results_of_a_directory_without_the_sweep_s_tables(tmp_path):
    """A results directory of a release before sweeps (manifest.json, no runs.parquet), or one
    whose tables were removed, or whose manifest is damaged: ResultsError naming it."""
    out = tmp_path / "out"
    run_sweep(SMALL, out, workers=1, progress=False)
    (out / "curves.parquet").unlink()
    with pytest.raises(ResultsError, match="curves.parquet is missing"):
        load_results(out)
    other = tmp_path / "other"
    run_sweep(SMALL, other, workers=1, progress=False)
    (other / "manifest.json").write_text("{")
    with pytest.raises(ResultsError, match="unreadable manifest.json"):
        load_results(other)
