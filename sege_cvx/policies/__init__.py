"""Policies for safe linear bandits, each acting on a batch of runs (a single run is a batch of one)."""

from .clucb import CLUCB
from .roful import ROFUL
from .sege import SEGE, paper_risk, rho_bar

__all__ = ["CLUCB", "ROFUL", "SEGE", "paper_risk", "rho_bar"]
