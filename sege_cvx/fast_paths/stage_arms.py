"""The arms of a compiled SEGE stage, chosen by the type of the set's geometry.

SEGE's compiled stage (:func:`sege_cvx.policies.sege_rule.stage_one`) is written once and calls
:func:`greedy_arm`, :func:`lcb_arm` and :func:`pull_inside`; numba resolves each, when it compiles
the stage for a geometry (:func:`_kind`), to the ellipsoid's closed forms (:mod:`.ellipsoid_arms`,
whose geometry begins with the centre, a 1-D array), the polytope's certified active-set solves
(:mod:`.polytope_arms`, beginning with the rows ``A`` and ``b``) or the convex hull's certified
solves over its weights (:mod:`.hull_arms`, beginning with the points and a float).  Each
returns a status code of :mod:`.status`; only :data:`~.status.VERIFIED` arms are played.

``warm`` is the run's warm-start state (:mod:`.polytope_arms`: ``(rows, counts, points,
inverse)``; :mod:`.hull_arms`: ``(rows, counts, weights, mix)``); ellipsoids ignore it.
``mats`` (6, d, d) and ``vecs`` (18, d) are the stage's scratch: the arms use ``mats[:5]`` and
``vecs[:16]``.
"""

from __future__ import annotations

from numba import types
from numba.extending import overload

from . import ellipsoid_arms, hull_arms, polytope_arms


def _kind(geometry) -> str:
    """``"ellipsoid"`` (geometry begins with the centre, 1-D), ``"polytope"`` (the rows ``A`` then
    ``b``) or ``"hull"`` (the points then the norm bound, a float)."""
    if geometry.types[0].ndim == 1:
        return "ellipsoid"
    return "polytope" if isinstance(geometry.types[1], types.Array) else "hull"


def greedy_arm(geometry, theta, warm, out, mats, vecs) -> int:
    """The verified greedy arm into ``out``; returns its status."""
    raise NotImplementedError("compiled only")


def lcb_arm(geometry, theta, chol, r, warm, out, mats, vecs) -> int:
    """The verified LCB arm into ``out`` from the Cholesky factor of ``V``; returns its status.
    A hull's is computed from certified weights and proven in the hull through the mix that
    plays it (:func:`pull_inside`)."""
    raise NotImplementedError("compiled only")


def pull_inside(geometry, x, warm, use_lcb, rho, g, safe, offset, trial) -> bool:
    """Move SEGE's mix ``x = (1 - rho) safe + rho U`` exactly into the set; False if it cannot
    be.  A hull proves it from the safe arm (the run's ``warm`` LCB weights if ``use_lcb``, else
    the baseline arm ``safe``), ``rho`` and the exploration draw ``g``
    (:func:`.hull_arms.pull_inside_one`)."""
    raise NotImplementedError("compiled only")


@overload(greedy_arm)
def _greedy_arm(geometry, theta, warm, out, mats, vecs):
    if _kind(geometry) == "hull":
        def hull(geometry, theta, warm, out, mats, vecs):
            rows, counts, weights, mix = warm
            return hull_arms.greedy_one(geometry, theta, rows, counts, weights, mix, out,
                                        mats, vecs)
        return hull
    if _kind(geometry) == "polytope":
        def polytope(geometry, theta, warm, out, mats, vecs):
            rows, counts, points, inverse = warm
            return polytope_arms.greedy_one(geometry, theta, rows, counts, points, inverse, out,
                                            mats, vecs)
        return polytope

    def ellipsoid(geometry, theta, warm, out, mats, vecs):
        center, shape, _, h_inv_sqrt, _, _ = geometry
        ellipsoid_arms.greedy_one(theta, center, shape, h_inv_sqrt, out, vecs[14:16])
        return ellipsoid_arms.verify_one(out, center, h_inv_sqrt, vecs[14], vecs[15])
    return ellipsoid


@overload(lcb_arm)
def _lcb_arm(geometry, theta, chol, r, warm, out, mats, vecs):
    if _kind(geometry) == "hull":
        def hull(geometry, theta, chol, r, warm, out, mats, vecs):
            rows, counts, weights, mix = warm
            # SEGE plays the LCB arm only inside its mix, which pull_inside proves.
            return hull_arms.lcb_weights_one(geometry, theta, chol, r, rows, counts, weights, mix,
                                             out, mats, vecs)
        return hull
    if _kind(geometry) == "polytope":
        def polytope(geometry, theta, chol, r, warm, out, mats, vecs):
            rows, counts, points, inverse = warm
            return polytope_arms.lcb_one(geometry, theta, chol, r, rows, counts, points, inverse,
                                         out, mats, vecs)
        return polytope

    def ellipsoid(geometry, theta, chol, r, warm, out, mats, vecs):
        center, shape, h_sqrt, h_inv_sqrt, white_center, kappa = geometry
        return ellipsoid_arms.lcb_from_factor_one(center, shape, h_sqrt, h_inv_sqrt, white_center,
                                                  kappa, theta, chol, r, out, mats, vecs)
    return ellipsoid


@overload(pull_inside)
def _pull_inside(geometry, x, warm, use_lcb, rho, g, safe, offset, trial):
    if _kind(geometry) == "hull":
        def hull(geometry, x, warm, use_lcb, rho, g, safe, offset, trial):
            return hull_arms.pull_inside_one(geometry, x, warm, use_lcb, rho, g, safe, trial)
        return hull
    if _kind(geometry) == "polytope":
        def polytope(geometry, x, warm, use_lcb, rho, g, safe, offset, trial):
            return polytope_arms.pull_inside_one(geometry, x, offset, trial)
        return polytope

    def ellipsoid(geometry, x, warm, use_lcb, rho, g, safe, offset, trial):
        return ellipsoid_arms.pull_inside_one(x, geometry[0], geometry[3], offset, trial)
    return ellipsoid
