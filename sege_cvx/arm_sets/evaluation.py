"""Values of a set's cvxpy constraints at given points, without cvxpy's per-call overhead.

cvxpy evaluates ``expr.value`` by walking the expression tree at every call: it first collects
the tree's parameters (to return ``None`` if one has no value), then calls each atom's
``numeric`` on its arguments' values.  Membership tests evaluate the same few expressions at
thousands of points, and that walk costs more than the arithmetic (about 10 us for
``pnorm(x - c, 1.5) <= 1`` at d = 2).  :class:`ConstraintEvaluator` walks each tree once and
keeps a closure per node that calls the same ``numeric`` on the same argument values, so its
values are bitwise cvxpy's: the decision of a membership test is unchanged, only its cost.

Atoms that override cvxpy's evaluation (``value`` or ``_value_impl``: ``lambda_max``,
``log_det``, ``suppfunc``, ...) and constraints other than affine equalities and ``expr <= 0``
inequalities (cones: ``SOC``, ``PSD``, ``ExpCone``, ...) are evaluated by cvxpy itself, with the
variables' values set first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import cvxpy as cp

#: A compiled expression: the variables' values (in the evaluator's order) -> its value.
Evaluate = Callable[[Sequence[np.ndarray]], np.ndarray]


def compile_expression(expr: cp.Expression, slots: dict[int, int]) -> Evaluate | None:
    """``expr``'s value as a function of its variables' values, or ``None`` if part of the tree
    must be evaluated by cvxpy (an atom with its own evaluation, or an unknown variable).

    Parameters
    ----------
    expr : cvxpy Expression
    slots : dict
        Variable id -> position of its value in the sequence the function is called with.
    """
    from cvxpy.atoms.atom import Atom
    from cvxpy.expressions.leaf import Leaf
    from cvxpy.expressions.variable import Variable

    if isinstance(expr, Variable):
        if expr.id not in slots:
            return None
        k = slots[expr.id]
        return lambda values: values[k]
    if isinstance(expr, Leaf):  # constants (a set's Parameters are constants by now)
        value = expr.value
        return None if value is None else (lambda values: value)
    if (not isinstance(expr, Atom) or type(expr).value is not Atom.value
            or type(expr)._value_impl is not Atom._value_impl or 0 in expr.shape):
        return None
    if not expr.variables():  # what cvxpy would recompute at every call
        value = expr.value
        return None if value is None else (lambda values: value)
    children = [compile_expression(arg, slots) for arg in expr.args]
    if any(child is None for child in children):
        return None
    numeric = expr.numeric
    if len(children) == 1:
        only = children[0]
        return lambda values: numeric([only(values)])
    return lambda values: numeric([child(values) for child in children])


class ConstraintEvaluator:
    """Exact membership tests of points in ``{z : constraints(z)}``, evaluated as cvxpy does.

    Parameters
    ----------
    constraints : list of cvxpy constraints
    variables : list of cvxpy Variable
        Every variable the constraints use, in the order their values are given.

    Attributes
    ----------
    inequalities : list of Evaluate
        ``expr`` of each ``expr <= 0`` constraint (cvxpy's ``Inequality.expr``, ``lhs - rhs``).
    equalities : list of Evaluate
        ``expr`` of each affine equality ``expr == 0``.
    others : list of cvxpy constraints
        Those evaluated by cvxpy (``violation()``), after the variables' values are set.
    """

    def __init__(self, constraints: Sequence[cp.Constraint],
                 variables: Sequence[cp.Variable]) -> None:
        from cvxpy.constraints.nonpos import Inequality
        from cvxpy.constraints.zero import Equality, Zero

        self.variables = list(variables)
        slots = {v.id: k for k, v in enumerate(self.variables)}
        self.inequalities: list[Evaluate] = []
        self.equalities: list[Evaluate] = []
        self.others: list = []
        for c in constraints:
            kind = (self.inequalities if type(c) is Inequality
                    else self.equalities if isinstance(c, Equality | Zero) else None)
            compiled = None if kind is None else compile_expression(c.expr, slots)
            if compiled is None:
                self.others.append(c)
            else:
                kind.append(compiled)

    def load(self, values: Sequence[np.ndarray]) -> None:
        """Set the cvxpy variables' values (for :attr:`others`), without cvxpy's checks."""
        for v, value in zip(self.variables, values, strict=True):
            v.save_value(value)

    def equality_residuals(self, values: Sequence[np.ndarray]) -> np.ndarray:
        """The equalities' residuals, each flattened column-major, concatenated."""
        parts = [np.asarray(f(values), dtype=np.float64).ravel(order="F")
                 for f in self.equalities]
        return np.concatenate(parts) if parts else np.empty(0)

    def inequalities_hold(self, values: Sequence[np.ndarray], tol: float) -> bool:
        """Whether every inequality and every other constraint holds within ``tol >= 0``."""
        # An inequality's violation() is max(expr, 0); with tol >= 0, max(expr, 0) <= tol exactly
        # when expr <= tol.  (A loop: this runs for every point tested.)
        for f in self.inequalities:
            if not (f(values) <= tol).all():
                return False
        if self.others:
            self.load(values)
            return all(np.all(c.violation() <= tol) for c in self.others)
        return True

    def margins(self, values: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The inequalities' values at a point (at an interior point: minus their margins)."""
        return [np.asarray(f(values), dtype=np.float64) for f in self.inequalities]

    def contraction_start(self, values: Sequence[np.ndarray], center: list[np.ndarray]) -> float:
        """The contraction toward an interior point ``c`` that makes every inequality hold, by
        convexity, for a start of the pull-in's search (:func:`sege_cvx._pull_in.least_contraction`).

        For a convex ``g`` with ``g(z) = v > 0`` and ``g(c) = -m < 0``, ``g(c + (1 - eps)(z - c))
        <= (1 - eps) v - eps m <= 0`` once ``eps >= v / (v + m)``: the largest such value over the
        violated entries.  0 when none is violated; ``nan`` when it cannot say (a violated entry
        with ``m <= 0``, or constraints that cvxpy evaluates).

        Parameters
        ----------
        values : sequence of ndarray
            The point's variables' values.
        center : list of ndarray
            :meth:`margins` at ``c``.
        """
        if self.others:
            return np.nan
        need = 0.0
        for f, at_center in zip(self.inequalities, center, strict=True):
            v = np.asarray(f(values), dtype=np.float64)
            bad = ~(v <= 0)  # NaN counts as violated
            if not bad.any():
                continue
            v = v[bad] if v.ndim else v
            m = -(np.broadcast_to(at_center, bad.shape)[bad] if bad.ndim else at_center)
            if not (np.isfinite(v).all() and np.all(m > 0)):
                return np.nan
            need = max(need, float(np.max(v / (v + m))))
        return need
