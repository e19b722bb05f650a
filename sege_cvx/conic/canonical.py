"""cvxpy's canonicalization of a problem for Clarabel: the one place the package asks cvxpy
for Clarabel's data or a one-off Clarabel solve.

cvxpy (1.9 and later) warns each time it writes a rational power (a p-norm such as
``cp.pnorm(x, 1.5)``, ``geo_mean``) by second-order cones, and suggests power cones instead.
With error 0 that second-order form is exact, and it is the form the compiled cone programs
solve (:mod:`.cone_form`), so the warning would only mislead; an approximation with a nonzero
error still warns.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator

#: cvxpy's warning for an exact second-order form of a rational power.
EXACT_SOC_FORM = r".*is being approximated \(error: 0\.00e\+00\)"


@contextlib.contextmanager
def _exact_forms_quiet() -> Iterator[None]:
    """cvxpy's warning for an exact second-order form ignored inside the block."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=EXACT_SOC_FORM)
        yield


def clarabel_problem_data(problem) -> tuple:
    """``problem.get_problem_data(cvxpy.CLARABEL)``: ``(data, chain, inverse_data)``, without
    the warning for an exact second-order form (:data:`EXACT_SOC_FORM`).

    Parameters
    ----------
    problem : cvxpy.Problem

    Returns
    -------
    tuple
        cvxpy's ``(data, chain, inverse_data)``.
    """
    import cvxpy as cp

    with _exact_forms_quiet():
        return problem.get_problem_data(cp.CLARABEL)


def solve_on_clarabel(problem, **settings) -> float:
    """``problem.solve(solver=cvxpy.CLARABEL, **settings)``: the optimal value (cvxpy's errors
    and statuses as cvxpy gives them), without the warning for an exact second-order form
    (:data:`EXACT_SOC_FORM`).

    Parameters
    ----------
    problem : cvxpy.Problem
    **settings
        Clarabel's settings.

    Returns
    -------
    float
        ``problem.value``.
    """
    import cvxpy as cp

    with _exact_forms_quiet():
        return problem.solve(solver=cp.CLARABEL, **settings)
