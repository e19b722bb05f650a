"""The arms of a compiled stage, chosen by the class of the set's geometry record.

Compiled stages are written once and call :func:`greedy_arm`, :func:`lcb_arm`,
:func:`pull_inside` and :func:`pull_in`; numba resolves each, when it compiles a stage, by the
class of the geometry record it is given (a registry keyed by class, as cvxpy's canonicalizers
are): :class:`~sege_cvx.arm_sets.ellipsoid.arms.EllipsoidGeometry` to the ellipsoid's closed
forms (:mod:`sege_cvx.arm_sets.ellipsoid.arms`),
:class:`~sege_cvx.arm_sets.polytope.arms.PolytopeGeometry` to the polytope's certified
active-set solves (:mod:`sege_cvx.arm_sets.polytope.arms`) and
:class:`~sege_cvx.arm_sets.hull.arms.HullGeometry` to the convex hull's certified solves over
its weights (:mod:`sege_cvx.arm_sets.hull.arms`).  Each arm returns a status code of
:mod:`.status`; only :data:`~.status.VERIFIED` arms are played.

``warm`` is the run's warm-start state (a polytope's: ``(rows, counts, points, inverse)``; a
hull's: ``(rows, counts, weights, mix)``); ellipsoids ignore it.  ``mats`` (6, d, d) and
``vecs`` (18, d) are the stage's scratch: the arms use ``mats[:5]`` and ``vecs[:16]``.
"""

from __future__ import annotations

from numba.core.errors import TypingError
from numba.extending import overload

from ..arm_sets.ellipsoid import arms as ellipsoid_arms
from ..arm_sets.ellipsoid.arms import EllipsoidGeometry
from ..arm_sets.hull import arms as hull_arms
from ..arm_sets.hull.arms import HullGeometry
from ..arm_sets.polytope import arms as polytope_arms
from ..arm_sets.polytope.arms import PolytopeGeometry


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
    (:func:`sege_cvx.arm_sets.hull.arms.pull_inside_one`); the other sets by :func:`pull_in`."""
    raise NotImplementedError("compiled only")


def pull_in(geometry, x, offset, trial) -> bool:
    """Move any point ``x`` exactly into the set by the least contraction toward its certified
    interior point that passes its exact membership test (:func:`.pull_in.pull_in_one`);
    False, ``x`` unchanged, if none does.  For the records of :data:`PULL_IN` (sets whose
    membership is decided from ``x`` alone; a hull's needs the weights of a mix)."""
    raise NotImplementedError("compiled only")


def _record(geometry, table: dict, what: str):
    """The entry of ``table`` for the numba type of a geometry record (a TypingError naming it
    for any other argument)."""
    cls = getattr(geometry, "instance_class", None)
    if cls not in table:
        raise TypingError(f"{what}: no compiled implementation for {geometry} (known: "
                          f"{', '.join(c.__name__ for c in table)})")
    return table[cls]


# --- greedy arm ----------------------------------------------------------------------------------

def _ellipsoid_greedy(geometry, theta, warm, out, mats, vecs):
    ellipsoid_arms.greedy_one(theta, geometry.center, geometry.shape, geometry.h_inv_sqrt, out,
                              vecs[14:16])
    return ellipsoid_arms.verify_one(out, geometry.center, geometry.h_inv_sqrt, vecs[14],
                                     vecs[15])


def _polytope_greedy(geometry, theta, warm, out, mats, vecs):
    return polytope_arms.greedy_one(geometry, theta, warm, out, mats, vecs)


def _hull_greedy(geometry, theta, warm, out, mats, vecs):
    rows, counts, weights, mix = warm
    return hull_arms.greedy_one(geometry, theta, rows, counts, weights, mix, out, mats, vecs)


GREEDY = {EllipsoidGeometry: _ellipsoid_greedy, PolytopeGeometry: _polytope_greedy,
          HullGeometry: _hull_greedy}


@overload(greedy_arm)
def _greedy_arm(geometry, theta, warm, out, mats, vecs):
    return _record(geometry, GREEDY, "greedy_arm")


# --- LCB arm -------------------------------------------------------------------------------------

def _ellipsoid_lcb(geometry, theta, chol, r, warm, out, mats, vecs):
    return ellipsoid_arms.lcb_from_factor_one(
        geometry.center, geometry.shape, geometry.h_sqrt, geometry.h_inv_sqrt,
        geometry.white_center, geometry.kappa, theta, chol, r, out, mats, vecs)


def _polytope_lcb(geometry, theta, chol, r, warm, out, mats, vecs):
    return polytope_arms.lcb_one(geometry, theta, chol, r, warm, out, mats, vecs)


def _hull_lcb(geometry, theta, chol, r, warm, out, mats, vecs):
    # SEGE plays the LCB arm only inside its mix, which pull_inside proves.
    return hull_arms.lcb_weights_one(geometry, theta, chol, r, warm, out, mats, vecs)


LCB = {EllipsoidGeometry: _ellipsoid_lcb, PolytopeGeometry: _polytope_lcb,
       HullGeometry: _hull_lcb}


@overload(lcb_arm)
def _lcb_arm(geometry, theta, chol, r, warm, out, mats, vecs):
    return _record(geometry, LCB, "lcb_arm")


# --- pulling a point in --------------------------------------------------------------------------

def _ellipsoid_pull_in(geometry, x, offset, trial):
    return ellipsoid_arms.pull_inside_one(x, geometry.center, geometry.h_inv_sqrt, offset, trial)


def _polytope_pull_in(geometry, x, offset, trial):
    return polytope_arms.pull_inside_one(geometry, x, offset, trial)


PULL_IN = {EllipsoidGeometry: _ellipsoid_pull_in, PolytopeGeometry: _polytope_pull_in}


@overload(pull_in)
def _pull_in(geometry, x, offset, trial):
    return _record(geometry, PULL_IN, "pull_in")


def _hull_pull_inside(geometry, x, warm, use_lcb, rho, g, safe, offset, trial):
    return hull_arms.pull_inside_one(geometry, x, warm, use_lcb, rho, g, safe, trial)


# Each set's own function directly (not through pull_in): one call less in SEGE's stage.
def _ellipsoid_pull_inside(geometry, x, warm, use_lcb, rho, g, safe, offset, trial):
    return ellipsoid_arms.pull_inside_one(x, geometry.center, geometry.h_inv_sqrt, offset, trial)


def _polytope_pull_inside(geometry, x, warm, use_lcb, rho, g, safe, offset, trial):
    return polytope_arms.pull_inside_one(geometry, x, offset, trial)


PULL_INSIDE = {EllipsoidGeometry: _ellipsoid_pull_inside, PolytopeGeometry: _polytope_pull_inside,
               HullGeometry: _hull_pull_inside}


@overload(pull_inside)
def _pull_inside(geometry, x, warm, use_lcb, rho, g, safe, offset, trial):
    return _record(geometry, PULL_INSIDE, "pull_inside")
