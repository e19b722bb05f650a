"""Adversarial review of issue 10 (ROFUL, the confidence radius, finite and lifted sets): each
test failed before the fix committed with it."""

import numpy as np
import pytest
from problems import floor_setting

import sege_cvx as sc

SQUARE_POINTS = [[0.0, 0.0], [2.0, 0.0], [0.0, 2.0], [2.0, 2.0], [1.0, 1.5]]


# ---------------------------------------------------------------------- ConvexHull faces
def test_a_hull_contains_its_own_vertices_and_edges_exactly():
    """The witness solve leaves the other weights at about -1e-13 for a point on a face: the
    hull's own vertices were reported outside at tol=0."""
    hull = sc.ConvexHull(SQUARE_POINTS)
    assert hull.contains(hull.points, tol=0.0).all()
    assert hull.contains([[1.0, 0.0], [0.0, 1.3], [2.0, 0.7], [1.0, 2.0]], tol=0.0).all()
    assert not hull.contains([2.0 + 1e-12, 0.7], tol=0.0)
    np.testing.assert_array_equal(hull._find_witnesses(hull.points[:1]), [[1.0, 0, 0, 0, 0]])


@pytest.mark.parametrize("x0", [[0.0, 0.0], [1.0, 0.0], [2.0, 2.0]])
def test_roful_accepts_a_hull_vertex_or_edge_point_as_baseline(x0):
    """A FiniteArmSet's baseline arm is one of its arms; ROFUL on its ConvexHull (what the
    FiniteArmSet error suggests) refused it as 'moved into the set'."""
    hull = sc.ConvexHull(SQUARE_POINTS)
    policy = sc.StagewiseROFUL(floor_setting(hull, x0, 1.0, 0.6, noise_sd=0.3), n_directions=12)
    np.testing.assert_array_equal(policy.setting.safe_arm, x0)
    assert policy.setting.safe_shift == 0.0
    x = policy.select()
    assert hull.contains(x, tol=0.0)


# ---------------------------------------------------------------------- report of a mixed grid
def test_a_default_radius_is_not_reported_as_not_applying(tmp_path):
    """ROFUL's default radius is self_normalized, SEGE's and CLUCB's theorem1: a cell whose grid
    leaves ``radius`` unset ran with its algorithm's default, which the table showed as '-' and
    the figures as 'radius=n/a' ("does not apply"), beside the cells that set it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sege_cvx.experiments.sweeps.report import report_table
    from sege_cvx.experiments.sweeps.run import run_sweep

    spec = {"seed": 0, "runs": 2, "horizon": 20, "problems": [{"name": "paper"}],
            "algorithms": [{"name": "ROFUL", "grid": {"radius": ["theorem1"]}}, {"name": "CLUCB"},
                           {"name": "SEGE", "grid": {"c": [0.5]}}]}
    results = run_sweep(spec, tmp_path / "out", workers=1, progress=False)
    table = report_table(results, stages=[10]).set_index("algorithm")
    assert table.loc["CLUCB", "radius"] == "default" and table.loc["SEGE", "radius"] == "default"
    assert table.loc["CLUCB", "c"] == "-" and table.loc["ROFUL", "c"] == "-"
    titles = [ax.get_title() for ax in results.plot_regret(by="radius").axes]
    plt.close("all")
    assert titles == ["radius=theorem1", "radius=default"]
    titles = [ax.get_title() for ax in results.plot_regret(by="c").axes]
    plt.close("all")
    assert titles == ["c=n/a", "c=0.5"]


def test_roful_says_why_a_boundary_baseline_is_refused():
    """A baseline inside a solver-described set by less than a witness solve can prove fails
    the exact test; the error told the user to 'give a baseline arm inside the set', which it
    was."""
    from fractions import Fraction

    import cvxpy as cp

    arm_set = sc.ConvexArmSet(2, lambda x: [cp.pnorm(x, 1.5) <= 1])
    g = np.array([0.6, 0.5])
    baseline = (1 - 1e-12) * g / np.linalg.norm(g, 1.5)
    # Inside in rationals: sqrt(A) + sqrt(B) <= 1 with A, B the cubes of |x_i|.
    A, B = (abs(Fraction(float(v))) ** 3 for v in baseline)
    assert 1 - A - B >= 0 and 4 * A * B <= (1 - A - B) ** 2
    assert not arm_set.contains(baseline, tol=0.0)  # 1e-12 inside: no witness proves it
    with pytest.raises(ValueError, match=r"exact reward.*exact membership test \(tol=0\)"):
        sc.StagewiseROFUL(floor_setting(arm_set, baseline, 1.05, 0.8, noise_sd=0.3),
                          n_directions=8)
