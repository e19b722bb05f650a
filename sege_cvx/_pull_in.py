"""Deprecated: moved to :mod:`sege_cvx.fast_paths.pull_in`.

``sege_cvx._pull_in`` re-exports the public names it had, for one release, and warns
(``DeprecationWarning``) when imported: import them from :mod:`sege_cvx.fast_paths.pull_in`.
"""

import warnings

from .fast_paths.pull_in import (
    FIRST_CONTRACTION,
    MAX_CONTRACTION,
    contraction_limit,
    contractions,
    least_contraction,
    pull_in_one,
    pull_into_polytope,
    spacing,
)

__all__ = ["FIRST_CONTRACTION", "MAX_CONTRACTION", "contraction_limit", "contractions", "least_contraction",
           "pull_in_one", "pull_into_polytope", "spacing"]

warnings.warn(f"{__name__} is deprecated and will be removed in the next release; import "
              "from sege_cvx.fast_paths.pull_in", DeprecationWarning, stacklevel=2)
