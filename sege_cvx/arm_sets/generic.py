"""Arm sets given by any cvxpy constraints (any compact DCP-representable convex set).

cvxpy is imported by the methods that use it, so that importing the arm sets does not load it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from .._validation import as_positive_int, format_value
from .base import ArmSet, BatchArms
from .evaluation import ConstraintEvaluator
from .exploration import Exploration, inscribed_cross_polytope
from .lifted import LiftedMembership, plain_constraints
from .scaling import check_box_holds, scale_directions, solver_frame

if TYPE_CHECKING:
    import cvxpy as cp

    from ..conic.compiled import CompiledConicProgram
    from .cone.arms import ConeArms

#: Largest dimension accepted: the set's programs hold ``d x d`` data and its bounding box takes
#: ``2 d`` solves, so far smaller dimensions are already slow; this only rejects absurd values.
MAX_DIM = 10_000


class ConvexArmSet(ArmSet):
    """``{x in R^dim : constraints(x)}`` for a user function returning cvxpy constraints.

    The constraints must be DCP, with no boolean, integer or complex variables; the
    set must be bounded with a nonempty interior (checked at construction: ``2 * dim`` linear
    programs, and an inscribed cross-polytope whose vertices are verified, which SEGE then
    explores on).  Its extent must be at least
    :data:`~sege_cvx.arm_sets.exploration.MIN_SOLVER_SCALE` times ``max(1, |x|)`` on it, or the
    solver's tolerances cannot certify it (the error says so: rescale).

    Constraints may create auxiliary variables (a *lifted* set ``{x : exists u, (x, u) in K}``:
    a convex hull by weights, an epigraph, a Minkowski sum), provided each call of
    ``constraints`` creates its own (define them inside the function).  They may be declared as
    cvxpy users declare them, with attributes (``cp.Variable(k, nonneg=True)``, ``nonpos``,
    ``pos``, ``neg``, ``bounds=``, ``symmetric``, ``diag``, ``PSD``, ``NSD``): each is restated as
    the constraints it means (:func:`~sege_cvx.arm_sets.lifted.plain_constraints`).  A
    ``cp.Parameter`` stands for its value when the set is built.  Every arm is then
    certified with a witness ``u`` (``witness_dim`` values, :mod:`.lifted`): a solver's arm with
    the auxiliary values it came with, a convex combination of arms with the same combination
    of their witnesses.  ``contains(x)`` for an arbitrary point first finds a witness by a small
    solve (``min ||x' - x||_1`` over the set), then certifies ``(x, u)``: membership of a lifted
    set is decided by that solve, within its tolerance (a point on the boundary may be reported
    outside at ``tol=0`` when the solver's witness misses it by rounding).  Affine equalities
    hold to their floating-point rounding bound (see :mod:`.lifted`).

    The set pickles with the standard library if ``constraints`` does (a module-level
    function); a lambda or closure needs ``cloudpickle`` (as used by Dask).

    Parameters
    ----------
    dim : int
        Dimension ``d``, at most :data:`MAX_DIM`.
    constraints : callable
        ``constraints(x) -> list`` of cvxpy constraints, for ``x`` a cvxpy variable or affine
        expression of shape ``(dim,)``; auxiliary variables, if any, created inside.
    compiled : bool, default False
        Solve the greedy and LCB programs of a set of second-order cones by the compiled,
        certified cone programs of :mod:`sege_cvx.arm_sets.cone`: SEGE's stages then run
        compiled, 3-10x faster per run-stage than with Clarabel, and ``lcb_arm(method=
        "closed_form")`` is that program.  Their first compilation on a machine takes about
        20 s (numba's disk cache keeps them), hence not the default.  Ignored for sets that
        need other cones.

    Attributes
    ----------
    witness_dim : int
        Total size of the auxiliary variables (0 for constraints in ``x`` alone).

    Raises
    ------
    TypeError
        ``dim`` not an integer, ``constraints`` not callable or not returning constraints,
        ``compiled`` not a bool.
    ValueError
        Constraints that are not convex (DCP), use boolean, integer or complex variables,
        auxiliary variables shared between calls, or Parameters without a value, or fail for
        ``x`` of shape ``(dim,)``; a
        set that is empty, unbounded, without interior, or too small for the solver's
        tolerances.

    Examples
    --------
    >>> import cvxpy as cp, numpy as np
    >>> l15 = ConvexArmSet(2, lambda x: [cp.pnorm(x, 1.5) <= 1])
    >>> np.round(l15.greedy_arm([1.0, 0.0]), 5)
    array([1., 0.])

    A lifted set, the epigraph form of the l1 ball of radius 1.5 (witness ``t``):

    >>> def l1_epigraph(x):
    ...     t = cp.Variable()
    ...     return [cp.norm1(x) <= t, t <= 1.5]
    >>> l1 = ConvexArmSet(2, l1_epigraph)
    >>> l1.witness_dim, np.round(l1.greedy_arm([1.0, 0.2]), 5)
    (1, array([1.5, 0. ]))
    >>> bool(l1.contains([0.7, 0.7])), bool(l1.contains([0.8, 0.8]))
    (True, False)
    """

    # The membership expressions and the witness program are rebuilt after loading.
    _UNPICKLED_CACHES = (*ArmSet._UNPICKLED_CACHES, "_membership", "_center_margins",
                         "_center_pair_margins", "_lifted", "_witness_program", "_cone_arms",
                         "compiled_arms")

    def __init__(self, dim: int, constraints: Callable[[cp.Variable], list], *,
                 compiled: bool = False) -> None:

        self.dim = as_positive_int("dim", dim)
        if not isinstance(compiled, bool):
            raise TypeError(f"compiled must be True or False, got {format_value(compiled)}")
        self.compiled = compiled
        if not callable(constraints):
            raise TypeError(f"constraints must be callable x -> list of constraints, "
                            f"got {type(constraints).__name__}")
        if self.dim > MAX_DIM:
            raise ValueError(f"dim must be at most {MAX_DIM}, got {self.dim}")
        self._constraint_fn = constraints
        self._certify_construction()

    def _certify_construction(self) -> None:
        """Check the constraints and certify the set's bounds and exploration body (ValueError
        or TypeError otherwise); ``self.dim`` and :meth:`constraints` are set up."""
        import cvxpy as cp

        x = cp.Variable(self.dim)
        cons = self.constraints(x)
        self.witness_dim = self._check_variables(x, cons, self.constraints(cp.Variable(self.dim)))
        self._check_constants(cons)
        problem = cp.Problem(cp.Minimize(0), cons)
        if not problem.is_dcp():
            raise ValueError("constraints must follow the DCP rules (be convex as written)")
        self.bounding_box()  # raises ValueError if empty, unbounded or too small to certify
        self.diameter_bound()  # raises ValueError if not representable
        self.norm_bound()
        # exploration(): ValueError if the interior is empty; its vertices are verified points.
        check_box_holds(self, self.exploration().vertices())

    def __repr__(self) -> str:
        name = getattr(self._constraint_fn, "__name__", type(self._constraint_fn).__name__)
        flag = ", compiled=True" if self.compiled else ""
        return f"ConvexArmSet(dim={self.dim}, constraints={name}{flag})"

    def fingerprint_data(self) -> dict:
        """The canonical cone program (see :meth:`ArmSet.fingerprint_data`), and ``compiled``
        where set: its arms differ from Clarabel's by up to 1e-7 of the objective."""
        data = super().fingerprint_data()
        return {**data, "compiled": True} if self.compiled else data

    @staticmethod
    def _check_variables(x: cp.Variable, cons: list, again: list) -> int:
        """The witness size: the total size of the auxiliary variables (variables other than
        ``x``).  ``again`` is a second call's constraints: each call must create its own
        auxiliary variables (the programs hold several copies of the set, each with its own).

        Raises
        ------
        ValueError
            A boolean or integer auxiliary variable (the set would not be convex), one with an
            unsupported attribute, or auxiliary variables shared between calls.
        """
        from ..conic.programs import auxiliary_variables
        from .lifted import check_auxiliary

        aux = auxiliary_variables(cons, [x])
        check_auxiliary(aux)
        others = auxiliary_variables(again, [])
        shared = {v.id for v in aux} & {v.id for v in others}
        if shared:
            v = next(v for v in aux if v.id in shared)
            raise ValueError(f"the auxiliary variable {v.name()} {v.shape} is shared by every call "
                             "of constraints(x): create auxiliary variables inside the function, "
                             "so that each call has its own")
        return sum(v.size for v in aux)

    @staticmethod
    def _check_constants(cons: list) -> None:
        """Reject NaN and infinite data: cvxpy accepts them, and the solver then fails obscurely."""
        for c in cons:
            for const in c.constants():
                value = const.value
                data = value.data if hasattr(value, "tocoo") else np.asarray(value)  # sparse or dense
                if np.issubdtype(np.asarray(data).dtype, np.number) and not np.all(np.isfinite(data)):
                    raise ValueError("constraints must have finite data; the constraint "
                                     f"{format_value(str(c))} holds a non-finite constant")

    def constraints(self, x: cp.Variable) -> list:
        import cvxpy as cp

        try:
            cons = self._constraint_fn(x)
        except Exception as exc:  # the user's function; say which call failed, and how
            raise ValueError(f"constraints(x) raised {type(exc).__name__} for x of shape (dim,) = "
                             f"({self.dim},): {exc}") from exc
        if isinstance(cons, cp.constraints.constraint.Constraint):
            cons = [cons]
        if not isinstance(cons, list | tuple) or not cons or not all(
                isinstance(c, cp.constraints.constraint.Constraint) for c in cons):
            raise TypeError("constraints(x) must return a nonempty list of cvxpy constraints, "
                            f"got {format_value(cons)}")
        return plain_constraints(list(cons), x)

    def exploration(self) -> Exploration:
        """An inscribed cross-polytope, certified (its ``2d`` vertices verified in the set),
        computed in coordinates centred and scaled by the bounding box where needed
        (:func:`~sege_cvx.arm_sets.scaling.solver_frame`)."""
        return self._scaled_cross_polytope

    @cached_property
    def _scaled_cross_polytope(self) -> Exploration:
        lo, hi = self.bounding_box()
        try:
            return inscribed_cross_polytope(
                self.dim, self.constraints, self.contains, frame=solver_frame(lo, hi),
                size=self.diameter_bound(), certify=self._certify_pair if self.witness_dim else None,
                find_witness=lambda x: self._find_witnesses(x[None])[0])
        except ValueError as exc:  # say which set
            raise ValueError(f"{self!r}: {exc}") from None

    @cached_property
    def _cone_arms(self) -> ConeArms | None:
        """The set's rows as certified cone data (:class:`~sege_cvx.arm_sets.cone.arms.ConeArms`)
        where the constraints' canonical form uses only the zero, nonnegative and second-order
        cones; None otherwise (exponential, power or semidefinite cones)."""
        from ..conic.cone_form import UnsupportedCone, cone_form
        from .cone.arms import ConeArms

        try:
            return ConeArms(cone_form(self.dim, self.constraints))
        except UnsupportedCone:
            return None

    @cached_property
    def compiled_arms(self) -> ConeArms | None:
        """With ``compiled=True``, the compiled, certified arms of :mod:`sege_cvx.arm_sets.cone`
        where the constraints' canonical form uses only the zero, nonnegative and second-order
        cones (SEGE's stages then run compiled); None otherwise (exponential, power or
        semidefinite cones keep the Clarabel path)."""
        return self._cone_arms if self.compiled else None

    @property
    def has_closed_form_lcb(self) -> bool:
        """True on a set of second-order cones: ``lcb_arm(method="closed_form")`` is then its
        compiled, certified cone program (:attr:`compiled_arms`), cross-checkable against
        Clarabel (``cross_check=True``)."""
        return self.compiled_arms is not None

    def lcb_arm_batch(self, thetas: np.ndarray, chols: np.ndarray, radii: np.ndarray,
                      method: str = "auto") -> BatchArms:
        """LCB arms: on a set of second-order cones the compiled, certified cone program
        (``"closed_form"``; with ``"auto"`` an instance it cannot certify is solved on Clarabel),
        else and with ``"solver"`` Clarabel's (see :class:`~sege_cvx.arm_sets.base.ArmSet`)."""
        compiled = self.compiled_arms
        if method == "solver" or compiled is None:
            return super().lcb_arm_batch(thetas, chols, radii, method)
        solves = compiled.lcb_all(thetas, chols, radii)
        arms, pairs, codes = solves.arms, solves.pairs, solves.codes
        return self._certified_or_solved(
            arms, codes, np.ascontiguousarray(pairs[:, compiled.form.witness_cols]), method,
            lambda rows: super(ConvexArmSet, self).lcb_arm_batch(
                thetas[rows], chols[rows], radii[rows], "solver"))

    # ----------------------------------------------------------------- lifted sets
    @cached_property
    def _lifted(self) -> LiftedMembership:
        lifted = LiftedMembership(self.dim, self.constraints)
        if lifted.witness_dim != self.witness_dim:
            raise ValueError(f"constraints(x) created auxiliary variables of total size "
                             f"{lifted.witness_dim}, earlier {self.witness_dim}: they must not "
                             "depend on the call")
        return lifted

    @cached_property
    def _witness_program(self) -> CompiledConicProgram:
        from ..conic.programs import witness_program

        return witness_program(self.dim, self.constraints)

    def _greedy_points_unverified(self, thetas: np.ndarray) -> np.ndarray:
        """Clarabel's greedy points as solved, not moved into the set: their values are as
        accurate (about 1e-8) without the exact proof of membership, a witness solve or two per
        point (see ``ArmSet._greedy_points_unverified``)."""
        program = self._greedy_program
        return np.array([program.solve(theta).x for theta in scale_directions(thetas)],
                        dtype=np.float64).reshape(-1, self.dim)

    def _pull_in_with(self, points: np.ndarray, witnesses: np.ndarray) -> np.ndarray:
        # A set of second-order cones: moved in until contains(tol=0) proves it, with a witness
        # of the canonical form's own (ConeArms.pull_in); the user's part of it is returned.
        cone = self._cone_arms
        if cone is None:
            return super()._pull_in_with(points, witnesses)
        ok, pairs = cone.pull_in(points)
        if self.witness_dim:
            witnesses[ok] = pairs[np.ix_(ok, cone.form.witness_cols)]
        return ok

    def _certify_pair(self, x: np.ndarray, u: np.ndarray, tol: float) -> tuple[bool, np.ndarray]:
        # tol = 0 on a set of second-order cones: proven exactly, with a witness of its own
        # (the canonical form's auxiliaries), of which the user's part is returned.
        cone = self._cone_arms if tol == 0.0 else None
        if cone is None:
            return self._lifted.certify(x, u, tol)
        inside, pairs = cone.contains(np.asarray(x, dtype=np.float64)[None])
        return bool(inside[0]), (pairs[0, cone.form.witness_cols] if inside[0] else u)

    def _pair_contraction_start(self, x: np.ndarray, u: np.ndarray) -> float:
        return self._lifted.contraction_start(x, u, self._center_pair_margins)

    @cached_property
    def _center_pair_margins(self) -> list[np.ndarray]:
        expl = self.exploration()
        return self._lifted.evaluator.margins(self._lifted.values(expl.center,
                                                                  expl.center_witness))

    def _find_witnesses(self, points: np.ndarray) -> np.ndarray:
        """A witness per row from :func:`~sege_cvx.conic.programs.witness_program` (NaN rows for
        non-finite points and failed solves)."""
        out = np.full((points.shape[0], self.witness_dim), np.nan)
        for i in np.flatnonzero(np.isfinite(points).all(axis=1)):
            try:
                out[i] = self._witness_program.solve(points[i]).aux
            except Exception:  # a failed solve leaves no witness: the point is not certified
                continue
        return out

    def _inside(self, xs: np.ndarray, tol: float) -> np.ndarray:
        # tol = 0 on a set of second-order cones: exact (ConeArms.contains), for the points
        # that the float evaluation accepts (the others are not proven, and a witness solve
        # costs 50-100 times the evaluation).
        cone = self._cone_arms if tol == 0.0 else None
        if cone is not None:
            inside = np.zeros(xs.shape[0], dtype=bool)
            rows = np.flatnonzero(self._float_inside(xs)) if not self.witness_dim else \
                np.arange(xs.shape[0])
            inside[rows] = cone.contains(xs[rows])[0]
            return inside
        if self.witness_dim:
            witnesses = self._find_witnesses(xs)
            return np.array([self._certify_pair(x, u, tol)[0]
                             for x, u in zip(xs, witnesses, strict=True)], dtype=bool)
        return self._float_inside(xs, tol)

    def _float_inside(self, xs: np.ndarray, tol: float = 0.0) -> np.ndarray:
        """The constraints (no auxiliaries) evaluated in floating point at each row, with
        ``tol``."""
        holds = self._membership.holds
        return np.array([bool(np.isfinite(x).all()) and holds((x,), tol) for x in xs], dtype=bool)

    def _contraction_start(self, x: np.ndarray) -> float:
        # Convexity bounds the contraction the inequalities need (ConstraintEvaluator).
        start = self._membership.contraction_start((x,), self._center_margins)
        return 0.0 if np.isnan(start) else start

    @cached_property
    def _membership(self) -> ConstraintEvaluator:
        import cvxpy as cp

        # Built once: constructing cvxpy expressions costs far more than evaluating them.
        var = cp.Variable(self.dim)
        return ConstraintEvaluator(self.constraints(var), [var])

    @cached_property
    def _center_margins(self) -> list[np.ndarray]:
        return self._membership.margins((self.exploration().center,))
