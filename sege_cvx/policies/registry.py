"""The policy registry: a policy's name to its classes, and what a study may vary of them.

Every layer that names policies reads this one table: a spec's ``[[algorithms]] name``, the
command line's ``--algorithms``, :meth:`~sege_cvx.problems.problem.BanditProblem.policy`, the
paper's study and the reports' labels and colours.  The built-in policies register here like any
user's policy.  A name is either registered (:func:`register_policy`) or an import path
``"module:Class"`` naming a :class:`~sege_cvx.policies.base.Policy` subclass.

A name may stand for one class per safety model: ``"ROFUL"`` is
:class:`~sege_cvx.StagewiseROFUL` on the stagewise floor and :class:`~sege_cvx.ROFUL` under an
unknown linear constraint.  :func:`policy_class` gives the class of a problem's model.

A study varies a policy's *grid parameters*: its constructor's keyword parameters, read from its
signature (scikit-learn's ``get_params`` is the model), except those the sweep supplies
(:data:`PROBLEM_PARAMETERS`) and those whose annotation is not a plain number, string or bool
(an exploration object, a callable): a TOML grid holds plain values only.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import inspect
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from .._validation import import_failure
from ..safety import SAFETY_MODELS
from .base import Policy, model_problem

__all__ = ["PROBLEM_PARAMETERS", "PolicyEntry", "class_path", "code_of", "display_names",
           "grid_parameters", "policy_class", "policy_code_fingerprint", "policy_color",
           "policy_entry", "policy_stem", "register_policy", "registered_name",
           "registered_policies", "renamed", "resolution", "safety_model_problem"]

#: Constructor parameters the problem (its setting) and the sweep (runs and seeds) supply: never
#: grid parameters.
PROBLEM_PARAMETERS = ("setting", "n_runs", "seed")

#: Annotation words of a grid parameter's type: plain numbers, strings, bools and None.
_PLAIN_WORDS = {"float", "int", "str", "bool", "None", "NoneType", "Optional", "Union", "Literal",
                "typing"}
_WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")


@dataclass(frozen=True)
class PolicyEntry:
    """A registered policy: its ``name``, its classes (one per safety model, in the order they
    were registered) and its report colour (any matplotlib colour; ``None``: the next free one
    of the reports' palette)."""

    name: str
    classes: tuple[type[Policy], ...]
    color: str | None = None

    @property
    def cls(self) -> type[Policy]:
        """The first class registered under the name (its only one, for most policies)."""
        return self.classes[0]

    @property
    def safety_models(self) -> tuple[str, ...]:
        """The safety models the name runs on: its classes', in their order."""
        return tuple(dict.fromkeys(m for cls in self.classes for m in cls.safety_models))

    def for_model(self, model: str) -> type[Policy] | None:
        """The class of the name that runs on safety model ``model`` (None if none does)."""
        return next((cls for cls in self.classes if model in cls.safety_models), None)


_REGISTRY: dict[str, PolicyEntry] = {}
#: The module whose code last replaced a name's class (``replace=True``): what a sweep's error
#: names when a name changes under it.
_REPLACED_BY: dict[str, str] = {}


def _caller_module() -> str:
    """The first module up the stack that is not this one: the one registering a class."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back
    return "?" if frame is None else str(frame.f_globals.get("__name__"))


def register_policy(name: str, cls: type[Policy] | None = None, *, color: str | None = None,
                    replace: bool = False):
    """Register the policy class ``cls`` under ``name``; usable as a class decorator.

    A name takes one class per safety model: registering a class whose
    :attr:`~sege_cvx.Policy.safety_models` no class of the name covers adds it to the name (as
    ``"ROFUL"`` is the stagewise :class:`~sege_cvx.StagewiseROFUL` and the constrained
    :class:`~sege_cvx.ROFUL`).

    Parameters
    ----------
    name : str
        The name specs, the command line and reports use (no ``":"``: that marks an import
        path).
    cls : type
        A subclass of :class:`sege_cvx.Policy`.  Omitted: returns a decorator.
    color : str, optional
        Its colour in reports (a matplotlib colour); a name's first colour stays unless
        another is given.
    replace : bool
        Allow ``name`` to name ``cls`` in place of the classes of the same safety models
        (otherwise a ValueError).

    Returns
    -------
    type
        ``cls`` (so that the decorator leaves the class as it is).

    Examples
    --------
    >>> import sege_cvx as sc
    >>> @sc.register_policy("Baseline-only")
    ... class BaselineOnly(sc.Policy):
    ...     decision_names = ("baseline",)
    ...     def select(self):
    ...         self.last_decision[:] = 0
    ...         return self.setting.safe_arm
    ...     def observe(self, arms, rewards, constraint_values):
    ...         pass
    >>> sc.policy_class("Baseline-only") is BaselineOnly
    True
    >>> "Baseline-only" in sc.registered_policies()
    True
    """
    if cls is None:
        return lambda klass: register_policy(name, klass, color=color, replace=replace)
    if (not isinstance(name, str) or not name.strip() or ":" in name or name != name.strip()
            or not name.isprintable()):
        raise ValueError(f"a policy's name must be a nonempty printable string without ':' or "
                         f"surrounding spaces, got {name!r}")
    if not (isinstance(cls, type) and issubclass(cls, Policy)):
        raise TypeError(f"register_policy({name!r}, ...) needs a subclass of sege_cvx.Policy, got "
                        f"{cls!r}")
    if color is not None and not isinstance(color, str):
        raise TypeError(f"color must be a matplotlib colour name or None, got {color!r}")
    if unknown := [m for m in cls.safety_models if m not in SAFETY_MODELS]:
        raise ValueError(f"{cls.__name__}.safety_models names {unknown[0]!r}, not a safety model "
                         f"({', '.join(SAFETY_MODELS)})")
    known = _REGISTRY.get(name)
    if known is None:
        _REGISTRY[name] = PolicyEntry(name, (cls,), color)
        return cls
    if cls in known.classes:
        if color is not None:
            _REGISTRY[name] = PolicyEntry(name, known.classes, color)
        return cls
    overlap = [k for k in known.classes if set(k.safety_models) & set(cls.safety_models)]
    if overlap and not replace:
        raise ValueError(f"policy name {name!r} is registered to {class_path(overlap[0])} on the "
                         f"same safety model; pass replace=True to register another class "
                         "under it")
    classes = tuple(k for k in known.classes if k not in overlap) + (cls,)
    _REGISTRY[name] = PolicyEntry(name, classes, known.color if color is None else color)
    _REPLACED_BY[name] = _caller_module()
    return cls


def registered_policies(model: str | None = None) -> tuple[str, ...]:
    """The registered names, in the order they were registered (the built-ins first); with
    ``model``, those with a class for that safety model."""
    return tuple(name for name, entry in _REGISTRY.items()
                 if model is None or entry.for_model(model) is not None)


def policy_entry(name: str) -> PolicyEntry:
    """The :class:`PolicyEntry` of ``name``: a registered name, or an import path
    ``"module:Class"`` (then with no colour).  One-line errors: a ValueError for an unknown
    name (listing the known ones), an ImportError naming a module or class that cannot be
    loaded."""
    if not isinstance(name, str):
        raise TypeError(f"a policy is named by a string (a registered name or 'module:Class'), "
                        f"got {name!r}")
    if name in _REGISTRY:
        return _REGISTRY[name]
    if name.count(":") != 1 or not all(name.split(":")):
        raise ValueError(f"unknown policy {name!r} (registered: {', '.join(_REGISTRY)}; or an "
                         "import path 'module:Class')")
    module_name, qualname = name.split(":")
    try:
        target = importlib.import_module(module_name)
        for part in qualname.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise ImportError(f"policy {name!r} cannot be loaded: "
                          f"{import_failure(exc, module_name)}") from None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # the module's own code failed on import (or called sys.exit)
        raise ImportError(f"policy {name!r} cannot be loaded: importing {module_name!r} raised "
                          f"{type(exc).__name__}: {' '.join(str(exc).split())}") from exc
    if not (isinstance(target, type) and issubclass(target, Policy)):
        raise TypeError(f"policy {name!r} is not a subclass of sege_cvx.Policy: {target!r}")
    return PolicyEntry(name, (target,))


def policy_class(name: str, model: str | None = None) -> type[Policy]:
    """The class of ``name`` (see :func:`policy_entry`) on safety model ``model`` (a key of
    :data:`~sege_cvx.safety.SAFETY_MODELS`), or its first class if ``model`` is None.

    Raises
    ------
    TypeError
        If no class of ``name`` runs on ``model`` (:func:`safety_model_problem`'s sentence).
    """
    entry = policy_entry(name)
    if model is None:
        return entry.cls
    cls = entry.for_model(model)
    if cls is None:
        raise TypeError(safety_model_problem(name, model))
    return cls


def policy_color(name: str) -> str | None:
    """The report colour registered for ``name`` (None: not registered, or no colour)."""
    entry = _REGISTRY.get(name)
    return None if entry is None else entry.color


def registered_name(cls: type) -> str | None:
    """The name ``cls`` is registered under (its first), or None."""
    return next((name for name, entry in _REGISTRY.items() if cls in entry.classes), None)


def display_names(names) -> dict[str, str]:
    """How figures name each policy of ``names``: a registered name as it is, an import path by
    the name its class is registered under (``"my_policies:StagewiseTS"`` is ``"StagewiseTS"``
    once the module registers it), else the path itself; a registered name that another of
    ``names`` has too, or already is, leaves the path as it is."""
    names = list(names)
    shown = {}
    for name in names:
        try:
            found = registered_name(policy_entry(name).cls) if ":" in name else None
        except (ImportError, TypeError, ValueError):
            found = None
        shown[name] = found or name
    taken = Counter(shown.values())
    return {name: label if label == name or (taken[label] == 1 and label not in names) else name
            for name, label in shown.items()}


def policy_stem(name: str) -> str:
    """``name`` as a file-name stem and array-key prefix: lower case, each run of characters
    other than letters and digits one ``_``.

    >>> policy_stem("SEGE"), policy_stem("my_policies:SafeTS")
    ('sege', 'my_policies_safets')
    """
    stem = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
    # A name without letters or digits of its own: a stem from its hash, distinct and stable.
    return stem or "policy_" + hashlib.sha256(name.encode()).hexdigest()[:8]


def grid_parameters(cls: type[Policy] | PolicyEntry) -> tuple[str, ...]:
    """The parameters a study may vary of ``cls``, in its constructor's order: its keyword
    parameters but :data:`PROBLEM_PARAMETERS`, whose annotation (if any) names only plain
    types (``float``, ``int``, ``str``, ``bool``, ``None``).  Of a :class:`PolicyEntry`: those
    of any of its classes, in their order.

    >>> from sege_cvx import CLUCB
    >>> grid_parameters(CLUCB)
    ('lam', 'delta', 'n_arms', 'radius')
    """
    if isinstance(cls, PolicyEntry):
        return tuple(dict.fromkeys(n for klass in cls.classes for n in grid_parameters(klass)))
    names = []
    for param in inspect.signature(cls.__init__).parameters.values():
        if (param.name == "self" or param.name in PROBLEM_PARAMETERS
                or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD)):
            continue
        annotation = param.annotation
        if annotation is param.empty:
            plain = param.default is param.empty or param.default is None or isinstance(
                param.default, bool | int | float | str)
        else:
            # The annotation as written (a string under ``from __future__ import annotations``,
            # else a class or a typing form), its quoted Literal values left out.
            text = (annotation if isinstance(annotation, str) else annotation.__name__
                    if isinstance(annotation, type) else str(annotation))
            plain = set(_WORD.findall(_QUOTED.sub("", text))) <= _PLAIN_WORDS
        if plain:
            names.append(param.name)
    return tuple(names)


def code_of(source: bytes) -> bytes:
    """What a module's ``source`` does: its syntax tree (:func:`ast.dump`, no line numbers)
    without the module's, classes' and functions' docstrings; comments are not in the tree.
    Editing either leaves it the same; any change to the code changes it.  Source that does
    not parse is taken whole."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return source
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                node.body = node.body[1:] or [ast.Pass()]
    return ast.dump(tree).encode()


def policy_code_fingerprint(cls: type[Policy] | PolicyEntry) -> str | None:
    """SHA-256 of what the source files of ``cls`` and of its bases outside sege_cvx do
    (:func:`code_of`: comments and docstrings out; None for sege_cvx's own policies, which the
    package's version identifies); of a
    :class:`PolicyEntry`, of all its classes (its one class's, if it has one).  A sweep records
    it, so that a policy whose code changed is never pooled with the shards of its old code.

    Only the modules defining the class and its bases are read: a helper module they import is
    not covered (keep a policy's code in its module, or rerun a sweep with ``overwrite`` after
    changing a helper).  A script's classes count as the script's (``__main__`` here,
    ``__mp_main__`` in a worker process started by ``spawn``).  A class whose source cannot be
    read (defined at an interactive prompt) is identified by its name alone."""
    if isinstance(cls, PolicyEntry):
        codes = [policy_code_fingerprint(klass) for klass in cls.classes]
        if len(codes) == 1 or not any(codes):
            return codes[0]
        return hashlib.sha256("\0".join(map(str, codes)).encode()).hexdigest()
    digest = hashlib.sha256()
    outside = [klass for klass in cls.__mro__ if klass is not object
               and not klass.__module__.split(".")[0] == "sege_cvx"]
    if not outside:
        return None
    for module_name in sorted({klass.__module__ for klass in outside}):
        module = sys.modules.get(module_name)
        source = getattr(module, "__file__", None)
        digest.update(_main_alias(module_name).encode() + b"\0")
        if source is not None and Path(source).is_file():
            digest.update(code_of(Path(source).read_bytes()))
    digest.update(f"{_main_alias(cls.__module__)}:{cls.__qualname__}".encode())
    return digest.hexdigest()


def safety_model_problem(policy: str | type, model: str) -> str | None:
    """Why ``policy`` (a name, as :func:`policy_entry` reads it, or a class) does not run on a
    problem of safety model ``model``, in one sentence naming the registered policies that do
    (None if it runs)."""
    if isinstance(policy, str):
        entry = policy_entry(policy)
        if entry.for_model(model) is not None:
            return None
        called, models = policy, entry.safety_models
    else:
        if model_problem(policy, model) is None:
            return None
        called = next((name for name, e in _REGISTRY.items() if policy in e.classes),
                      policy.__name__)  # its registered name, if any
        models = policy.safety_models
    fits = registered_policies(model)
    runs_on = " and on ".join(SAFETY_MODELS.get(m, m) for m in models)
    return (f"{called} runs on {runs_on}, not on "
            f"{SAFETY_MODELS.get(model, model)}: use {', '.join(fits) or 'another policy'}")


def _main_alias(module_name: str) -> str:
    """A script's module by one name: ``__main__``, also in a ``spawn`` worker's ``__mp_main__``."""
    return "__main__" if module_name == "__mp_main__" else module_name


def class_path(cls: type) -> str:
    """``"module:Qualname"`` of ``cls``: the import path :func:`policy_entry` reads."""
    return f"{cls.__module__}:{cls.__qualname__}"


def renamed(name: str, was: str) -> str | None:
    """Why ``name`` no longer names the class a sweep resolved it to (``was``, its
    ``"module:Class"``), in one sentence naming the module that registered another class under
    it; None if it still names it (a sweep resolves each name once and holds it to that
    class)."""
    now = policy_entry(name).cls
    module, _, qualname = was.partition(":")
    if (_main_alias(now.__module__), now.__qualname__) == (_main_alias(module), qualname):
        return None  # a script's class, as a spawned worker names it
    by = _REPLACED_BY.get(name, now.__module__)
    return (f"policy {name!r} was resolved to {was}, and then {class_path(now)} was registered "
            f"under that name (by module {by!r}, imported by the sweep): a name keeps its "
            "class for a whole sweep; register your class under a name of its own")


def resolution(names) -> dict[str, str]:
    """Each of ``names`` that is registered, by the ``"module:Class"`` it names now: what
    :func:`renamed` later holds it to."""
    return {name: class_path(_REGISTRY[name].cls) for name in names if name in _REGISTRY}
