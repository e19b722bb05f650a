"""The geometry registry: each geometry's compiled arms, registered from its own folder.

A set with compiled arms hands compiled stages a *geometry record* (a ``NamedTuple`` of its
data: :class:`~sege_cvx.arm_sets.ellipsoid.arms.EllipsoidGeometry`,
:class:`~sege_cvx.arm_sets.polytope.arms.PolytopeGeometry`,
:class:`~sege_cvx.arm_sets.hull.arms.HullGeometry`, :class:`Unmoved`).  Its class's row,
:class:`GeometryKernels`, says how a stage computes its arms: the greedy arm, the LCB arm, the
pull-in of any point and the pull-in of SEGE's mix.  Each geometry registers its row from its
own module (:func:`register_geometry`), as cvxpy's canonicalizers are keyed by class; a user's
geometry registers the same way.

Compiled stages are written once and call the placeholders :func:`greedy_arm`,
:func:`lcb_arm`, :func:`pull_inside`, :func:`pull_in`, :func:`radial_extent` and
:func:`greedy_arm_within` (with its :func:`within_scratch`).  When the stage loop
(:mod:`sege_cvx.stages.loop`) compiles a policy's hooks for a stage record whose ``geometry``
field holds a geometry record, it binds each placeholder to that class's function
(:func:`arm_bindings`) and numba inlines it.  Each arm returns a status code of :mod:`.status`;
only :data:`~.status.VERIFIED` arms are played.

Why bound when the loop compiles rather than chosen by numba's typing (an ``overload``): a
geometry record passed to a function numba does not inline is copied onto the stack at every
call, which made SEGE's stages on polyhedral sets a fifth slower; and numba's inlining of
overloads mis-compiles this loop (its statistics come out wrong).

``warm`` is the run's warm-start state (a polytope's: ``(rows, counts, points, inverse)``; a
hull's: ``(rows, counts, weights, mix)``); ellipsoids ignore it.  ``mats`` and ``vecs`` are the
arms' scratch, at least :data:`SCRATCH_MATS` matrices and :data:`SCRATCH_VECS` vectors of
dimension ``d``: each geometry names its own rows of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ..._numba import njit
from .status import NOT_CERTIFIED

if TYPE_CHECKING:
    from ..exploration import Exploration

#: The rows of scratch every geometry's arms may use: ``mats`` (5, d, d), ``vecs`` (16, d); a
#: stage's own rows come after them (:data:`sege_cvx.policies.sege_rule.SHIFTED`, ...).
SCRATCH_MATS, SCRATCH_VECS = 5, 16


_UNBOUND = ("a placeholder, bound to a geometry's function when a stage loop compiles "
            "(sege_cvx.stages.loop)")


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
    (:func:`sege_cvx.arm_sets.hull.arms.pull_inside_one`); the other sets by their pull-in."""
    raise NotImplementedError(_UNBOUND)


def pull_in(geometry, x, offset, trial) -> bool:
    """Move any point ``x`` exactly into the set by the least contraction toward its certified
    interior point that passes its exact membership test (:func:`.pull_in.pull_in_one`);
    False, ``x`` unchanged, if none does.  For the geometries whose membership is decided from
    ``x`` alone (a hull's needs the weights of a mix: it has none)."""
    raise NotImplementedError(_UNBOUND)


def radial_extent(geometry, u, h, caps, grads) -> tuple:
    """Along the direction ``u`` (from the origin, inside the set): ``(cap, k)``, ``cap`` the
    largest ``s`` with ``s u`` in the set (in floating point: an arm on the ray is moved in by
    :func:`pull_in` before it is played), and into ``caps[:k]`` and ``grads[:k]`` the smooth
    pieces whose least is ``cap`` as a function of ``u`` (a polytope's: ``b_i / <a_i, u>`` per
    row) and the gradients of their logs, those within a factor ``1 + h (|grad_i| + |grad_0|)``
    of the least, ``caps[0]``: those a step of length ``h`` may make the least.  At most
    ``caps.shape[0]`` pieces; ``k = 0``: the set gives no extent along ``u`` (the origin on its
    boundary, or no radial extent at all).  ROFUL's and GNOP's refinement of their best ray
    follows these pieces (:func:`sege_cvx.policies.directional.refine_update`)."""
    raise NotImplementedError(_UNBOUND)


def greedy_arm_within(geometry, theta, cuts, limit, start, out, work) -> int:
    """The greedy arm over the set cut by the half-spaces ``cuts x <= limit`` (``cuts``: rows),
    ``max theta^T x``, computed from ``start`` (the program's :func:`within_start`, kept by the
    caller from one solve of the program to the next) into ``out``; returns its status.
    :data:`~.status.VERIFIED`: the arm lies in the set exactly and is certified optimal over the
    set and the cuts as computed; the cuts themselves are the caller's to check at the point it
    plays.  ``work``: :func:`within_scratch` of the same number of cuts.  Safe-LUCB's optimistic
    programs (:mod:`sege_cvx.policies.safe_lucb`)."""
    raise NotImplementedError(_UNBOUND)


def within_scratch(geometry, n_cuts):
    """The scratch of :func:`greedy_arm_within` for ``n_cuts`` cuts (a tuple of arrays)."""
    raise NotImplementedError(_UNBOUND)


def within_start(geometry, n_cuts):
    """A fresh ``start`` of one of :func:`greedy_arm_within`'s programs with ``n_cuts`` cuts, a
    1-D array the caller keeps per run and program: a polytope's is the origin (its simplex
    method starts there: a point of the set meeting every cut, the safe arm), a cone set's an
    empty warm-start record that each solve then updates
    (:func:`~sege_cvx.conic.socp.solve_into`)."""
    raise NotImplementedError(_UNBOUND)


def safe_set_arm(geometry, theta, gamma, inv, beta, margin, start, out, work) -> int:
    """The best arm for ``theta`` over the set's part where ``<gamma, x> + beta ||L^{-1} x|| <=
    margin`` (``inv = L^{-1}``): SafeTS's program over the estimated safe set
    (:mod:`sege_cvx.policies.safe_ts`), solved compiled into ``out`` from ``start`` (the
    program's :func:`safe_set_start`, kept by the caller per run from one stage to the next);
    returns its status.  :data:`~.status.VERIFIED`: the arm lies in the set exactly; its bound
    is the caller's to check at the point it plays.  ``work``: :func:`safe_set_scratch`."""
    raise NotImplementedError(_UNBOUND)


def safe_set_scratch(geometry):
    """The scratch of :func:`safe_set_arm` (a tuple of arrays)."""
    raise NotImplementedError(_UNBOUND)


def safe_set_start(geometry):
    """A fresh ``start`` of :func:`safe_set_arm`'s program, a 1-D array the caller keeps per run
    (a cone set's: an empty warm-start record, :func:`~sege_cvx.conic.socp.solve_into`)."""
    raise NotImplementedError(_UNBOUND)


@njit(inline="always")
def no_pull_in(geometry, x, offset, trial) -> bool:
    """:func:`pull_in` of a geometry that registers none (a hull's, a cone set's: their
    membership needs a witness): no point is moved in."""
    return False


@njit(inline="always")
def no_safe_set_arm(geometry, theta, gamma, inv, beta, margin, start, out, work) -> int:
    """:func:`safe_set_arm` of a geometry that registers none: nothing solved."""
    return NOT_CERTIFIED


@njit(inline="always")
def no_safe_set_start(geometry):
    """:func:`safe_set_start` of a geometry that registers none."""
    return np.empty(0)


@njit(inline="always")
def no_safe_set_scratch(geometry):
    """:func:`safe_set_scratch` of a geometry that registers none."""
    return (np.empty((0, 0)),)


@njit(inline="always")
def no_radial_extent(geometry, u, h, caps, grads) -> tuple:
    """:func:`radial_extent` of a geometry that registers none: no extent, no pieces."""
    return 0.0, 0


class Anchors(NamedTuple):
    """What SEGE's mixes ``(1 - rho) X^S + rho U`` are made of, for the geometries that certify a
    mix through its parts (a hull by weights, a cone set by witnesses): the baseline arm, its
    witness on a lifted set (else None), and the exploration ``U`` is drawn from.  A set's
    ``compiled_arms.geometry(lam, anchors)`` reads what it needs of them, and returns None where
    it cannot serve them (the stages then run in Python)."""

    safe_arm: np.ndarray
    safe_witness: np.ndarray | None
    exploration: Exploration


class GeometryKernels(NamedTuple):
    """A geometry's row of the registry: its ``njit(inline="always")`` functions for the
    placeholders (signatures as theirs), ``None`` for one it does not have.

    Attributes
    ----------
    greedy : callable or None
        For :func:`greedy_arm`.
    lcb : callable or None
        For :func:`lcb_arm`.
    pull_in : callable or None
        For :func:`pull_in`: any point moved exactly into the set.
    pull_inside : callable or None
        For :func:`pull_inside`: SEGE's mix moved exactly into the set.
    radial : callable or None
        For :func:`radial_extent`: the extent along a ray and its pieces (None binds
        :func:`no_radial_extent`: ROFUL and GNOP then play their fan's best ray as scanned).
    within, within_scratch, within_start : callable or None
        For :func:`greedy_arm_within`, its scratch, :func:`within_scratch`, and its programs'
        starts, :func:`within_start`: the greedy arm over the set cut by half-spaces (all or
        none; without them Safe-LUCB solves its programs on Clarabel).
    safe_set, safe_set_scratch, safe_set_start : callable or None
        For :func:`safe_set_arm`, its scratch, :func:`safe_set_scratch`, and its program's
        start, :func:`safe_set_start`: SafeTS's program over the estimated safe set (all or
        none; None binds :func:`no_safe_set_arm`, :func:`no_safe_set_scratch` and
        :func:`no_safe_set_start`: SafeTS then solves it on Clarabel).
    """

    greedy: Callable | None = None
    lcb: Callable | None = None
    pull_in: Callable | None = None
    pull_inside: Callable | None = None
    radial: Callable | None = None
    within: Callable | None = None
    within_scratch: Callable | None = None
    within_start: Callable | None = None
    safe_set: Callable | None = None
    safe_set_scratch: Callable | None = None
    safe_set_start: Callable | None = None


#: The placeholder each field of :class:`GeometryKernels` binds.
_PLACEHOLDERS = {"greedy": greedy_arm, "lcb": lcb_arm, "pull_in": pull_in,
                 "pull_inside": pull_inside, "radial": radial_extent,
                 "within": greedy_arm_within, "within_scratch": within_scratch,
                 "within_start": within_start,
                 "safe_set": safe_set_arm, "safe_set_scratch": safe_set_scratch,
                 "safe_set_start": safe_set_start}
_GEOMETRIES: dict[type, GeometryKernels] = {}


def register_geometry(record: type, kernels: GeometryKernels) -> None:
    """Register the compiled arms of the geometry records of class ``record``.

    Parameters
    ----------
    record : type
        A ``NamedTuple`` class (what the set's ``compiled_arms.geometry()`` returns).
    kernels : GeometryKernels
        Its functions.

    Raises
    ------
    TypeError
        If ``record`` is not a ``NamedTuple`` class, ``kernels`` has no function, or ``record``
        already has other kernels (its compiled loops, and their disk cache, belong to them).
    """
    if not (isinstance(record, type) and issubclass(record, tuple) and hasattr(record, "_fields")):
        raise TypeError(f"a geometry record must be a NamedTuple class, got {record!r}")
    if not isinstance(kernels, GeometryKernels) or all(k is None for k in kernels):
        raise TypeError(f"kernels must be a GeometryKernels with at least one function, got "
                        f"{kernels!r}")
    for a, b in (("within", "within_scratch"), ("within", "within_start"),
                 ("safe_set", "safe_set_scratch"), ("safe_set", "safe_set_start")):
        if (getattr(kernels, a) is None) != (getattr(kernels, b) is None):
            raise TypeError(f"kernels.{a} and kernels.{b} come together, got "
                            f"{getattr(kernels, a)!r} and {getattr(kernels, b)!r}")
    if _GEOMETRIES.get(record, kernels) != kernels:
        raise TypeError(f"geometry {record.__name__} already has kernels; define another record "
                        "class for other kernels")
    _GEOMETRIES[record] = kernels


def geometry_kernels(record: type) -> GeometryKernels | None:
    """The registered row of geometry record class ``record`` (None if it has none)."""
    return _GEOMETRIES.get(record)


def has_pull_in(geometry: object) -> bool:
    """Whether the geometry record ``geometry`` moves any point in by itself (:func:`pull_in`):
    compiled stages that play points other than SEGE's mix need it."""
    row = _GEOMETRIES.get(type(geometry))
    return row is not None and row.pull_in is not None


def has_radial_extent(geometry: object) -> bool:
    """Whether the geometry record ``geometry`` gives its extent along a ray
    (:func:`radial_extent`)."""
    row = _GEOMETRIES.get(type(geometry))
    return row is not None and row.radial is not None


def has_greedy_within(geometry: object) -> bool:
    """Whether the geometry record ``geometry`` solves the greedy arm over the set cut by
    half-spaces (:func:`greedy_arm_within`)."""
    row = _GEOMETRIES.get(type(geometry))
    return row is not None and row.within is not None


def has_safe_set_arm(geometry: object) -> bool:
    """Whether the geometry record ``geometry`` solves SafeTS's program over the estimated safe
    set (:func:`safe_set_arm`)."""
    row = _GEOMETRIES.get(type(geometry))
    return row is not None and row.safe_set is not None


def arm_bindings(record: type) -> dict[Callable, Callable]:
    """The functions a compiled stage on geometry records of class ``record`` calls in place of
    the placeholders: the geometry's, and for those it lacks :func:`no_pull_in`,
    :func:`no_radial_extent`, :func:`no_safe_set_arm`, :func:`no_safe_set_scratch` and
    :func:`no_safe_set_start` (a stage
    asks :func:`has_pull_in`, :func:`has_radial_extent`, :func:`has_safe_set_arm` first; the
    others, SEGE's and Safe-LUCB's, are not bound where the geometry lacks them).

    Raises
    ------
    TypeError
        If ``record`` is not a registered geometry record class.
    """
    row = _GEOMETRIES.get(record)
    if row is None:
        known = ", ".join(cls.__name__ for cls in _GEOMETRIES)
        raise TypeError(f"no compiled arms for geometry records of class "
                        f"{getattr(record, '__name__', record)!r} (registered: {known})")
    row = row._replace(pull_in=row.pull_in or no_pull_in, radial=row.radial or no_radial_extent,
                       safe_set=row.safe_set or no_safe_set_arm,
                       safe_set_scratch=row.safe_set_scratch or no_safe_set_scratch,
                       safe_set_start=row.safe_set_start or no_safe_set_start)
    return {_PLACEHOLDERS[field]: function for field, function in row._asdict().items()
            if function is not None}


class Unmoved(NamedTuple):
    """The geometry record of arms played as the stage computes them: a star set's (its arms are
    members by construction, :mod:`sege_cvx.arm_sets.star`), or a set whose arms the policy
    moves in outside the compiled stage.  Its :func:`pull_in` moves nothing."""

    marker: int = 0


@njit(inline="always")
def _unmoved_pull_in(geometry, x, offset, trial):
    return True


register_geometry(Unmoved, GeometryKernels(pull_in=_unmoved_pull_in))
