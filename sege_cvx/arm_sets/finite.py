"""A finite list of arms: the setting of every public safe-bandit code.

Its greedy and LCB arms are exact closed forms (a scan of the rows), so it never builds a conic
program; it is not convex, so it has no cvxpy representation and no exploration distribution.
CLUCB plays its rows as they are; SEGE, which plays convex combinations of arms, refuses it
(:meth:`sege_cvx.policies.base.Policy._require_convex`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .._numba import njit
from .._validation import as_batch_of_vectors, as_finite_array, format_value, scaled_norm
from ..confidence.cholesky import lcb_one
from .base import ArmSet, BatchArms, check_tol
from .exploration import Exploration

if TYPE_CHECKING:
    import cvxpy as cp

#: Entries of the ``(n, K, d)`` difference block :meth:`FiniteArmSet.nearest` forms at once.
_BLOCK = 1 << 20


@njit
def _best_rows(thetas: np.ndarray, arms: np.ndarray) -> np.ndarray:
    """Per row of ``thetas``: the first row ``k`` of ``arms`` maximizing ``<a_k, theta>``.

    Each dot product is summed in index order, so the choice for one instance never depends on
    the batch (BLAS picks summation orders by the shape of the whole product).  ``-1`` where no
    value is comparable (NaN).
    """
    n, d = thetas.shape
    out = np.full(n, -1, dtype=np.int64)
    for i in range(n):
        best = -np.inf
        for k in range(arms.shape[0]):
            v = 0.0
            for j in range(d):
                v += arms[k, j] * thetas[i, j]
            if v > best or (out[i] < 0 and v == best):  # first of ties; -inf values count
                best, out[i] = v, k
    return out


@njit
def _lcb_rows(thetas: np.ndarray, chols: np.ndarray, radii: np.ndarray,
              arms: np.ndarray) -> np.ndarray:
    """Per instance: the first row maximizing ``LCB(a) = <a, theta_hat> - r ||a||_{V^{-1}}``.

    The values are :func:`~sege_cvx.confidence.cholesky.lcb_one`'s, the very numbers
    ``lcb_values`` reports for the chosen arm.  ``-1`` where no value is comparable (NaN).
    """
    n, d = thetas.shape
    out = np.full(n, -1, dtype=np.int64)
    w = np.empty(d)
    for i in range(n):
        best = -np.inf
        for k in range(arms.shape[0]):
            v = lcb_one(arms[k], thetas[i], chols[i], radii[i], w)
            if v > best or (out[i] < 0 and v == best):
                best, out[i] = v, k
    return out


class FiniteArmSet(ArmSet):
    """A finite set of ``K`` arms in ``R^d``, the rows of ``arms``.

    Not convex (``is_convex = False``): only the rows themselves are arms.  The greedy arm
    ``argmax_k <a_k, theta>`` and the LCB arm ``argmax_k <a_k, theta_hat> - r ||a_k||_{V^{-1}}``
    are exact scans of the rows (first row of ties), returned exactly as stored; a point is a
    member only if it equals a row (``tol=0``).  :class:`~sege_cvx.CLUCB` plays the rows
    (its arms are this list, with discretization error 0); :class:`~sege_cvx.SEGE` refuses a
    finite set, since it plays mixtures of arms: use ``sc.ConvexHull(arms)`` for that.

    Parameters
    ----------
    arms : array_like, shape (K, d)
        ``K >= 1`` distinct finite arms.  A repeated arm is refused rather than dropped, so
        that row ``k`` of ``arms`` stays arm ``k`` (``np.unique(arms, axis=0)`` removes repeats).

    Attributes
    ----------
    arms : ndarray, shape (K, d)
        A read-only copy of the arms.
    n_arms, dim : int

    Examples
    --------
    >>> import sege_cvx as sc
    >>> arms = sc.FiniteArmSet([[1.0, 0.0], [0.0, 1.0], [0.6, 0.6]])
    >>> arms.greedy_arm([1.0, 1.0])
    array([0.6, 0.6])
    >>> arms.contains([0.0, 1.0]), arms.contains([0.5, 0.5])
    (True, False)
    >>> float(arms.support([1.0, 0.0])), arms.n_arms
    (1.0, 3)
    """

    is_convex = False

    def __init__(self, arms: np.ndarray) -> None:
        data = as_finite_array("arms", arms)
        if data.ndim != 2:
            raise ValueError(f"arms must be a 2-D array of shape (K, d), one arm per row, got "
                             f"shape {data.shape}" + (" (a single arm x is [x])" if data.ndim == 1
                                                       else ""))
        if data.shape[0] < 1 or data.shape[1] < 1:
            raise ValueError(f"arms must hold at least one arm of dimension >= 1, got shape "
                             f"{data.shape}")
        _, first, inverse = np.unique(data, axis=0, return_index=True, return_inverse=True)
        if first.size < data.shape[0]:
            # The first row that repeats an earlier one, and that earlier row.
            k = int(np.flatnonzero(first[inverse.ravel()] != np.arange(data.shape[0]))[0])
            raise ValueError(f"arms must be distinct: row {k} {format_value(data[k])} repeats row "
                             f"{int(first[inverse.ravel()[k]])} (np.unique(arms, axis=0) "
                             "removes repeats)")
        self.arms = np.array(data, dtype=np.float64, order="C")
        self.arms.flags.writeable = False
        self.n_arms, self.dim = self.arms.shape
        norms = scaled_norm(self.arms, axis=1)
        if not np.all(np.isfinite(norms)):
            k = int(np.argmax(~np.isfinite(norms)))
            raise ValueError(f"arm {k} {format_value(self.arms[k])} has a norm beyond the float range: "
                             "rescale the problem")
        self._norm = float(norms.max())
        self._diameter: float | None = None

    def __repr__(self) -> str:
        return f"FiniteArmSet({self.n_arms} arms in R^{self.dim})"

    def fingerprint_data(self) -> dict:
        """The arms (see :meth:`ArmSet.fingerprint_data`)."""
        return {"kind": "finite", "arms": self.arms}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.arms.flags.writeable = False  # unpickled arrays come back writeable

    # ----------------------------------------------------------------- no convex representation
    def constraints(self, x: cp.Variable) -> list:
        """Not available: raises ``TypeError`` (a finite set is not convex)."""
        raise self._no_program()

    def _no_program(self) -> TypeError:
        return TypeError(f"{self!r} is a finite set of arms, not a convex set: it has no cvxpy "
                         "constraints and no solver programs (its greedy and LCB arms are exact "
                         "scans of the rows, method='auto'); sc.ConvexHull(points) is its convex "
                         "hull")

    def exploration(self) -> Exploration:
        """Not available: raises ``TypeError`` (no convex body to draw exploration arms from)."""
        raise TypeError(f"{self!r} has no exploration distribution: exploring by mixing arms "
                        "(SEGE) needs a convex arm set; use sc.ConvexHull(points)")

    # ----------------------------------------------------------------- membership
    def nearest(self, x: np.ndarray) -> tuple[np.ndarray | int, np.ndarray | float]:
        """The row nearest to ``x`` in max-abs distance, and that distance.

        Parameters
        ----------
        x : array_like, shape (d,) or (n, d)

        Returns
        -------
        index : int, or ndarray of int of shape (n,)
            First nearest row.
        distance : float, or ndarray of shape (n,)
            ``max_j |x_j - a_kj|`` to it; 0 exactly when ``x`` is that row.
        """
        xs, single = as_batch_of_vectors("x", x, self.dim)
        index, distance = self._nearest(xs)
        return (int(index[0]), float(distance[0])) if single else (index, distance)

    def _nearest(self, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        index = np.zeros(len(xs), dtype=np.int64)
        distance = np.full(len(xs), np.nan)
        step = max(1, _BLOCK // (self.n_arms * self.dim))  # bounded memory for large batches
        with np.errstate(invalid="ignore", over="ignore"):
            for s in range(0, len(xs), step):
                gaps = np.abs(xs[s:s + step, None, :] - self.arms[None]).max(axis=2)
                index[s:s + step] = np.argmin(gaps, axis=1)
                distance[s:s + step] = gaps[np.arange(len(gaps)), index[s:s + step]]
        return index, distance

    def _inside(self, xs: np.ndarray, tol: float) -> np.ndarray:
        return self._nearest(xs)[1] <= tol  # NaN rows: NaN distance, outside

    def _pull_in(self, points: np.ndarray) -> np.ndarray:
        # Nothing lies between the arms to move a point into: only exact rows are accepted.
        return self._inside(points, 0.0)

    def contains(self, x: np.ndarray, tol: float = 1e-9) -> bool | np.ndarray:
        """Whether ``x`` (or each row of ``x``) is within ``tol`` of an arm, in max-abs distance.

        ``tol=0``: equal to a row exactly.  (Policies accept only exact rows as played arms.)
        """
        xs, single = as_batch_of_vectors("x", x, self.dim)
        inside = self._inside(xs, check_tol(tol))
        return bool(inside[0]) if single else inside

    # ----------------------------------------------------------------- greedy and LCB arms
    @property
    def has_closed_form_greedy(self) -> bool:
        return True

    def _greedy_closed_form(self, thetas: np.ndarray) -> np.ndarray:
        return self._rows(_best_rows(np.ascontiguousarray(thetas), self.arms))

    @property
    def has_closed_form_lcb(self) -> bool:
        return True

    def lcb_arm_batch(self, thetas: np.ndarray, chols: np.ndarray, radii: np.ndarray,
                      method: str = "auto") -> BatchArms:
        """LCB arms by the exact scan of the rows; ``method="solver"`` raises ``TypeError``."""
        if method == "solver":
            raise self._no_program()
        return super().lcb_arm_batch(thetas, chols, radii, "closed_form")

    def _lcb_closed_form(self, thetas: np.ndarray, chols: np.ndarray,
                         radii: np.ndarray) -> np.ndarray:
        return self._rows(_lcb_rows(np.ascontiguousarray(thetas), np.ascontiguousarray(chols),
                                    np.ascontiguousarray(radii, dtype=np.float64), self.arms))

    def _rows(self, index: np.ndarray) -> np.ndarray:
        """The arms of ``index`` (NaN rows for -1: flagged as failed by the verification)."""
        out = self.arms[np.maximum(index, 0)].copy()
        out[index < 0] = np.nan
        return out

    # ----------------------------------------------------------------- exact bounds
    def bounding_box(self) -> tuple[np.ndarray, np.ndarray]:
        """The coordinate-wise minimum and maximum of the arms (exact)."""
        return self.arms.min(axis=0), self.arms.max(axis=0)

    def norm_bound(self) -> float:
        """``max_k ||a_k||`` (the largest row norm)."""
        return self._norm

    def diameter_bound(self) -> float:
        """``max_{k, l} ||a_k - a_l||`` (the largest pairwise distance; ``O(K^2 d)``, once).

        Raises
        ------
        ValueError
            The distance exceeds the largest float (rescale the problem).
        """
        if self._diameter is None:
            best = 0.0
            half = 0.5 * self.arms  # halving is exact and keeps the differences finite
            for k in range(self.n_arms - 1):
                best = max(best, float(np.max(scaled_norm(half[k + 1:] - half[k], axis=1))))
            diameter = 2.0 * best
            if not np.isfinite(diameter):
                raise ValueError(f"the diameter of {self!r} exceeds the largest float: rescale "
                                 "the problem")
            self._diameter = diameter
        return self._diameter

    def certify_exploration(self, exploration: Exploration) -> bool:
        """Always False: a finite set contains no exploration distribution's points."""
        return False
