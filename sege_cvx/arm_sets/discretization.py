"""Discretizations of an arm set: its support points over well-spread directions.

CLUCB plays such points (the paper's baseline discretizes the set), and ROFUL steps toward
them; :func:`default_arm_count` finds the fewest meeting a discretization error (the paper's
3e-3, Section 6).
"""

from __future__ import annotations

import numpy as np

from .._rowwise import row_dots, row_matvec
from .._validation import as_batch_of_vectors, as_positive_int, as_scalar
from .base import ArmSet

__all__ = ["DEFAULT_DISCRETIZATION_TOL", "MAX_ARMS", "as_arm_count", "default_arm_count",
           "discretization_error", "discretize", "discretize_with_witnesses",
           "sphere_directions", "support_tests"]

#: Discretization error the default arm count must meet (the paper's 3e-3, Section 6).
DEFAULT_DISCRETIZATION_TOL = 3e-3
#: Most discrete arms (or ROFUL directions) accepted: every stage scans them all, and each is a
#: greedy arm computed at construction, so a larger count (e.g. a mistyped 10**12) would exhaust
#: memory or never finish.
MAX_ARMS = 10**6


def as_arm_count(name: str, value: object) -> int:
    """Validate a number of discrete arms (``n_arms``, ``n_directions``): 1 to :data:`MAX_ARMS`."""
    count = as_positive_int(name, value)
    if count > MAX_ARMS:
        raise ValueError(f"{name} must be at most {MAX_ARMS} (every stage scans each arm), "
                         f"got {count}")
    return count


def sphere_directions(dim: int, count: int) -> np.ndarray:
    """``count`` well-spread unit vectors, deterministic.

    ``d = 1``: the unit sphere is ``{+1, -1}``, so there are exactly two directions: ``[[1], [-1]]``
    for any ``count >= 2`` (``[[1]]`` for ``count = 1``).  ``d = 2``: equally spaced angles.
    ``d = 3``: the spherical Fibonacci lattice (``z_k = 1 - (2k + 1)/K``, longitude ``k`` times the
    golden angle).  ``d > 3``: a generalized Fibonacci lattice in the unit cube (``(k + 1/2)/K``
    and ``frac(k sqrt(p_j))`` for primes ``p_j``) mapped to the sphere through the inverse normal
    CDF (less uniform).

    Parameters
    ----------
    dim, count : int
        At least 1.

    Returns
    -------
    ndarray, shape (min(count, 2), 1) if dim == 1 else (count, dim)

    Examples
    --------
    >>> sphere_directions(1, 10)
    array([[ 1.],
           [-1.]])
    """
    dim = as_positive_int("dim", dim)
    count = as_positive_int("count", count)
    if dim == 1:
        return np.array([[1.0], [-1.0]])[:count]
    k = np.arange(count)
    if dim == 2:
        angles = 2.0 * np.pi * k / count
        return np.column_stack([np.cos(angles), np.sin(angles)])
    if dim == 3:
        z = 1.0 - (2.0 * k + 1.0) / count
        phi = k * np.pi * (3.0 - np.sqrt(5.0))
        rho = np.sqrt(1.0 - z**2)
        return np.column_stack([rho * np.cos(phi), rho * np.sin(phi), z])
    from scipy.special import ndtri  # here: only d > 3 needs scipy

    primes = [p for p in range(2, 20 * dim) if all(p % q for q in range(2, p))][: dim - 1]
    cube = np.hstack([(k[:, None] + 0.5) / count, (k[:, None] * np.sqrt(primes)) % 1.0])
    points = ndtri(np.clip(cube, 1e-12, 1 - 1e-12))
    return points / np.linalg.norm(points, axis=1, keepdims=True)


def _check_arm_set(arm_set: object) -> ArmSet:
    if not isinstance(arm_set, ArmSet):
        raise TypeError(f"arm_set must be an ArmSet, got {type(arm_set).__name__}")
    return arm_set


def support_tests(arm_set: ArmSet) -> tuple[np.ndarray, np.ndarray]:
    """The test directions of :func:`discretization_error` (3,600 in the plane, ``1000 d``
    otherwise) and the set's support values on them: one greedy point per direction
    (``ArmSet._greedy_points_unverified``), so worth computing once
    for every ``K`` tried (:func:`default_arm_count`)."""
    d = _check_arm_set(arm_set).dim
    tests = sphere_directions(d, 3600 if d == 2 else 1000 * d)
    values = row_dots(arm_set._greedy_points_unverified(tests), tests)
    if not np.all(np.isfinite(values)):
        raise ValueError("a test direction gives a support value beyond the float range: "
                         "rescale the problem")
    return tests, values


def discretization_error(arm_set: ArmSet, arms: np.ndarray, S: float, *,
                         tests: tuple[np.ndarray, np.ndarray] | None = None) -> float:
    """``S * max_u [h(u) - max_k <a_k, u>]`` over a dense set of unit test directions ``u``.

    Bounds (up to the test grid) the loss in optimal reward from restricting to ``arms`` when
    ``||theta*|| <= S``.  In ``d = 1`` the test directions are ``+-1``, which is exact.

    Parameters
    ----------
    arm_set : ArmSet
    arms : array_like, shape (K, d)
    S : float
        ``S > 0``.
    tests : tuple of ndarray, optional
        :func:`support_tests` of ``arm_set``, computed when not given.
    """
    d = _check_arm_set(arm_set).dim
    arms, _ = as_batch_of_vectors("arms", arms, d)
    S = as_scalar("S", S, low=0.0, low_open=True)
    directions, support = support_tests(arm_set) if tests is None else tests
    # Row by row (not BLAS), so that the chosen K does not depend on the CPU's kernels.
    gap = support - row_matvec(directions, arms).max(axis=1)
    return float(S * max(gap.max(), 0.0))


def discretize(arm_set: ArmSet, n_arms: int) -> np.ndarray:
    """Support points of the set over ``n_arms`` well-spread directions (for the disk: equally
    spaced boundary points).  In ``d = 1`` there are at most two: the interval's endpoints."""
    return discretize_with_witnesses(arm_set, n_arms)[0]


def discretize_with_witnesses(arm_set: ArmSet, n_arms: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`discretize` and the arms' witnesses (a lifted set's; shape ``(K, 0)`` otherwise).

    Returns
    -------
    arms : ndarray, shape (K, d)
    witnesses : ndarray, shape (K, witness_dim)

    Raises
    ------
    SolverFailure
        A greedy arm failed or could not be verified in the set.
    """
    _check_arm_set(arm_set)
    result = arm_set.greedy_arm_batch(sphere_directions(arm_set.dim,
                                                        as_arm_count("n_arms", n_arms)))
    return ArmSet._checked(result), result.witnesses


def default_arm_count(arm_set: ArmSet, S: float, tol: float = DEFAULT_DISCRETIZATION_TOL,
                      max_arms: int = 4096, *,
                      tests: tuple[np.ndarray, np.ndarray] | None = None) -> int:
    """Smallest ``K`` (by doubling then bisection) whose discretization error is ``<= tol``.

    ``d = 1``: 2 (the interval's endpoints; the error is then 0).  ``tests``:
    :func:`support_tests` of ``arm_set``, computed once when not given.
    """
    _check_arm_set(arm_set)
    S = as_scalar("S", S, low=0.0, low_open=True)
    tol = as_scalar("tol", tol, low=0.0, low_open=True)
    max_arms = as_positive_int("max_arms", max_arms)
    if arm_set.dim == 1:
        return 2
    if tests is None:
        tests = support_tests(arm_set)

    def error(K: int) -> float:
        # The count is chosen on the solver's points (to about 1e-8 of the arms played, far
        # below tol); the K arms played are then computed and proven (discretize).
        points = arm_set._greedy_points_unverified(sphere_directions(arm_set.dim, K))
        return discretization_error(arm_set, points, S, tests=tests)

    hi = min(8, max_arms)
    while error(hi) > tol:
        if hi >= max_arms:
            return max_arms
        hi = min(2 * hi, max_arms)
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if error(mid) <= tol:
            hi = mid
        else:
            lo = mid
    return hi
