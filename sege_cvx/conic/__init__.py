"""Conic programs: cvxpy problems compiled once and re-solved on Clarabel with new data.

:class:`SolverFailure` is light; the other names load their modules, and with them cvxpy and
Clarabel, on first use (PEP 562).
"""

from .._lazy import lazy_exports
from .errors import SolverFailure

_EXPORTS = {"CompiledConicProgram": ".compiled", "ConicSolution": ".compiled",
            "greedy_program": ".programs", "lcb_arm_program": ".programs"}

__all__ = ["CompiledConicProgram", "ConicSolution", "SolverFailure", "greedy_program",
           "lcb_arm_program"]


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
