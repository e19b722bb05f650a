"""Exact closed-form fast paths (no general solver)."""

from .ellipsoid_lcb import EllipsoidLCBKernel, ellipsoid_lcb_arms

__all__ = ["EllipsoidLCBKernel", "ellipsoid_lcb_arms"]
