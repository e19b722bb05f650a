"""The compiled machinery the geometries share (no general solver).

* :mod:`.registry`: each geometry's compiled arms, registered from its own folder
  (:func:`~.registry.register_geometry`), bound into compiled stages by the class of the set's
  geometry record;
* :mod:`.exact`: exact membership in ``{x : A x <= b}`` for the user's own rows;
* :mod:`.pull_in`: the exact pull-in of a point just outside a set (the contraction schedule);
* :mod:`.status`: the status codes of compiled arms.

Each geometry's own kernels live in its folder: :mod:`sege_cvx.arm_sets.ellipsoid`
(``arms``, ``lcb``), :mod:`sege_cvx.arm_sets.polytope` (``arms``) and
:mod:`sege_cvx.arm_sets.hull` (``arms``).
"""
