"""Deprecated: moved to :mod:`sege_cvx.arm_sets.hull.arms`.

``sege_cvx.fast_paths.hull_arms`` re-exports the public names it had, for one release, and warns
(``DeprecationWarning``) when imported: import them from :mod:`sege_cvx.arm_sets.hull.arms`.
"""

import warnings

from ..arm_sets.hull.arms import (
    CONE,
    ENTER_RTOL,
    GREEDY,
    LCB,
    ORIGIN_RTOL,
    HullArms,
    HullGeometry,
    anchored,
    certified,
    certify_pair,
    cone_projection,
    empty_warm_state,
    greedy_all,
    greedy_one,
    in_hull,
    in_hull_dense,
    lcb_all,
    lcb_one,
    lcb_weights_one,
    pull_inside_one,
    pull_into_hull,
    pull_into_hull_all,
    solve_weights,
    sum_tolerance,
)

__all__ = ["CONE", "ENTER_RTOL", "GREEDY", "HullArms", "HullGeometry", "LCB", "ORIGIN_RTOL", "anchored",
           "certified", "certify_pair", "cone_projection", "empty_warm_state", "greedy_all", "greedy_one",
           "in_hull", "in_hull_dense", "lcb_all", "lcb_one", "lcb_weights_one", "pull_inside_one",
           "pull_into_hull", "pull_into_hull_all", "solve_weights", "sum_tolerance"]

warnings.warn(f"{__name__} is deprecated and will be removed in the next release; import "
              "from sege_cvx.arm_sets.hull.arms", DeprecationWarning, stacklevel=2)
