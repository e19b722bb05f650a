"""What a simulation keeps: per-run running statistics and per-run values at checkpoint stages.

Memory is bounded by what is reported, ``runs x checkpoints``, never ``runs x horizon``: every
stage updates a few running numbers per run (:func:`record_stage`), and at about 200
log-spaced checkpoint stages (plus the paper's) the running values of every run are copied into
one row.  Aggregates across runs (means, quantiles) are computed from those rows afterwards, so
runs simulated in different batches, shards or processes combine exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .._numba import njit

#: The paper's reporting stages (Section 6 and Fig. 3), always on the checkpoint grid.
PAPER_CHECKPOINTS = (100, 250, 500, 1000, 2000, 5000, 10000, 20000, 50000)
#: Number of log-spaced checkpoint stages by default.
GRID_SIZE = 200
#: Quantile levels of the per-checkpoint aggregates (:meth:`RunStatistics.aggregates`).
QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)


def checkpoint_grid(horizon: int, size: int = GRID_SIZE, extra=PAPER_CHECKPOINTS) -> np.ndarray:
    """About ``size`` stages log-spaced over ``1..horizon``, with ``extra`` (those up to the
    horizon) and the horizon itself; sorted, unique, int64."""
    grid = np.unique(np.rint(np.geomspace(1, horizon, size)).astype(np.int64))
    more = np.array([t for t in extra if t <= horizon] + [horizon], dtype=np.int64)
    return np.union1d(grid, more)


@njit(inline="always")
def record_one(i, t, m, violated, decision, optimal, threshold, rec, row):
    """Fold run ``i``'s expected reward ``m`` at stage ``t`` into its running statistics, the
    arrays of the :class:`Recording` ``rec`` (``row``: the current checkpoint window).

    Cumulative regret ``sum_k <X* - X_k, theta*>`` and reward (summed in stage order, as
    ``numpy.cumsum`` does), smallest reward overall and in the current checkpoint window,
    violating stages (``violated``: the reward below the threshold in the stagewise model, the
    constraint's value above its limit in the linear-constraint one) and the first one, whether
    the conservative
    constraint ``sum_k <X_k, theta*> >= threshold * t`` has held at every stage so far
    (paper eq. (conservative const) with ``(1 - alpha) b0 = b``), and decision counts.
    """
    rec.cum_regret[i] += optimal - m
    rec.cum_reward[i] += m
    rec.min_reward[i] = min(rec.min_reward[i], m)
    rec.reward_min[row, i] = min(rec.reward_min[row, i], m)
    rec.reward_max[row, i] = max(rec.reward_max[row, i], m)
    if violated:
        rec.violations[i] += 1
        if rec.first_violation[i] < 0:
            rec.first_violation[i] = t
    if rec.cum_reward[i] < threshold * t:
        rec.conservative[i] = False
    rec.decisions[i, decision] += 1


#: The traces of a recording that keeps none.
_NO_TRACE, _NO_DECISIONS = np.empty((0, 0)), np.empty((0, 0), dtype=np.int8)


class Recording(NamedTuple):
    """What a compiled call records into (:meth:`RunStatistics.recording`): the checkpoint
    ``grid`` and the call's first ``row``, the arrays of :class:`RunStatistics` it updates, and
    the traces of reward and decision (empty arrays when they are not kept)."""

    grid: np.ndarray
    row: int
    cum_regret: np.ndarray
    cum_reward: np.ndarray
    min_reward: np.ndarray
    reward_min: np.ndarray
    reward_max: np.ndarray
    first_violation: np.ndarray
    violations: np.ndarray
    conservative: np.ndarray
    decisions: np.ndarray
    regret_rows: np.ndarray
    reward_rows: np.ndarray
    violation_rows: np.ndarray
    decision_rows: np.ndarray
    trace_reward: np.ndarray
    trace_decision: np.ndarray


@njit(inline="always")
def record_run_stage(i, t, s, m, violated, decision, optimal, threshold, rec, row) -> int:
    """Fold run ``i``'s stage ``t`` (the ``s``-th of a compiled call), expected reward ``m``,
    into the :class:`Recording` ``rec``: :func:`record_one`, then run ``i``'s checkpoint row if
    ``t`` is checkpoint ``rec.grid[row]``, and the traces of reward and decision if they are
    kept.  Returns the next checkpoint row."""
    record_one(i, t, m, violated, decision, optimal, threshold, rec, row)
    if rec.trace_reward.shape[0] > 0:
        rec.trace_reward[s, i] = m
        rec.trace_decision[s, i] = decision
    if t != rec.grid[row]:
        return row
    rec.regret_rows[row, i] = rec.cum_regret[i]
    rec.reward_rows[row, i] = m
    rec.violation_rows[row, i] = rec.violations[i]
    for c in range(rec.decisions.shape[1]):
        rec.decision_rows[row, i, c] = rec.decisions[i, c]
    return row + 1


@njit
def record_stage(t, mean, violated, decision, optimal, threshold, rec, row):
    """Fold stage ``t``'s expected rewards ``mean`` and violations ``violated`` (one per run)
    in (:func:`record_one`)."""
    for i in range(mean.shape[0]):
        record_one(i, t, mean[i], violated[i], decision[i], optimal, threshold, rec, row)


@dataclass
class RunStatistics:
    """Running statistics of ``n_runs`` runs, and their values at the checkpoint stages.

    Attributes
    ----------
    checkpoints : ndarray of int, shape (C,)
        Stages at which the rows below were taken.
    regret, reward_min, reward_max, reward : ndarray, shape (C, n_runs)
        At each checkpoint: cumulative regret; smallest and largest expected reward over the
        stages since the previous checkpoint (so no dip between checkpoints is lost); the
        expected reward at the checkpoint stage itself.
    violations : ndarray of int, shape (C, n_runs)
        Violating stages so far.
    decisions : ndarray of int, shape (C, n_runs, K)
        Stages of each decision code so far (``K``: the policy's ``len(decision_names)``).
    cum_regret, cum_reward, min_reward : ndarray, shape (n_runs,)
        Running values (after the last recorded stage).
    first_violation : ndarray of int, shape (n_runs,)
        First violating stage (below the threshold, or above the constraint's limit), -1 if none.
    total_violations : ndarray of int, shape (n_runs,)
    conservative_met : ndarray of bool, shape (n_runs,)
    decision_counts : ndarray of int, shape (n_runs, K)
    """

    checkpoints: np.ndarray
    regret: np.ndarray
    reward: np.ndarray
    reward_min: np.ndarray
    reward_max: np.ndarray
    violations: np.ndarray
    decisions: np.ndarray
    cum_regret: np.ndarray
    cum_reward: np.ndarray
    min_reward: np.ndarray
    first_violation: np.ndarray
    total_violations: np.ndarray
    conservative_met: np.ndarray
    decision_counts: np.ndarray

    @classmethod
    def empty(cls, checkpoints: np.ndarray, n_runs: int, n_decisions: int) -> RunStatistics:
        """Statistics of ``n_runs`` runs before their first stage, with ``n_decisions`` decision
        codes (a policy's ``len(decision_names)``)."""
        C = len(checkpoints)
        return cls(checkpoints=checkpoints, regret=np.zeros((C, n_runs)),
                   reward=np.zeros((C, n_runs)), reward_min=np.full((C, n_runs), np.inf),
                   reward_max=np.full((C, n_runs), -np.inf),
                   violations=np.zeros((C, n_runs), dtype=np.int64),
                   decisions=np.zeros((C, n_runs, n_decisions), dtype=np.int64),
                   cum_regret=np.zeros(n_runs), cum_reward=np.zeros(n_runs),
                   min_reward=np.full(n_runs, np.inf),
                   first_violation=np.full(n_runs, -1, dtype=np.int64),
                   total_violations=np.zeros(n_runs, dtype=np.int64),
                   conservative_met=np.ones(n_runs, dtype=bool),
                   decision_counts=np.zeros((n_runs, n_decisions), dtype=np.int64))

    def recording(self, row: int, trace_reward: np.ndarray,
                  trace_decision: np.ndarray) -> Recording:
        """The :class:`Recording` a compiled call starting at checkpoint ``row`` updates."""
        return Recording(self.checkpoints, row, self.cum_regret, self.cum_reward,
                         self.min_reward, self.reward_min, self.reward_max, self.first_violation,
                         self.total_violations, self.conservative_met, self.decision_counts,
                         self.regret, self.reward, self.violations, self.decisions, trace_reward,
                         trace_decision)

    def record(self, t: int, mean: np.ndarray, violated: np.ndarray, decision: np.ndarray,
               optimal: float, threshold: float, row: int) -> None:
        """Fold stage ``t`` in; ``row`` is the checkpoint window it belongs to."""
        record_stage(t, mean, violated, decision, optimal, threshold,
                     self.recording(row, _NO_TRACE, _NO_DECISIONS), row)
        if t == self.checkpoints[row]:
            self.regret[row] = self.cum_regret
            self.reward[row] = mean
            self.violations[row] = self.total_violations
            self.decisions[row] = self.decision_counts

    def aggregates(self) -> dict[str, np.ndarray]:
        """Per-checkpoint aggregates across runs, each of shape ``(C,)``.

        ``regret_*`` and ``reward_*`` (the expected reward at the checkpoint stage): ``mean``,
        ``sd`` (over runs, ``ddof=1``; 0 for one run) and quantiles ``q05``, ``q25``, ``q50``,
        ``q75``, ``q95`` (:data:`QUANTILES`); ``regret_min``/``regret_max``;
        ``reward_window_min``/``reward_window_max``, the extremes over runs and over every stage
        since the previous checkpoint; ``violating_pairs`` (run-stage pairs that broke the safety
        model's constraint: a reward below the threshold, or a constraint value above its limit,
        so far) and ``violating_runs`` (runs with at least one); ``decisions`` of shape
        ``(C, K)``, stages of each decision code so far, summed over runs.
        """
        out = {"checkpoints": self.checkpoints}
        for name, rows in (("regret", self.regret), ("reward", self.reward)):
            out[f"{name}_mean"] = rows.mean(axis=1)
            out[f"{name}_sd"] = rows.std(axis=1, ddof=1) if rows.shape[1] > 1 else np.zeros(
                rows.shape[0])
            for level, values in zip(QUANTILES, np.quantile(rows, QUANTILES, axis=1), strict=True):
                out[f"{name}_q{round(100 * level):02d}"] = values
        out["regret_min"] = self.regret.min(axis=1)
        out["regret_max"] = self.regret.max(axis=1)
        out["reward_window_min"] = self.reward_min.min(axis=1)
        out["reward_window_max"] = self.reward_max.max(axis=1)
        out["violating_pairs"] = self.violations.sum(axis=1)
        out["violating_runs"] = (self.violations > 0).sum(axis=1)
        out["decisions"] = self.decisions.sum(axis=1)
        return out

    def curves(self) -> dict[str, np.ndarray]:
        """The runs' rows of a curves table (``curves.parquet``), each of shape ``(C,)``: the
        checkpoint ``t``, the number of ``runs``, and of :meth:`aggregates` the regret's and the
        reward's ``mean``, ``sd``, standard error ``se`` and quantiles, ``regret_min`` and
        ``regret_max``, ``reward_window_min`` and ``reward_window_max``, ``violating_pairs`` and
        ``violating_runs``: what every curve figure reads (:mod:`sege_cvx.experiments.figures`).
        """
        agg = self.aggregates()
        C, n = len(self.checkpoints), self.regret.shape[1]
        columns = {"t": agg["checkpoints"], "runs": np.full(C, n, dtype=np.int64)}
        for kind in ("regret", "reward"):
            columns[f"{kind}_mean"] = agg[f"{kind}_mean"]
            columns[f"{kind}_sd"] = agg[f"{kind}_sd"]
            columns[f"{kind}_se"] = agg[f"{kind}_sd"] / math.sqrt(n)
            for key in sorted(k for k in agg if k.startswith(f"{kind}_q")):
                columns[key] = agg[key]
        for key in ("regret_min", "regret_max", "reward_window_min", "reward_window_max",
                    "violating_pairs", "violating_runs"):
            columns[key] = agg[key]
        return columns

    def at(self, t: int) -> int:
        """The row of checkpoint stage ``t``."""
        row = int(np.searchsorted(self.checkpoints, t))
        if row == len(self.checkpoints) or self.checkpoints[row] != t:
            raise KeyError(f"stage {t} is not a checkpoint")
        return row
