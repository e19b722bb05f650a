"""Polytopes ``{x : A x <= b}`` and boxes: the arm sets and their compiled arms, in one folder.

* :mod:`.sets`: the arm sets :class:`Polytope` and :class:`Box` (certified interior point,
  bounds and vertices; exact membership against the rows as given);
* :mod:`.arms`: their certified greedy and LCB arms by a warm-started primal active-set method
  and :class:`~.arms.PolytopeGeometry`, the record SEGE's and ROFUL's compiled stages receive
  (registered in :mod:`sege_cvx.arm_sets.kernels.registry`).
"""

from .sets import Box, Polytope

__all__ = ["Box", "Polytope"]
