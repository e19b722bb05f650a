"""The package's layers follow the data: arm sets and their kernels, then the safety models and
the setting, the compiled stage loop, policies, simulate, problems, and experiments, testing and
the command line above.  A module imports only from its own layer or below (at the top or inside
a function; a type checker's imports aside), and no modules import each other in a circle."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "sege_cvx"

#: Each top-level module or subpackage of sege_cvx, by layer, lowest first.
LAYERS = (
    {"_numba", "_random", "_validation", "_rowwise", "_fingerprint", "_lazy"},
    {"confidence", "conic"},
    {"arm_sets"},
    {"safety", "setting"},
    {"stages"},
    {"policies"},
    {"simulation"},
    {"problems"},
    {"experiments"},
    {"testing"},
    {"cli", "__main__"},
)
LAYER = {name: depth for depth, names in enumerate(LAYERS) for name in names}


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _runtime_nodes(tree: ast.AST):
    """Every node of ``tree`` but those under ``if TYPE_CHECKING:`` (annotations only: nothing
    is imported when the code runs)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
            yield from (n for child in node.orelse for n in [child, *_runtime_nodes(child)])
            continue
        yield node
        yield from _runtime_nodes(node)


def _imports(module: str, path: Path, modules: dict) -> set[str]:
    """The package's modules that ``module`` imports when it runs, at the top or inside
    functions."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in _runtime_nodes(ast.parse(path.read_text())):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = package.split(".") if package else []
            base = base[:len(base) - node.level + 1]
            target = ".".join([*base, *([node.module] if node.module else [])])
        elif (node.module or "").startswith("sege_cvx"):
            target = node.module.removeprefix("sege_cvx").lstrip(".")
        else:
            continue
        for alias in node.names:
            name = f"{target}.{alias.name}" if target else alias.name
            found.add(name if name in modules else target)
    return found - {""}


def test_every_module_is_in_a_layer():
    tops = {name.split(".")[0] for name in _modules() if name}
    assert tops <= set(LAYER), f"modules in no layer: {sorted(tops - set(LAYER))}"


def test_no_module_imports_from_a_layer_above_its_own():
    modules = _modules()
    upward = []
    for module, path in modules.items():
        if not module:  # the package's __init__: lazy public names of every layer
            continue
        for target in _imports(module, path, modules):
            here, there = module.split(".")[0], target.split(".")[0]
            if LAYER[there] > LAYER[here]:
                upward.append(f"{module} -> {target}")
    assert not upward, "imports against the layers: " + "; ".join(sorted(upward))


def test_no_modules_import_each_other_in_a_circle():
    modules = _modules()
    graph = {m: {t for t in _imports(m, p, modules) if t in modules and t != m}
             for m, p in modules.items() if m}
    state = dict.fromkeys(graph, 0)  # 0 new, 1 on the current path, 2 done
    circles = []

    def visit(m, path):
        state[m] = 1
        for n in sorted(graph[m]):
            if modules[n].name == "__init__.py":  # a package: its names, not a circle of files
                continue
            if state[n] == 1:
                circles.append(" -> ".join([*path[path.index(n):], n]))
            elif state[n] == 0:
                visit(n, [*path, n])
        state[m] = 2

    for m in sorted(graph):
        if state[m] == 0:
            visit(m, [m])
    assert not circles, "import circles: " + "; ".join(circles)
