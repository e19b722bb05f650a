"""Confidence ellipsoids of the regularized least-squares estimate (paper Theorem 1)."""

from .ellipsoid import ConfidenceEllipsoid, confidence_radius, lcb, lcb_from_precision
from .radius import (
    RADII,
    ConfidenceRadius,
    make_radius,
    register_radius,
    registered_radii,
    self_normalized_radius,
)
from .state import ConfidenceState

__all__ = ["RADII", "ConfidenceEllipsoid", "ConfidenceRadius", "ConfidenceState",
           "confidence_radius", "lcb", "lcb_from_precision", "make_radius", "register_radius",
           "registered_radii", "self_normalized_radius"]
