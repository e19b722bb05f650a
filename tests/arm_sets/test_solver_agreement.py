"""The ellipsoid's exact fast path against its own solver path (the compiled Clarabel SOCP)."""

import numpy as np

import sege_cvx as sc
from sege_cvx.confidence import lcb_from_precision

#: Arm agreement by accuracy tier of ``conic.compiled.TIERS`` and Clarabel's status.  The LCB
#: objective is flat at its maximizer, so an arm is only as accurate as the square root of the
#: gap the solve met: 10 sqrt(gap), with gaps 1e-12, 1e-10 and 1e-8 for ``Solved`` at the three
#: tiers, and the reduced tolerances 1e-8, 1e-8 and 1e-6 for ``AlmostSolved``.
ARM_RTOL = {(0, "Solved"): 1e-5, (1, "Solved"): 1e-4, (2, "Solved"): 1e-3,
            (0, "AlmostSolved"): 1e-3, (1, "AlmostSolved"): 1e-3, (2, "AlmostSolved"): 1e-2}


def _recording(solve, solutions):
    """``solve``, appending each solution (with its tier and status) to ``solutions``."""
    def wrapped(*args):
        solutions.append(solve(*args))
        return solutions[-1]
    return wrapped


def _spd(rng, d, low, high):
    """A random rotation of eigenvalues log-uniform in [10^low, 10^high]."""
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    return (Q * 10.0 ** rng.uniform(low, high, d)) @ Q.T


def test_fast_path_agrees_with_solver_path_on_500_anisotropic_instances():
    rng = np.random.default_rng(2024)
    worst_obj = 0.0
    tiers = []
    for d in range(2, 21):
        E = sc.Ellipsoid(rng.uniform(-1.5, 1.5, d), _spd(rng, d, -1.0, 1.0))  # H: 2 decades
        n = 27
        thetas = rng.standard_normal((n, d))
        V = np.stack([_spd(rng, d, 0.0, 3.0) for _ in range(n)])  # V: 3 decades
        radii = rng.uniform(0.0, 3.0, n)
        closed = E.lcb_arm(thetas, V, radii, method="closed_form")
        V_inv = np.linalg.inv(V)
        solutions = []
        E._lcb_program.solve = _recording(E._lcb_program.solve, solutions)
        for i in range(n):
            solved = E.lcb_arm(thetas[i], V[i], radii[i], method="solver")
            solution = solutions[-1]  # the tier and status this arm came with
            f_closed, f_solved = lcb_from_precision(np.stack([closed[i], solved]), thetas[[i, i]],
                                                    V_inv[[i, i]], radii[[i, i]])
            # The exact arm is never beaten by more than the solver's feasibility slack.
            assert f_closed >= f_solved - 1e-8 * max(1.0, abs(f_solved))
            worst_obj = max(worst_obj, abs(f_closed - f_solved) / max(1.0, abs(f_solved)))
            arm = np.linalg.norm(closed[i] - solved) / max(1.0, np.linalg.norm(solved))
            assert arm <= ARM_RTOL[solution.tier, solution.status], (d, i, solution, arm)
            tiers.append(solution.tier)
    assert len(tiers) >= 500
    assert worst_obj <= 1e-7, worst_obj
    # Most solves reach the tightest tier; the others are the documented fallbacks.
    assert np.mean(np.array(tiers) == 0) >= 0.8, np.bincount(tiers)
