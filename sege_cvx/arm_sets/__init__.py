"""Arm sets: compact convex sets with greedy and LCB-arm programs, finite lists of arms and stars."""

from .base import ArmSet, CrossCheckError
from .ellipsoid import Ball, Ellipsoid
from .finite import FiniteArmSet
from .generic import ConvexArmSet
from .hull import ConvexHull
from .polytope import Box, Polytope
from .star import StarSet

__all__ = ["ArmSet", "Ball", "Box", "ConvexArmSet", "ConvexHull", "CrossCheckError", "Ellipsoid",
           "FiniteArmSet", "Polytope", "StarSet"]
