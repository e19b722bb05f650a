"""
Solver against closed form
==========================

On an ellipsoid, SEGE's LCB arm ``argmax_x <x, theta_hat> - r ||x||_{V^-1}`` has an exact
closed form (the paper's case); the same program is also compiled once with cvxpy and solved
by Clarabel. This example computes both on random instances and compares the objectives and
the time per arm. ``benchmarks/bench_lcb_arm.py`` and ``benchmarks/bench_arm_sets.py`` do the
same at scale, for every kind of arm set.
"""

import time

import matplotlib.pyplot as plt
import numpy as np

import sege_cvx as sc

rng = np.random.default_rng(0)
d, n = 3, 200
q, _ = np.linalg.qr(rng.standard_normal((d, d)))
ellipsoid = sc.Ellipsoid(np.ones(d), (q * [1.0, 0.5, 0.2]) @ q.T)

thetas = rng.standard_normal((n, d))
factors = rng.standard_normal((n, d, d))
Vs = np.eye(d) + np.einsum("nij,nkj->nik", factors, factors)
radii = rng.uniform(0.1, 2.0, n)


def objective(x, theta, V, r):
    return x @ theta - r * np.sqrt(x @ np.linalg.solve(V, x))


# Both methods on the whole batch (the public call validates and factors the
# data once); one untimed call first builds the compiled program, then the
# median of five timed calls.
seconds, arms = {}, {}
for method in ("closed_form", "solver"):
    ellipsoid.lcb_arm(thetas[:2], Vs[:2], radii[:2], method=method)
    times = []
    for _ in range(5):
        start = time.perf_counter()
        arms[method] = ellipsoid.lcb_arm(thetas, Vs, radii, method=method)
        times.append(time.perf_counter() - start)
    seconds[method] = float(np.median(times))
gaps = np.array([objective(a, t, V, r) - objective(b, t, V, r)
                 for a, b, t, V, r in zip(arms["closed_form"], arms["solver"],
                                          thetas, Vs, radii, strict=True)])
print(f"closed form minus Clarabel, objective: min {gaps.min():.2e}, "
      f"max {gaps.max():.2e}")
print({m: f"{1e6 * s / n:.1f} us per arm" for m, s in seconds.items()})

# %%
# The closed form is never worse than the solver by more than rounding, and is usually better
# by the solver's tolerance; it is also orders of magnitude faster.

fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.5))
left.hist(gaps, bins=30)
left.set_xlabel("objective: closed form - Clarabel")
left.set_ylabel("instances")
per_arm = [1e6 * s / n for s in seconds.values()]
right.barh(list(seconds), per_arm)
right.set_xscale("log")
right.set_xlim(0.1 * min(per_arm), 10 * max(per_arm))
for k, value in enumerate(per_arm):
    right.text(value, k, f" {value:.1f} us", va="center")
right.set_xlabel(f"microseconds per LCB arm (a batch of {n})")
fig.tight_layout()
