"""Row-by-row linear algebra whose result for a row never depends on the other rows.

``X @ M.T`` on a stack of rows goes to BLAS, which picks kernels (and so summation orders) by
the shape of the whole stack: the same run could then round differently alone and inside a
batch.  These kernels compute every row with the same loop, in the same order, whatever the
number of rows, so that a simulated run is bitwise a function of its own inputs.  Elementwise
numpy arithmetic (``+ - * /``, ``sqrt``) is already exact per element and needs no kernel.
"""

from __future__ import annotations

import numpy as np

from ._numba import njit


@njit
def row_dot(X: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``<X_i, v>`` for every row ``i`` of ``X`` (shape ``(n, d)``), summed in index order."""
    n, d = X.shape
    out = np.empty(n)
    for i in range(n):
        acc = 0.0
        for k in range(d):
            acc += X[i, k] * v[k]
        out[i] = acc
    return out


@njit
def row_dots(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """``<X_i, Y_i>`` for every row ``i`` (both of shape ``(n, d)``)."""
    n, d = X.shape
    out = np.empty(n)
    for i in range(n):
        acc = 0.0
        for k in range(d):
            acc += X[i, k] * Y[i, k]
        out[i] = acc
    return out


@njit
def row_matvec(X: np.ndarray, M: np.ndarray) -> np.ndarray:
    """``M @ X_i`` for every row ``i``: the rows of ``X @ M.T``, shape ``(n, m)``."""
    n, d = X.shape
    m = M.shape[0]
    out = np.empty((n, m))
    for i in range(n):
        for j in range(m):
            acc = 0.0
            for k in range(d):
                acc += M[j, k] * X[i, k]
            out[i, j] = acc
    return out


@njit
def row_norms(X: np.ndarray) -> np.ndarray:
    """Euclidean norm of every row, ``sqrt(sum_k X_ik^2)`` (no scaling: finite inputs of
    moderate size, as in arm sets)."""
    n, d = X.shape
    out = np.empty(n)
    for i in range(n):
        acc = 0.0
        for k in range(d):
            acc += X[i, k] * X[i, k]
        out[i] = np.sqrt(acc)
    return out
