"""Deprecated: moved to :mod:`sege_cvx.arm_sets.polytope.sets`.

``sege_cvx.arm_sets.polyhedral`` re-exports the public names it had, for one release, and warns
(``DeprecationWarning``) when imported: import them from :mod:`sege_cvx.arm_sets.polytope.sets`.
"""

import warnings

from .polytope.sets import (
    MIN_INTERIOR_RADIUS,
    VERTEX_BUDGET,
    VERTEX_MARGIN,
    VERTEX_MAX_COUNT,
    VERTEX_TOL,
    Box,
    Polytope,
    checked_vertices,
    max_vertex_count,
    pairwise_diameter,
)

__all__ = ["Box", "MIN_INTERIOR_RADIUS", "Polytope", "VERTEX_BUDGET", "VERTEX_MARGIN", "VERTEX_MAX_COUNT",
           "VERTEX_TOL", "checked_vertices", "max_vertex_count", "pairwise_diameter"]

warnings.warn(f"{__name__} is deprecated and will be removed in the next release; import "
              "from sege_cvx.arm_sets.polytope.sets", DeprecationWarning, stacklevel=2)
