"""Convex hulls of finitely many points: the arm set and its compiled arms, in one folder.

* :mod:`.sets`: the arm set :class:`ConvexHull` (a lifted set with the weights as witness);
* :mod:`.arms`: its certified LCB arm by an active-set method over the weights, the exact proof
  of an arm in the hull from its weights (:func:`~.arms.anchored`) and
  :class:`~.arms.HullGeometry`, the record SEGE's compiled stages receive
  (registered in :mod:`sege_cvx.arm_sets.kernels.registry`).
"""

from .sets import EXPLORATION_SHRINK, ConvexHull

__all__ = ["EXPLORATION_SHRINK", "ConvexHull"]
