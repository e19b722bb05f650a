r"""The confidence state of a block of runs as compiled code holds it, and its one update.

Every policy of the compiled stage loop (:mod:`sege_cvx.stages.loop`) keeps the ridge
estimate of paper eq. (theta_hat), ``V_t = lam I + sum_k X_k X_k^T`` and
``theta_hat_t = V_t^{-1} sum_k X_k Y_k``, per run.  :class:`ConfidenceState` holds it for
every run of a block (the arrays of :class:`~sege_cvx.ConfidenceEllipsoid`,
:meth:`~sege_cvx.ConfidenceEllipsoid.state`), :class:`RunConfidence` one run's views, taken
once per run, and :func:`learn` is the update every policy's ``learn`` hook calls (paper
Algorithm 1, line 11): one source for the four policies of the loop.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._numba import njit
from .cholesky import observe_one


class ConfidenceState(NamedTuple):
    """The confidence state of ``n`` runs: ``V`` and its Cholesky factor ``chol`` (``(n, d, d)``),
    ``xy_sum = sum_k Y_k X_k`` and ``theta_hat`` (``(n, d)``), and the observation ``counts``
    (``(n,)``, int64)."""

    V: np.ndarray
    chol: np.ndarray
    xy_sum: np.ndarray
    theta_hat: np.ndarray
    counts: np.ndarray


class RunConfidence(NamedTuple):
    """One run's views of a :class:`ConfidenceState` (:func:`run_confidence`)."""

    V: np.ndarray
    chol: np.ndarray
    xy_sum: np.ndarray
    theta_hat: np.ndarray


class LearnScratch(NamedTuple):
    """:func:`learn`'s scratch: the updated ``V``, its factor, a vector (:func:`learn_scratch`)."""

    V_new: np.ndarray
    L: np.ndarray
    w: np.ndarray


@njit(inline="always")
def run_confidence(state, i):
    """Run ``i``'s :class:`RunConfidence` of the :class:`ConfidenceState` ``state``."""
    return RunConfidence(V=state.V[i], chol=state.chol[i], xy_sum=state.xy_sum[i],
                         theta_hat=state.theta_hat[i])


@njit(inline="always")
def learn_scratch(d):
    """A :class:`LearnScratch` for dimension ``d``."""
    return LearnScratch(V_new=np.empty((d, d)), L=np.empty((d, d)), w=np.empty(d))


@njit(inline="always")
def learn(state, run, i, x, y, scratch) -> bool:
    """Add run ``i``'s observation ``(x, y)`` (paper Algorithm 1, line 11, and eq. (theta_hat)):
    ``V += x x^T``, ``xy_sum += y x``, refactor, re-solve ``theta_hat``, count it.

    ``state``: :class:`ConfidenceState`; ``run``: run ``i``'s :class:`RunConfidence`;
    ``scratch``: :class:`LearnScratch`.  Returns False, changing nothing, if ``V + x x^T``
    would not be numerically positive definite
    (:func:`~sege_cvx.confidence.cholesky.observe_one`).
    """
    if not observe_one(run.V, run.chol, run.xy_sum, run.theta_hat, x, y, scratch.V_new,
                       scratch.L, scratch.w):
        return False
    state.counts[i] += 1
    return True
