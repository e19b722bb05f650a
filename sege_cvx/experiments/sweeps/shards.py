"""One shard of a sweep: a block of runs of one cell, simulated alone, as an Arrow table.

A shard is a pure function of its :class:`ShardTask`: the runs' seeds derive from the study
seed, the cell's problem and the run index (:func:`run_seed`), and every run's arithmetic is the
same whatever else is in its batch (the bitwise invariance the engine is built on), so a
shard's table is the same bytes whichever worker, process or machine computed it, and however
the runs were split into shards.

The table has one row per run: the run's final figures (``regret``, ``violations``, ...) and its
values at every checkpoint as fixed-size list columns (``curve_regret``, ...).  Its schema
metadata holds the checkpoints, the SEGE fallbacks by reason, the shard's wall time, and the
fingerprint of the problem and the software versions it was computed with.
:func:`check_shard_table` checks a table against its task (what a sweep does before it uses
one); :func:`shard_statistics` turns tables back into
:class:`~sege_cvx.stages.statistics.RunStatistics`.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from ..._random import run_seeds
from ..._validation import import_failure
from ...policies.registry import (
    policy_class,
    policy_code_fingerprint,
    policy_entry,
    registered_policies,
    renamed,
)
from ...simulation import simulate
from ...stages.statistics import RunStatistics, checkpoint_grid
from ..outputs import runtime_versions
from ..spec import ProblemSpec, SpecError, StudySpec

if TYPE_CHECKING:
    from ...problems.problem import BanditProblem

#: The prefix of a shard's per-run decision counts, by decision code: its columns
#: ``decisions_0`` ... ``decisions_{K-1}`` (named by the policy's ``decision_names``, which the
#: shard's metadata records, when shards are merged).
DECISION_PREFIX = "decisions_"


def decision_columns(n_decisions: int) -> tuple[str, ...]:
    """A shard's decision columns for a policy of ``n_decisions`` codes."""
    return tuple(f"{DECISION_PREFIX}{code}" for code in range(n_decisions))
#: Per-run checkpoint series kept in a shard, as ``curve_<name>`` list columns.
CURVES = ("regret", "reward", "reward_min", "reward_max", "violations", "decisions")
#: Schema metadata key of a shard table.
METADATA_KEY = b"sege_cvx.shard"

# A simulation spreads its runs over ``task.threads`` threads (numba's thread count, a per-thread
# setting); serialize simulations within a process so that a worker running several tasks at
# once (a Dask worker with threads) does not run more threads than the task asked for.
_SIMULATION_LOCK = threading.Lock()


def run_seed(study_seed: int, problem: str, run: int) -> int:
    """Run ``run``'s own seed, a 63-bit int, from the study seed and the problem's label.

    Every cell of one problem shares its runs' seeds (common random numbers: the algorithms and
    parameter values are compared on the same noise, as in the paper's study), and a run
    replays alone, bit for bit, from its seed (the ``seed`` column of ``runs.parquet``)::

        policy_seeds, noise_seeds = run_seeds(seed, 1)
        policy = problem.policy(algorithm, 1, policy_seeds, **settings)
        simulate(policy, problem.bandit(noise_seeds), horizon)

    (not by ``run_study(runs=1, seed=seed)``, whose run 0 takes ``run_seed(seed, ...)``).  The
    problem enters by a CRC-32 of its label, which does not change between processes.
    """
    key = zlib.crc32(problem.encode("utf-8"))
    state = np.random.SeedSequence(study_seed, spawn_key=(key, run)).generate_state(1, np.uint64)
    return int(state[0] >> np.uint64(1))


@dataclass(frozen=True)
class ShardTask:
    """Everything a worker needs to compute one shard: plain data, cheap to send.

    Attributes
    ----------
    spec : StudySpec
    cell : int
        Index into ``spec.cells()``.
    start, stop : int
        The runs ``start .. stop - 1`` of that cell.
    threads : int or None
        numba threads for the compiled loops (None: leave the process's setting).
    fingerprint : str or None
        The fingerprint of the cell's problem as the sweep built it
        (:attr:`~sege_cvx.problems.problem.BanditProblem.fingerprint`): the worker refuses to
        compute the shard on a problem that differs (None: not checked).
    versions : tuple of (name, version) pairs, or None
        The sweep's :func:`~sege_cvx.experiments.outputs.runtime_versions`: the worker refuses
        to compute under others (None: not checked).
    policy : str or None
        The import path ``"module:Class"`` of the cell's policy as the sweep resolved its name,
        used where the name is not registered (a worker that did not run the code registering
        it; None: the name alone).
    policy_code : str or None
        The fingerprint of the cell's policy's code as the sweep loaded it
        (:func:`~sege_cvx.policies.registry.policy_code_fingerprint`; None for sege_cvx's own
        policies, which ``versions`` covers): the worker refuses to compute the shard with
        other code.
    """

    spec: StudySpec
    cell: int
    start: int
    stop: int
    threads: int | None = None
    fingerprint: str | None = None
    versions: tuple[tuple[str, str | None], ...] | None = None
    policy: str | None = None
    policy_code: str | None = None

    @property
    def name(self) -> str:
        """The shard's file stem, ordered by cell then runs."""
        return f"cell{self.cell:04d}-runs{self.start:07d}-{self.stop:07d}"


@lru_cache(maxsize=32)
def build_problem(problem: ProblemSpec) -> BanditProblem:
    """The :class:`~sege_cvx.problems.problem.BanditProblem` of ``problem``, built once per
    process (arm sets may compile conic programs)."""
    if problem.name is not None:
        from ...problems.examples import EXAMPLES

        return _declared(problem, EXAMPLES[problem.name]())
    return _declared(problem, _from_factory(problem.factory, dict(problem.parameters)))


def _declared(spec: ProblemSpec, problem):
    """``problem``, if it is misspecified exactly when its spec says so (SpecError if not)."""
    if problem.misspecified and not spec.misspecified:
        raise SpecError(f"problem {spec.label!r} is built misspecified "
                        f"({'; '.join(problem.assumption_violations()) or 'misspecified=True'}); "
                        "add misspecified = true to its [[problems]] entry to run a "
                        "misspecification study")
    if spec.misspecified and not problem.misspecified:
        raise SpecError(f"problem {spec.label!r} is declared misspecified = true, but it was not "
                        "built with misspecified=True; remove the key, or build it so")
    return problem


def _from_factory(factory_path: str, parameters: dict):
    """The :class:`~sege_cvx.problems.problem.BanditProblem` a ``"module:callable"`` makes of
    the keyword arguments ``parameters``."""
    import importlib

    from ...problems.problem import BanditProblem

    module_name, attribute = factory_path.split(":")
    try:
        factory = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise SpecError(f"problem factory {factory_path!r} cannot be loaded: "
                        f"{import_failure(exc, module_name)}") from None
    except KeyboardInterrupt:
        raise
    except SystemExit as exc:
        raise SpecError(f"problem factory {factory_path!r} cannot be loaded: importing "
                        f"{module_name!r} called sys.exit({exc.code!r})") from None
    except BaseException as exc:  # the module's own code failed on import
        raise SpecError(f"problem factory {factory_path!r} cannot be loaded: importing "
                        f"{module_name!r} raised {type(exc).__name__}: {exc}") from exc
    try:
        made = factory(**parameters)
    except KeyboardInterrupt:
        raise
    except SystemExit as exc:  # would end the sweep, maybe with status 0, and say nothing
        raise SpecError(f"problem factory {factory_path!r} called sys.exit({exc.code!r})") from None
    except BaseException as exc:  # the user's code: named, with its traceback as the cause
        raise SpecError(f"problem factory {factory_path!r} raised {type(exc).__name__}: "
                        f"{exc}") from exc
    if not isinstance(made, BanditProblem):
        raise SpecError(f"problem factory {factory_path!r} returned "
                        f"{type(made).__name__}, not a sege_cvx.BanditProblem")
    return made


def checkpoints_of(spec: StudySpec) -> np.ndarray:
    """The spec's checkpoint stages, the horizon included (default about 200 log-spaced)."""
    if spec.checkpoints is None:
        return checkpoint_grid(spec.horizon)
    return np.union1d(np.array(spec.checkpoints, dtype=np.int64), [spec.horizon])


def run_shard(task: ShardTask) -> pa.Table:
    """Simulate one shard's runs and return its table (see the module docstring)."""
    spec = task.spec
    problem_spec, algorithm, settings = spec.cells()[task.cell]
    problem = build_problem(problem_spec)
    versions = runtime_versions()
    if task.fingerprint is not None and problem.fingerprint != task.fingerprint:
        raise SpecError(f"problem {problem_spec.label!r} built here differs from the one the sweep "
                        f"checked (fingerprint {problem.fingerprint[:12]}, not "
                        f"{task.fingerprint[:12]}): this process's code, data or environment "
                        "differs from the sweep's")
    if task.versions is not None and (differ := _differences(dict(task.versions), versions)):
        raise SpecError(f"this process runs other versions than the sweep: {differ}")
    runs = np.arange(task.start, task.stop)
    seeds = task_seeds(task)
    policy_seeds, noise_seeds = run_seeds([np.random.SeedSequence(s) for s in seeds], len(seeds))
    # By the name where it is an import path or this process registered it (the sweep's own
    # process), else by the import path the sweep resolved it to (a worker); the code
    # fingerprint says it is the same code.
    known = (":" in algorithm.name or algorithm.name in registered_policies()
             or task.policy is None)
    entry = policy_entry(algorithm.name if known else task.policy)
    if known and task.policy is not None and (why := renamed(algorithm.name, task.policy)):
        raise SpecError(why)  # a module this process imported took the name
    cls = policy_class(entry.name, problem.safety_model)
    if (code := policy_code_fingerprint(entry)) != task.policy_code:
        raise SpecError(f"policy {algorithm.name!r} loaded here is not the code the sweep "
                        f"checked (fingerprint {str(code)[:12]}, not {str(task.policy_code)[:12]}):"
                        " its module differs in this process")
    policy = problem.policy(cls, len(seeds), policy_seeds, **settings)
    bandit = problem.bandit(noise_seeds)
    grid = checkpoints_of(spec)
    with _SIMULATION_LOCK, _numba_threads(task.threads):
        start = time.perf_counter()
        result = simulate(policy, bandit, spec.horizon, checkpoints=grid,
                          misspecified=problem.misspecified)
        wall = time.perf_counter() - start
    return shard_table(result.stats, runs, seeds, policy.solver_fallbacks,
                       dict(policy.fallback_reasons), wall,
                       cell=cell_key(task), fingerprint=problem.fingerprint, versions=versions,
                       decision_names=cls.decision_names, policy_code=code,
                       conservative=problem.constraint is None)


def _differences(expected: dict, found: dict) -> str:
    """``"numpy 2.4.6, not 2.5.0; ..."`` for each package whose version differs ('' if none)."""
    return "; ".join(f"{name} {found.get(name)}, not {expected.get(name)}"
                     for name in sorted(set(expected) | set(found))
                     if expected.get(name) != found.get(name))


def cell_key(task: ShardTask) -> dict:
    """What identifies ``task``'s cell: problem label, algorithm and its settings (JSON-ready)."""
    problem, algorithm, settings = task.spec.cells()[task.cell]
    return {"problem": problem.label, "algorithm": algorithm.name, "settings": settings}


def task_seeds(task: ShardTask) -> list[int]:
    """The seeds of ``task``'s runs (:func:`run_seed`)."""
    label = task.spec.cells()[task.cell][0].label
    return [run_seed(task.spec.seed, label, i) for i in range(task.start, task.stop)]


def check_shard_table(table: pa.Table, task: ShardTask) -> None:
    """Check that ``table`` is ``task``'s shard: its cell, its runs, their seeds, the spec's
    checkpoints, and, where the task names them, the problem's fingerprint and the versions it
    was computed with.  ``ValueError`` naming what differs if not.

    A shard that passes holds the runs its task asks for, of the problem the sweep built, under
    the sweep's software; its checksum (kept beside it) says its bytes are those written.
    """
    n = task.stop - task.start
    if table.num_rows != n:
        raise ValueError(f"it holds {table.num_rows} runs, not {n}")
    checkpoints = checkpoints_of(task.spec).tolist()
    try:
        meta = shard_metadata(table)
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"it is not a shard table ({type(exc).__name__}: {exc})") from None
    names = meta.get("decision_names")
    if not (isinstance(names, list) and names
            and all(n is None or isinstance(n, str) for n in names)
            and meta.get("decisions") == len(names)):
        raise ValueError("its metadata does not name its decisions")
    expected = shard_schema(len(checkpoints), len(names))
    if not table.schema.remove_metadata().equals(expected):
        raise ValueError("its columns are not a shard's")
    try:
        runs = table.column("run").to_numpy()
        seeds = table.column("seed").to_numpy()
    except (KeyError, TypeError, ValueError, pa.ArrowException) as exc:
        raise ValueError(f"it is not a shard table ({type(exc).__name__}: {exc})") from None
    if not (isinstance(meta.get("wall_seconds"), int | float)
            and isinstance(meta.get("fallback_reasons"), dict)
            and all(isinstance(k, str) and isinstance(v, int)
                    for k, v in meta["fallback_reasons"].items())):
        raise ValueError("its metadata is not a shard's")
    if meta.get("cell") != cell_key(task):
        raise ValueError(f"it holds runs of another cell ({meta.get('cell')}, not "
                         f"{cell_key(task)})")
    if not np.array_equal(runs, np.arange(task.start, task.stop)):
        raise ValueError(f"it holds other runs than {task.start} to {task.stop - 1}")
    if not np.array_equal(seeds, np.array(task_seeds(task), dtype=np.int64)):
        raise ValueError("its runs' seeds are not those of this study's runs")
    if meta.get("checkpoints") != checkpoints:
        raise ValueError("its checkpoints are not the spec's")
    if task.fingerprint is not None and meta.get("fingerprint") != task.fingerprint:
        raise ValueError(f"it was computed on another problem (fingerprint "
                         f"{str(meta.get('fingerprint'))[:12]}, not {task.fingerprint[:12]})")
    if task.versions is not None and (differ := _differences(dict(task.versions),
                                                             meta.get("versions") or {})):
        raise ValueError(f"it was computed with other versions: {differ}")
    if meta.get("policy_code") != task.policy_code:
        raise ValueError(f"it was computed with other code of its policy (fingerprint "
                         f"{str(meta.get('policy_code'))[:12]}, not {str(task.policy_code)[:12]})")


@contextlib.contextmanager
def _numba_threads(threads: int | None) -> Iterator[None]:
    """numba's thread count set to ``threads`` for a block (unchanged for None), then restored."""
    if threads is None:
        yield
        return
    import numba

    saved = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        yield
    finally:
        numba.set_num_threads(saved)


def shard_table(stats: RunStatistics, runs: np.ndarray, seeds: Sequence[int],
                fallbacks: np.ndarray, reasons: dict, wall_seconds: float, *,
                cell: dict | None = None, fingerprint: str | None = None,
                versions: dict | None = None, decision_names: Sequence[str | None] = (),
                policy_code: str | None = None, conservative: bool = True) -> pa.Table:
    """A shard's Arrow table from its runs' statistics (the inverse of :func:`shard_statistics`).

    ``wall_seconds`` is the shard's simulation time; each run's row gets an equal share.
    ``cell`` (:func:`cell_key`), ``fingerprint`` and ``versions`` (the problem's and the
    software's), the policy's ``decision_names`` (by code) and ``policy_code`` (its code's
    fingerprint) go into the metadata.  ``conservative``: whether the problem has the paper's
    conservative constraint (the stagewise model); under a linear constraint ``conservative_met``
    is null.
    """
    n, C = len(runs), len(stats.checkpoints)
    K = stats.decision_counts.shape[1]
    if len(decision_names) != K:
        raise ValueError(f"{len(decision_names)} decision names for {K} decision codes")
    first = stats.first_violation
    columns = {
        "run": pa.array(runs, pa.int64()),
        "seed": pa.array(np.asarray(seeds, dtype=np.int64)),
        "regret": pa.array(stats.cum_regret),
        "violations": pa.array(stats.total_violations),
        "first_violation": pa.array(first, mask=first < 0),
        "min_expected_reward": pa.array(stats.min_reward),
        **{name: pa.array(stats.decision_counts[:, code])
           for code, name in enumerate(decision_columns(K))},
        "fallbacks": pa.array(np.asarray(fallbacks, dtype=np.int64)),
        "conservative_met": pa.array(stats.conservative_met, mask=np.full(n, not conservative)),
        "wall_seconds": pa.array(np.full(n, wall_seconds / n)),
    }
    for name in CURVES:
        rows = getattr(stats, name)  # (C, n) or, for decisions, (C, n, K)
        per_run = np.ascontiguousarray(np.moveaxis(rows, 1, 0)).reshape(n, -1)
        width = per_run.shape[1]
        columns[f"curve_{name}"] = pa.FixedSizeListArray.from_arrays(
            pa.array(per_run.ravel()), width)
    meta = {"checkpoints": stats.checkpoints.tolist(), "fallback_reasons": reasons,
            "wall_seconds": wall_seconds, "decisions": K, "C": C,
            "cell": cell, "fingerprint": fingerprint, "versions": versions,
            "decision_names": list(decision_names), "policy_code": policy_code}
    return pa.table(columns).replace_schema_metadata({METADATA_KEY: json.dumps(meta)})


def shard_schema(C: int, n_decisions: int) -> pa.Schema:
    """The columns of a shard table with ``C`` checkpoints of a policy of ``n_decisions``
    decision codes, as :func:`shard_table` writes them and as they read back (what
    :func:`check_shard_table` demands)."""
    i64, f64 = pa.int64(), pa.float64()
    fields = [("run", i64), ("seed", i64), ("regret", f64), ("violations", i64),
              ("first_violation", i64), ("min_expected_reward", f64),
              *((name, i64) for name in decision_columns(n_decisions)), ("fallbacks", i64),
              ("conservative_met", pa.bool_()), ("wall_seconds", f64)]
    for name in CURVES:
        element = f64 if name in ("regret", "reward", "reward_min", "reward_max") else i64
        width = C * n_decisions if name == "decisions" else C
        fields.append((f"curve_{name}", pa.list_(pa.field("element", element), width)))
    return pa.schema(fields)


def shard_metadata(table: pa.Table | pa.Schema) -> dict:
    """A shard table's (or its schema's) metadata: checkpoints, fallback reasons, wall seconds."""
    schema = table if isinstance(table, pa.Schema) else table.schema
    return json.loads(schema.metadata[METADATA_KEY])


def shard_statistics(table: pa.Table) -> RunStatistics:
    """The :class:`RunStatistics` of a shard's (or several concatenated shards') runs.

    The running values the engine no longer needs after the horizon (the cumulative reward, the
    current checkpoint window) are not kept: ``cum_reward`` is returned as NaN.
    """
    meta = shard_metadata(table)
    checkpoints = np.array(meta["checkpoints"], dtype=np.int64)
    C, n, K = len(checkpoints), table.num_rows, meta["decisions"]

    def curve(name: str, *trailing: int) -> np.ndarray:
        flat = table.column(f"curve_{name}").combine_chunks().flatten().to_numpy()
        return np.ascontiguousarray(np.moveaxis(flat.reshape(n, C, *trailing), 0, 1))

    def column(name: str) -> np.ndarray:
        return table.column(name).to_numpy()

    first = table.column("first_violation").fill_null(-1).to_numpy()
    return RunStatistics(
        checkpoints=checkpoints, regret=curve("regret"), reward=curve("reward"),
        reward_min=curve("reward_min"), reward_max=curve("reward_max"),
        violations=curve("violations"), decisions=curve("decisions", K),
        cum_regret=column("regret"), cum_reward=np.full(n, np.nan),
        min_reward=column("min_expected_reward"), first_violation=first.astype(np.int64),
        total_violations=column("violations"),
        # Null under a linear constraint (no conservative constraint): read as met, as computed.
        conservative_met=table.column("conservative_met").fill_null(True).to_numpy(),
        decision_counts=np.stack([column(c) for c in decision_columns(K)], axis=1))
