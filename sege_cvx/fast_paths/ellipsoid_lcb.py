"""Deprecated: moved to :mod:`sege_cvx.arm_sets.ellipsoid.lcb`.

``sege_cvx.fast_paths.ellipsoid_lcb`` re-exports the public names it had, for one release, and
warns (``DeprecationWarning``) when imported: import them from
:mod:`sege_cvx.arm_sets.ellipsoid.lcb`.
"""

import warnings

from ..arm_sets.ellipsoid.lcb import (
    EllipsoidLCBKernel,
    ellipsoid_lcb_arms,
    lcb_arm_one,
    square_roots,
)

__all__ = ["EllipsoidLCBKernel", "ellipsoid_lcb_arms", "lcb_arm_one", "square_roots"]

warnings.warn(f"{__name__} is deprecated and will be removed in the next release; import "
              "from sege_cvx.arm_sets.ellipsoid.lcb", DeprecationWarning, stacklevel=2)
