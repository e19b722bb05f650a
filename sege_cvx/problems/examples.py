"""Example problems on every kind of arm set, for ``sege-cvx run --arm-set NAME``.

Each states its ``theta*``, baseline arm and threshold; the baseline reward is the baseline
arm's true expected reward ``b0 = <x0, theta*>`` and the threshold ``b = 0.8 b0``.

The policies take their defaults on every problem: SEGE's ``c``, for one, is
``20 rho^2 sigma^2`` (:func:`sege_cvx.policies.default_c`, the paper's ratio), with which line
5's information test passes after about 400 exploring stages.  Exploitation also needs the
greedy arm's LCB to reach ``b``: within a few hundred stages on the ellipsoid, box, disk and l1.5
ball, whose greedy arms point near the baseline arm, but only after about 10^5 stages on the
treatment-mix and polytope examples, whose greedy arms point away from it
(``benchmarks/measure_exploit_onset.py``).
"""

from __future__ import annotations

import numpy as np

from ..arm_sets import Box, ConvexArmSet, Ellipsoid, Polytope
from .problem import BanditProblem, paper_problem


def treatment_mix_problem() -> BanditProblem:
    """The paper's motivating case: a mixture of 3 treatments.

    Doses ``0 <= x_i <= (1.0, 0.8, 0.6)`` and a total budget ``x_1 + x_2 + x_3 <= 1.5`` (a box
    intersected with a half-space, as a :class:`~sege_cvx.arm_sets.Polytope`).  The unknown
    per-unit effectiveness is ``theta* = (0.4, 0.7, 0.5)``; the standard of care
    ``x0 = (0.6, 0.2, 0.2)`` has reward ``b0 = 0.48``; a patient's expected response may never
    fall below ``b = 0.8 b0``.
    """
    upper = np.array([1.0, 0.8, 0.6])
    A = np.vstack([np.eye(3), -np.eye(3), np.ones((1, 3))])
    b = np.concatenate([upper, np.zeros(3), [1.5]])
    return BanditProblem.from_truth(
        Polytope(A, b), theta_star=(0.4, 0.7, 0.5), safe_arm=(0.6, 0.2, 0.2), S=1.0,
        noise_sd=0.5, name="treatment-mix",
        description="3 treatments, dose bounds and a total budget (polytope)")


#: The rotated ellipsoid's shape ``R diag(1, 0.5, 0.2) R^T``, ``R`` the Q factor of
#: ``[[1, 0.5, 0.2], [0.3, 1, 0.4], [0.1, 0.2, 1]]``, written out to the last bit: computed
#: through BLAS its last bits depend on the CPU's kernels, so that machines would build problems
#: with different fingerprints (and runs with different numbers).
ELLIPSOID_SHAPE = ((0.9539025399995126, 0.13395270681635532, 0.05911647955580447),
                   (0.13395270681635532, 0.531868105106787, 0.06486861651608503),
                   (0.05911647955580447, 0.06486861651608503, 0.21422935489369993))


def ellipsoid_problem() -> BanditProblem:
    """An anisotropic, rotated ellipsoid in 3-D (semi-axes 1, 0.71 and 0.45)."""
    shape = np.array(ELLIPSOID_SHAPE)
    return BanditProblem.from_truth(
        Ellipsoid((1.0, 1.0, 1.0), shape), theta_star=(0.5, 0.6, 0.4), safe_arm=(1.2, 1.3, 1.1),
        noise_sd=0.5, name="ellipsoid", description="rotated ellipsoid, semi-axes 1, 0.71, 0.45")


def box_problem() -> BanditProblem:
    """The unit cube in 3-D."""
    return BanditProblem.from_truth(
        Box((0.0, 0.0, 0.0), (1.0, 1.0, 1.0)), theta_star=(0.3, 0.5, 0.7),
        safe_arm=(0.5, 0.5, 0.5), noise_sd=0.5, name="box", description="unit cube [0, 1]^3")


def polytope_problem() -> BanditProblem:
    """The unit cube cut by two half-spaces (8 facets)."""
    A = np.vstack([np.eye(3), -np.eye(3), [[1.0, 1.0, 1.0], [1.0, -1.0, 0.0]]])
    b = np.array([1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 2.0, 0.5])
    return BanditProblem.from_truth(
        Polytope(A, b), theta_star=(0.6, 0.3, 0.5), safe_arm=(0.4, 0.5, 0.4), noise_sd=0.5,
        name="polytope", description="unit cube with x1+x2+x3 <= 2 and x1-x2 <= 0.5")


def lp_ball_problem() -> BanditProblem:
    """The l_{1.5} ball of radius 1 around (1, 1, 1), as user cvxpy constraints."""
    import cvxpy as cp  # here: listing or building the other examples does not need it

    center = np.ones(3)
    arm_set = ConvexArmSet(3, lambda x: [cp.pnorm(x - center, 1.5) <= 1])
    return BanditProblem.from_truth(
        arm_set, theta_star=(0.5, 0.4, 0.6), safe_arm=(1.1, 1.0, 1.2), noise_sd=0.5,
        name="lp-ball", description="l_1.5 ball of radius 1 at (1, 1, 1) (ConvexArmSet)")


#: ``sege-cvx run --arm-set NAME`` choices.
EXAMPLES = {
    "paper": paper_problem,
    "ellipsoid": ellipsoid_problem,
    "box": box_problem,
    "polytope": polytope_problem,
    "lp-ball": lp_ball_problem,
    "treatment-mix": treatment_mix_problem,
}
