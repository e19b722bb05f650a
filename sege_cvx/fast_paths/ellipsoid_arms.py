"""Deprecated: moved to :mod:`sege_cvx.arm_sets.ellipsoid.arms`.

``sege_cvx.fast_paths.ellipsoid_arms`` re-exports the public names it had, for one release, and
warns (``DeprecationWarning``) when imported: import them from
:mod:`sege_cvx.arm_sets.ellipsoid.arms` (``ORDER_ONE`` and ``order_one_exponent``, which every
compiled geometry uses, from :mod:`sege_cvx.arm_sets.scaling`).
"""

import warnings

from ..arm_sets.ellipsoid.arms import (
    EllipsoidArms,
    EllipsoidGeometry,
    gauge_all,
    gauge_one,
    greedy_all,
    greedy_one,
    inside_all,
    inside_one,
    lcb_arm_checked,
    lcb_from_factor_all,
    lcb_from_factor_one,
    pull_inside_all,
    pull_inside_one,
    verify_one,
)
from ..arm_sets.scaling import ORDER_ONE, order_one_exponent

__all__ = ["EllipsoidArms", "EllipsoidGeometry", "ORDER_ONE", "gauge_all", "gauge_one", "greedy_all",
           "greedy_one", "inside_all", "inside_one", "lcb_arm_checked", "lcb_from_factor_all",
           "lcb_from_factor_one", "order_one_exponent", "pull_inside_all", "pull_inside_one", "verify_one"]

warnings.warn(f"{__name__} is deprecated and will be removed in the next release; import "
              "from sege_cvx.arm_sets.ellipsoid.arms", DeprecationWarning, stacklevel=2)
