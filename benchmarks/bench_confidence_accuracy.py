"""Accuracy of the confidence set after many observations: Cholesky refactoring vs Sherman-Morrison.

For each lambda and d, feeds 10^5 observations (arms around (1, ..., 1) as SEGE plays them) to

* the library's confidence set (``V`` summed exactly, Cholesky-refactored after each
  observation, theta_hat and ||x||_{V^{-1}} by triangular solves), and
* the previous method, ``V^{-1}`` propagated by Sherman-Morrison from ``I / lambda``,

and prints the largest relative error of theta_hat and of ||x||_{V^{-1}} (20 probe arms) against
an exact rational recomputation from the accumulated sums.  Run on demand:

    python benchmarks/bench_confidence_accuracy.py [--updates 100000]
    python benchmarks/bench_confidence_accuracy.py --quick      # a smoke test (CI)
"""

from __future__ import annotations

import argparse
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from _exact import exact_solve  # noqa: E402
from _machine import machine  # noqa: E402
from numba import njit  # noqa: E402

import sege_cvx as sc  # noqa: E402
from sege_cvx.confidence import cholesky  # noqa: E402


@njit
def sherman_morrison(x, y, lam):
    """The previous update: V^{-1} <- V^{-1} - u u^T / (1 + x^T u), theta_hat = V^{-1} sum x y."""
    n, d = x.shape
    V_inv = np.eye(d) / lam
    xy = np.zeros(d)
    for k in range(n):
        u = V_inv @ x[k]
        V_inv = V_inv - np.outer(u, u) / (1.0 + x[k] @ u)
        xy += x[k] * y[k]
    return V_inv @ xy, V_inv


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=100_000)
    parser.add_argument("--quick", action="store_true", help="a smoke test: 1,000 updates")
    args = parser.parse_args()
    if args.quick:
        args.updates = 1000
    print("\n".join(machine()))
    print(f"{args.updates} updates; relative errors against exact rational recomputation")
    print(f"{'d':>3} {'lambda':>7} | {'theta_hat: Cholesky':>20} {'Sherman-Morrison':>17} | "
          f"{'||x||_V^-1: Cholesky':>21} {'Sherman-Morrison':>17}")
    for d in (2, 10):
        for lam in (1e-12, 1e-6, 0.1, 1e3):
            rng = np.random.default_rng(0)
            u = rng.standard_normal((args.updates, d))
            x = 1.0 + u / np.linalg.norm(u, axis=1, keepdims=True)
            y = x @ np.linspace(0.2, 0.8, d) + rng.standard_normal(args.updates)
            ce = sc.ConfidenceEllipsoid(d, lam)
            cholesky.observe(ce.V, ce.chol, ce.xy_sum, ce.theta_hat, ce.counts,
                             np.zeros(args.updates, dtype=np.int64), x, y)
            sm_theta, sm_V_inv = sherman_morrison(x, y, lam)
            exact = np.array([float(v) for v in exact_solve(ce.V[0], ce.xy_sum[0])])
            errs = [np.linalg.norm(t - exact) / np.linalg.norm(exact) for t in (ce.theta_hat[0], sm_theta)]
            norm_errs = [0.0, 0.0]
            for probe in rng.standard_normal((20, d)):
                exact_norm = float(sum(Fraction(float(a)) * w for a, w in
                                       zip(probe, exact_solve(ce.V[0], probe), strict=True))) ** 0.5
                ours = probe @ ce.theta_hat[0] - ce.lcb(probe[None], 1.0)[0]
                theirs = np.sqrt(abs(probe @ sm_V_inv @ probe))
                for i, v in enumerate((ours, theirs)):
                    norm_errs[i] = max(norm_errs[i], abs(v - exact_norm) / exact_norm)
            print(f"{d:>3} {lam:>7g} | {errs[0]:>20.2e} {errs[1]:>17.2e} | "
                  f"{norm_errs[0]:>21.2e} {norm_errs[1]:>17.2e}", flush=True)


if __name__ == "__main__":
    main()
