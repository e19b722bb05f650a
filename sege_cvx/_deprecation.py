"""Names kept for one release after they moved or were replaced: a module's ``__getattr__`` that
warns (``DeprecationWarning``) and computes the old value from what replaced it."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import partial
from importlib import import_module


def deprecated_names(module: str, names: dict[str, tuple[Callable[[], object], str]]) -> Callable:
    """A module ``__getattr__`` for ``names``: old name -> (a function computing its value, what
    to use instead)."""

    def __getattr__(name: str):
        if name in names:
            value, instead = names[name]
            warnings.warn(f"{module}.{name} is deprecated and will be removed in the next "
                          f"release; use {instead}", DeprecationWarning, stacklevel=2)
            return value()
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__


def moved(homes: dict[str, str]) -> dict[str, tuple[Callable[[], object], str]]:
    """The entries of :func:`deprecated_names` for names that moved to another module: old name
    -> the module that defines it now (imported when the name is first used)."""
    return {name: (partial(_attribute, home, name), f"{home}.{name}")
            for name, home in homes.items()}


def _attribute(module: str, name: str) -> object:
    return getattr(import_module(module), name)
