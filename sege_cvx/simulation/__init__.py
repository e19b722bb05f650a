"""Simulation engine: many runs in lockstep, per-run reproducible random streams."""

from .._random import run_seeds
from .engine import LinearBandit, SimulationResult, simulate

__all__ = ["LinearBandit", "SimulationResult", "run_seeds", "simulate"]
