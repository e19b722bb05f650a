"""The two convex programs an arm set is asked to solve, built from its cvxpy constraints.

* Greedy arm (paper eq. (greedy arm) for a general set): ``max_x <x, theta>`` s.t. ``x in X``,
  a linear (or conic, for a conic set) program.
* LCB arm (paper eq. (lcb arm)): ``max_x <x, theta_hat> - r ||x||_{V^{-1}}`` s.t. ``x in X``, an
  SOCP.  Writing ``V^{-1} = P P^T`` (Cholesky), ``r ||x||_{V^{-1}} = ||M x||`` with ``M = r P^T``,
  so the data ``(theta_hat, M)`` enters affinely (DPP) and the program compiles once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import cvxpy as cp

from .compiled import CompiledConicProgram

ConstraintBuilder = Callable[[cp.Variable], list]


def solve_once(problem: cp.Problem, variable: cp.Variable, what: str, hint: str = "") -> None:
    """Solve a one-off cvxpy problem (a certificate computed at construction) on Clarabel.

    Raises ``ValueError("<what> ended <status><hint>")`` unless it ends optimal (or optimal to
    reduced accuracy) with a value for ``variable``; a solver error is reported through the
    status, so that callers see one kind of error.
    """
    try:
        problem.solve(solver=cp.CLARABEL)
    except cp.error.SolverError:
        pass  # reported below through the status
    if problem.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or variable.value is None:
        raise ValueError(f"{what} ended {problem.status}{hint}")


def greedy_program(
    dim: int, constraints: ConstraintBuilder, settings: Mapping[str, object] | None = None
) -> CompiledConicProgram:
    """Compile ``max <x, theta>`` over the set; solve with ``.solve(theta)``."""
    x = cp.Variable(dim)
    theta = cp.Parameter(dim)
    problem = cp.Problem(cp.Maximize(theta @ x), constraints(x))
    return CompiledConicProgram(problem, x, [theta], settings)


def lcb_arm_program(
    dim: int, constraints: ConstraintBuilder, settings: Mapping[str, object] | None = None
) -> CompiledConicProgram:
    """Compile ``max <x, theta_hat> - ||M x||`` over the set; solve with ``.solve(theta_hat, M)``."""
    x = cp.Variable(dim)
    theta_hat = cp.Parameter(dim)
    M = cp.Parameter((dim, dim))
    problem = cp.Problem(cp.Maximize(theta_hat @ x - cp.norm(M @ x, 2)), constraints(x))
    return CompiledConicProgram(problem, x, [theta_hat, M], settings)
