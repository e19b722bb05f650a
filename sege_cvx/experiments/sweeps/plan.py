"""What a sweep runs: every cell checked before any work (:func:`check_cells`), each algorithm
described for the results (:func:`describe_algorithms`), and the cells' runs split into shards
(:func:`plan_shards`)."""

from __future__ import annotations

from ..spec import SpecError, StudySpec
from .shards import ShardTask, build_problem

#: Runs per shard unless given: small enough to spread a cell over workers and to lose little
#: work when a sweep is killed, large enough for the compiled loops to amortize a call.
DEFAULT_SHARD_RUNS = 50


def check_cells(spec: StudySpec) -> tuple[dict[str, dict], list[dict]]:
    """Build every problem and every cell's policy, and play two stages of one run of each.

    This catches a bad factory or parameter value before any work (as a :class:`SpecError`
    naming the cell) and compiles, or loads, every kernel the sweep will use, once, here.

    Returns
    -------
    problems : dict
        Per problem label: what figures and tables need (dimension, ``b0``, ``b``, the optimal
        reward, description; under a linear constraint no ``b0`` or ``b`` but the
        ``safety_model`` and the ``constraint_limit``), its ``fingerprint``, whether it is
        ``misspecified`` and the assumptions it breaks.
    cells : list of dict
        Per cell, in the spec's order: its ``problem``, ``algorithm`` and grid ``settings``, and
        the ``parameters`` its policy runs with, defaults included
        (:meth:`~sege_cvx.Policy.parameters`).
    """
    from ...policies.registry import safety_model_problem
    from ...simulation import run_seeds, simulate

    problems, cells = {}, []
    for index, (problem_spec, algorithm, settings) in enumerate(spec.cells()):
        where = f"cell {index} ({problem_spec.label}, {algorithm.name}, {settings or 'defaults'})"
        try:
            problem = build_problem(problem_spec)
            wrong = safety_model_problem(algorithm.name, problem.safety_model)
            if wrong is not None:
                raise SpecError(f"{where}: {wrong}; name the problems {algorithm.name} runs on "
                                "in its [[algorithms]] table: problems = [...]")
            policy_seeds, noise_seeds = run_seeds(0, 1)
            policy = problem.policy(algorithm.name, 1, policy_seeds, **settings)
            simulate(policy, problem.bandit(noise_seeds), min(2, spec.horizon),
                     misspecified=problem.misspecified)
            cells.append({"problem": problem_spec.label, "algorithm": algorithm.name,
                          "settings": dict(settings), "parameters": policy.parameters()})
            # Plain Python values: a factory's numpy scalars would make the manifest, written
            # after every simulation, fail to serialize.  A problem with a linear constraint
            # has no reward floor: no b0 or b lines (null).
            floor = problem.setting.safety if problem.constraint is None else None
            problems.setdefault(problem_spec.label, {
                "dim": int(problem.arm_set.dim),
                "baseline_reward": None if floor is None else float(floor.baseline_reward),
                "threshold": None if floor is None else float(floor.threshold),
                "safety_model": problem.safety_model,
                "constraint_limit": (None if problem.constraint is None
                                     else float(problem.constraint.limit)),
                "optimal_reward": problem.optimal_reward,
                "description": str(problem.description), "fingerprint": problem.fingerprint,
                "misspecified": problem.misspecified,
                "assumption_violations": problem.assumption_violations()})
        except SpecError:
            raise
        except (ValueError, TypeError) as exc:
            raise SpecError(f"{where}: {exc}") from None
        except Exception as exc:  # e.g. a user's arm set whose own code fails: named, with its
            # traceback kept as the cause for Python users
            raise SpecError(f"{where}: {type(exc).__name__}: {exc}") from exc
    return problems, cells


def plan_shards(spec: StudySpec, shard_runs: int, threads: int | None = None,
                fingerprints: dict[str, str] | None = None,
                versions: dict[str, str | None] | None = None,
                policies: dict[str, dict] | None = None) -> list[ShardTask]:
    """Every cell's runs in blocks of ``shard_runs``, cell by cell.  With the problems'
    ``fingerprints`` (by label), the sweep's ``versions`` and its ``policies``
    (:func:`describe_algorithms`: each one's class and code fingerprint, by name), each task
    carries those of its cell, which workers and :func:`~.shard_files.read_shard` check."""
    pinned = tuple(sorted(versions.items())) if versions is not None else None
    policies = policies or {}
    return [ShardTask(spec, cell, start, min(start + shard_runs, spec.runs), threads,
                      None if fingerprints is None else fingerprints[problem.label], pinned,
                      policies.get(algorithm.name, {}).get("class"),
                      policies.get(algorithm.name, {}).get("code"))
            for cell, (problem, algorithm, _) in enumerate(spec.cells())
            for start in range(0, spec.runs, shard_runs)]


def describe_algorithms(spec: StudySpec) -> dict[str, dict]:
    """Per algorithm of ``spec`` (by its name in the spec): what results need of its policy
    class without importing it: ``class`` (its import path), ``label`` (figures' name for it:
    an import path's registered name, :func:`~sege_cvx.policies.registry.display_names`),
    ``grid_parameters``, ``decision_names``, ``color`` (registered, or None) and ``code``
    (:func:`~sege_cvx.policies.registry.policy_code_fingerprint`)."""
    from ...policies.registry import (
        class_path,
        display_names,
        grid_parameters,
        policy_code_fingerprint,
        policy_color,
        policy_entry,
        registered_name,
    )

    labels = display_names(algorithm.name for algorithm in spec.algorithms)
    described = {}
    for algorithm in spec.algorithms:
        entry = policy_entry(algorithm.name)
        cls = entry.cls
        registered = registered_name(cls) if ":" in algorithm.name else None
        described.setdefault(algorithm.name, {
            "class": class_path(cls), "label": labels[algorithm.name],
            "grid_parameters": list(grid_parameters(entry)),
            "decision_names": list(cls.decision_names),
            "color": policy_color(algorithm.name) or (policy_color(registered) if registered else None),
            "code": policy_code_fingerprint(entry)})
    return described
