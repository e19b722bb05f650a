"""Conic programs: cvxpy problems compiled once and re-solved on Clarabel with new data.

:class:`SolverFailure` is light; the other names load their modules, and with them cvxpy and
Clarabel, on first use (PEP 562).
"""

from importlib import import_module

from .errors import SolverFailure

_EXPORTS = {"CompiledConicProgram": ".compiled", "ConicSolution": ".compiled",
            "greedy_program": ".programs", "lcb_arm_program": ".programs"}

__all__ = ["CompiledConicProgram", "ConicSolution", "SolverFailure", "greedy_program",
           "lcb_arm_program"]


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(import_module(_EXPORTS[name], __name__), name)
        globals()[name] = value  # later look-ups skip this function
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
