"""Confidence ellipsoids of the regularized least-squares estimate (paper Theorem 1)."""

from .ellipsoid import ConfidenceEllipsoid, confidence_radius, lcb, lcb_from_precision

__all__ = ["ConfidenceEllipsoid", "confidence_radius", "lcb", "lcb_from_precision"]
