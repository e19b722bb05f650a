"""Public names that load their modules on first use (PEP 562), for the package's ``__init__``s."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module


def lazy_exports(namespace: dict, exports: dict[str, str]) -> tuple[Callable, Callable]:
    """A module's ``__getattr__`` and ``__dir__`` for ``exports`` (public name -> the module,
    relative to the package, that defines it, or the submodule of that name itself);
    ``namespace`` is the module's ``globals()``."""
    package = namespace["__name__"]

    def __getattr__(name: str):
        if name in exports:
            module = import_module(exports[name], package)
            # A submodule exported as itself (``"testing": ".testing"``) is the module.
            value = module if exports[name] == "." + name else getattr(module, name)
            namespace[name] = value  # later look-ups skip this function
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted([*namespace, *exports])

    return __getattr__, __dir__
