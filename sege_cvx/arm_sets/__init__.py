"""Arm sets: compact convex sets with greedy and LCB-arm programs, and finite lists of arms."""

from .base import ArmSet, CrossCheckError
from .ellipsoid import Ball, Ellipsoid
from .finite import FiniteArmSet
from .generic import ConvexArmSet
from .hull import ConvexHull
from .polytope import Box, Polytope

__all__ = ["ArmSet", "Ball", "Box", "ConvexArmSet", "ConvexHull", "CrossCheckError", "Ellipsoid",
           "FiniteArmSet", "Polytope"]
