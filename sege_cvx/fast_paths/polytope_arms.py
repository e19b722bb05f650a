"""Deprecated: moved to :mod:`sege_cvx.arm_sets.polytope.arms`.

``sege_cvx.fast_paths.polytope_arms`` re-exports the public names it had, for one release, and
warns (``DeprecationWarning``) when imported: import them from
:mod:`sege_cvx.arm_sets.polytope.arms`.
"""

import warnings

from ..arm_sets.polytope.arms import (
    BLOCK_TOL,
    GAP_RTOL,
    GREEDY,
    LCB,
    RANK_TOL,
    SLACK_TOL,
    STATIONARY_RTOL,
    STEP_RTOL,
    PolytopeArms,
    PolytopeGeometry,
    arm_one,
    certified,
    empty_warm_state,
    greedy_all,
    greedy_one,
    inverse_frobenius,
    lcb_all,
    lcb_one,
    orthonormalize_row,
    project_out,
    pull_inside_one,
    solve_active_set,
)

__all__ = ["BLOCK_TOL", "GAP_RTOL", "GREEDY", "LCB", "PolytopeArms", "PolytopeGeometry", "RANK_TOL",
           "SLACK_TOL", "STATIONARY_RTOL", "STEP_RTOL", "arm_one", "certified", "empty_warm_state",
           "greedy_all", "greedy_one", "inverse_frobenius", "lcb_all", "lcb_one", "orthonormalize_row",
           "project_out", "pull_inside_one", "solve_active_set"]

warnings.warn(f"{__name__} is deprecated and will be removed in the next release; import "
              "from sege_cvx.arm_sets.polytope.arms", DeprecationWarning, stacklevel=2)
