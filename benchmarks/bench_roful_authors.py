"""ROFUL and GNOP: this library against their authors' own code, on the ROFUL paper's Figure 2a.

The authors' code is ``safe_linear_bandit.py`` of https://github.com/shutch1/Directional-Optimism-for-Safe-Linear-Bandits
(Hutchinson, Turan and Alizadeh, AISTATS 2024; the repository carries no license, so it is not
copied here: pass ``--authors DIR``, a clone of it).  This script reads that file and runs it as
it is but for three shims NumPy 2 needs, applied to its text and listed in :data:`SHIMS`
(``math.sqrt`` and array element assignment of ``(1, 1)`` arrays).  Their per-stage loop is
``slb_short.py``'s, both algorithms in one loop as there.

Measured, on the first ``--trials`` problems of Figure 2a (the authors' generator, seed 0, and
their noise, replayed by the library), each algorithm alone on one thread:

* microseconds per run-stage of the authors' code and of the library's compiled stages
  (``sege_cvx.experiments.roful2024.run_roful_study``, ``workers=1``: the simulations' own
  time, its ``simulation_seconds``), and their ratio (the issue's target: at least 50x);
* whether both codes played the same arms: the largest difference over the stages;
* the whole Figure 2a study (30 problems x 50,000 stages, both algorithms; a sweep in this
  process, its writing included), with numba's cache warm (the issue's target: under 10 s).

Medians over ``--repeats``.

    python benchmarks/bench_roful_authors.py --authors ~/src/Directional-Optimism-for-Safe-Linear-Bandits
    python benchmarks/bench_roful_authors.py --quick            # CI: the library's side only
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
import types
from pathlib import Path

import numpy as np
from _machine import machine

from sege_cvx.experiments.roful2024 import DELTA, LAM, authors_trials, run_roful_study

#: The NumPy 2 shims, (old text, new text): ``math.sqrt`` of a ``(1, 1)`` array, and a
#: ``(1, 1)`` array stored into a float array's element.
SHIMS = (
    ("math.sqrt(", "_sqrt("),
    ("self.rew_rec[self.t] = r\n", "self.rew_rec[self.t] = np.asarray(r).item()\n"),
    ("self.viol_rec[self.t] = max(self.a.T @ x - self.b, 0)",
     "self.viol_rec[self.t] = max((self.a.T @ x - self.b).item(), 0)"),
)


def load_authors(directory: Path) -> types.ModuleType:
    """Their ``safe_linear_bandit.py`` with :data:`SHIMS` applied, as a module."""
    source = (directory / "safe_linear_bandit.py").read_text()
    for old, new in SHIMS:
        source = source.replace(old, new)
    module = types.ModuleType("safe_linear_bandit")
    module.__dict__["_sqrt"] = lambda v: math.sqrt(np.asarray(v).item())
    exec(compile(source, str(directory / "safe_linear_bandit.py"), "exec"), module.__dict__)
    return module


def run_authors(module, problem, horizon: int) -> tuple[float, dict[str, np.ndarray]]:
    """``slb_short.py``'s loop on one trial: seconds, and each algorithm's arms."""
    d = problem.arm_set.dim
    theta = np.array(problem.theta_star)[:, None]
    a = np.array(problem.constraint.gamma_star)[:, None]
    b, sigma, dirs = problem.constraint.limit, problem.setting.noise_sd, problem.arm_set.directions
    lamb, delta, S, xlim = LAM, DELTA, problem.setting.S, problem.arm_set.radius

    def beta(t):
        return sigma * math.sqrt(d * math.log((1 + t / lamb) / (delta / 2))) + math.sqrt(lamb) * S

    noises = problem.replayed_noise[:horizon]
    envs = {name: module.safe_linear_bandit(d, theta, a, b, horizon, sigma, noises[:, 0],
                                            noises[:, 1], xlim, np.array(dirs))
            for name in ("ROFUL", "GNOP")}
    state = {name: [lamb * np.eye(d), np.zeros((d, 1)), np.zeros((d, 1))] for name in envs}
    rules = {"ROFUL": module.roful, "GNOP": module.gnop}
    arms = {name: np.empty((horizon, d)) for name in envs}
    start = time.perf_counter()
    for t in range(horizon):
        beta_t = beta(t)
        for name, rule in rules.items():
            V, Dt, Da = state[name]
            x = rule(V, Dt, Da, beta_t, S, b, xlim, dirs, d)
            r, c = envs[name].play_action(x)
            state[name] = [V + x @ x.T, Dt + x * r, Da + x * c]
            arms[name][t] = x.ravel()
    return time.perf_counter() - start, arms


def run_ours_arms(problem, name: str, horizon: int) -> np.ndarray:
    """The library's arms on one trial (the step API: select/observe), for the comparison."""
    policy = problem.policy(name, 1, lam=LAM, delta=DELTA)  # their constants, as the study's
    bandit = problem.bandit([None])  # the trial's noise, replayed
    arms = np.empty((horizon, problem.arm_set.dim))
    for t in range(horizon):
        x = policy.select()
        feedback = bandit.feedback(x[None])
        policy.observe(x, feedback.observed, feedback.observed_constraint)
        arms[t] = x
    return arms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--authors", type=Path, default=None,
                        help="a clone of shutch1/Directional-Optimism-for-Safe-Linear-Bandits")
    parser.add_argument("--trials", type=int, default=3, help="Figure 2a problems timed")
    parser.add_argument("--horizon", type=int, default=5000, help="stages per problem timed")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="a smoke test (CI)")
    args = parser.parse_args()
    if args.quick:
        args.trials, args.horizon, args.repeats = 2, 300, 1
    print("\n".join(machine()))
    trials = authors_trials("2a", args.trials)
    run_roful_study("2a", n_trials=1, horizon=10, workers=1)  # kernels loaded (or compiled)

    ours = []
    for _ in range(args.repeats):
        study = run_roful_study("2a", n_trials=args.trials, horizon=args.horizon, workers=1)
        ours.append(study.simulation_seconds / (args.trials * args.horizon * 2) * 1e6)
    ours_us = statistics.median(ours)
    print(f"\nFigure 2a, first {args.trials} problems x {args.horizon} stages, both algorithms, "
          f"one thread; medians of {args.repeats}:")
    print("| code | us per run-stage | ratio |")
    print("|---|---:|---:|")
    if args.authors is None:
        print(f"| sege_cvx | {ours_us:.3f} | |")
        print("(the authors' code not given: --authors DIR, a clone of "
              "shutch1/Directional-Optimism-for-Safe-Linear-Bandits)")
    else:
        module = load_authors(args.authors)
        theirs, same = [], {"ROFUL": 0.0, "GNOP": 0.0}
        for r in range(args.repeats):
            seconds = 0.0
            for trial in trials:
                elapsed, arms = run_authors(module, trial, args.horizon)
                seconds += elapsed
                if r == 0:
                    for name in same:
                        gap = np.abs(run_ours_arms(trial, name, args.horizon) - arms[name]).max()
                        same[name] = max(same[name], float(gap))
            theirs.append(seconds / (args.trials * args.horizon * 2) * 1e6)
        theirs_us = statistics.median(theirs)
        print(f"| authors' safe_linear_bandit.py | {theirs_us:.2f} | 1 |")
        print(f"| sege_cvx | {ours_us:.3f} | {theirs_us / ours_us:.0f}x (target >= 50x) |")
        print("largest |x_ours - x_theirs| over the stages: "
              + ", ".join(f"{k} {v:.2g}" for k, v in same.items()))

    horizon = 2000 if args.quick else 50_000
    walls = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        study = run_roful_study("2a", horizon=horizon)
        walls.append(time.perf_counter() - start)
    summary = study.summary()["algorithms"]
    print(f"\nThe whole Figure 2a study (30 problems x {horizon} stages, ROFUL and GNOP, "
          f"a sweep in one process), median of {args.repeats}: {statistics.median(walls):.2f} s "
          f"(target < 10 s at 50,000 stages)")
    for name, row in summary.items():
        print(f"  {name}: R_T/sqrt(T) {row['R_T_over_sqrt_T_mean']:.3f} (sd "
              f"{row['R_T_over_sqrt_T_sd']:.3f}), violating stages {row['violating_stages']}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
