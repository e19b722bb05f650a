"""The closed-form path (the paper's disk, SEGE and CLUCB, simulate) loads no solver, plotting or
table library; they load, transparently, the moment something needs them (Dask only for a
cluster).  Modules moved into the geometry folders still import from their old paths."""

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# numba itself imports scipy, and scipy.linalg for its BLAS bindings at the first kernel call:
# only the scipy modules this package imports (CLUCB's ndtri for d > 3, the conic data) count.
SCRIPT = """
import sys

HEAVY = ("cvxpy", "clarabel", "matplotlib", "scipy.sparse", "scipy.special", "pandas", "pyarrow",
         "dask", "distributed")

def loaded():
    return sorted(m for m in sys.modules if m.startswith(HEAVY))

import sege_cvx as sc
from sege_cvx.experiments import paper

problem = paper.paper_problem()
policy_seeds, noise_seeds = sc.run_seeds(0, 4)
for policy in (problem.policy("SEGE", 4, policy_seeds), problem.policy("CLUCB", 4)):
    sc.simulate(policy, sc.LinearBandit(problem.theta_star, problem.noise_sd, noise_seeds), 50)
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


def _package_imports(path: Path, package: str, module: str) -> set[str]:
    """The modules of ``package`` (dotted names relative to it) that its module ``module``, at
    ``path``, imports, at the top or inside functions."""
    import ast

    here = module.split(".")[:-1]  # the subpackage holding ``module`` ([] for the package)
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            up = node.level - 1
            if up > len(here):  # above the package: sege_cvx's other modules
                continue
            stem = here[:len(here) - up] + (node.module.split(".") if node.module else [])
        elif (node.module or "").startswith(package + "."):
            stem = node.module[len(package) + 1:].split(".")
        else:
            continue
        # ``from .sweeps import run`` imports the module sweeps.run; ``from .x import name``, x.
        found.update(".".join([*stem, alias.name]) for alias in node.names)
        found.add(".".join(stem))
    return found


def test_experiments_have_no_import_circle():
    # BanditProblem lives below the study (experiments/problem.py), so that the examples, the
    # shards and the sweep build problems without importing the paper's study.
    folder = ROOT / "sege_cvx" / "experiments"
    paths = {".".join(p.relative_to(folder).with_suffix("").parts): p
             for p in folder.rglob("*.py") if p.name != "__init__.py"}
    modules = set(paths)
    graph = {m: _package_imports(paths[m], "sege_cvx.experiments", m) & modules for m in modules}
    assert "paper" not in graph["problem"] | graph["examples"] | graph["sweeps.shards"]
    state = dict.fromkeys(modules, 0)  # 0 new, 1 on the current path, 2 done

    def visit(m, path):
        state[m] = 1
        for n in sorted(graph[m]):
            assert state[n] != 1, f"import circle: {' -> '.join([*path, m, n])}"
            if state[n] == 0:
                visit(n, [*path, m])
        state[m] = 2

    for m in sorted(modules):
        if state[m] == 0:
            visit(m, [])


@pytest.mark.parametrize("old", ["sweep", "results", "shards"])
def test_the_old_module_paths_are_deprecated_aliases(old):
    """``sege_cvx.experiments.sweep``, ``.results`` and ``.shards`` moved into ``.sweeps``: each of
    their public names still resolves, with a warning naming its new home, to the same object."""
    import importlib

    module = importlib.import_module(f"sege_cvx.experiments.{old}")
    for name in module.__all__:
        with pytest.warns(DeprecationWarning, match=rf"experiments\.{old}\.{name} is deprecated") as seen:
            value = getattr(module, name)
        new = str(seen[0].message).rsplit("use ", 1)[1]
        assert new.startswith("sege_cvx.experiments.sweeps.") and new.endswith(f".{name}")
        assert value is getattr(importlib.import_module(new.rsplit(".", 1)[0]), name)


#: Module paths moved to one folder per geometry (arm_sets/ellipsoid, polytope, hull) and the
#: shared fast_paths: each old path re-exports its public names for one release, with a warning.
MOVED = {
    "sege_cvx.fast_paths.ellipsoid_arms": "sege_cvx.arm_sets.ellipsoid.arms",
    "sege_cvx.fast_paths.ellipsoid_lcb": "sege_cvx.arm_sets.ellipsoid.lcb",
    "sege_cvx.fast_paths.polytope_arms": "sege_cvx.arm_sets.polytope.arms",
    "sege_cvx.fast_paths.hull_arms": "sege_cvx.arm_sets.hull.arms",
    "sege_cvx.arm_sets.polyhedral": "sege_cvx.arm_sets.polytope.sets",
    "sege_cvx._pull_in": "sege_cvx.fast_paths.pull_in",
}
#: Names that moved on from the new module: the scaling every compiled geometry shares.
MOVED_ON = {"ORDER_ONE": "sege_cvx.arm_sets.scaling",
            "order_one_exponent": "sege_cvx.arm_sets.scaling"}


@pytest.mark.parametrize("old", sorted(MOVED))
def test_a_moved_module_still_imports_from_its_old_path_with_a_warning(old):
    new = importlib.import_module(MOVED[old])
    sys.modules.pop(old, None)  # imported before (the doctests): run the module again
    with pytest.warns(DeprecationWarning, match=MOVED[old]):
        module = importlib.import_module(old)
    assert module.__all__
    for name in module.__all__:
        home = importlib.import_module(MOVED_ON[name]) if name in MOVED_ON else new
        assert getattr(module, name) is getattr(home, name), name


def test_the_geometry_folders_keep_the_names_of_the_modules_they_replace():
    # arm_sets/ellipsoid.py and arm_sets/hull.py became the packages of the same name.
    from sege_cvx.arm_sets import ellipsoid, hull
    from sege_cvx.arm_sets.ellipsoid.sets import Ball, Ellipsoid
    from sege_cvx.arm_sets.hull.sets import EXPLORATION_SHRINK, ConvexHull

    assert (ellipsoid.Ellipsoid, ellipsoid.Ball) == (Ellipsoid, Ball)
    assert (hull.ConvexHull, hull.EXPLORATION_SHRINK) == (ConvexHull, EXPLORATION_SHRINK)
    from sege_cvx.arm_sets.ellipsoid import lcb
    from sege_cvx.fast_paths import EllipsoidLCBKernel, ellipsoid_lcb_arms

    assert (EllipsoidLCBKernel, ellipsoid_lcb_arms) == (lcb.EllipsoidLCBKernel, lcb.ellipsoid_lcb_arms)
