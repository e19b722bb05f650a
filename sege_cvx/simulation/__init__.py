"""Simulation: a linear bandit (:class:`LinearBandit`) and :func:`simulate`, which plays a
policy's runs against it in lockstep, through the compiled stage loop
(:mod:`sege_cvx.stages`) where the policy's stages are compiled."""

from .._random import run_seeds
from .engine import LinearBandit, SimulationResult, simulate

__all__ = ["LinearBandit", "SimulationResult", "run_seeds", "simulate"]
