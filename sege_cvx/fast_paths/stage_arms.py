"""The arms of a compiled stage, chosen by the class of the set's geometry record.

Compiled stages are written once and call :func:`greedy_arm`, :func:`lcb_arm`,
:func:`pull_inside` and :func:`pull_in`.  These names are placeholders: when the stage loop
(:mod:`sege_cvx.simulation.loop`) compiles a policy's hooks for a stage record whose
``geometry`` field holds a geometry record, it binds each name to that record class's function
(:func:`arm_bindings`: a registry keyed by class, as cvxpy's canonicalizers are), and numba
inlines it: :class:`~sege_cvx.arm_sets.ellipsoid.arms.EllipsoidGeometry` to the ellipsoid's
closed forms (:mod:`sege_cvx.arm_sets.ellipsoid.arms`),
:class:`~sege_cvx.arm_sets.polytope.arms.PolytopeGeometry` to the polytope's certified
active-set solves (:mod:`sege_cvx.arm_sets.polytope.arms`) and
:class:`~sege_cvx.arm_sets.hull.arms.HullGeometry` to the convex hull's certified solves over
its weights (:mod:`sege_cvx.arm_sets.hull.arms`).  Each arm returns a status code of
:mod:`.status`; only :data:`~.status.VERIFIED` arms are played.

Why bound when the loop compiles rather than chosen by numba's typing (an ``overload``): a
geometry record passed to a function numba does not inline is copied onto the stack at every
call, which made SEGE's stages on polyhedral sets a fifth slower; and numba's inlining of
overloads mis-compiles this loop (its statistics come out wrong).

``warm`` is the run's warm-start state (a polytope's: ``(rows, counts, points, inverse)``; a
hull's: ``(rows, counts, weights, mix)``); ellipsoids ignore it.  ``mats`` (6, d, d) and
``vecs`` (18, d) are the stage's scratch: the arms use ``mats[:5]`` and ``vecs[:16]``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from .._numba import njit
from ..arm_sets.ellipsoid import arms as ellipsoid_arms
from ..arm_sets.ellipsoid.arms import EllipsoidGeometry
from ..arm_sets.hull import arms as hull_arms
from ..arm_sets.hull.arms import HullGeometry
from ..arm_sets.polytope import arms as polytope_arms
from ..arm_sets.polytope.arms import PolytopeGeometry

_UNBOUND = ("a placeholder, bound to a geometry's function when a stage loop compiles "
            "(sege_cvx.simulation.loop)")


def greedy_arm(geometry, theta, warm, out, mats, vecs) -> int:
    """The verified greedy arm into ``out``; returns its status."""
    raise NotImplementedError(_UNBOUND)


def lcb_arm(geometry, theta, chol, r, warm, out, mats, vecs) -> int:
    """The verified LCB arm into ``out`` from the Cholesky factor of ``V``; returns its status.
    A hull's is computed from certified weights and proven in the hull through the mix that
    plays it (:func:`pull_inside`)."""
    raise NotImplementedError(_UNBOUND)


def pull_inside(geometry, x, warm, use_lcb, rho, g, safe, offset, trial) -> bool:
    """Move SEGE's mix ``x = (1 - rho) safe + rho U`` exactly into the set; False if it cannot
    be.  A hull proves it from the safe arm (the run's ``warm`` LCB weights if ``use_lcb``, else
    the baseline arm ``safe``), ``rho`` and the exploration draw ``g``
    (:func:`sege_cvx.arm_sets.hull.arms.pull_inside_one`); the other sets by :func:`pull_in`."""
    raise NotImplementedError(_UNBOUND)


def pull_in(geometry, x, offset, trial) -> bool:
    """Move any point ``x`` exactly into the set by the least contraction toward its certified
    interior point that passes its exact membership test (:func:`.pull_in.pull_in_one`);
    False, ``x`` unchanged, if none does.  For the records of :data:`PULL_IN` (sets whose
    membership is decided from ``x`` alone; a hull's needs the weights of a mix)."""
    raise NotImplementedError(_UNBOUND)


# --- greedy arm ----------------------------------------------------------------------------------

@njit(inline="always")
def _ellipsoid_greedy(geometry, theta, warm, out, mats, vecs):
    ellipsoid_arms.greedy_one(theta, geometry.center, geometry.shape, geometry.h_inv_sqrt, out,
                              vecs[14:16])
    return ellipsoid_arms.verify_one(out, geometry.center, geometry.h_inv_sqrt, vecs[14],
                                     vecs[15])


@njit(inline="always")
def _polytope_greedy(geometry, theta, warm, out, mats, vecs):
    return polytope_arms.greedy_one(geometry, theta, warm, out, mats, vecs)


@njit(inline="always")
def _hull_greedy(geometry, theta, warm, out, mats, vecs):
    rows, counts, weights, mix = warm
    return hull_arms.greedy_one(geometry, theta, rows, counts, weights, mix, out, mats, vecs)


GREEDY = {EllipsoidGeometry: _ellipsoid_greedy, PolytopeGeometry: _polytope_greedy,
          HullGeometry: _hull_greedy}


# --- LCB arm -------------------------------------------------------------------------------------

@njit(inline="always")
def _ellipsoid_lcb(geometry, theta, chol, r, warm, out, mats, vecs):
    return ellipsoid_arms.lcb_from_factor_one(
        geometry.center, geometry.shape, geometry.h_sqrt, geometry.h_inv_sqrt,
        geometry.white_center, geometry.kappa, theta, chol, r, out, mats, vecs)


@njit(inline="always")
def _polytope_lcb(geometry, theta, chol, r, warm, out, mats, vecs):
    return polytope_arms.lcb_one(geometry, theta, chol, r, warm, out, mats, vecs)


# Not inlined: its solve over the weights is inlined here, and inlined once more into the
# stage loop it made the hull's stages slower (CHANGELOG).
@njit
def _hull_lcb(geometry, theta, chol, r, warm, out, mats, vecs):
    # SEGE plays the LCB arm only inside its mix, which pull_inside proves.
    return hull_arms.lcb_weights_one(geometry, theta, chol, r, warm, out, mats, vecs)


LCB = {EllipsoidGeometry: _ellipsoid_lcb, PolytopeGeometry: _polytope_lcb,
       HullGeometry: _hull_lcb}


# --- pulling a point in --------------------------------------------------------------------------

@njit(inline="always")
def _ellipsoid_pull_in(geometry, x, offset, trial):
    return ellipsoid_arms.pull_inside_one(x, geometry.center, geometry.h_inv_sqrt, offset, trial)


@njit(inline="always")
def _polytope_pull_in(geometry, x, offset, trial):
    return polytope_arms.pull_inside_one(geometry, x, offset, trial)


class Unmoved(NamedTuple):
    """The geometry record of arms played as the stage computes them: a star set's (its arms are
    members by construction, :mod:`sege_cvx.arm_sets.star`), or a set whose arms the policy
    moves in outside the compiled stage.  Its :func:`pull_in` moves nothing."""

    marker: int = 0


@njit(inline="always")
def _unmoved_pull_in(geometry, x, offset, trial):
    return True


PULL_IN = {EllipsoidGeometry: _ellipsoid_pull_in, PolytopeGeometry: _polytope_pull_in,
           Unmoved: _unmoved_pull_in}


@njit(inline="always")
def _hull_pull_inside(geometry, x, warm, use_lcb, rho, g, safe, offset, trial):
    return hull_arms.pull_inside_one(geometry, x, warm, use_lcb, rho, g, safe, trial)


# Each set's own function directly (not through pull_in): one call less in SEGE's stage.
@njit(inline="always")
def _ellipsoid_pull_inside(geometry, x, warm, use_lcb, rho, g, safe, offset, trial):
    return ellipsoid_arms.pull_inside_one(x, geometry.center, geometry.h_inv_sqrt, offset, trial)


@njit(inline="always")
def _polytope_pull_inside(geometry, x, warm, use_lcb, rho, g, safe, offset, trial):
    return polytope_arms.pull_inside_one(geometry, x, offset, trial)


PULL_INSIDE = {EllipsoidGeometry: _ellipsoid_pull_inside, PolytopeGeometry: _polytope_pull_inside,
               HullGeometry: _hull_pull_inside}


#: Each placeholder's registry: the geometry record classes that have it, and their functions.
_REGISTRIES = {greedy_arm: GREEDY, lcb_arm: LCB, pull_inside: PULL_INSIDE, pull_in: PULL_IN}
#: The geometry record classes that have compiled arms.
GEOMETRIES = frozenset().union(*_REGISTRIES.values())


def arm_bindings(geometry: type) -> dict[Callable, Callable]:
    """The functions a compiled stage on geometry records of class ``geometry`` calls in place of
    the placeholders :func:`greedy_arm`, :func:`lcb_arm`, :func:`pull_inside` and :func:`pull_in`
    (those it has: a hull has no :func:`pull_in`).

    Raises
    ------
    TypeError
        If ``geometry`` has none of them (not a geometry record class).
    """
    bindings = {name: table[geometry] for name, table in _REGISTRIES.items() if geometry in table}
    if not bindings:
        known = ", ".join(cls.__name__ for cls in GREEDY)
        raise TypeError(f"no compiled arms for geometry records of class "
                        f"{getattr(geometry, '__name__', geometry)!r} (known: {known})")
    return bindings
