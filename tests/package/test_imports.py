"""The closed-form path (the paper's disk, SEGE and CLUCB, simulate) loads no solver, plotting or
table library; they load, transparently, the moment something needs them (Dask only for a
cluster)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# numba itself imports scipy, and scipy.linalg for its BLAS bindings at the first kernel call:
# only the scipy modules this package imports (CLUCB's ndtri for d > 3, the conic data) count.
SCRIPT = """
import sys

HEAVY = ("cvxpy", "clarabel", "matplotlib", "scipy.sparse", "scipy.special", "pandas", "pyarrow",
         "dask", "distributed")

def loaded():
    return sorted(m for m in sys.modules if m.startswith(HEAVY))

import sege_cvx as sc
problem = sc.paper_problem()
policy_seeds, noise_seeds = sc.run_seeds(0, 4)
for policy in (problem.policy("SEGE", 4, policy_seeds), problem.policy("CLUCB", 4)):
    bandit = sc.LinearBandit(problem.theta_star, problem.setting.noise_sd, noise_seeds,
                             threshold=problem.setting.safety.threshold)
    sc.simulate(policy, bandit, 50)
print(loaded())
sc.Polytope([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]], [1.0, 1.0, 0.0])
print("cvxpy" in sys.modules)
sc.load_results, sc.run_sweep  # the names resolve; their modules load pandas and pyarrow
print("pandas" in sys.modules, "pyarrow" in sys.modules, "distributed" in sys.modules)
"""


def test_closed_form_path_loads_no_solver_and_a_polytope_loads_cvxpy():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT),
                                                                      os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True,
                         cwd=ROOT, env=env)
    assert out.stdout.split("\n")[:3] == ["[]", "True", "True True False"]


def test_every_public_submodule_is_reachable_first_thing():
    """``sc.policies.rho_bar`` (as the guide and the gallery write it) in a fresh interpreter,
    before any other public name was touched; likewise each exported submodule."""
    script = ("import sege_cvx as sc\n"
              "print(sc.policies.rho_bar(2.24, 1.792, 1.0, 2.0) > 0, sc.confidence.__name__,\n"
              "      sc.experiments.__name__, sc.testing.__name__, sc.stages.__name__)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "sege_cvx.confidence", "sege_cvx.experiments",
                                  "sege_cvx.testing", "sege_cvx.stages"]
