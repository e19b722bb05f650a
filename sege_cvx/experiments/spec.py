"""A study spec: problems x algorithms x parameter grids x seeds, from TOML or Python.

::

    seed = 11
    runs = 250
    horizon = 20000
    # checkpoints = [...]            # optional; default about 200 log-spaced stages

    [[problems]]
    name = "paper"                   # a built-in example (the names of `sege-cvx run --arm-set`)

    [[problems]]
    factory = "mypkg.problems:make"  # any importable callable returning a BanditProblem
    # misspecified = true            # required if it breaks the paper's assumptions on purpose
    # [problems.parameters]          # optional: the factory's keyword arguments
    # size = 3

    [[algorithms]]
    name = "SEGE"                    # a registered policy (sege_cvx.registered_policies())
    [algorithms.grid]                # the product of these lists; any grid parameter
    c = [0.25, 0.5, 1.0]
    lcb_method = ["closed_form", "solver"]

    [[algorithms]]
    name = "CLUCB"

    [[algorithms]]
    name = "mypolicies:SafeTS"       # or any sege_cvx.Policy subclass, by import path
    # problems = ["paper"]           # optional: only these problems (by name or factory)

The spec's shape is checked when it is read, before any work: unknown keys, unknown algorithms
or parameters, empty grids and bad sizes (``runs`` up to 10**6 per cell, ``horizon`` up to
2**53) are errors naming the key.  An algorithm's grid parameters are its constructor's
keyword parameters of plain type, read from its signature
(:func:`~sege_cvx.policies.registry.grid_parameters`; of every class of a name registered for
several safety models); a grid value overrides the policy's default (its constructor's, or
what :meth:`Policy.defaults <sege_cvx.Policy.defaults>` gives for the problem) and is checked by
the algorithm's constructor.  Reading a spec imports the modules of the policies it names by
import path.

An algorithm's ``problems`` restricts it to those problems (labels: a problem's ``name``, else
its ``factory``, followed by its parameters, ``mypkg.problems:make(size=3)``): how a study
puts problems of both safety models side by side
(:doc:`/user_guide/safety_models`), each with the algorithms of its model.  Without it an
algorithm runs on every problem, and a cell whose problem is of a model the algorithm does not
run on is an error naming the cell.
"""

from __future__ import annotations

import itertools
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .._random import MAX_RUNS
from .._validation import MAX_HORIZON, as_nonnegative_int, as_positive_int, format_value

#: Largest spec file read: a spec lists problems, algorithms and grids, a few kilobytes.
MAX_SPEC_BYTES = 1 << 20

_TOP_KEYS = {"seed", "runs", "horizon", "checkpoints", "problems", "algorithms"}
_PROBLEM_KEYS = {"name", "factory", "parameters", "misspecified"}
_ALGORITHM_KEYS = {"name", "grid", "problems"}


class SpecError(ValueError):
    """A study spec that cannot be run; the message names the offending key."""


@dataclass(frozen=True)
class ProblemSpec:
    """One problem of a study: a built-in example by ``name``, or a ``factory``
    (``"module:callable"``) returning a :class:`~sege_cvx.problems.problem.BanditProblem`.

    ``parameters``: the factory's keyword arguments, ``(key, value)`` pairs of plain values (a
    family of problems from one factory).  ``misspecified`` declares a misspecification study:
    the problem must then be built with ``misspecified=True`` (it may break the paper's
    assumptions), and only then."""

    name: str | None = None
    factory: str | None = None
    misspecified: bool = False
    parameters: tuple[tuple[str, object], ...] = ()

    @property
    def label(self) -> str:
        """How results name the problem: its ``name``, else its ``factory`` and parameters
        (``mypkg.problems:make(size=3)``)."""
        if self.name is not None:
            return self.name
        if not self.parameters:
            return str(self.factory)
        return f"{self.factory}({', '.join(f'{k}={v!r}' for k, v in self.parameters)})"


@dataclass(frozen=True)
class AlgorithmSpec:
    """One algorithm of a study and the grid of its parameters (lists of values)."""

    name: str
    grid: dict[str, tuple] = field(default_factory=dict)
    #: The labels of the problems it runs on (None: every problem of the study).
    problems: tuple[str, ...] | None = None

    def runs_on(self, problem: ProblemSpec) -> bool:
        """Whether the study plays this algorithm on ``problem``."""
        return self.problems is None or problem.label in self.problems

    def settings(self) -> list[dict]:
        """The grid's product, one dict per cell, keys in the spec's order (``[{}]`` if none)."""
        keys = list(self.grid)
        return [dict(zip(keys, values, strict=True))
                for values in itertools.product(*(self.grid[k] for k in keys))]


@dataclass(frozen=True)
class StudySpec:
    """A study: every problem x algorithm x grid cell, each over ``runs`` seeded runs.

    Examples
    --------
    >>> spec = StudySpec.from_dict({"seed": 11, "runs": 4, "horizon": 100,
    ...                             "problems": [{"name": "paper"}],
    ...                             "algorithms": [{"name": "SEGE", "grid": {"c": [0.25, 0.5]}},
    ...                                            {"name": "CLUCB"}]})
    >>> [(p.label, a.name, s) for p, a, s in spec.cells()]
    [('paper', 'SEGE', {'c': 0.25}), ('paper', 'SEGE', {'c': 0.5}), ('paper', 'CLUCB', {})]
    """

    seed: int
    runs: int
    horizon: int
    problems: tuple[ProblemSpec, ...]
    algorithms: tuple[AlgorithmSpec, ...]
    checkpoints: tuple[int, ...] | None = None

    @classmethod
    def from_toml(cls, path: str | Path) -> StudySpec:
        """Read and check a TOML spec file: a regular file of at most :data:`MAX_SPEC_BYTES`."""
        from .files import FileKindError, read_regular

        path = Path(path)
        try:
            # A regular file, of a sane size: a device such as /dev/zero or a FIFO would be read
            # without end, or wait for a writer.
            data = tomllib.loads(read_regular(path, MAX_SPEC_BYTES, f"the spec {path}")
                                 .decode("utf-8"))
        except FileKindError as exc:
            raise SpecError(str(exc)) from None
        except RecursionError:
            raise SpecError(f"{path} is not valid TOML: nested too deeply") from None
        except OSError as exc:
            raise SpecError(f"cannot read the spec {path}: {exc.strerror or exc}") from None
        except UnicodeDecodeError as exc:  # TOML is UTF-8
            raise SpecError(f"{path} is not valid TOML: not UTF-8 text ({exc.reason} at byte "
                            f"{exc.start})") from None
        except tomllib.TOMLDecodeError as exc:
            raise SpecError(f"{path} is not valid TOML: {exc}") from None
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: dict, *, import_policies: bool = True) -> StudySpec:
        """Check a spec given as a dict (the TOML's tables and arrays).

        Parameters
        ----------
        data : dict
            The spec's keys.
        import_policies : bool, default True
            Load each algorithm's class to check its grid against the constructor.  False reads
            a spec a sweep recorded (its manifest's ``spec``, checked when the sweep ran), so
            that its results read anywhere, without the policies' modules on the import path.
        """
        if not isinstance(data, dict):
            raise SpecError(f"a spec is a table of keys, got {type(data).__name__}")
        _no_unknown("the spec", data, _TOP_KEYS)
        for key in ("seed", "runs", "horizon", "problems", "algorithms"):
            if key not in data:
                raise SpecError(f"the spec needs '{key}'{_misplaced(key, data)}")
        seed = _checked("seed", as_nonnegative_int, data["seed"])
        runs = _checked("runs", as_positive_int, data["runs"])
        if runs > MAX_RUNS:  # a cell's runs are merged in memory
            raise SpecError(f"runs must be at most {MAX_RUNS} (split larger studies into several "
                            f"sweeps), got {runs}")
        horizon = _checked("horizon", as_positive_int, data["horizon"])
        if horizon > MAX_HORIZON:
            raise SpecError(f"horizon must be at most 2**53 = {MAX_HORIZON}, got {horizon}")
        checkpoints = None
        if "checkpoints" in data:
            given = _nonempty_list("checkpoints", data["checkpoints"])
            checkpoints = tuple(sorted({_checked("checkpoints", as_positive_int, c) for c in given}))
            if checkpoints[-1] > horizon:
                raise SpecError(f"checkpoints must lie in 1..{horizon} (the horizon), got "
                                f"{checkpoints[-1]}")
        problems = tuple(_problem(i, p) for i, p in
                         enumerate(_nonempty_list("problems", data["problems"])))
        tables = _nonempty_list("algorithms", data["algorithms"])
        if import_policies:  # each registered name as it is before any module of the spec loads
            from ..policies.registry import renamed, resolution

            names = [t.get("name") for t in tables if isinstance(t, dict)]
            before = resolution([n for n in names if isinstance(n, str)])
        algorithms = tuple(_algorithm(i, a, import_policies) for i, a in enumerate(tables))
        if import_policies:
            for i, algorithm in enumerate(algorithms):
                if algorithm.name in before and (why := renamed(algorithm.name,
                                                                before[algorithm.name])):
                    raise SpecError(f"algorithms[{i}]: {why}")
        labels = [p.label for p in problems]
        first: dict[str, int] = {}
        for i, label in enumerate(labels):
            if label in first:
                raise SpecError(f"problems must be distinct: problems[{first[label]}] and "
                                f"problems[{i}] are both {format_value(label)} "
                                f"({len(labels) - len(set(labels))} repeats in all)")
            first[label] = i
        for i, algorithm in enumerate(algorithms):
            for label in algorithm.problems or ():
                if label not in first:
                    raise SpecError(f"algorithms[{i}].problems: {format_value(label)} is not a "
                                    f"problem of the spec (its problems: {', '.join(labels)})")
        _distinct_cells(algorithms, labels)
        if import_policies:
            _distinct_columns(algorithms)
        return cls(seed, runs, horizon, problems, algorithms, checkpoints)

    def to_dict(self) -> dict:
        """The spec as the TOML's tables and arrays (``from_dict(spec.to_dict()) == spec``)."""
        out = {"seed": self.seed, "runs": self.runs, "horizon": self.horizon}
        if self.checkpoints is not None:
            out["checkpoints"] = list(self.checkpoints)
        out["problems"] = [{**({"name": p.name} if p.name is not None else {"factory": p.factory}),
                            **({"parameters": dict(p.parameters)} if p.parameters else {}),
                            **({"misspecified": True} if p.misspecified else {})}
                           for p in self.problems]
        out["algorithms"] = [{"name": a.name,
                              **({"grid": {k: list(v) for k, v in a.grid.items()}}
                                 if a.grid else {}),
                              **({"problems": list(a.problems)} if a.problems is not None
                                 else {})}
                             for a in self.algorithms]
        return out

    def cells(self) -> list[tuple[ProblemSpec, AlgorithmSpec, dict]]:
        """Every ``(problem, algorithm, settings)`` of the study, in the spec's order (an
        algorithm only on its ``problems``, if it names them)."""
        return [(p, a, s) for p in self.problems for a in self.algorithms if a.runs_on(p)
                for s in a.settings()]


def _misplaced(key: str, data: dict) -> str:
    """Where ``key`` is, if a TOML table caught it: a key written after a ``[[problems]]`` header
    belongs to that table, not to the top level."""
    for name, value in data.items():
        if isinstance(value, list) and value and isinstance(value[-1], dict) and key in value[-1]:
            return (f" at the top level; it is in the last [[{name}]] table (in TOML a key after a "
                    f"[[table]] header belongs to that table): move it above the first [[{name}]]"
                    + (", or write each algorithm as [[algorithms]] with name = ..."
                       if key == "algorithms" else ""))
    return ""


def _no_unknown(where: str, table: dict, allowed: set[str]) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise SpecError(f"unknown key '{unknown[0]}' in {where} (allowed: "
                        f"{', '.join(sorted(allowed))})")


def _checked(key: str, convert, value):
    try:
        return convert(key, value)
    except (TypeError, ValueError) as exc:
        raise SpecError(str(exc)) from None


def _nonempty_list(key: str, value) -> list:
    if not isinstance(value, list):
        raise SpecError(f"'{key}' must be a list, got {format_value(value)}")
    if not value:
        raise SpecError(f"'{key}' must not be empty")
    return value


def _problem(i: int, table) -> ProblemSpec:
    where = f"problems[{i}]"
    if not isinstance(table, dict):
        raise SpecError(f"{where} must be a table, got {format_value(table)}")
    _no_unknown(where, table, _PROBLEM_KEYS)
    misspecified = table.get("misspecified", False)
    if not isinstance(misspecified, bool):
        raise SpecError(f"{where}: misspecified must be true or false, got {format_value(misspecified)}")
    given = sorted(set(table) & {"name", "factory"})
    if len(given) != 1:
        raise SpecError(f"{where} needs exactly one of 'name' (a built-in example) or 'factory' "
                        f"('module:callable'), got {given}")
    if "parameters" in table and "name" in table:
        raise SpecError(f"{where}: parameters are a factory's keyword arguments; a built-in "
                        "example takes none")
    if "name" in table:
        from ..problems.examples import EXAMPLES  # the problems themselves load their arm sets lazily

        if not isinstance(table["name"], str):
            raise SpecError(f"{where}: name must be a string (built-in: "
                            f"{', '.join(sorted(EXAMPLES))}), got {format_value(table['name'])}")
        if table["name"] not in EXAMPLES:
            raise SpecError(f"{where}: unknown problem name {format_value(table['name'])} (built-in: "
                            f"{', '.join(sorted(EXAMPLES))})")
        return ProblemSpec(name=table["name"], misspecified=misspecified)
    factory = table["factory"]
    if not isinstance(factory, str) or factory.count(":") != 1 or not all(factory.split(":")):
        raise SpecError(f"{where}: factory must be 'module:callable', got {format_value(factory)}")
    parameters = table.get("parameters", {})
    if not isinstance(parameters, dict):
        raise SpecError(f"{where}: parameters must be a table of the factory's keyword arguments, "
                        f"got {format_value(parameters)}")
    for key, value in parameters.items():
        if not (isinstance(key, str) and key.isidentifier()):
            raise SpecError(f"{where}.parameters: {format_value(key)} is not a keyword name")
        if not isinstance(value, str | int | float | bool):
            raise SpecError(f"{where}.parameters.{key} must be a string, number or boolean, got "
                            f"{format_value(value)}")
    return ProblemSpec(factory=factory, misspecified=misspecified,
                       parameters=tuple(parameters.items()))


def _algorithm(i: int, table, import_policies: bool = True) -> AlgorithmSpec:
    where = f"algorithms[{i}]"
    if not isinstance(table, dict):
        raise SpecError(f"{where} must be a table, got {format_value(table)}")
    _no_unknown(where, table, _ALGORITHM_KEYS)
    from ..policies.base import reserved_name
    from ..policies.registry import grid_parameters, policy_entry, registered_policies

    name = table.get("name")
    if not isinstance(name, str):
        raise SpecError(f"{where}: name must be a string, a registered policy ("
                        f"{', '.join(registered_policies())}) or 'module:Class'; got {format_value(name)}")
    grid = table.get("grid", {})
    if not isinstance(grid, dict):
        raise SpecError(f"{where}.grid must be a table of lists, got {format_value(grid)}")
    parameters = tuple(grid)
    if import_policies:
        try:
            parameters = grid_parameters(policy_entry(name))
        except (ValueError, TypeError, ImportError) as exc:
            raise SpecError(f"{where}: {exc}") from None
    for key, values in grid.items():
        if key not in parameters:
            raise SpecError(f"{where}.grid: {name} has no parameter '{key}' to vary (it can vary: "
                            f"{', '.join(parameters)})")
        if reserved_name(key):
            raise SpecError(f"{where}.grid: {name}'s parameter '{key}' cannot be varied: it would "
                            "overwrite a column of the results tables of the same name")
        _nonempty_list(f"{where}.grid.{key}", values)
    grid = {key: tuple(_grid_value(f"{where}.grid.{key}", v) for v in values)
            for key, values in grid.items()}
    for key, values in grid.items():
        if len(set(values)) != len(values):
            repeated = next(v for v in values if values.count(v) > 1)
            raise SpecError(f"{where}.grid.{key} repeats the value {format_value(repeated)}")
    problems = table.get("problems")
    if problems is not None:
        _nonempty_list(f"{where}.problems", problems)
        if not all(isinstance(p, str) for p in problems):
            raise SpecError(f"{where}.problems must list problem labels (a problem's name or "
                            f"factory), got {format_value(problems)}")
        if len(set(problems)) != len(problems):
            raise SpecError(f"{where}.problems repeats a problem: {format_value(problems)}")
        problems = tuple(problems)
    return AlgorithmSpec(name, grid, problems)


def _distinct_columns(algorithms: tuple[AlgorithmSpec, ...]) -> None:
    """Refuse a grid parameter that one algorithm varies and another's decision names: both are
    columns of the results tables, and one would overwrite the other."""
    from ..policies.registry import policy_class

    decisions = {n: a.name for a in algorithms for n in policy_class(a.name).decision_names
                 if n is not None}
    for i, algorithm in enumerate(algorithms):
        for key in algorithm.grid:
            if key in decisions:
                raise SpecError(f"algorithms[{i}].grid: '{key}' is a parameter of "
                                f"{algorithm.name} and a decision of {decisions[key]}: both "
                                "would be columns of the results tables named so")


def _distinct_cells(algorithms: tuple[AlgorithmSpec, ...], labels: list[str]) -> None:
    """Refuse a cell (a problem, an algorithm and its settings) listed twice, e.g. by
    overlapping grids: it would run twice on the same seeds and be pooled as if its runs were
    independent."""
    seen: dict[tuple, int] = {}
    for i, algorithm in enumerate(algorithms):
        for settings in algorithm.settings():
            for label in algorithm.problems or labels:
                key = (label, algorithm.name, frozenset(settings.items()))
                if key in seen:
                    raise SpecError(f"algorithms[{i}] lists the cell {algorithm.name} "
                                    f"{settings or '(defaults)'} of algorithms[{seen[key]}] again"
                                    f" (on {label}): it would run twice on the same seeds; list "
                                    "each cell once")
                seen.setdefault(key, i)


def _grid_value(key: str, value):
    """A grid value as a plain TOML scalar (numpy scalars from Python specs are unwrapped), so
    that specs compare, hash and serialize alike."""
    if hasattr(value, "item") and getattr(value, "shape", None) == ():
        value = value.item()
    if not isinstance(value, bool | int | float | str):
        raise SpecError(f"{key} must hold numbers or strings, got {format_value(value)}")
    return value

