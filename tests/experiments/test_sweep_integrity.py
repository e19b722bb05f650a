"""Results no fault or adversary can make lie: damaged shards are computed again, a tampered
table is refused, a sweep resumed on a changed problem is refused, nothing is written through a
symbolic link, and every failure after a sweep started is one line naming its cause.

Sweeps here are small (a few runs of a few hundred stages); the tests that kill processes run
the command line in a subprocess.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import psutil
import pyarrow.parquet as pq
import pytest
from _cli_errors import one_line_error
from problems import paper_problem, paper_setting

import sege_cvx as sc
from sege_cvx.cli import main
from sege_cvx.experiments import OutputPathError, SpecError, load_results, run_sweep
from sege_cvx.experiments import outputs as outputs_module
from sege_cvx.experiments.files import Directory
from sege_cvx.experiments.spec import StudySpec
from sege_cvx.experiments.sweeps import report as report_module
from sege_cvx.experiments.sweeps import run as run_module
from sege_cvx.experiments.sweeps import workers as workers_module
from sege_cvx.experiments.sweeps.errors import SweepError, SweepWarning
from sege_cvx.experiments.sweeps.report import write_report
from sege_cvx.experiments.sweeps.shards import ShardTask, build_problem, run_shard
from sege_cvx.experiments.sweeps.store import ResultsError
from sege_cvx.problems.problem import BanditProblem

SPEC = {"seed": 3, "runs": 6, "horizon": 200, "problems": [{"name": "paper"}],
        "algorithms": [{"name": "SEGE"}, {"name": "CLUCB"}]}
SPEC_TOML = """\
seed = 3
runs = 6
horizon = 200
[[problems]]
{problem}
[[algorithms]]
name = "SEGE"
[[algorithms]]
name = "CLUCB"
"""


def same_results(a, b) -> None:
    """Per-run rows and curves bit for bit (wall times aside: a measurement)."""
    pd.testing.assert_frame_equal(a.runs.drop(columns="wall_seconds"),
                                  b.runs.drop(columns="wall_seconds"), check_exact=True)
    pd.testing.assert_frame_equal(a.curves, b.curves, check_exact=True)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    return run_sweep(SPEC, tmp_path_factory.mktemp("ref") / "out", workers=1, shard_runs=2,
                     progress=False)


def _copy_of(reference, tmp_path, name: str = "out") -> Path:
    out = tmp_path / name
    shutil.copytree(reference.path, out, symlinks=True)
    return out


def _flip(path: Path, offset: int, count: int = 4) -> None:
    data = bytearray(path.read_bytes())
    data[offset:offset + count] = bytes(b ^ 0xFF for b in data[offset:offset + count])
    path.write_bytes(bytes(data))


# --- 1. a damaged shard never becomes a result ---------------------------------------------------

def _damage_values(shards: Path) -> str:
    """4 bytes flipped inside a shard's values, its footer intact: it still parses, and (before
    checksums) its wrong numbers were merged."""
    shard = sorted(shards.glob("*.parquet"))[2]
    column = pq.ParquetFile(shard).metadata.row_group(0).column(13)  # curve_reward's values
    _flip(shard, column.data_page_offset + 300)
    return shard.stem


def _truncate(shards: Path) -> str:
    shard = sorted(shards.glob("*.parquet"))[1]
    shard.write_bytes(shard.read_bytes()[:500])
    return shard.stem


def _drop_checksum(shards: Path) -> str:
    """As if killed between writing a shard and its checksum."""
    shard = sorted(shards.glob("*.parquet"))[4]
    shard.with_suffix(".sha256").unlink()
    return shard.stem


def _swap_cells(shards: Path) -> str:
    """SEGE's shard of runs 0-1 replaced by CLUCB's, checksum and all: same runs, same seeds,
    another algorithm."""
    sege, clucb = shards / "cell0000-runs0000000-0000002", shards / "cell0001-runs0000000-0000002"
    for suffix in (".parquet", ".sha256"):
        Path(f"{sege}{suffix}").write_bytes(Path(f"{clucb}{suffix}").read_bytes())
    return sege.name


def _other_seed(shards: Path, other: Path) -> str:
    """A shard from a sweep of another seed, with its own valid checksum."""
    name = "cell0000-runs0000002-0000004"
    for suffix in (".parquet", ".sha256"):
        (shards / f"{name}{suffix}").write_bytes((other / "shards" / f"{name}{suffix}").read_bytes())
    return name


@pytest.mark.parametrize("damage, reason", [
    (_damage_values, "its content does not match its SHA-256"),
    (_truncate, "its content does not match its SHA-256"),
    (_drop_checksum, "it has no checksum: its write was interrupted"),
    (_swap_cells, "it holds runs of another cell"),
    (_other_seed, "its runs' seeds are not those of this study's runs"),
])
def test_a_damaged_shard_is_computed_again_and_the_resume_equals_the_reference(
        reference, tmp_path, damage, reason):
    out = _copy_of(reference, tmp_path)
    (out / "manifest.json").unlink()  # as after a killed sweep
    if damage is _other_seed:
        other = run_sweep({**SPEC, "seed": 4}, tmp_path / "other", workers=1, shard_runs=2,
                          progress=False)
        name = damage(out / "shards", other.path)
    else:
        name = damage(out / "shards")
    with pytest.warns(SweepWarning, match=rf"1 saved shard failed its check and is computed "
                                          rf"again: {name} \({reason}"):
        resumed = run_sweep(SPEC, out, workers=1, progress=False)
    same_results(reference, resumed)
    assert (out / "curves.parquet").read_bytes() == (reference.path / "curves.parquet").read_bytes()


def test_the_command_line_says_in_one_line_which_shards_it_computes_again(reference, tmp_path,
                                                                          capsys):
    out = _copy_of(reference, tmp_path)
    (out / "manifest.json").unlink()
    names = [_truncate(out / "shards"), _drop_checksum(out / "shards")]
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC_TOML.format(problem='name = "paper"'))
    assert main(["sweep", str(spec), "--out", str(out), "--workers", "1", "--no-progress"]) == 0
    warnings_ = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert len(warnings_) == 1
    assert warnings_[0].startswith("sege-cvx: warning: 2 saved shards failed their check and are "
                                   "computed again: ")
    assert all(name in warnings_[0] for name in names)
    same_results(reference, load_results(out))


def test_a_shard_damaged_after_it_was_checked_is_not_merged(reference, tmp_path, monkeypatch):
    out = _copy_of(reference, tmp_path)
    (out / "manifest.json").unlink()
    real = run_module.merge_shards

    def damaged_meanwhile(spec, tasks, out_dir, shards):
        _flip(sorted((out / "shards").glob("*.parquet"))[0], 1000)
        return real(spec, tasks, out_dir, shards)

    monkeypatch.setattr(run_module, "merge_shards", damaged_meanwhile)
    with pytest.raises(SweepError, match="shard cell0000-runs0000000-0000002 in .* changed after "
                                         "it was checked: its content does not match"):
        run_sweep(SPEC, out, workers=1, progress=False)
    assert not (out / "manifest.json").exists()


def test_shards_carry_checksums_sha256sum_reads(reference):
    checksums = sorted((reference.path / "shards").glob("*.sha256"))
    assert len(checksums) == 6
    for checksum in checksums:
        digest, name = checksum.read_text().split()
        assert name == checksum.with_suffix(".parquet").name
        assert digest == hashlib.sha256(checksum.with_suffix(".parquet").read_bytes()).hexdigest()
    if shutil.which("sha256sum"):
        check = subprocess.run(["sha256sum", "-c", *(c.name for c in checksums)],
                               cwd=reference.path / "shards", capture_output=True, text=True)
        assert check.returncode == 0 and check.stdout.count(": OK") == 6, check.stdout


# --- load_results and report verify the manifest -----------------------------------------------

def test_a_tampered_runs_table_is_refused_by_load_results_and_report(reference, tmp_path, capsys):
    out = _copy_of(reference, tmp_path)
    runs = pd.read_parquet(out / "runs.parquet")
    assert runs["violations"].sum() > 0  # CLUCB violates on the paper's problem
    tampered = runs.iloc[7:].copy()
    tampered["violations"] = 0
    tampered.to_parquet(out / "runs.parquet", index=False)
    with pytest.raises(ResultsError, match=r"runs.parquet' does not match the SHA-256 in "
                                           r"manifest.json"):
        load_results(out)
    line = one_line_error(capsys, ["report", str(out)])
    assert "runs.parquet' does not match the SHA-256" in line
    assert not (out / "report").exists()
    # Asked for explicitly, the tables are read as they are.
    assert len(load_results(out, verify=False).runs) == len(runs) - 7


def test_a_tampered_curves_table_and_a_manifest_without_checksums_are_refused(reference, tmp_path):
    out = _copy_of(reference, tmp_path)
    _flip(out / "curves.parquet", 2000)
    with pytest.raises(ResultsError, match="curves.parquet' does not match the SHA-256"):
        load_results(out)
    out2 = _copy_of(reference, tmp_path, "out2")
    manifest = json.loads((out2 / "manifest.json").read_text())
    manifest["files"] = [f for f in manifest["files"] if f["path"] != "runs.parquet"]
    (out2 / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ResultsError, match="records no SHA-256 for runs.parquet"):
        load_results(out2)


# --- 2. a resumed sweep is the same problem ------------------------------------------------------

FACTORY = """\
import json
import pathlib

from sege_cvx.problems.problem import paper_problem


def make():
    theta = json.loads((pathlib.Path(__file__).parent / "theta.json").read_text())
    return paper_problem(theta_star=tuple(theta))
"""


@pytest.fixture
def changing_factory(tmp_path, monkeypatch):
    """A factory reading theta* from a file beside it; returns the spec using it."""
    (tmp_path / "integrity_factory.py").write_text(FACTORY)
    (tmp_path / "theta.json").write_text("[0.6, 0.8]")
    monkeypatch.syspath_prepend(str(tmp_path))
    return {**SPEC, "problems": [{"factory": "integrity_factory:make"}]}


def test_a_factory_whose_problem_changed_is_refused_and_overwrite_restarts(tmp_path,
                                                                          changing_factory):
    out = tmp_path / "out"
    first = run_sweep(changing_factory, out, workers=1, shard_runs=2, progress=False)
    for shard in sorted((out / "shards").glob("cell0001*")):  # as if killed before the end
        shard.unlink()
    (out / "manifest.json").unlink()
    (tmp_path / "theta.json").write_text("[0.0, 0.9]")
    build_problem.cache_clear()
    with pytest.raises(OutputPathError, match="problem 'integrity_factory:make' is not the one it "
                                              "was started with .*pass overwrite"):
        run_sweep(changing_factory, out, workers=1, progress=False)
    assert not (out / "manifest.json").exists()
    restarted = run_sweep(changing_factory, out, workers=1, overwrite=True, progress=False)
    fresh = run_sweep(changing_factory, tmp_path / "fresh", workers=1, progress=False)
    same_results(fresh, restarted)
    assert restarted.manifest["problems"]["integrity_factory:make"]["baseline_reward"] == \
        pytest.approx(1.71)
    assert not restarted.runs["regret"].equals(first.runs["regret"])
    build_problem.cache_clear()


def test_a_sweep_resumed_under_other_versions_is_refused(tmp_path, monkeypatch):
    out = tmp_path / "out"
    run_sweep(SPEC, out, workers=1, shard_runs=3, progress=False)
    (out / "manifest.json").unlink()
    real = outputs_module.runtime_versions
    monkeypatch.setattr(run_module, "runtime_versions", lambda: {**real(), "numpy": "0.0.1"})
    with pytest.raises(OutputPathError, match=r"started under other versions \(numpy "):
        run_sweep(SPEC, out, workers=1, progress=False)


def test_a_worker_refuses_a_problem_other_than_the_sweep_s():
    spec = StudySpec.from_dict(SPEC)
    with pytest.raises(SpecError, match="differs from the one the sweep checked"):
        run_shard(ShardTask(spec, 0, 0, 1, fingerprint="0" * 64))
    versions = {**outputs_module.runtime_versions(), "numpy": "0.0.1"}
    with pytest.raises(SpecError, match=r"other versions than the sweep: numpy \S+, not 0.0.1$"):
        run_shard(ShardTask(spec, 0, 0, 1, versions=tuple(sorted(versions.items()))))


def test_fingerprints_are_the_same_in_every_process_and_pinned():
    """Built from their data alone, the built-in examples have the same fingerprint in any
    process on any machine: the values below (this project's machine) must hold everywhere
    (the ellipsoid's shape and every b0 are computed without BLAS, whose last bit depends on
    the CPU).  The l1.5 ball's depends on cvxpy's canonicalization: checked across processes."""
    from sege_cvx.problems.examples import EXAMPLES

    pinned = {"box": "c27c2718", "ellipsoid": "cf1952aa", "paper": "439b0e29",
              "polytope": "1286a91e", "treatment-mix": "490d13ae"}
    here = {name: EXAMPLES[name]().fingerprint for name in sorted(EXAMPLES)}
    assert {name: here[name][:8] for name in pinned} == pinned
    code = ("import json; import cvxpy as cp; from sege_cvx.problems.examples import EXAMPLES; "
            "_ = [cp.Variable(5) for _ in range(17)]; "  # other variable ids than here
            "print(json.dumps({n: EXAMPLES[n]().fingerprint for n in sorted(EXAMPLES)}))")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True).stdout
    assert json.loads(other) == here


def test_the_fingerprint_sees_every_field_a_policy_reads():
    base = paper_problem()
    changes = dict(theta_star=(0.6, 0.8 + 2**-50), safe_arm=(1.2, 1.9 - 2**-50),
                   threshold_fraction=0.8 + 2**-50, S=1.5, noise_sd=0.5, b0=2.0,
                   arm_set=sc.Ball((1.0, 1.0), 1.0 + 2**-50))
    for field, value in changes.items():
        assert paper_problem(**{field: value}).fingerprint != base.fingerprint, field
    assert paper_problem(name="x", description="y").fingerprint == base.fingerprint


# --- 3. nothing written or deleted outside the chosen directory -----------------------------------

def test_report_refuses_a_linked_report_file_and_leaves_its_target(reference, tmp_path, capsys):
    out = _copy_of(reference, tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (out / "report").mkdir()
    (out / "report" / "table.md").symlink_to(victim)
    line = one_line_error(capsys, ["report", str(out)])
    assert "table.md is a symbolic link" in line
    assert victim.read_text() == "precious"
    with pytest.raises(OutputPathError, match="table.md is a symbolic link"):
        write_report(load_results(out), out / "report")
    assert victim.read_text() == "precious"


def test_report_refuses_a_linked_report_directory(reference, tmp_path, capsys):
    out = _copy_of(reference, tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (out / "report").symlink_to(elsewhere)
    line = one_line_error(capsys, ["report", str(out)])
    assert "report directory" in line and "is a symbolic link" in line
    assert list(elsewhere.iterdir()) == []


def test_overwrite_refuses_a_linked_out_and_leaves_its_target(tmp_path, capsys):
    victim = tmp_path / "victimdir"
    victim.mkdir()
    (victim / "keep.txt").write_text("keep")
    (tmp_path / "linked").symlink_to(victim)
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC_TOML.format(problem='name = "paper"'))
    for argv in (["sweep", str(spec)], ["reproduce", "--runs", "2", "--horizon", "10"]):
        line = one_line_error(capsys, [*argv, "--out", str(tmp_path / "linked"), "--overwrite",
                                       "--no-progress"])
        assert "--out" in line and "is a symbolic link" in line
        assert sorted(p.name for p in victim.iterdir()) == ["keep.txt"]
    with pytest.raises(OutputPathError, match="is a symbolic link"):
        run_sweep(SPEC, tmp_path / "linked", workers=1, overwrite=True, progress=False)
    assert sorted(p.name for p in victim.iterdir()) == ["keep.txt"]


@pytest.mark.parametrize("linked", ["shards", "runs.parquet", "manifest.json",
                                    "shards/cell0000-runs0000000-0000002.parquet"])
def test_a_resume_refuses_a_link_inside_the_sweep_and_leaves_its_target(reference, tmp_path,
                                                                        linked):
    out = _copy_of(reference, tmp_path)
    (out / "manifest.json").unlink()
    target = tmp_path / "target"
    if linked == "shards":
        target.mkdir()
        shutil.rmtree(out / "shards")
    else:
        target.write_text("the user's")
        (out / linked).unlink(missing_ok=True)
    (out / linked).symlink_to(target)
    with pytest.raises(OutputPathError, match=f"{linked}.* is a symbolic link"):
        run_sweep(SPEC, out, workers=1, progress=False)
    assert (list(target.iterdir()) == [] if linked == "shards"
            else target.read_text() == "the user's")


def test_a_spec_that_is_not_a_regular_file_or_too_large_is_refused(tmp_path, capsys):
    line = one_line_error(capsys, ["sweep", "/dev/zero", "--out", str(tmp_path / "o")])
    assert "the spec /dev/zero is a device or socket, not a regular file" in line
    fifo = tmp_path / "spec.fifo"
    os.mkfifo(fifo)
    line = one_line_error(capsys, ["sweep", str(fifo), "--out", str(tmp_path / "o")])
    assert f"the spec {fifo} is a FIFO, not a regular file" in line  # it did not wait for a writer
    big = tmp_path / "big.toml"
    big.write_text("# " + "x" * (2 << 20) + "\n" + SPEC_TOML.format(problem='name = "paper"'))
    line = one_line_error(capsys, ["sweep", str(big), "--out", str(tmp_path / "o")])
    assert f"is too large: {big.stat().st_size:,} bytes, more than the 1,048,576 it may have" in line
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 500 + "]" * 500 + "\n")
    line = one_line_error(capsys, ["sweep", str(deep), "--out", str(tmp_path / "o")])
    assert "is not valid TOML: nested too deeply" in line
    assert not (tmp_path / "o").exists()


# --- 4. every failure is one line; nothing is left running ---------------------------------------

WORKER_FACTORY = """\
import multiprocessing
import os
import pathlib

from sege_cvx.problems.problem import paper_problem


def make():
    if multiprocessing.parent_process() is not None:  # in a worker: say so, by a file
        (pathlib.Path(__file__).parent / "started" / str(os.getpid())).touch()
    return paper_problem()


def fails_in_workers():
    if multiprocessing.parent_process() is not None:
        raise RuntimeError("the data file is not on this machine")
    return paper_problem()
"""

LONG_SPEC = """\
seed = 3
runs = 4
horizon = {horizon}
[[problems]]
factory = "{factory}"
[[algorithms]]
name = "SEGE"
"""


def _sweep_process(tmp_path, factory: str, horizon: int, **popen) -> tuple[subprocess.Popen, Path]:
    (tmp_path / "worker_factory.py").write_text(WORKER_FACTORY)
    (tmp_path / "started").mkdir(exist_ok=True)
    spec = tmp_path / "spec.toml"
    spec.write_text(LONG_SPEC.format(horizon=horizon, factory=factory))
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    command = [sys.executable, "-m", "sege_cvx", "sweep", str(spec), "--out", str(out),
               "--workers", "2", "--shard-runs", "1", "--no-progress"]
    return subprocess.Popen(command, env=env, **popen), out


def _started_workers(tmp_path, proc, count: int) -> list[int]:
    """The pids of ``count`` workers that started a shard (their factory said so)."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and proc.poll() is None:
        pids = [int(p.name) for p in (tmp_path / "started").iterdir()]
        if len(pids) >= count:
            return pids
        time.sleep(0.05)
    raise AssertionError(f"no {count} workers started a shard (exit {proc.poll()})")


def test_a_killed_worker_is_one_line_naming_its_shard(tmp_path):
    # Shards of 10**8 stages run for many seconds: the worker is killed in the middle of one.
    proc, out = _sweep_process(tmp_path, "worker_factory:make", 10**8, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    victim = _started_workers(tmp_path, proc, 1)[0]
    os.kill(victim, signal.SIGKILL)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"sege-cvx: error: worker process {victim} was killed by SIGKILL "
                               "while computing shard cell0000-runs000000")
    assert lines[0].endswith(f"of 4 shards are saved in {out}: rerun the same command to resume")


def test_no_worker_outlives_a_killed_sweep(tmp_path):
    proc, out = _sweep_process(tmp_path, "worker_factory:make", 10**8, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    _started_workers(tmp_path, proc, 2)
    children = psutil.Process(proc.pid).children(recursive=True)
    assert len(children) >= 2  # the workers (and the resource tracker)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    _, alive = psutil.wait_procs(children, timeout=30)
    for child in alive:
        child.kill()
    assert alive == [], [p.cmdline() for p in alive]


def test_a_factory_failing_in_the_workers_is_one_line_naming_it(tmp_path):
    proc, out = _sweep_process(tmp_path, "worker_factory:fails_in_workers", 200,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == 1, err
    assert len(err.splitlines()) == 1, err
    assert err.startswith("sege-cvx: error: shard cell0000-runs000000")
    assert ("failed: problem factory 'worker_factory:fails_in_workers' raised RuntimeError: the "
            "data file is not on this machine; ") in err
    assert "shards are saved in" in err and "rerun the same command to resume" in err


@pytest.mark.parametrize("module, body, want", [
    ("exit_in_factory", "import sys\n\ndef make():\n    sys.exit(0)\n",
     "problem factory 'exit_in_factory:make' called sys.exit(0)"),
    ("exit_on_import", "import sys\nsys.exit(3)\n\ndef make():\n    pass\n",
     "problem factory 'exit_on_import:make' cannot be loaded: importing 'exit_on_import' called "
     "sys.exit(3)"),
])
def test_a_factory_calling_sys_exit_is_one_line_naming_it(tmp_path, monkeypatch, capsys, module,
                                                          body, want):
    (tmp_path / f"{module}.py").write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC_TOML.format(problem=f'factory = "{module}:make"'))
    line = one_line_error(capsys, ["sweep", str(spec), "--out", str(tmp_path / "o"),
                                   "--workers", "1", "--no-progress"])
    assert want in line
    assert not (tmp_path / "o").exists()


def test_an_out_made_unwritable_mid_run_is_one_line(tmp_path, monkeypatch, capsys):
    """The write of the second shard fails (as on a directory made read-only): one line, exit
    status 1, the first shard kept; the same command then resumes."""
    real = Directory.write
    writes = []

    def refused(directory, name, data):
        if name.endswith(".parquet") and directory.path.name == "shards":
            writes.append(directory.path / name)
            if len(writes) == 2:  # the second shard's data
                raise PermissionError(13, "Permission denied", str(directory.path / name))
        return real(directory, name, data)

    monkeypatch.setattr(Directory, "write", refused)
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC_TOML.format(problem='name = "paper"'))
    out = tmp_path / "out"
    argv = ["sweep", str(spec), "--out", str(out), "--workers", "1", "--shard-runs", "3",
            "--no-progress"]
    assert main(argv) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == [f"sege-cvx: error: cannot write {writes[1]}: Permission denied; 1 of 4 shards "
                   f"are saved in {out}: make it writable (or free space) and rerun the same "
                   "command to resume"]
    monkeypatch.setattr(Directory, "write", real)
    assert main(argv) == 0


# --- 5. bad problems and inputs ------------------------------------------------------------------

def test_a_problem_breaking_the_paper_s_assumptions_is_refused_naming_both_numbers():
    with pytest.raises(ValueError, match=r"\|\|theta\*\|\| = 5 exceeds S = 1 \(the paper's "
                                         r"Assumption 1\); pass misspecified=True"):
        paper_problem(theta_star=(3.0, 4.0))
    with pytest.raises(ValueError, match=r"<x0, theta\*> = 2.24 is below b0 = 2.5 \(the paper's "
                                         r"Assumption 3\)"):
        paper_problem(b0=2.5)
    # On the boundary ||theta*|| = S (up to rounding) and b0 = <x0, theta*>: accepted.
    assert paper_problem(theta_star=(0.6, 0.8), S=1.0, b0=2.24).assumption_violations() == []
    assert paper_problem(theta_star=(1 / 3**0.5,) * 2, S=(2 / 3)**0.5).setting.S == (2 / 3)**0.5
    problem = paper_problem(theta_star=(3.0, 4.0), b0=30.0, misspecified=True)
    assert len(problem.assumption_violations()) == 2
    assert problem.describe()["misspecified"] is True


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(theta_star=(0.6,)), ValueError, "theta_star"),
    (dict(safe_arm=(1.2, float("nan"))), ValueError, "safe_arm must be finite"),
    (dict(S=0.0), ValueError, "S must be > 0"),
    (dict(noise_sd=-1.0), ValueError, "noise_sd must be >= 0"),
    (dict(misspecified="yes"), TypeError, "misspecified must be True or False"),
    (dict(arm_set="disk"), TypeError, "arm_set must be a sege_cvx arm set"),
])
def test_bad_problem_values_are_refused_naming_them(kwargs, error, match):
    with pytest.raises(error, match=match):
        paper_problem(**kwargs)


MISSPECIFIED = """\
from sege_cvx.problems.problem import paper_problem


def opted_in():
    return paper_problem(theta_star=(3.0, 4.0), misspecified=True)


def plain():
    return paper_problem()
"""


def test_a_misspecification_study_needs_both_opt_ins_and_is_marked(tmp_path, monkeypatch):
    (tmp_path / "mis_factory.py").write_text(MISSPECIFIED)
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = {**SPEC, "runs": 2, "problems": [{"factory": "mis_factory:opted_in"}]}
    with pytest.raises(SpecError, match="'mis_factory:opted_in' is built misspecified .*exceeds "
                                        "S = 1.*add misspecified = true to its"):
        run_sweep(spec, tmp_path / "a", workers=1, progress=False)
    with pytest.raises(SpecError, match="'mis_factory:plain' is declared misspecified = true, but"):
        run_sweep({**spec, "problems": [{"factory": "mis_factory:plain", "misspecified": True}]},
                  tmp_path / "b", workers=1, progress=False)
    results = run_sweep({**spec, "problems": [{"factory": "mis_factory:opted_in",
                                               "misspecified": True}]},
                        tmp_path / "c", workers=1, progress=False)
    entry = results.manifest["problems"]["mis_factory:opted_in"]
    assert entry["misspecified"] is True
    assert entry["assumption_violations"] == ["||theta*|| = 5 exceeds S = 1 (the paper's "
                                              "Assumption 1)"]
    assert results.manifest["spec"]["problems"] == [{"factory": "mis_factory:opted_in",
                                                     "misspecified": True}]
    paths = write_report(results, tmp_path / "report")
    table = paths[0].read_text()
    assert "| mis_factory:opted_in (misspecified) | SEGE" in table
    assert r"misspecified: \|\|theta*\|\| = 5 exceeds S = 1" in table


def test_observe_refuses_a_reward_that_is_not_a_real_number():
    policy = sc.SEGE(paper_setting(), seed=0)
    x = policy.select()
    for bad, error in (("1e3", TypeError), (True, TypeError), (None, TypeError),
                       (float("inf"), ValueError), (1j, TypeError)):
        with pytest.raises(error, match="observed rewards y must be"):
            policy.observe(x, bad)
    policy.observe(x, 2.0)  # the pending arm was kept: a valid reward is still taken
    assert policy.t == 1


def test_a_factory_module_the_dask_workers_lack_is_shipped_to_them(tmp_path, monkeypatch):
    """A LocalCluster's workers take this process's sys.path when they start; a module made
    importable here only afterwards is one they cannot import, as on a remote cluster."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        (tmp_path / "beside_the_spec.py").write_text(
            "from sege_cvx.problems.problem import paper_problem\n\n"
            "def make():\n    return paper_problem(noise_sd=0.5)\n")
        monkeypatch.syspath_prepend(str(tmp_path))
        assert "ModuleNotFoundError" in client.run(workers_module._try_import,
                                                   "beside_the_spec").popitem()[1]
        spec = {**SPEC, "runs": 2, "problems": [{"factory": "beside_the_spec:make"}]}
        on_dask = run_sweep(spec, tmp_path / "dask", client=client, progress=False)
    same_results(run_sweep(spec, tmp_path / "local", workers=1, progress=False), on_dask)


def test_a_package_the_dask_workers_lack_is_one_line_saying_how(tmp_path, monkeypatch):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        package = tmp_path / "studypkg"
        package.mkdir()
        (package / "__init__.py").write_text(
            "from sege_cvx.problems.problem import paper_problem\n\n"
            "def make():\n    return paper_problem()\n")
        monkeypatch.syspath_prepend(str(tmp_path))
        with pytest.raises(SpecError, match="the Dask workers cannot import 'studypkg'.*it is a "
                                            "package, which cannot be uploaded: install it"):
            run_sweep({**SPEC, "problems": [{"factory": "studypkg:make"}]}, tmp_path / "o",
                      client=client, progress=False)
    assert not (tmp_path / "o").exists()


def test_problem_validation_does_not_change_the_paper_s_numbers():
    problem = paper_problem()
    floor = problem.setting.safety
    assert floor.baseline_reward == 2.24 and floor.threshold == 0.8 * 2.24
    assert isinstance(problem, BanditProblem) and problem.theta_star == (0.6, 0.8)
    assert np.asarray(problem.setting.safe_arm).dtype == np.float64


# --- found by an adversarial review: races, odd file kinds, damaged records, code changes -------

def test_a_link_swapped_in_for_shards_while_the_sweep_runs_receives_nothing(tmp_path,
                                                                          monkeypatch):
    """Files are written into the directory the sweep opened, not through the path: a link put
    in place of ``shards/`` mid-sweep gets no file, and the sweep stops in one line."""
    out, victim = tmp_path / "out", tmp_path / "victim"
    victim.mkdir()
    real = workers_module.run_shard
    calls = []

    def swapped_after_the_first(task):
        calls.append(task.name)
        if len(calls) == 2:
            (out / "shards").rename(out / "shards.real")
            (out / "shards").symlink_to(victim)
        return real(task)

    monkeypatch.setattr(workers_module, "run_shard", swapped_after_the_first)
    with pytest.raises(SweepError, match="shards is a symbolic link"):
        run_sweep(SPEC, out, workers=1, shard_runs=2, progress=False)
    assert list(victim.iterdir()) == []
    assert len(list((out / "shards.real").glob("*.sha256"))) == 6  # written where it was opened


def test_a_link_swapped_in_for_the_report_directory_while_it_is_drawn_receives_nothing(
        reference, tmp_path, monkeypatch):
    out, victim = _copy_of(reference, tmp_path), tmp_path / "victim"
    victim.mkdir()
    real = report_module.report_markdown

    def swapped(*args):
        (out / "report").rename(out / "report.real")
        (out / "report").symlink_to(victim)
        return real(*args)

    monkeypatch.setattr(report_module, "report_markdown", swapped)
    write_report(load_results(out), out / "report")
    assert list(victim.iterdir()) == []
    assert sorted(p.name for p in (out / "report.real").iterdir()) == sorted(
        report_module.REPORT_FILES)


def test_a_fifo_in_place_of_a_checksum_is_computed_again_without_waiting(reference, tmp_path):
    out = _copy_of(reference, tmp_path)
    (out / "manifest.json").unlink()
    checksum = out / "shards" / "cell0000-runs0000000-0000002.sha256"
    checksum.unlink()
    os.mkfifo(checksum)
    with pytest.raises(OutputPathError, match="cell0000-runs0000000-0000002.sha256 is a FIFO"):
        run_sweep(SPEC, out, workers=1, progress=False)  # refused before any work, not waited on


@pytest.mark.parametrize("place, kind", [
    ("notes/link", "symlink"), ("notes/pipe", "fifo"),
    ("shards/cell0000-runs0000000-0000002.parquet", "dir"), ("runs.parquet", "dir"),
])
def test_odd_files_in_a_resumed_sweep_are_refused_before_any_work(reference, tmp_path, place,
                                                                  kind):
    out = _copy_of(reference, tmp_path)
    (out / "manifest.json").unlink()
    target = out / place
    target.parent.mkdir(exist_ok=True)
    if target.exists():
        target.unlink()
    {"symlink": lambda: target.symlink_to(tmp_path), "fifo": lambda: os.mkfifo(target),
     "dir": target.mkdir}[kind]()
    calls = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(workers_module, "run_shard", lambda task: calls.append(task) or 1 / 0)
        with pytest.raises(OutputPathError, match=f"{place} is a "):
            run_sweep(SPEC, out, workers=1, progress=False)
    assert calls == []


@pytest.mark.parametrize("damage", [
    lambda record: {**record, "versions": None},
    lambda record: {**record, "problems": ["x"]},
    lambda record: "[" * 100_000 + "]" * 100_000,
])
def test_a_damaged_sweep_record_is_one_line_and_overwrite_restarts(tmp_path, capsys, damage):
    out = tmp_path / "out"
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC_TOML.format(problem='name = "paper"'))
    assert main(["sweep", str(spec), "--out", str(out), "--workers", "1", "--no-progress"]) == 0
    record = json.loads((out / "sweep.json").read_text())
    damaged = damage(record)
    (out / "sweep.json").write_text(damaged if isinstance(damaged, str) else json.dumps(damaged))
    capsys.readouterr()
    line = one_line_error(capsys, ["sweep", str(spec), "--out", str(out), "--workers", "1",
                                   "--no-progress"])
    assert "holds an unreadable sweep.json" in line
    assert main(["sweep", str(spec), "--out", str(out), "--workers", "1", "--no-progress",
                 "--overwrite"]) == 0


@pytest.mark.parametrize("manifest", [
    "[" * 100_000 + "]" * 100_000, '{"files": [], "spec": "x"}', '{"problems": [1]}',
    '{"problems": {"paper": 1}}',
])
def test_a_damaged_manifest_is_one_line(reference, tmp_path, capsys, manifest):
    out = _copy_of(reference, tmp_path)
    (out / "manifest.json").write_text(manifest)
    with pytest.raises(ResultsError, match="holds an unreadable manifest.json"):
        load_results(out)
    assert "unreadable manifest.json" in one_line_error(capsys, ["report", str(out)])


def test_a_factory_raising_any_base_exception_is_named(tmp_path, monkeypatch, capsys):
    (tmp_path / "boom_factory.py").write_text(
        "class Boom(BaseException):\n    pass\n\n\ndef make():\n    raise Boom('boom')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC_TOML.format(problem='factory = "boom_factory:make"'))
    line = one_line_error(capsys, ["sweep", str(spec), "--out", str(tmp_path / "o"),
                                   "--workers", "1", "--no-progress"])
    assert "problem factory 'boom_factory:make' raised Boom: boom" in line


class _BrokenFingerprint(sc.Box):
    def fingerprint_data(self):
        raise RuntimeError("no data")


def test_an_arm_set_whose_own_code_fails_is_a_spec_error_naming_the_cell(tmp_path, monkeypatch):
    (tmp_path / "broken_set_factory.py").write_text(
        "from test_sweep_integrity import _BrokenFingerprint\n"
        "from sege_cvx.problems.problem import BanditProblem\n\n\n"
        "def make():\n    return BanditProblem.from_truth(_BrokenFingerprint([0.0, 0.0], [1.0, 1.0]), "
        "(0.5, 0.5), (0.5, 0.5))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(SpecError, match=r"cell 0 \(broken_set_factory:make, SEGE, defaults\): "
                                        r"RuntimeError: no data"):
        run_sweep({**SPEC, "problems": [{"factory": "broken_set_factory:make"}]},
                  tmp_path / "o", workers=1, progress=False)
    assert not (tmp_path / "o").exists()


def test_a_shard_with_a_valid_checksum_but_other_columns_is_computed_again(reference, tmp_path):
    out = _copy_of(reference, tmp_path)
    (out / "manifest.json").unlink()
    path = out / "shards" / "cell0000-runs0000000-0000002.parquet"
    table = pq.read_table(path)
    pq.write_table(table.drop(["regret"]).replace_schema_metadata(table.schema.metadata), path)
    path.with_suffix(".sha256").write_text(
        f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {path.name}\n")  # a forged checksum
    with pytest.warns(SweepWarning, match=r"cell0000-runs0000000-0000002 \(its columns are not a "
                                          r"shard's\)"):
        same_results(reference, run_sweep(SPEC, out, workers=1, progress=False))


def test_reordered_grid_keys_are_another_spec(tmp_path):
    two = {**SPEC, "algorithms": [{"name": "SEGE", "grid": {"c": [0.25, 1.0], "lam": [0.1, 1.0]}}]}
    out = tmp_path / "out"
    run_sweep(two, out, workers=1, progress=False)
    reordered = {**SPEC, "algorithms": [{"name": "SEGE",
                                         "grid": {"lam": [0.1, 1.0], "c": [0.25, 1.0]}}]}
    with pytest.raises(OutputPathError, match="holds a sweep of another spec"):
        run_sweep(reordered, out, workers=1, progress=False)


def test_the_versions_include_a_digest_of_sege_cvx_s_own_source(tmp_path):
    """An edited checkout keeps its version string; its source digest changes, so a sweep
    started under other code is refused like one under another numpy."""
    versions = outputs_module.runtime_versions()
    assert len(versions["sege_cvx_source"]) == 16
    package = Path(sc.__file__).parent
    copy = tmp_path / "sege_cvx"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    code = ("import json; from sege_cvx.experiments.outputs import runtime_versions; "
            "print(json.dumps(runtime_versions()))")

    def digest_of(root: Path) -> str:
        env = {**os.environ, "PYTHONPATH": str(root), "NUMBA_CACHE_DIR": str(tmp_path / "nc")}
        # cwd: `python -c` puts the working directory first on sys.path.
        return json.loads(subprocess.run([sys.executable, "-c", code], env=env, check=True,
                                         capture_output=True, text=True, cwd=root
                                         ).stdout)["sege_cvx_source"]

    assert digest_of(tmp_path) == versions["sege_cvx_source"]
    radius = copy / "confidence" / "radius.py"
    radius.write_text(radius.read_text() + "\n# edited\n")
    assert digest_of(tmp_path) != versions["sege_cvx_source"]


def test_ctrl_c_with_worker_processes_is_one_line(tmp_path):
    # Shards of 10**9 stages: the sweep is surely running when Ctrl-C comes, and must not wait.
    proc, out = _sweep_process(tmp_path, "worker_factory:make", 10**9, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    _started_workers(tmp_path, proc, 2)
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C in a terminal: the whole foreground group
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        raise AssertionError(f"the sweep did not end within 60 s of Ctrl-C; stderr: {err}") from None
    assert proc.returncode == 130, err
    assert err.splitlines() == [f"sege-cvx: interrupted; the finished shards are saved in "
                                f"{out}: rerun the same command to resume"], err


def test_observe_refuses_bytes_like_rewards():
    policy = paper_problem().policy("CLUCB", 1)
    x = policy.select()
    for bad in (b"7", bytearray(b"7"), memoryview(b"7")):
        with pytest.raises(TypeError, match="observed rewards y must be numeric"):
            policy.observe(x, bad)


def test_a_factory_module_beside_the_spec_imports_without_pythonpath(tmp_path):
    """``sege-cvx sweep`` puts the spec's directory on the import path, for this process and its
    local workers: a module beside the spec just works, from any working directory."""
    study = tmp_path / "study"
    study.mkdir()
    (study / "beside_factory.py").write_text(
        "from sege_cvx.problems.problem import paper_problem\n\n\n"
        "def make():\n    return paper_problem()\n")
    (study / "spec.toml").write_text(LONG_SPEC.format(horizon=50, factory="beside_factory:make"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    proc = subprocess.run(
        [sys.executable, "-m", "sege_cvx", "sweep", str(study / "spec.toml"), "--out",
         str(tmp_path / "out"), "--workers", "2", "--shard-runs", "2", "--no-progress"],
        cwd=elsewhere, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert sc.load_results(tmp_path / "out").runs.shape[0] == 4
