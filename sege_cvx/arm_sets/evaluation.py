"""Values of a set's cvxpy constraints at given points, without cvxpy's per-call overhead.

cvxpy evaluates ``expr.value`` by walking the expression tree at every call: it first collects
the tree's parameters (to return ``None`` if one has no value), then calls each atom's
``numeric`` on its arguments' values.  Membership tests evaluate the same few expressions at
thousands of points, and that walk costs more than the arithmetic (about 10 us for
``pnorm(x - c, 1.5) <= 1`` at d = 2).  :class:`ConstraintEvaluator` walks each tree once and
keeps a closure per node that calls the same ``numeric`` on the same argument values, so its
values are bitwise cvxpy's: a membership test decides as cvxpy's evaluation does (with the
domains below), only faster.

The atoms' domains (cvxpy's ``Expression.domain``: ``x >= 0`` for ``inv_pos(x)``, ``log(x)``,
...) are checked as well: cvxpy's own ``violation()`` leaves them out, and would report
``inv_pos(x) <= 2`` as holding at ``x = -1``.

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
        ``expr`` of each affine equality ``expr == 0`` (``Equality``, ``Zero``).
    others : list of cvxpy constraints
        Cones and the like, evaluated by cvxpy (``violation()``) after the variables' values
        are set.

    An expression that cannot be compiled (:func:`compile_expression` gives ``None``) is
    evaluated by cvxpy too, and keeps its kind.
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
        # Every check in the constraints' order, as cvxpy's own loop would stop at the first
        # failure: ("<=", expr), ("==", expr) or ("cone", constraint).
        self._checks: list[tuple[str, object]] = []
        # The atoms' domains too: cvxpy evaluates inv_pos(x) at x < 0 as a negative number, so
        # inv_pos(x) <= 2 would hold there; its domain x >= 0 is part of the set (the solver
        # enforces it), and is checked after the constraints themselves.
        domains = [d for c in constraints for arg in c.args for d in arg.domain]
        for c in [*constraints, *domains]:
            kind = ("<=" if type(c) is Inequality
                    else "==" if isinstance(c, Equality | Zero) else "cone")
            if kind == "cone":
                self.others.append(c)
                self._checks.append((kind, c))
                continue
            f = compile_expression(c.expr, slots) or self._by_cvxpy(c.expr)
            (self.inequalities if kind == "<=" else self.equalities).append(f)
            self._checks.append((kind, f))

    def _by_cvxpy(self, expr: cp.Expression) -> Evaluate:
        def evaluate(values: Sequence[np.ndarray]) -> np.ndarray:
            self.load(values)
            return np.asarray(expr.value)
        return evaluate

    def load(self, values: Sequence[np.ndarray]) -> None:
        """Set the cvxpy variables' values (for :attr:`others`), without cvxpy's checks."""
        for v, value in zip(self.variables, values, strict=True):
            v.save_value(value)

    def equality_residuals(self, values: Sequence[np.ndarray]) -> np.ndarray:
        """The equalities' residuals, each flattened column-major, concatenated."""
        parts = [np.asarray(f(values), dtype=np.float64).ravel(order="F")
                 for f in self.equalities]
        return np.concatenate(parts) if parts else np.empty(0)

    def holds(self, values: Sequence[np.ndarray], tol: float) -> bool:
        """Whether every constraint holds within ``tol >= 0`` (cvxpy's ``violation() <= tol``;
        an equality's violation is ``|expr|``), checked in the constraints' order."""
        return self._hold(values, tol, equalities=True)

    def inequalities_hold(self, values: Sequence[np.ndarray], tol: float) -> bool:
        """:meth:`holds` for the inequalities and cones alone (a lifted set checks its
        equalities with their rounding bound, :mod:`.lifted`)."""
        return self._hold(values, tol, equalities=False)

    def _hold(self, values: Sequence[np.ndarray], tol: float, equalities: bool) -> bool:
        # An inequality's violation() is max(expr, 0); with tol >= 0, max(expr, 0) <= tol exactly
        # when expr <= tol.  (A loop: this runs for every point tested.)
        loaded = False
        for kind, check in self._checks:
            if kind == "<=":
                ok = (check(values) <= tol).all()
            elif kind == "==":
                if not equalities:
                    continue
                ok = (np.abs(check(values)) <= tol).all()
            else:
                if not loaded:
                    self.load(values)
                    loaded = True
                ok = np.all(check.violation() <= tol)
            if not ok:
                return False
        return True

    def margins(self, values: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The inequalities' values at a point (at an interior point: minus their margins)."""
        return [np.asarray(f(values), dtype=np.float64) for f in self.inequalities]

    def contraction_start(self, values: Sequence[np.ndarray], center: list[np.ndarray]) -> float:
        """The contraction toward an interior point ``c`` that makes every inequality hold, by
        convexity, for a start of the pull-in's search
        (:func:`sege_cvx.arm_sets.kernels.pull_in.least_contraction`).

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
