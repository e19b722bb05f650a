"""The compiled machinery that the geometries share (no general solver).

* :mod:`.stage_arms`: the arms of a compiled stage, chosen by the class of the set's geometry
  record;
* :mod:`.exact`: exact membership in ``{x : A x <= b}`` for the user's own rows;
* :mod:`.pull_in`: the exact pull-in of a point just outside a set (the contraction schedule);
* :mod:`.status`: the status codes of compiled arms.

Each geometry's own kernels live in its folder: :mod:`sege_cvx.arm_sets.ellipsoid`
(``arms``, ``lcb``), :mod:`sege_cvx.arm_sets.polytope` (``arms``) and
:mod:`sege_cvx.arm_sets.hull` (``arms``).  :class:`EllipsoidLCBKernel` and
:func:`ellipsoid_lcb_arms` are still exported here, loaded on first use.
"""

from .._lazy import lazy_exports

_EXPORTS = {"EllipsoidLCBKernel": "..arm_sets.ellipsoid.lcb",
            "ellipsoid_lcb_arms": "..arm_sets.ellipsoid.lcb"}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
