"""ROFUL, GNOP and SafeTS under an unknown linear constraint, on a star set, boxes and a cone set.

The regret table of the safety-models guide: each algorithm's mean regret after ``T`` stages
(``R`` runs, the same noise for every algorithm), its violations and fallbacks, and its
microseconds per run-stage.  ROFUL and GNOP run three ways on the convex sets: their default
(the fan's best ray refined toward the rule's continuous optimum where the set gives its
extent along a ray: boxes, polytopes, balls, ellipsoids), the default fan as scanned
(``refine=False``), and a fan of 4,096 rays as scanned.  The problems, all from the origin
(the safe arm), ``c = 0.3``, noise 0.1:

* ``star``: the ROFUL paper's arm set, 10 random unit directions in R^3, radius 1;
* ``box3``, ``box5``: ``[-1, 1]^d``;
* ``cone``: the demand-response set ``||x|| <= 1, x1 + x2 <= 0.9, ||F x|| <= 0.8`` in R^3
  (``F = [[1, .5, 0], [0, 1, -.3]]``), whose rays are moved in by its exact cone membership.

``theta*`` and ``gamma*`` are fixed unit vectors (in R^3: ``(.5, .4, .3)`` and ``(.7, .5, .1)``
normalized; in R^5 two random coordinates more).

Run from the repository root::

    python benchmarks/measure_directional_regret.py            # about 5 minutes (8 x 4,000)
    python benchmarks/measure_directional_regret.py --quick    # a smoke test (CI)
"""

from __future__ import annotations

import argparse
import time

import cvxpy as cp
import numpy as np

import sege_cvx as sc

F = np.array([[1.0, 0.5, 0.0], [0.0, 1.0, -0.3]])


def _demand_response(x):
    return [cp.norm(x) <= 1, x[0] + x[1] <= 0.9, cp.norm(F @ x) <= 0.8]


def problem(name: str) -> sc.BanditProblem:
    """The named problem (the module docstring)."""
    d = 5 if name == "box5" else 3
    rng = np.random.default_rng(d)
    theta = np.r_[[0.5, 0.4, 0.3], rng.uniform(-0.3, 0.3, d - 3)]
    gamma = np.r_[[0.7, 0.5, 0.1], rng.uniform(-0.3, 0.3, d - 3)]
    if name == "star":
        u = np.random.default_rng(2).normal(size=(10, 3))
        arm_set = sc.StarSet(u / np.linalg.norm(u, axis=1)[:, None], 1.0)
    elif name == "cone":
        arm_set = sc.ConvexArmSet(3, _demand_response)
    else:
        arm_set = sc.Box([-1.0] * d, [1.0] * d)
    constraint = sc.LinearConstraint(0.3, gamma_star=gamma / np.linalg.norm(gamma),
                                     noise_sd=0.1)
    return sc.BanditProblem.from_truth(arm_set, theta_star=theta / np.linalg.norm(theta),
                                       safe_arm=[0.0] * d, S=1.0, noise_sd=0.1,
                                       constraint=constraint, name=name)


def variants(name: str) -> list[tuple[str, str, dict]]:
    """``(label, algorithm, keywords)`` run on problem ``name``."""
    out = []
    for algorithm in ("ROFUL", "GNOP"):
        out.append((algorithm, algorithm, {}))
        if name != "star":
            out.append((f"{algorithm}, fan as scanned", algorithm, {"refine": False}))
            out.append((f"{algorithm}, 4,096 rays", algorithm,
                        {"refine": False, "n_directions": 4096}))
    out.append(("SafeTS", "SafeTS", {}))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="2 runs x 200 stages on the star set and the box in R^3 (CI)")
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--horizon", type=int, default=4000)
    parser.add_argument("--problems", default="star,box3,box5,cone")
    args = parser.parse_args()
    runs, horizon = (2, 200) if args.quick else (args.runs, args.horizon)
    names = ["star", "box3"] if args.quick else args.problems.split(",")
    policy_seeds, noise_seeds = sc.run_seeds(0, runs)
    _, warm_up_noise = sc.run_seeds(1, 1)
    print(f"{runs} runs x {horizon} stages; regret: mean over runs at the last stage")
    print(f"{'problem':8} {'algorithm':24} {'rays':>5} {'regret':>9} {'violations':>10} "
          f"{'fallbacks':>9} {'us/run-stage':>12}")
    for name in names:
        prob = problem(name)
        for label, algorithm, keywords in variants(name):
            # Untimed: compiles the policy's stages on first use.
            sc.simulate(prob.policy(algorithm, 1, 0, **keywords), prob.bandit(warm_up_noise), 5)
            policy = prob.policy(algorithm, runs, policy_seeds, **keywords)
            start = time.perf_counter()
            stats = sc.simulate(policy, prob.bandit(noise_seeds), horizon).stats
            per = (time.perf_counter() - start) / (runs * horizon) * 1e6
            rays = len(getattr(policy, "directions", ()))
            print(f"{name:8} {label:24} {rays:5d} {stats.regret[-1].mean():9.1f} "
                  f"{int(stats.total_violations.sum()):10d} "
                  f"{int(np.sum(policy.solver_fallbacks)):9d} {per:12.1f}", flush=True)


if __name__ == "__main__":
    main()
