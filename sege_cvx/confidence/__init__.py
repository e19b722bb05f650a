"""Confidence ellipsoids of the regularized least-squares estimate (paper Theorem 1)."""

from .ellipsoid import ConfidenceEllipsoid, confidence_radius, lcb, lcb_from_precision
from .radius import RADII, ConfidenceRadius, self_normalized_radius

__all__ = ["RADII", "ConfidenceEllipsoid", "ConfidenceRadius", "confidence_radius", "lcb",
           "lcb_from_precision", "self_normalized_radius"]
