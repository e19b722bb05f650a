"""sege_cvx: safe linear stochastic bandits with every arm choice a convex program.

Implements Khezeli & Bitar, "Safe Linear Stochastic Bandits" (AAAI 2020).
"""

from .arm_sets import ArmSet, Ball, Box, ConvexArmSet, CrossCheckError, Ellipsoid, Polytope
from .confidence import ConfidenceEllipsoid, confidence_radius, lcb
from .conic import SolverFailure
from .policies import CLUCB, SEGE
from .simulation import LinearBandit, run_seeds, simulate

__version__ = "0.1.0"

__all__ = [
    "CLUCB",
    "SEGE",
    "ArmSet",
    "Ball",
    "Box",
    "ConfidenceEllipsoid",
    "ConvexArmSet",
    "CrossCheckError",
    "Ellipsoid",
    "Polytope",
    "SolverFailure",
    "confidence_radius",
    "lcb",
    "LinearBandit",
    "run_seeds",
    "simulate",
]
