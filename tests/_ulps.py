"""Comparing floats computed along two different arithmetic paths: a tolerance in ulps.

Bitwise equality (``assert_array_equal``, ``==``) is for two runs of the *same* code path: a
run alone and in a batch, in other shards, with other thread counts or backends, after
pickling or resuming.  Those share every operation, so one ulp of difference is a bug.

A reference computed *another way* (numpy/BLAS ``@``, LAPACK, a loop in another order, a closed
form against a solver) agrees with the library only up to rounding, and where its last bits
fall depends on the CPU: BLAS picks its kernel (SIMD width, FMA, summation order) at run time.
Such a comparison gets a tolerance stated in ulps of the computation's scale, derived from
the arithmetic, with the reason written next to it.  For example, any two ways of summing a
``d``-term dot product are each within ``gamma_d |a|.|b| <= d u |a| |b|`` of the exact value
(``u = 2^-53``; with or without FMA, in any order), and ``u s <= np.spacing(s)``, so they differ
by at most ``2 d`` ulps of ``s = ||a|| ||b||``.
"""

from __future__ import annotations

import numpy as np


def assert_close_ulps(actual, expected, ulps: float, scale=None, err_msg: str = "") -> None:
    """Assert ``|actual - expected| <= ulps * np.spacing(scale)``, elementwise.

    Parameters
    ----------
    actual, expected : array_like or float
        Of the same shape.  NaN must match NaN, and infinities must be equal.
    ulps : float
        The allowed difference, in units in the last place of ``scale``.
    scale : array_like or float, optional
        The magnitude the rounding errors are relative to, broadcastable to ``actual`` (e.g.
        ``||a|| ||theta||`` for a dot product, which may cancel to a much smaller value); only
        its binary exponent matters, so it may itself be computed any way.  Default
        ``|expected|``.
    err_msg : str
        Prepended to the failure message.

    Raises
    ------
    AssertionError
        Naming the worst difference in ulps of its scale, where it is, both values, and how
        many elements exceed the bound.
    """
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    if actual.shape != expected.shape:
        raise AssertionError(f"{err_msg}shapes differ: actual {actual.shape}, expected "
                             f"{expected.shape}")
    if not ulps >= 0:
        raise ValueError(f"ulps must be >= 0, got {ulps!r}")
    nan_a, nan_e = np.isnan(actual), np.isnan(expected)
    if np.any(nan_a != nan_e):
        where = _index(np.argmax(nan_a != nan_e), actual.shape)
        raise AssertionError(f"{err_msg}NaN in one array only, at {where}: actual "
                             f"{float(actual[where])!r}, expected {float(expected[where])!r}")
    inf = np.isinf(actual) | np.isinf(expected)
    if np.any(inf & (actual != expected)):
        where = _index(np.argmax(inf & (actual != expected)), actual.shape)
        raise AssertionError(f"{err_msg}infinities differ at {where}: actual "
                             f"{float(actual[where])!r}, expected {float(expected[where])!r}")
    finite = ~(nan_a | inf)
    if scale is None:
        scale = np.where(finite, np.abs(expected), 0.0)
    scale = np.broadcast_to(np.abs(np.asarray(scale, dtype=np.float64)), actual.shape)
    if not np.all(np.isfinite(scale[finite])):
        raise ValueError(f"{err_msg}scale must be finite where the values are")
    unit = np.spacing(np.where(finite, scale, 0.0))
    in_ulps = np.zeros(actual.shape)
    in_ulps[finite] = np.abs(actual[finite] - expected[finite]) / unit[finite]
    bad = in_ulps > ulps
    if np.any(bad):
        where = _index(np.argmax(in_ulps), actual.shape)
        raise AssertionError(
            f"{err_msg}worst difference {float(in_ulps[where]):.3g} ulps of scale "
            f"{float(scale[where])!r} (allowed {ulps:g}; 1 ulp = {float(unit[where]):.3g}) at "
            f"index {where}: actual {float(actual[where])!r}, expected "
            f"{float(expected[where])!r}; {int(bad.sum())} of {bad.size} elements beyond the bound")


def _index(flat, shape: tuple) -> tuple:
    """A flat index as a tuple of ints (empty for a scalar)."""
    return tuple(int(i) for i in np.unravel_index(int(flat), shape))
