"""Input validation shared by every public entry point.

Each function converts its input to a float64 array of a known shape and raises a
``ValueError`` (or ``TypeError``) that names the offending argument and value.
"""

from __future__ import annotations

import numbers

import numpy as np

# Relative tolerance for symmetry checks of matrices given by users.
SYMMETRY_RTOL = 1e-9


def _fmt(value: object) -> str:
    text = np.array2string(np.asarray(value), threshold=8, precision=4) if isinstance(
        value, np.ndarray
    ) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def as_finite_array(name: str, value: object) -> np.ndarray:
    """Return ``value`` as a float64 array, rejecting NaN and infinity."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be numeric, got {_fmt(value)}") from exc
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (no NaN or inf), got {_fmt(arr)}")
    return arr


def as_vector(name: str, value: object, dim: int | None = None) -> np.ndarray:
    """A finite 1-D float64 vector, of length ``dim`` when given."""
    arr = as_finite_array(name, value)
    if arr.ndim != 1 or (dim is not None and arr.shape[0] != dim):
        want = f"({dim},)" if dim is not None else "(d,)"
        raise ValueError(f"{name} must have shape {want}, got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} must not be empty")
    return arr


def as_batch_of_vectors(name: str, value: object, dim: int) -> tuple[np.ndarray, bool]:
    """Shape ``(d,)`` or ``(n, d)`` to ``(n, d)``; the flag tells whether it was a single vector."""
    arr = as_finite_array(name, value)
    if arr.ndim == 1 and arr.shape[0] == dim:
        return arr[None, :], True
    if arr.ndim == 2 and arr.shape[1] == dim:
        return arr, False
    raise ValueError(f"{name} must have shape ({dim},) or (n, {dim}), got shape {arr.shape}")


def as_spd_batch(name: str, value: object, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Validate symmetric positive definite matrices of shape ``(d, d)`` or ``(n, d, d)``.

    Returns
    -------
    matrices : ndarray, shape (n, d, d)
        The symmetrized matrices.
    cholesky : ndarray, shape (n, d, d)
        Their lower Cholesky factors (the proof of positive definiteness).
    """
    arr = as_finite_array(name, value)
    if arr.ndim == 2:
        arr = arr[None]
    if arr.ndim != 3 or arr.shape[1:] != (dim, dim):
        raise ValueError(f"{name} must have shape ({dim}, {dim}) or (n, {dim}, {dim}), "
                         f"got shape {np.shape(value)}")
    asym = np.abs(arr - np.swapaxes(arr, 1, 2)).max(axis=(1, 2))
    scale = np.abs(arr).max(axis=(1, 2))
    bad = np.flatnonzero(asym > SYMMETRY_RTOL * np.maximum(scale, 1e-300))
    if bad.size:
        raise ValueError(f"{name} must be symmetric; instance {bad[0]} has asymmetry "
                         f"{asym[bad[0]]:.3g}")
    arr = 0.5 * (arr + np.swapaxes(arr, 1, 2))
    try:
        chol = np.linalg.cholesky(arr)
    except np.linalg.LinAlgError:
        eig = np.linalg.eigvalsh(arr).min(axis=1)
        i = int(np.argmin(eig))
        raise ValueError(f"{name} must be positive definite; instance {i} has smallest "
                         f"eigenvalue {eig[i]:.3g}") from None
    return arr, chol


def as_spd_matrix(name: str, value: object, dim: int | None = None) -> np.ndarray:
    """A single symmetric positive definite ``(d, d)`` matrix."""
    arr = as_finite_array(name, value)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise ValueError(f"{name} must be a square matrix, got shape {arr.shape}")
    matrices, _ = as_spd_batch(name, arr, arr.shape[0] if dim is None else dim)
    return matrices[0]


def as_scalar(
    name: str,
    value: object,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """A finite real scalar in the interval given by ``low``/``high`` (closed unless open)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real | np.ndarray):
        raise TypeError(f"{name} must be a real number, got {_fmt(value)}")
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim != 0:
        raise ValueError(f"{name} must be a scalar, got shape {arr.shape}")
    x = float(arr)
    if not np.isfinite(x):
        raise ValueError(f"{name} must be finite, got {x}")
    if low is not None and (x < low or (low_open and x == low)):
        raise ValueError(f"{name} must be {'>' if low_open else '>='} {low}, got {x}")
    if high is not None and (x > high or (high_open and x == high)):
        raise ValueError(f"{name} must be {'<' if high_open else '<='} {high}, got {x}")
    return x


def as_radius_batch(name: str, value: object, n: int) -> np.ndarray:
    """Nonnegative confidence radii broadcast to shape ``(n,)``."""
    arr = as_finite_array(name, value)
    if arr.ndim == 0:
        arr = np.full(n, float(arr))
    if arr.shape != (n,):
        raise ValueError(f"{name} must be a scalar or have shape ({n},), got shape {arr.shape}")
    if np.any(arr < 0):
        raise ValueError(f"{name} must be nonnegative, got {_fmt(arr[arr < 0])}")
    return arr


def as_positive_int(name: str, value: object) -> int:
    """An integer >= 1."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {_fmt(value)}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return int(value)
