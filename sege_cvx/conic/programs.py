"""The two convex programs an arm set is asked to solve, built from its cvxpy constraints.

* Greedy arm (paper eq. (greedy arm) for a general set): ``max_x <x, theta>`` s.t. ``x in X``,
  a linear (or conic, for a conic set) program.
* LCB arm (paper eq. (lcb arm)): ``max_x <x, theta_hat> - r ||x||_{V^{-1}}`` s.t. ``x in X``, an
  SOCP.  Writing ``V^{-1} = P P^T`` (Cholesky), ``r ||x||_{V^{-1}} = ||M x||`` with ``M = r P^T``,
  so the data ``(theta_hat, M)`` enters affinely (DPP) and the program compiles once.
* Membership witness (lifted sets): ``min_{x, u} ||x - p||_1`` s.t. ``(x, u)`` satisfies the
  constraints, for a point ``p``: auxiliary values ``u`` for ``p`` when it lies in the set.
* Cone witness (sets of second-order cones, :mod:`sege_cvx.arm_sets.cone`): for a point ``p``,
  the canonical auxiliaries ``u`` that leave the rows of ``G (p, u) + s = h`` the largest
  margin, the witness an exact certificate checks.

A lifted set's constraints create auxiliary variables of their own at every call; each program
returns their values too (its *witness*), found by :func:`auxiliary_variables`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

import cvxpy as cp

from .canonical import solve_on_clarabel
from .compiled import CompiledConicProgram

if TYPE_CHECKING:
    from .cone_form import ConeForm

ConstraintBuilder = Callable[[cp.Variable], list]


def solve_once(problem: cp.Problem, variable: cp.Variable, what: str, hint: str = "") -> None:
    """Solve a one-off cvxpy problem (a certificate computed at construction) on Clarabel.

    Raises ``ValueError("<what> ended <status><hint>")`` unless it ends optimal (or optimal to
    reduced accuracy) with a value for ``variable``, and ``ValueError("<what> failed: ...")``
    where Clarabel stops with an error (no status): callers see one kind of error.
    """
    try:
        solve_on_clarabel(problem)
    except cp.error.SolverError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(f"{what} failed: Clarabel stopped without a solution ({first}){hint}"
                         ) from None
    if problem.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or variable.value is None:
        raise ValueError(f"{what} ended {problem.status}{hint}")


def auxiliary_variables(cons: Iterable, exclude: Iterable[cp.Variable]) -> list[cp.Variable]:
    """The variables of ``cons`` other than ``exclude``, in order of first appearance.

    cvxpy lists a constraint's variables in the order they appear in its expression tree, so
    two calls of the same constraint function give their auxiliary variables in the same order:
    this order is the layout of a witness.
    """
    seen = {v.id for v in exclude}
    out = []
    for c in cons:
        for v in c.variables():
            if v.id not in seen:
                seen.add(v.id)
                out.append(v)
    return out


def greedy_program(
    dim: int, constraints: ConstraintBuilder, settings: Mapping[str, object] | None = None
) -> CompiledConicProgram:
    """Compile ``max <x, theta>`` over the set; solve with ``.solve(theta)``."""
    x = cp.Variable(dim)
    theta = cp.Parameter(dim)
    cons = constraints(x)
    problem = cp.Problem(cp.Maximize(theta @ x), cons)
    return CompiledConicProgram(problem, x, [theta], settings, auxiliary_variables(cons, [x]))


def lcb_arm_program(
    dim: int, constraints: ConstraintBuilder, settings: Mapping[str, object] | None = None
) -> CompiledConicProgram:
    """Compile ``max <x, theta_hat> - ||M x||`` over the set; solve with ``.solve(theta_hat, M)``."""
    x = cp.Variable(dim)
    theta_hat = cp.Parameter(dim)
    M = cp.Parameter((dim, dim))
    cons = constraints(x)
    problem = cp.Problem(cp.Maximize(theta_hat @ x - cp.norm(M @ x, 2)), cons)
    return CompiledConicProgram(problem, x, [theta_hat, M], settings, auxiliary_variables(cons, [x]))


def witness_program(
    dim: int, constraints: ConstraintBuilder, settings: Mapping[str, object] | None = None
) -> CompiledConicProgram:
    """Compile ``min ||x - p||_1`` over the set; solve with ``.solve(p)``, witness in ``.aux``.

    Always feasible (the set is not empty); for ``p`` in the set the optimum is ``x = p`` and
    the interior-point solver ends near the analytic centre of the witnesses of ``p``.  Whether
    ``p`` is in the set is then decided by certifying ``(p, aux)``, not by this program.
    """
    x = cp.Variable(dim)
    p = cp.Parameter(dim)
    cons = constraints(x)
    problem = cp.Problem(cp.Minimize(cp.norm1(x - p)), cons)
    return CompiledConicProgram(problem, x, [p], settings, auxiliary_variables(cons, [x]))


def margin_constraints(form: ConeForm, z: cp.Expression, margin: cp.Expression) -> list:
    """The rows of ``form`` at ``z = (x, u)`` with every cone's slack ``s = h - G z`` at least
    ``margin`` inside it: ``s_i >= margin`` for a nonnegative row, ``||s_1|| <= s_0 - margin``
    for a second-order cone; the equalities ``A z = b``."""
    slack = form.h - form.dense_G() @ z
    blk = form.blocks
    cons = [form.A @ z == form.b] if form.A.shape[0] else []
    for j in range(form.n_blocks):
        r0, r1 = int(blk.rows[j]), int(blk.rows[j + 1])
        if blk.kind[j] == 0:
            cons.append(slack[r0] >= margin)
        else:
            cons.append(cp.norm(slack[r0 + 1:r1]) <= slack[r0] - margin)
    return cons


def cone_witness_program(form: ConeForm) -> CompiledConicProgram:
    """Compile ``max_{u, t} t`` s.t. ``(p, u)`` meets ``form``'s rows with margin ``t``
    (:func:`margin_constraints`), ``t <= 1`` and ``||u||_inf`` bounded (by ``1e6 (1 +
    ||h||_inf)``, so that the program is bounded); solve with ``.solve(p)``, ``u`` in ``.x``.

    Feasible for every ``p`` (a low enough ``t``); for ``p`` in the set's interior the optimum
    has ``t > 0``.  Whether ``p`` is in the set is decided by certifying ``(p, u)``, not by this
    program.  The margin ``t`` comes back as the solution's ``aux``.  Needs ``form.n >
    form.dim`` (auxiliary columns to solve for).
    """
    d, n = form.dim, form.n
    p, u, t = cp.Parameter(d), cp.Variable(n - d), cp.Variable()
    bound = 1e6 * (1.0 + float(abs(form.h).max(initial=0.0)))
    cons = [*margin_constraints(form, cp.hstack([p, u]), t), t <= 1.0,
            cp.norm(u, "inf") <= bound]
    return CompiledConicProgram(cp.Problem(cp.Maximize(t), cons), u, [p], aux_variables=[t])
