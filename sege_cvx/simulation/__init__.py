"""Simulation engine: many runs in lockstep, per-run reproducible random streams."""

from .._random import run_seeds
from .engine import LinearBandit, SimulationResult, simulate
from .loop import StageHooks, choose_loop, geometry_of, register_stage_hooks, stage_loop

__all__ = ["LinearBandit", "SimulationResult", "StageHooks", "choose_loop", "geometry_of",
           "register_stage_hooks", "run_seeds", "simulate", "stage_loop"]
