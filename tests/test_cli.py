"""The command line end to end, at a tiny size."""

import json

import numpy as np

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
    assert arrays["sege_reward_mean"].shape == (600,)
    np.testing.assert_allclose(arrays["sege_regret_mean"][499], sege["regret_mean"]["500"])
    assert "sege_run0_stage500_V" in arrays
    assert "CLUCB" in capsys.readouterr().out


def test_demo_prints_both_paths(capsys):
    assert main(["demo", "--cases", "2"]) == 0
    out = capsys.readouterr().out
    assert "closed-form arm" in out and "solver arm" in out
