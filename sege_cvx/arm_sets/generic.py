"""Arm sets given by any cvxpy constraints (any compact DCP-representable convex set)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property

import cvxpy as cp
import numpy as np

from .._validation import as_positive_int
from .base import ArmSet


class ConvexArmSet(ArmSet):
    """``{x in R^dim : constraints(x)}`` for a user function returning cvxpy constraints.

    The constraints must be DCP and parameter-free; the set must be bounded with a nonempty
    interior (checked at construction: ``2 * dim`` linear programs, and an inscribed
    cross-polytope whose vertices are verified, which SEGE then explores on).

    The set pickles with the standard library if ``constraints`` does (a module-level
    function); a lambda or closure needs ``cloudpickle`` (as used by Dask).

    Parameters
    ----------
    dim : int
        Dimension ``d``.
    constraints : callable
        ``constraints(x: cvxpy.Variable) -> list`` of cvxpy constraints.

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
        self.dim = as_positive_int("dim", dim)
        if not callable(constraints):
            raise TypeError(f"constraints must be callable x -> list of constraints, "
                            f"got {type(constraints).__name__}")
        self._constraint_fn = constraints
        x = cp.Variable(self.dim)
        cons = self.constraints(x)
        problem = cp.Problem(cp.Minimize(0), cons)
        if not problem.is_dcp():
            raise ValueError("constraints must follow the DCP rules")
        if problem.parameters():
            raise ValueError("constraints must not contain cvxpy Parameters")
        self.bounding_box()  # raises ValueError if empty or unbounded
        self.exploration()  # raises ValueError if the interior is empty

    def constraints(self, x: cp.Variable) -> list:
        cons = self._constraint_fn(x)
        if isinstance(cons, cp.constraints.constraint.Constraint):
            cons = [cons]
        if not isinstance(cons, list | tuple) or not cons or not all(
                isinstance(c, cp.constraints.constraint.Constraint) for c in cons):
            raise TypeError("constraints(x) must return a nonempty list of cvxpy constraints, "
                            f"got {cons!r}")
        return list(cons)

    def _inside(self, xs: np.ndarray, tol: float) -> np.ndarray:
        var, cons = self._membership
        inside = np.zeros(xs.shape[0], dtype=bool)
        for i, row in enumerate(xs):
            if np.all(np.isfinite(row)):
                var.value = row
                inside[i] = all(np.all(c.violation() <= tol) for c in cons)
        return inside

    @cached_property
    def _membership(self) -> tuple[cp.Variable, list]:
        # Built once: constructing cvxpy expressions costs far more than evaluating them.
        var = cp.Variable(self.dim)
        return var, self.constraints(var)
