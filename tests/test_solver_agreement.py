"""The ellipsoid's exact fast path against its own solver path (the compiled Clarabel SOCP)."""

import numpy as np

import sege_cvx as sc
from sege_cvx.confidence import lcb_from_precision


def _spd(rng, d, low, high):
    """A random rotation of eigenvalues log-uniform in [10^low, 10^high]."""
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    return (Q * 10.0 ** rng.uniform(low, high, d)) @ Q.T


def test_fast_path_agrees_with_solver_path_on_500_anisotropic_instances():
    rng = np.random.default_rng(2024)
    worst_obj = worst_arm = 0.0
    count = 0
    for d in range(2, 21):
        E = sc.Ellipsoid(rng.uniform(-1.5, 1.5, d), _spd(rng, d, -1.0, 1.0))  # H: 2 decades
        n = 27
        thetas = rng.standard_normal((n, d))
        V = np.stack([_spd(rng, d, 0.0, 3.0) for _ in range(n)])  # V: 3 decades
        radii = rng.uniform(0.0, 3.0, n)
        closed = E.lcb_arm(thetas, V, radii, method="closed_form")
        solved = E.lcb_arm(thetas, V, radii, method="solver")
        V_inv = np.linalg.inv(V)
        f_closed = lcb_from_precision(closed, thetas, V_inv, radii)
        f_solved = lcb_from_precision(solved, thetas, V_inv, radii)
        obj = np.abs(f_closed - f_solved) / np.maximum(1.0, np.abs(f_solved))
        arm = np.linalg.norm(closed - solved, axis=1) / np.maximum(1.0, np.linalg.norm(solved, axis=1))
        # The exact arm is never beaten by more than the solver's feasibility slack.
        assert np.all(f_closed >= f_solved - 1e-8 * np.maximum(1.0, np.abs(f_solved)))
        worst_obj, worst_arm = max(worst_obj, obj.max()), max(worst_arm, arm.max())
        count += n
    assert count >= 500
    assert worst_obj <= 1e-7, worst_obj
    assert worst_arm <= 1e-5, worst_arm
