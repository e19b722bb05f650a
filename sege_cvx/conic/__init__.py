"""Conic programs: cvxpy problems compiled once and re-solved on Clarabel with new data."""

from .compiled import CompiledConicProgram, ConicSolution, SolverFailure
from .programs import greedy_program, lcb_arm_program

__all__ = ["CompiledConicProgram", "ConicSolution", "SolverFailure", "greedy_program",
           "lcb_arm_program"]
