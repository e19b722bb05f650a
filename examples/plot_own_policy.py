"""
Write your own policy: safe Thompson sampling
=============================================

A policy is a subclass of :class:`sege_cvx.Policy`, told one :class:`sege_cvx.SafeSetting`
(the arm set, the baseline arm, ``S``, the noise and the reward floor). This one, safe Thompson
sampling, samples
``theta~`` uniformly in the confidence ellipsoid ``{theta : ||theta - theta_hat||_V <= r_t}``
and plays ``argmax <x, theta~>`` over the certified safe set ``{x in X : LCB_t(x) >= b}``, one
second-order cone program a stage (``LCB_t(x) = <x, theta_hat> - r_t ||x||_{V^-1}``, Theorem
1's radius at SEGE's risk schedule). Where that set is empty, or the solver's point fails the
checks, it explores around the baseline arm as SEGE does: ``(1 - rho) x0 + rho U``, safe by
Lemma 1 for ``rho <= rho_bar``. The rule and its safety argument are ours, not the paper's.

Registered by name, it runs beside SEGE, CLUCB and ROFUL in a sweep, on the same seeded runs,
and the report draws it. The policy uses the public API only.
"""

import tempfile
from pathlib import Path

import cvxpy as cp
import numpy as np

import sege_cvx as sc


@sc.register_policy("StagewiseTS", color="tab:olive")
class StagewiseTS(sc.Policy):
    """Safe Thompson sampling over the certified safe set (one SOCP a stage and run)."""

    decision_names = ("sampled", "explore_baseline")

    def __init__(self, setting, *, lam=0.1, delta_bar: float = 0.1, n_runs=1, seed=None):
        super().__init__(setting, lam=lam, n_runs=n_runs, seed=seed)
        self.delta_bar = delta_bar
        self.confidence = sc.ConfidenceEllipsoid(self.d, self.lam, self.n_runs)
        floor, arm_set = setting.safety, setting.arm_set
        self.rho = sc.policies.rho_bar(floor.baseline_reward, floor.threshold, setting.S,
                                       arm_set.diameter_bound())
        self.exploration = arm_set.exploration()
        self._build()

    def _build(self):  # the SOCP, its parameters set each stage (cvxpy compiles it once)
        x, self._theta = cp.Variable(self.d), cp.Parameter(self.d)
        self._hat, self._M = cp.Parameter(self.d), cp.Parameter((self.d, self.d))
        b = self.setting.safety.threshold
        safe = self._hat @ x - cp.norm(self._M @ x) >= b  # LCB_t(x) >= b
        self._x, self._program = x, cp.Problem(cp.Maximize(self._theta @ x),
                                               [*self.setting.arm_set.constraints(x), safe])

    def __getstate__(self):  # a solved program holds Clarabel's solver: rebuilt, not pickled
        return {k: v for k, v in vars(self).items()
                if k not in ("_x", "_theta", "_hat", "_M", "_program")}

    def __setstate__(self, state):
        vars(self).update(state)
        self._build()

    def select(self):
        t, conf, s = self.t + 1, self.confidence, self.setting
        r = sc.confidence_radius(t - 1, sc.policies.paper_risk(t, self.delta_bar), dim=self.d,
                                 noise_sd=s.noise_sd, lam=self.lam, S=s.S,
                                 L=s.arm_set.norm_bound())
        arms = np.empty((self.n_runs, self.d))
        for i, rng in enumerate(self.rngs):
            g = rng.standard_normal(self.d + 1)  # a direction and a radius, uniform in the ball
            u = g[:-1] / np.linalg.norm(g[:-1]) * rng.random() ** (1 / self.d)
            C = conf.chol[i]  # V = C C^T: ||theta - theta_hat||_V = ||C^T (theta - theta_hat)||
            self._theta.value = conf.theta_hat[i] + r * np.linalg.solve(C.T, u)
            self._hat.value, self._M.value = conf.theta_hat[i], r * np.linalg.inv(C)
            try:
                self._program.solve(solver=cp.CLARABEL)
                x = self._x.value if self._program.status == cp.OPTIMAL else None
            except cp.SolverError:
                x = None
            if x is not None:  # played only if inside exactly and certified safe
                x, ok = s.arm_set.pull_inside(x[None])
                if ok[0] and conf.lcb(x, r, rows=np.array([i]))[0] >= s.safety.threshold:
                    arms[i], self.last_decision[i] = x[0], 0
                    continue
            U = self.exploration.points(rng.standard_normal((1, self.d)))
            x, ok = s.arm_set.pull_inside((1 - self.rho) * s.safe_arm + self.rho * U)
            arms[i], self.last_decision[i] = (x[0] if ok[0] else s.safe_arm), 1
        return arms

    def observe(self, arms, rewards, constraint_values):
        self.confidence.update(arms, rewards)


# %%
# Every policy through the same sweep: the paper's problem, 8 seeded runs of 1,500 stages.

spec = {"seed": 0, "runs": 8, "horizon": 1500, "problems": [{"name": "paper"}],
        "algorithms": [{"name": name} for name in ("SEGE", "CLUCB", "ROFUL", "StagewiseTS")]}
out = Path(tempfile.mkdtemp()) / "sweep"
results = sc.run_sweep(spec, out, workers=1, progress=False)
print(results.table()[["runs", "regret_mean", "regret_se", "violating_runs"]].to_string())

# %%
# Each policy's decisions, summed over its runs, in the columns its ``decision_names`` name:

for name, described in results.algorithms.items():
    own = [column for column in described["decision_names"] if column is not None]
    print(name, results.runs.loc[results.runs["algorithm"] == name, own].sum().astype(int).to_dict())

# %%
# The report's figure: mean regret with a band over the runs.

fig = results.plot_regret(band="quantile")
