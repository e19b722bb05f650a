"""Ellipsoids and Euclidean balls: the arm sets and their compiled arms, in one folder.

* :mod:`.sets`: the arm sets :class:`Ellipsoid` (the paper's, eq. (ellipsoid)) and :class:`Ball`;
* :mod:`.arms`: the compiled per-point arms (exact membership and pull-in, the greedy arm, the
  verified LCB arm from a Cholesky factor) and :class:`~.arms.EllipsoidGeometry`, the record
  SEGE's and ROFUL's compiled stages receive (registered in
  :mod:`sege_cvx.arm_sets.kernels.registry`);
* :mod:`.lcb`: the exact LCB arm's closed form with its duality-gap certificate
  (:class:`~.lcb.EllipsoidLCBKernel`).
"""

from .sets import Ball, Ellipsoid

__all__ = ["Ball", "Ellipsoid"]
