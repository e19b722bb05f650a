"""Result directories: checked before simulating, published whole or not at all, with a manifest."""

import hashlib
import json
import os
import time

import numpy as np
import pytest

import sege_cvx.experiments
import sege_cvx.experiments.figures as figures
import sege_cvx.experiments.outputs as outputs
from sege_cvx import __version__
from sege_cvx.cli import main
from sege_cvx.experiments import run_study, write_outputs
from sege_cvx.experiments.outputs import (
    MANIFEST,
    OutputPathError,
    atomic_output_dir,
    check_output_dir,
    provenance,
    write_manifest,
)
from sege_cvx.experiments.paper import _loglog_slope

PROVENANCE_KEYS = {"versions", "platform", "machine", "command_line", "seed", "created_utc"}
VERSION_KEYS = {"sege_cvx", "sege_cvx_source", "python", "numpy", "scipy", "cvxpy", "clarabel",
                "numba"}


@pytest.fixture(scope="module")
def study():
    return run_study(runs=2, horizon=300, seed=3)


@pytest.fixture
def no_simulation(monkeypatch):
    """Fail the test if the command line starts simulating."""

    def forbidden(*args, **kwargs):
        raise AssertionError("run_study was called")

    monkeypatch.setattr(sege_cvx.experiments, "run_study", forbidden)


def _leftovers(parent):
    return [p.name for p in parent.iterdir() if ".partial-" in p.name or ".old-" in p.name]


def _cli_error(capsys, argv):
    """Run the command line expecting a user error: (stderr line, seconds taken)."""
    start = time.perf_counter()
    with pytest.raises(SystemExit) as exc:
        main(argv)
    elapsed = time.perf_counter() - start
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("sege-cvx: error: ") and "Traceback" not in err
    return err.strip(), elapsed


# --- checks before simulating ------------------------------------------------------------------


def test_existing_file_is_refused(tmp_path):
    target = tmp_path / "results"
    target.write_text("not a directory")
    with pytest.raises(OutputPathError, match="is an existing file") as exc:
        check_output_dir(target)
    assert "\n" not in str(exc.value) and str(target) in str(exc.value)


def test_path_under_a_file_is_refused(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputPathError, match="lies under .*which is a file"):
        check_output_dir(tmp_path / "file" / "deeper" / "results")


def test_unwritable_parent_is_refused(tmp_path, monkeypatch):
    def probe(directory):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(outputs, "_probe_writable", probe)
    with pytest.raises(OutputPathError, match="cannot be written.*Permission denied"):
        check_output_dir(tmp_path / "missing" / "results")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root writes through permission bits; covered by the monkeypatched probe")
def test_read_only_directory_is_refused(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(OutputPathError, match="cannot be written"):
            check_output_dir(locked / "results")
    finally:
        locked.chmod(0o700)


def test_current_directory_and_root_are_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(OutputPathError, match="is the current directory"):
        check_output_dir(".", overwrite=True)
    with pytest.raises(OutputPathError, match="contains the current directory"):
        check_output_dir(tmp_path.parent, overwrite=True)
    with pytest.raises(OutputPathError, match="filesystem root"):
        check_output_dir("/", overwrite=True)


def test_check_accepts_new_and_empty_directories(tmp_path):
    assert check_output_dir(tmp_path / "a" / "b") == (tmp_path / "a" / "b").resolve()
    (tmp_path / "empty").mkdir()
    assert check_output_dir(tmp_path / "empty") == (tmp_path / "empty").resolve()
    assert not (tmp_path / "a").exists()  # checking writes nothing
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"]


@pytest.mark.parametrize("case", ["file", "under_file", "unwritable", "non_empty"])
@pytest.mark.parametrize("command", [["reproduce"], ["run", "--arm-set", "box"]])
def test_cli_refuses_bad_out_before_simulating(case, command, tmp_path, monkeypatch, capsys,
                                               no_simulation):
    out = tmp_path / "results"
    if case == "file":
        out.write_text("x")
    elif case == "under_file":
        (tmp_path / "f").write_text("x")
        out = tmp_path / "f" / "results"
    elif case == "unwritable":
        monkeypatch.setattr(outputs, "_probe_writable",
                            lambda d: (_ for _ in ()).throw(OSError(30, "Read-only file system")))
    else:
        out.mkdir()
        (out / "old.txt").write_text("x")
    err, elapsed = _cli_error(capsys, [*command, "--out", str(out), "--no-progress"])
    assert "--out" in err and str(out) in err
    assert elapsed < 1.0
    if case == "non_empty":
        assert "--overwrite" in err and (out / "old.txt").read_text() == "x"


# --- atomic publication -----------------------------------------------------------------------


def test_write_outputs_publishes_every_file_with_a_manifest(study, tmp_path):
    out = tmp_path / "new" / "results"
    paths = write_outputs(study, out, command_line=["prog", "--flag"])
    assert paths[-1] == out / MANIFEST and all(p.is_file() and p.parent == out for p in paths)
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in paths)
    assert _leftovers(out.parent) == []
    manifest = json.loads((out / MANIFEST).read_text())
    listed = {f["path"]: f for f in manifest["files"]}
    assert set(listed) == {p.name for p in paths} - {MANIFEST}
    for name, entry in listed.items():
        data = (out / name).read_bytes()
        assert entry["bytes"] == len(data)
        assert entry["sha256"] == hashlib.sha256(data).hexdigest()
    summary = json.loads((out / "summary.json").read_text())
    prov = summary["provenance"]
    assert prov == manifest["provenance"]
    assert set(prov) == PROVENANCE_KEYS and set(prov["versions"]) == VERSION_KEYS
    assert prov["versions"]["sege_cvx"] == __version__ and prov["versions"]["numpy"] == np.__version__
    assert prov["command_line"] == ["prog", "--flag"] and prov["seed"] == 3
    assert {k: v for k, v in summary.items() if k != "provenance"} == json.loads(
        json.dumps(study.summary))


def test_existing_empty_directory_is_used(study, tmp_path):
    out = tmp_path / "results"
    out.mkdir()
    write_outputs(study, out)
    assert (out / MANIFEST).is_file() and _leftovers(tmp_path) == []


def test_non_empty_directory_refused_then_replaced_whole(study, tmp_path):
    out = tmp_path / "results"
    out.mkdir()
    (out / "stale.txt").write_text("from an older run")
    with pytest.raises(OutputPathError, match="overwrite=True"):
        write_outputs(study, out)
    assert sorted(p.name for p in out.iterdir()) == ["stale.txt"]
    write_outputs(study, out, overwrite=True)
    names = {p.name for p in out.iterdir()}
    assert "stale.txt" not in names and MANIFEST in names
    assert _leftovers(tmp_path) == []


def test_cli_overwrite_replaces_whole(tmp_path, capsys):
    out = tmp_path / "results"
    out.mkdir()
    (out / "stale.txt").write_text("x")
    assert main(["reproduce", "--runs", "2", "--horizon", "50", "--out", str(out), "--overwrite",
                 "--no-progress"]) == 0
    assert not (out / "stale.txt").exists() and (out / MANIFEST).is_file()
    prov = json.loads((out / MANIFEST).read_text())["provenance"]
    assert prov["command_line"][:2] == ["sege-cvx", "reproduce"] and "--overwrite" in prov["command_line"]
    assert _leftovers(tmp_path) == []
    assert f"to {out}" in capsys.readouterr().out


@pytest.mark.parametrize("error", [RuntimeError("disk on fire"), KeyboardInterrupt()])
def test_failure_mid_write_leaves_nothing(study, tmp_path, monkeypatch, error):
    def broken(study, out):
        (out / "fig2a_sege_reward.png").write_bytes(b"half")
        raise error

    monkeypatch.setattr(figures, "write_figures", broken)
    out = tmp_path / "deep" / "results"
    with pytest.raises(type(error)):
        write_outputs(study, out)
    assert list(tmp_path.iterdir()) == []  # no target, no partial directory, no created parent

    old = tmp_path / "old"
    old.mkdir()
    (old / "keep.txt").write_text("old results")
    with pytest.raises(type(error)):
        write_outputs(study, old, overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old"]
    assert (old / "keep.txt").read_text() == "old results"


def test_cli_interrupt_mid_write_publishes_nothing(tmp_path, monkeypatch, capsys):
    def interrupted(study, out):
        raise KeyboardInterrupt

    monkeypatch.setattr(figures, "write_figures", interrupted)
    out = tmp_path / "results"
    assert main(["reproduce", "--runs", "2", "--horizon", "50", "--out", str(out),
                 "--no-progress"]) == 130
    assert list(tmp_path.iterdir()) == []
    err = capsys.readouterr().err
    assert "sege-cvx: interrupted; nothing was written" in err and "Traceback" not in err


def test_target_filled_during_the_run_is_not_mixed_into(tmp_path):
    out = tmp_path / "results"
    with pytest.raises(OutputPathError, match="received files"):
        with atomic_output_dir(out) as tmp:
            (tmp / "new.txt").write_text("new")
            out.mkdir()
            (out / "other.txt").write_text("someone else's")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"]
    assert sorted(p.name for p in out.iterdir()) == ["other.txt"]


def test_published_directory_has_ordinary_permissions(tmp_path):
    with atomic_output_dir(tmp_path / "results") as tmp:
        (tmp / "a").write_text("a")
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "results").stat().st_mode & 0o777 == 0o777 & ~umask


def test_write_manifest_lists_nested_files(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.bin").write_bytes(b"\x00\x01")
    (tmp_path / "a.txt").write_text("a")
    path = write_manifest(tmp_path, {"seed": 1})
    manifest = json.loads(path.read_text())
    assert [f["path"] for f in manifest["files"]] == ["a.txt", "sub/b.bin"]
    assert manifest["files"][1] == {"path": "sub/b.bin", "bytes": 2,
                                    "sha256": hashlib.sha256(b"\x00\x01").hexdigest()}
    assert manifest["provenance"] == {"seed": 1}


def test_provenance_defaults_to_sys_argv(monkeypatch):
    monkeypatch.setattr("sys.argv", ["sege-cvx", "demo"])
    prov = provenance(seed=7)
    assert prov["command_line"] == ["sege-cvx", "demo"] and prov["seed"] == 7
    assert set(prov) == PROVENANCE_KEYS and set(prov["versions"]) == VERSION_KEYS
    json.dumps(prov)


# --- the regret slope on short horizons -------------------------------------------------------


def test_loglog_slope_needs_two_stages_with_regret():
    assert _loglog_slope(np.array([1]), np.array([0.3])) is None
    assert _loglog_slope(np.array([1, 2, 3]), np.array([0.0, 0.0, 0.0])) is None
    assert _loglog_slope(np.array([1, 2]), np.array([0.0, 0.5])) is None
    t = np.unique(np.geomspace(1, 1000, 200).astype(int))
    assert _loglog_slope(t, np.sqrt(t)) == pytest.approx(0.5)
