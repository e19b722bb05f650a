"""What every batched policy shares: the select/observe protocol over ``n_runs`` runs."""

from __future__ import annotations

import numpy as np

from .._validation import as_positive_int, as_scalar, as_vector
from ..arm_sets.base import ArmSet


class BatchPolicy:
    """Enforces ``select`` then ``observe``, and the shapes of arms and rewards.

    A single learner is a batch of one: ``select`` then returns shape ``(d,)``.
    Subclasses set ``n_runs`` and ``t`` and call :meth:`_stage_start`, :meth:`_stage_arms`
    and :meth:`_observation`.
    """

    n_runs: int
    t: int
    _pending: np.ndarray | None = None

    def _set_problem(self, arm_set: ArmSet, baseline_arm, baseline_reward, threshold, S, noise_sd,
                     lam, n_runs) -> None:
        """Validate and store what every safe-bandit policy is given (Assumptions 1-3, b < b0)."""
        if not isinstance(arm_set, ArmSet):
            raise TypeError(f"arm_set must be an ArmSet, got {type(arm_set).__name__}")
        self.arm_set = arm_set
        x0 = as_vector("baseline_arm", baseline_arm, arm_set.dim)
        if not arm_set.contains(x0, tol=1e-9):
            raise ValueError(f"baseline_arm {x0} lies outside the arm set")
        # A baseline on the boundary may miss exact membership by rounding; play it moved inside.
        inside, ok = arm_set.pull_inside(x0[None])
        if not ok[0]:
            raise ValueError(f"baseline_arm {x0} could not be moved exactly into the arm set")
        self.baseline_arm = inside[0]
        self.baseline_reward = as_scalar("baseline_reward", baseline_reward)
        self.threshold = as_scalar("threshold", threshold, high=self.baseline_reward, high_open=True)
        self.S = as_scalar("S", S, low=0.0, low_open=True)
        self.noise_sd = as_scalar("noise_sd", noise_sd, low=0.0)
        self.lam = as_scalar("lam", lam, low=0.0, low_open=True)
        self.n_runs = as_positive_int("n_runs", n_runs)

    def _stage_start(self) -> int:
        if self._pending is not None:
            raise RuntimeError("select() called twice without observe()")
        return self.t + 1

    def _stage_arms(self, arms: np.ndarray) -> np.ndarray:
        self._pending = arms
        return arms[0].copy() if self.n_runs == 1 else arms.copy()

    def _observation(self, x: np.ndarray, y: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
        """Validate ``(x, y)`` against the pending arms; returns ``(n_runs, d)`` and ``(n_runs,)``."""
        if self._pending is None:
            raise RuntimeError("observe() called before select()")
        xs = np.asarray(x, dtype=np.float64)
        if xs.size != self._pending.size:
            raise ValueError(f"x must hold {self.n_runs} arm(s) of dimension "
                             f"{self._pending.shape[1]}, got shape {xs.shape}")
        xs = xs.reshape(self._pending.shape)
        if not np.array_equal(xs, self._pending):
            raise ValueError("observe() must receive the arms returned by the last select()")
        ys = np.asarray(y, dtype=np.float64)
        if ys.size != self.n_runs:
            raise ValueError(f"y must hold {self.n_runs} reward(s), got shape {ys.shape}")
        ys = ys.reshape(self.n_runs)
        if not np.all(np.isfinite(ys)):
            raise ValueError(f"observed rewards must be finite, got {ys}")
        self._pending = None
        self.t += 1
        return xs, ys
