"""SEGE on polytopes far from the origin: how often does a stage fall back?

Each problem is a polytope moved by an offset ``o = (t, ..., t)`` (``A x <= b + A o``), with its
baseline arm, threshold margin and ``theta*`` moved alike, at ``t`` = 0, 1e2, 1e3, 1e4 and 1e5:
the built-in polytope and treatment-mix examples (SEGE's default ``c``,
:func:`sege_cvx.policies.default_c`), and random polytopes (10 unit rows in 3-D at distances
0.5-1.5 from 0) on which SEGE exploits early (noise 0.05, ``c = 1e-4``).  Far from the
origin ``V = lam I + sum x x^T`` is ill-conditioned along the arms' common direction, which
rounding can turn into failed certificates: every failed certificate is a stage that does not
play the arm it computed (``SEGE.solver_fallbacks``, by reason).  Printed per problem and offset:
the fallbacks as a percentage of run-stages, their reasons, the fraction of stages that
exploited, and the run-stages below the threshold.  Where SEGE exploits at 1e5, repeating one
arm of norm 1.7e5 for thousands of stages, ``V``'s rounding outgrows ``lam = 0.1`` and the run
stops with ``SEGE``'s error saying so: printed as such.

Run from the repository root::

    python benchmarks/measure_far_from_origin.py            # about a minute
    python benchmarks/measure_far_from_origin.py --quick    # a smoke test (CI)
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import sege_cvx as sc
from sege_cvx.problems.examples import polytope_problem, treatment_mix_problem

OFFSETS = (0.0, 1e2, 1e3, 1e4, 1e5)


def problems(seeds: int) -> list[tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray, float,
                                       float | None, float]]:
    """``(name, A, b, x0, theta, margin, c, noise_sd)`` at the origin (``c`` None: SEGE's
    default)."""
    out = []
    for make in (polytope_problem, treatment_mix_problem):
        p = make()
        A = getattr(p.arm_set, "A_given", p.arm_set.A)
        b = getattr(p.arm_set, "b_given", p.arm_set.b)
        x0, theta = np.array(p.setting.safe_arm), np.asarray(p.theta_star)
        floor = p.setting.safety
        out.append((p.name, A, b, x0, theta, floor.baseline_reward - floor.threshold, None,
                    p.setting.noise_sd))
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        A = rng.standard_normal((10, 3))
        A /= np.linalg.norm(A, axis=1, keepdims=True)
        b = rng.uniform(0.5, 1.5, 10)
        theta = rng.standard_normal(3)
        theta *= 0.8 / np.linalg.norm(theta)
        out.append((f"random {seed}", A, b, np.zeros(3), theta, 0.3, 1e-4, 0.05))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--stages", type=int, default=3000)
    parser.add_argument("--random", type=int, default=3, help="random polytopes")
    parser.add_argument("--quick", action="store_true", help="a smoke test: small sizes")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.stages, args.random = 4, 100, 1
    start = time.perf_counter()
    print(f"{'problem':<15} {'offset':>7} {'fallbacks %':>12} {'exploit':>8} {'violations':>10}"
          "  reasons")
    worst = 0.0
    for name, A, b, x0, theta, margin, c, noise in problems(args.random):
        for t in OFFSETS:
            offset = np.full(A.shape[1], t)
            arm_set = sc.Polytope(A, b + A @ offset)
            baseline = x0 + offset
            b0 = float(baseline @ theta)
            setting = sc.SafeSetting(arm_set, baseline, S=1.0, noise_sd=noise,
                                     safety=sc.RewardFloor(b0, b0 - margin))
            policy = sc.SEGE(setting, c=c, n_runs=args.runs, seed=1)
            bandit = sc.LinearBandit(theta, noise, sc.run_seeds(0, args.runs)[1],
                                     threshold=b0 - margin)
            try:
                result = sc.simulate(policy, bandit, args.stages)
            except ValueError as exc:  # V = lam I + sum x x^T lost definiteness: say so
                print(f"{name:<15} {t:>7.0e}  stopped: {str(exc)[:90]}", flush=True)
                continue
            stages = args.runs * args.stages
            rate = 100.0 * policy.solver_fallbacks.sum() / stages
            worst = max(worst, rate) if t > 0 else worst
            exploit = policy.decision_counts[:, 0].sum() / stages
            reasons = dict(policy.fallback_reasons) or "-"
            print(f"{name:<15} {t:>7.0e} {rate:>12.3f} {exploit:>8.3f} "
                  f"{int(result.stats.violations.sum()):>10}  {reasons}", flush=True)
    print(f"\nlargest fallback rate off the origin: {worst:.3f} % "
          f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
