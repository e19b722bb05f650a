"""Validation of symmetric positive definite matrices, by the compiled Cholesky factor that
proves them so (:mod:`.cholesky`)."""

from __future__ import annotations

import numpy as np

from .._validation import SYMMETRY_RTOL, as_finite_array
from .cholesky import SPD_ASYMMETRIC, SPD_NOT_DEFINITE, SPD_OK, checked_factor_all


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
    sym, chol, codes = checked_factor_all(np.ascontiguousarray(arr), SYMMETRY_RTOL)
    if np.any(codes != SPD_OK):
        # Asymmetry first, then the most indefinite instance, then singularity.
        asymmetric = np.flatnonzero(codes == SPD_ASYMMETRIC)
        if asymmetric.size:
            i = int(asymmetric[0])
            asym = np.abs(arr[i] - arr[i].T).max()
            raise ValueError(f"{name} must be symmetric; instance {i} has asymmetry {asym:.3g}")
        indefinite = np.flatnonzero(codes == SPD_NOT_DEFINITE)
        if indefinite.size:
            eig = np.array([scaled_eigenvalues(sym[i])[0] for i in indefinite])
            i = int(indefinite[np.argmin(eig)])
            raise ValueError(f"{name} must be positive definite; instance {i} has smallest "
                             f"eigenvalue {eig.min():.3g}")
        i = int(np.flatnonzero(codes != SPD_OK)[0])
        raise ValueError(f"{name} must be positive definite with a representable inverse; "
                         f"instance {i} is singular in floating point (entries of magnitude "
                         f"{np.abs(arr[i]).max():.3g})")
    return sym, chol


def scaled_eigenvalues(matrix: np.ndarray) -> np.ndarray:
    """Ascending eigenvalues of a symmetric matrix, computed on it scaled by a power of 4 near
    its largest entry (exact) so that they neither overflow nor underflow inside."""
    _, exponent = np.frexp(np.abs(matrix).max())
    half = int(exponent) // 2
    return np.ldexp(np.linalg.eigvalsh(np.ldexp(matrix, -2 * half)), 2 * half)


def as_spd_matrix(name: str, value: object, dim: int | None = None) -> np.ndarray:
    """A single symmetric positive definite ``(d, d)`` matrix."""
    arr = as_finite_array(name, value)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise ValueError(f"{name} must be a square matrix, got shape {arr.shape}")
    matrices, _ = as_spd_batch(name, arr, arr.shape[0] if dim is None else dim)
    return matrices[0]
