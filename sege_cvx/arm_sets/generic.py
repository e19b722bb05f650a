"""Arm sets given by any cvxpy constraints (any compact DCP-representable convex set).

cvxpy is imported by the methods that use it, so that importing the arm sets does not load it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from .._validation import _fmt, as_positive_int
from .base import ArmSet
from .exploration import Exploration, inscribed_cross_polytope
from .scaling import check_box_holds, solver_frame

if TYPE_CHECKING:
    import cvxpy as cp

#: Largest dimension accepted: the set's programs hold ``d x d`` data and its bounding box takes
#: ``2 d`` solves, so far smaller dimensions are already slow; this only rejects absurd values.
MAX_DIM = 10_000


class ConvexArmSet(ArmSet):
    """``{x in R^dim : constraints(x)}`` for a user function returning cvxpy constraints.

    The constraints must be DCP and parameter-free, in the variable ``x`` only (no boolean or
    integer variables, and no auxiliary variables yet); the set must be bounded with a nonempty
    interior (checked at construction: ``2 * dim`` linear programs, and an inscribed
    cross-polytope whose vertices are verified, which SEGE then explores on).  Its extent must
    be at least :data:`~sege_cvx.arm_sets.exploration.MIN_SOLVER_SCALE` times ``max(1, |x|)``
    on it, or the solver's tolerances cannot certify it (the error says so: rescale).

    The set pickles with the standard library if ``constraints`` does (a module-level
    function); a lambda or closure needs ``cloudpickle`` (as used by Dask).

    Parameters
    ----------
    dim : int
        Dimension ``d``, at most :data:`MAX_DIM`.
    constraints : callable
        ``constraints(x) -> list`` of cvxpy constraints, for ``x`` a cvxpy variable or affine
        expression of shape ``(dim,)``.

    Raises
    ------
    TypeError
        ``dim`` not an integer, ``constraints`` not callable or not returning constraints.
    ValueError
        Constraints that are not convex (DCP) or use other variables, Parameters, or fail for
        ``x`` of shape ``(dim,)``; a set that is empty, unbounded, without interior, or too
        small for the solver's tolerances.

    Examples
    --------
    >>> import cvxpy as cp, numpy as np
    >>> l15 = ConvexArmSet(2, lambda x: [cp.pnorm(x, 1.5) <= 1])
    >>> np.round(l15.greedy_arm([1.0, 0.0]), 5)
    array([1., 0.])
    """

    # The membership expressions are rebuilt from the constraint function after loading.
    _UNPICKLED_CACHES = (*ArmSet._UNPICKLED_CACHES, "_membership")

    def __init__(self, dim: int, constraints: Callable[[cp.Variable], list]) -> None:
        import cvxpy as cp

        self.dim = as_positive_int("dim", dim)
        if not callable(constraints):
            raise TypeError(f"constraints must be callable x -> list of constraints, "
                            f"got {type(constraints).__name__}")
        if self.dim > MAX_DIM:
            raise ValueError(f"dim must be at most {MAX_DIM}, got {self.dim}")
        self._constraint_fn = constraints
        x = cp.Variable(self.dim)
        cons = self.constraints(x)
        self._check_variables(x, cons)
        self._check_constants(cons)
        problem = cp.Problem(cp.Minimize(0), cons)
        if not problem.is_dcp():
            raise ValueError("constraints must follow the DCP rules (be convex as written)")
        if problem.parameters():
            raise ValueError("constraints must not contain cvxpy Parameters")
        self.bounding_box()  # raises ValueError if empty, unbounded or too small to certify
        self.diameter_bound()  # raises ValueError if not representable
        self.norm_bound()
        # exploration(): ValueError if the interior is empty; its vertices are verified points.
        check_box_holds(self, self.exploration().vertices())

    def __repr__(self) -> str:
        name = getattr(self._constraint_fn, "__name__", type(self._constraint_fn).__name__)
        return f"ConvexArmSet(dim={self.dim}, constraints={name})"

    @staticmethod
    def _check_variables(x: cp.Variable, cons: list) -> None:
        """Reject variables other than ``x``: integer ones make the set nonconvex, and the
        compiled programs and membership tests are written for ``x`` alone."""
        others = [v for c in cons for v in c.variables() if v.id != x.id]
        for v in others:
            kinds = [k for k in ("boolean", "integer") if v.attributes.get(k)]
            if kinds:
                raise ValueError(f"ConvexArmSet constraints must be convex: variable {v.name()} "
                                 f"is {'/'.join(kinds)}")
        if others:
            raise ValueError(f"ConvexArmSet constraints use the auxiliary variable {others[0].name()}"
                             f" {others[0].shape}: auxiliary variables are not supported yet, only "
                             "the variable x passed in")

    @staticmethod
    def _check_constants(cons: list) -> None:
        """Reject NaN and infinite data: cvxpy accepts them, and the solver then fails obscurely."""
        for c in cons:
            for const in c.constants():
                value = const.value
                data = value.data if hasattr(value, "tocoo") else np.asarray(value)  # sparse or dense
                if np.issubdtype(np.asarray(data).dtype, np.number) and not np.all(np.isfinite(data)):
                    raise ValueError("constraints must have finite data; the constraint "
                                     f"{_fmt(str(c))} holds a non-finite constant")

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
                            f"got {_fmt(cons)}")
        return list(cons)

    def exploration(self) -> Exploration:
        """An inscribed cross-polytope, certified (its ``2d`` vertices verified in the set),
        computed in coordinates centred and scaled by the bounding box where needed
        (:func:`~sege_cvx.arm_sets.scaling.solver_frame`)."""
        return self._scaled_cross_polytope

    @cached_property
    def _scaled_cross_polytope(self) -> Exploration:
        lo, hi = self.bounding_box()
        try:
            return inscribed_cross_polytope(self.dim, self.constraints, self.contains,
                                            frame=solver_frame(lo, hi), size=self.diameter_bound())
        except ValueError as exc:  # say which set
            raise ValueError(f"{self!r}: {exc}") from None

    def _inside(self, xs: np.ndarray, tol: float) -> np.ndarray:
        from cvxpy.constraints.nonpos import Inequality

        var, cons = self._membership
        inside = np.zeros(xs.shape[0], dtype=bool)
        for i in np.flatnonzero(np.isfinite(xs).all(axis=1)):
            # What the value setter would store (a finite float64 vector of the variable's shape,
            # which has no attributes to project onto), without its checks.
            var.save_value(xs[i])
            # An inequality's violation() is max(expr, 0), evaluating expr twice; with tol >= 0,
            # max(expr, 0) <= tol exactly when expr <= tol.
            inside[i] = all(np.all(c.expr.value <= tol) if type(c) is Inequality
                            else np.all(c.violation() <= tol) for c in cons)
        return inside

    @cached_property
    def _membership(self) -> tuple[cp.Variable, list]:
        import cvxpy as cp

        # Built once: constructing cvxpy expressions costs far more than evaluating them.
        var = cp.Variable(self.dim)
        return var, self.constraints(var)
