"""Membership decided in exact rationals (``fractions.Fraction``) against the user's own data, for
tests that check what "exactly in the set" promises.  No float test decides anything here."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np


def q(v: float) -> Fraction:
    return Fraction(float(v))


def nudged(x: np.ndarray, rng: np.random.Generator, most: int) -> np.ndarray:
    """``x`` (in place) with fewer than ``most`` random coordinates moved by one ulp each, up or
    down: points a few ulps from where they were built, on either side of a boundary."""
    for _ in range(rng.integers(0, most)):
        k = rng.integers(x.shape[0])
        x[k] = np.nextafter(x[k], np.inf if rng.random() < 0.5 else -np.inf)
    return x


def polytope_excess(A: np.ndarray, b: np.ndarray, x: np.ndarray) -> Fraction:
    """``max_j (A_j x - b_j)`` in rationals: positive iff ``x`` is outside ``A x <= b``."""
    xq = [q(v) for v in x]
    return max(sum((q(a) * v for a, v in zip(row, xq, strict=True)), Fraction(0)) - q(bj)
               for row, bj in zip(A, b, strict=True))


def outside_polytope(A: np.ndarray, b: np.ndarray, X: np.ndarray) -> list[int]:
    """Rows of ``X`` outside ``A x <= b`` in exact arithmetic."""
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    return [i for i, x in enumerate(X) if polytope_excess(A, b, x) > 0]


def _det(M: list) -> Fraction:
    if len(M) == 1:
        return M[0][0]
    return sum((-1) ** j * M[0][j] * _det([row[:j] + row[j + 1:] for row in M[1:]])
               for j in range(len(M)))


def hull_facets(points: np.ndarray) -> list[tuple[list[Fraction], Fraction]]:
    """The facet inequalities ``n^T x <= c`` of ``conv(points)`` in rationals: every ``d``-subset
    of points whose hyperplane has all points on one side (small ``K`` and ``d`` only)."""
    K, d = points.shape
    P = [[q(v) for v in p] for p in points]
    rows = []
    for subset in itertools.combinations(range(K), d):
        base = P[subset[0]]
        M = [[P[k][c] - base[c] for c in range(d)] for k in subset[1:]]
        normal = [(-1) ** j * _det([[row[c] for c in range(d) if c != j] for row in M])
                  if d > 1 else Fraction(1) for j in range(d)]
        if not any(normal):
            continue
        c = sum(n * v for n, v in zip(normal, base, strict=True))
        values = [sum(n * v for n, v in zip(normal, p, strict=True)) for p in P]
        if all(v <= c for v in values):
            rows.append((normal, c))
        elif all(v >= c for v in values):
            rows.append(([-n for n in normal], -c))
    return rows


def in_hull(facets: list, x: np.ndarray) -> bool:
    """Whether ``x`` satisfies every exact facet inequality of :func:`hull_facets`."""
    xq = [q(v) for v in x]
    return all(sum(n * v for n, v in zip(normal, xq, strict=True)) <= c for normal, c in facets)


def outside_hull(facets: list, X: np.ndarray) -> list[int]:
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    return [i for i, x in enumerate(X) if not in_hull(facets, x)]


def exact_solve(A: np.ndarray, b: np.ndarray) -> list[Fraction]:
    """``A^{-1} b`` in exact rational arithmetic (Gauss-Jordan on the float64 values)."""
    d = len(b)
    M = [[Fraction(float(A[i, j])) for j in range(d)] + [Fraction(float(b[i]))] for i in range(d)]
    for col in range(d):
        pivot = next(r for r in range(col, d) if M[r][col] != 0)
        M[col], M[pivot] = M[pivot], M[col]
        for r in range(d):
            if r != col and M[r][col] != 0:
                f = M[r][col] / M[col][col]
                M[r] = [a - f * c for a, c in zip(M[r], M[col], strict=True)]
    return [M[i][d] / M[i][i] for i in range(d)]
