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
    """Safe Thompson sampling over the certified safe set.

    One SOCP a stage and run.
    """

    decision_names = ("sampled", "explore_baseline")

    def __init__(self, setting, *, lam=0.1, delta_bar: float = 0.1, n_runs=1,
                 seed=None):
        super().__init__(setting, lam=lam, n_runs=n_runs, seed=seed)
        self.delta_bar = delta_bar
        self.confidence = sc.ConfidenceEllipsoid(self.d, self.lam, self.n_runs)
        floor, arm_set = setting.safety, setting.arm_set
        self.rho = sc.policies.rho_bar(floor.baseline_reward, floor.threshold,
                                       setting.S, arm_set.diameter_bound())
        self.exploration = arm_set.exploration()
        self._build()

    def _build(self):
        # the SOCP, its parameters set each stage (cvxpy compiles it once)
        x, self._theta = cp.Variable(self.d), cp.Parameter(self.d)
        self._hat = cp.Parameter(self.d)
        self._M = cp.Parameter((self.d, self.d))
        b = self.setting.safety.threshold
        safe = self._hat @ x - cp.norm(self._M @ x) >= b  # LCB_t(x) >= b
        objective = cp.Maximize(self._theta @ x)
        constraints = [*self.setting.arm_set.constraints(x), safe]
        self._x, self._program = x, cp.Problem(objective, constraints)

    def __getstate__(self):
        # a solved program holds Clarabel's solver: rebuilt, not pickled
        return {k: v for k, v in vars(self).items()
                if k not in ("_x", "_theta", "_hat", "_M", "_program")}

    def __setstate__(self, state):
        vars(self).update(state)
        self._build()

    def select(self):
        t, conf, s = self.t + 1, self.confidence, self.setting
        b = s.safety.threshold
        risk = sc.policies.paper_risk(t, self.delta_bar)
        r = sc.confidence_radius(t - 1, risk, dim=self.d, noise_sd=s.noise_sd,
                                 lam=self.lam, S=s.S, L=s.arm_set.norm_bound())
        arms = np.empty((self.n_runs, self.d))
        for i, rng in enumerate(self.rngs):
            # a direction and a radius, uniform in the ball
            g = rng.standard_normal(self.d + 1)
            u = g[:-1] / np.linalg.norm(g[:-1]) * rng.random() ** (1 / self.d)
            # V = C C^T: ||theta - theta_hat||_V = ||C^T (theta - theta_hat)||
            C = conf.chol[i]
            self._theta.value = conf.theta_hat[i] + r * np.linalg.solve(C.T, u)
            self._hat.value = conf.theta_hat[i]
            self._M.value = r * np.linalg.inv(C)
            try:
                self._program.solve(solver=cp.CLARABEL)
                x = (self._x.value if self._program.status == cp.OPTIMAL
                     else None)
            except cp.SolverError:
                x = None
            # played only if inside exactly and certified safe
            if x is not None:
                x, ok = s.arm_set.pull_inside(x[None])
                if ok[0] and conf.lcb(x, r, rows=np.array([i]))[0] >= b:
                    arms[i], self.last_decision[i] = x[0], 0
                    continue
            U = self.exploration.points(rng.standard_normal((1, self.d)))
            around_baseline = (1 - self.rho) * s.safe_arm + self.rho * U
            x, ok = s.arm_set.pull_inside(around_baseline)
            arms[i], self.last_decision[i] = (x[0] if ok[0] else s.safe_arm), 1
        return arms

    def observe(self, arms, rewards, constraint_values):
        self.confidence.update(arms, rewards)


# %%
# Every policy through the same sweep: the paper's problem, 8 seeded runs of 1,500 stages.

algorithms = ("SEGE", "CLUCB", "ROFUL", "StagewiseTS")
spec = {"seed": 0, "runs": 8, "horizon": 1500, "problems": [{"name": "paper"}],
        "algorithms": [{"name": name} for name in algorithms]}
out = Path(tempfile.mkdtemp()) / "sweep"
results = sc.run_sweep(spec, out, workers=1, progress=False)
columns = ["runs", "regret_mean", "regret_se", "violating_runs"]
print(results.table()[columns].to_string())

# %%
# Each policy's decisions, summed over its runs, in the columns its ``decision_names`` name:

for name, described in results.algorithms.items():
    own = [column for column in described["decision_names"]
           if column is not None]
    rows = results.runs["algorithm"] == name
    print(name, results.runs.loc[rows, own].sum().astype(int).to_dict())

# %%
# The report's figure: mean regret with a band over the runs.

fig = results.plot_regret(band="quantile")
