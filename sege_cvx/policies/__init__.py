"""Policies for safe linear bandits, each acting on a batch of runs (a single run is a batch of one).

Every policy, built-in or a user's, is a :class:`Policy`.
"""

from .base import Policy
from .clucb import CLUCB
from .roful import ROFUL
from .sege import SEGE, paper_risk, rho_bar

__all__ = ["CLUCB", "ROFUL", "Policy", "SEGE", "paper_risk", "rho_bar"]
