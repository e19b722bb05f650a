"""One way to compile every numba kernel of the package.

Kernels are cached on disk so that they compile once per machine.  numba raises at import time
when it finds no writable cache location (a read-only package directory *and* a read-only
home); :func:`njit` then compiles without a disk cache and warns once, so that
``import sege_cvx`` never fails for want of a writable directory.

Every kernel uses ``error_model="numpy"`` (a division by zero gives inf/NaN, as in numpy,
instead of raising) and no ``fastmath``: IEEE arithmetic, so that a kernel computes each run
with the same operations in the same order whatever else is in the batch.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numba

_warned = False


def _warn_no_cache(name: str, reason: str) -> None:
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(f"sege_cvx: no writable numba cache ({reason}); kernels such as {name!r} "
                      "compile at every start. Set NUMBA_CACHE_DIR to a writable directory to "
                      "cache them.", RuntimeWarning, stacklevel=3)


def njit(fn: Callable | None = None, **options) -> Callable:
    """``numba.njit(cache=True, error_model="numpy")``, without the cache where none is writable.

    Usable bare (``@njit``) or with numba options (``@njit(inline="always")``).
    """

    def compile_(f: Callable) -> Callable:
        opts = {"error_model": "numpy", **options}
        try:
            return numba.njit(cache=True, **opts)(f)
        except RuntimeError as exc:
            if "no locator available" not in str(exc):
                raise
            _warn_no_cache(f.__name__, str(exc))
            return numba.njit(cache=False, **opts)(f)

    return compile_(fn) if fn is not None else compile_
