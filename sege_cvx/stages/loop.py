"""The compiled stage loop, written once for every policy whose stages are compiled.

The loop (:func:`stage_loop`, run by :func:`play_stages`) plays stages
``t0 .. t0 + n_stages - 1`` of a block of runs against the linear bandit.  It owns the
environment (the reward ``<x, theta*> + noise_sd * noise``, as
:meth:`~sege_cvx.simulation.LinearBandit.pull` computes it), the decision counts and the
statistics (:func:`~sege_cvx.stages.statistics.record_run_stage`).  The policy's part is its
*stage record* (a ``NamedTuple`` holding its per-run state and the call's constants, with at
least ``decisions``, a :class:`Decisions`; the policies of the package hold their confidence
state as a :class:`~sege_cvx.confidence.state.ConfidenceState` and update it with its one
:func:`~sege_cvx.confidence.state.learn`) and four functions, its :class:`StageHooks`:

* ``scratch(policy, d)``: the policy's scratch arrays (a ``NamedTuple``), made once per call;
* ``run_view(policy, i)``: run ``i``'s views of the state (a ``NamedTuple``), taken once per
  run;
* ``choose_arm(policy, run, work, i, s, t, arm) -> code``: run ``i``'s arm at stage ``t`` (the
  call's ``s``-th) into ``arm``, and its decision code;
* ``learn(policy, run, work, i, arm, y, code, z) -> ok``: run ``i``'s update with the reward
  ``y`` and, under an unknown linear constraint with feedback of its own
  (:mod:`sege_cvx.safety`), the constraint's noisy value ``z = <x, gamma*> + noise`` (NaN where
  the model has none: the stagewise floor, or ``B``'s model whose feedback is the reward's);
  False if ``V`` lost definiteness, which stops the run.

The loop also counts violations: a stage whose expected reward is below the threshold in the
stagewise model, whose constraint value ``<x, gamma*>`` exceeds the limit in the other.

The loop checks what ``choose_arm`` returns: an arm that is not finite or a code outside the
columns of the record's ``decisions.counts`` stops the run (:class:`Progress`), and
:func:`~sege_cvx.simulate` raises.

A policy module registers its hooks for its record class (:func:`register_stage_hooks`: a
registry keyed by class).  :func:`stage_loop` and :func:`choose_loop` then give the loop, and
the one stage of every run that ``select`` may play, compiled with that policy's hooks inlined
(the hooks are ``njit(inline="always")`` functions): one source, one compiled kernel per record
class, cached on disk where the hooks are the package's.  A record whose ``geometry`` field
holds a set's compiled geometry record has one kernel per geometry class
(:func:`geometry_of`): in it, the hooks' calls to the placeholders of
:mod:`sege_cvx.arm_sets.kernels.registry` (``greedy_arm``, ``lcb_arm``, ``pull_inside``,
``pull_in``) are bound to that geometry's functions, inlined as well
(:func:`~sege_cvx.arm_sets.kernels.registry.arm_bindings`).  A record whose ``radius`` field
holds a registered radius rule has one kernel per rule class (:func:`radius_of`), the hooks'
:func:`~sege_cvx.confidence.radius.radius_one` bound to the rule's kernel the same way
(:func:`~sege_cvx.confidence.radius.radius_bindings`).  The hooks compute what the policy's
``select`` and ``observe`` compute (SEGE's and CLUCB's ``select`` call :func:`choose_loop`;
every ``observe`` the same per-run update), so a run's numbers are bitwise those of the step
API, whatever the thread that computed them (:func:`sege_cvx.testing.check_policy` compares
the two).

Why bound at compile time rather than dispatched inside one kernel: a stage record passed to a
function numba does not inline is copied field by field onto the stack at every call (hundreds
of words a stage for SEGE's), which made the stages of a dispatched loop three times slower; a
geometry record passed to the geometry's arms costs SEGE's stages on polyhedral sets a fifth.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from .._numba import bind_globals, borrow, keep_alive, over_runs
from ..arm_sets.kernels.registry import arm_bindings, geometry_kernels
from ..confidence.radius import is_radius_rule, radius_bindings
from .statistics import Recording, record_run_stage


class Environment(NamedTuple):
    """The bandit's side of a compiled call: ``theta*``, the noise's scale and its draws
    ``(n_runs, n_stages)`` for the call's stages, the optimal reward and the threshold ``b``
    (``-inf`` under a linear constraint); the constraint's vector ``gamma*`` (shape ``(0,)`` in
    the stagewise model), its limit, its feedback's sd and draws (shape ``(0, 0)`` where there
    is no separate feedback)."""

    theta_star: np.ndarray
    noise_sd: float
    noise: np.ndarray
    optimal: float
    threshold: float
    constraint: np.ndarray = np.empty(0)
    limit: float = np.inf
    constraint_sd: float = 0.0
    constraint_noise: np.ndarray = np.empty((0, 0))


class Progress(NamedTuple):
    """What a compiled call reports per run: ``rows[i]``, run ``i``'s next checkpoint row;
    ``failed[i]``, the stage at which its ``V`` lost definiteness; ``invalid[i]``, the stage at
    which ``choose_arm`` gave a non-finite arm or a code outside the decisions' columns
    (0 if none)."""

    rows: np.ndarray
    failed: np.ndarray
    invalid: np.ndarray


class Decisions(NamedTuple):
    """A policy's decisions in a stage record (its ``decisions`` field): per run, the stages of
    each decision code so far, ``counts`` of shape ``(n_runs, len(decision_names))``, and the
    ``last`` code (int8).  The loop checks each code against ``counts``' columns and updates
    both."""

    counts: np.ndarray
    last: np.ndarray


class StageHooks(NamedTuple):
    """A policy's part of the compiled stage loop (see the module's docstring): four
    ``njit(inline="always")`` functions."""

    scratch: Callable
    run_view: Callable
    choose_arm: Callable
    learn: Callable


_HOOKS: dict[type, StageHooks] = {}
#: Whether the loop checks each arm and code ``choose_arm`` gives (bound per loop by :func:`_bind`).
CHECK_CHOICES = True
_LOOPS: dict[tuple[type, type | None, type | None, str], Callable] = {}


# The hooks' names in the templates below; each compiled loop binds them to a policy's
# functions (:func:`_bind`).  Called outside a compiled loop, they say so.
def scratch(policy, d: int) -> tuple:
    """The policy's scratch arrays, made once per compiled call (a hook)."""
    raise NotImplementedError("a stage hook: bound to a policy's function in a compiled loop")


def run_view(policy, i: int) -> tuple:
    """Run ``i``'s views of the policy's state, taken once per run (a hook)."""
    raise NotImplementedError("a stage hook: bound to a policy's function in a compiled loop")


def choose_arm(policy, run, work, i: int, s: int, t: int, arm) -> int:
    """Run ``i``'s arm at stage ``t`` into ``arm``; returns its decision code (a hook)."""
    raise NotImplementedError("a stage hook: bound to a policy's function in a compiled loop")


def learn(policy, run, work, i: int, arm, y: float, code: int, z: float) -> bool:
    """Run ``i``'s update with the reward ``y`` of ``arm`` (and the constraint's value ``z``);
    False if ``V`` lost definiteness (a hook)."""
    raise NotImplementedError("a stage hook: bound to a policy's function in a compiled loop")


def register_stage_hooks(record: type, hooks: StageHooks) -> None:
    """Register the :class:`StageHooks` of the policy whose stage record class is ``record``."""
    if not (isinstance(record, type) and issubclass(record, tuple) and hasattr(record, "_fields")):
        raise TypeError(f"a stage record must be a NamedTuple class, got {record!r}")
    if "decisions" not in record._fields:
        raise TypeError(f"stage record {record.__name__} lacks the field 'decisions' (a "
                        "Decisions) the stage loop updates")
    if not isinstance(hooks, StageHooks):
        raise TypeError(f"hooks must be a StageHooks, got {type(hooks).__name__}")
    for name, hook in hooks._asdict().items():
        _check_hook_signature(record, name, hook)
    # One set of hooks per record class: its compiled loops (and their disk cache, named after
    # the class) belong to those hooks.
    if _HOOKS.get(record, hooks) != hooks:
        raise TypeError(f"stage record {record.__name__} already has stage hooks; define another "
                        "record class for other hooks")
    _HOOKS[record] = hooks


#: Each hook's parameters, as the loop calls it.
_HOOK_PARAMETERS = {"scratch": "policy, d", "run_view": "policy, i",
                    "choose_arm": "policy, run, work, i, s, t, arm",
                    "learn": "policy, run, work, i, arm, y, code, z"}


def _check_hook_signature(record: type, name: str, hook) -> None:
    """Refuse, when it is registered, a hook the loop cannot call with its parameters
    (:data:`_HOOK_PARAMETERS`): numba would say so only when the loop compiles."""
    parameters = _HOOK_PARAMETERS[name]
    try:
        inspect.signature(getattr(hook, "py_func", hook)).bind(*parameters.split(", "))
    except TypeError:
        raise TypeError(f"stage hook {name} of {record.__name__} must take ({parameters})"
                        ) from None
    except ValueError:  # no signature to read: left to numba
        pass


def _run_stages(first, last, t0, n_stages, policy, env, recording, progress):
    """Stages ``t0 .. t0 + n_stages - 1`` of runs ``first .. last - 1``
    (:func:`~sege_cvx._numba.over_runs` spreads blocks of runs over threads).

    ``policy``: its stage record; ``env``: :class:`Environment`; ``recording``:
    :class:`~sege_cvx.stages.statistics.Recording`; ``progress``: :class:`Progress`.
    """
    # Every array borrowed (_numba.borrow): the caller holds the arguments, and the scratch is
    # kept alive to the end.
    policy, env, recording, progress = (borrow(policy), borrow(env), borrow(recording),
                                        borrow(progress))
    theta_star, noise, noise_sd = env.theta_star, env.noise, env.noise_sd
    gamma, feedback = env.constraint, env.constraint_noise.shape[0] > 0
    decision_counts, last_decision = policy.decisions.counts, policy.decisions.last
    n_codes = decision_counts.shape[1]
    d = theta_star.shape[0]
    owned = (scratch(policy, d), np.empty(d))
    work, arm = borrow(owned)
    for i in range(first, last):
        run = run_view(policy, i)
        row = recording.row
        for s in range(n_stages):
            t = t0 + s
            code = choose_arm(policy, run, work, i, s, t, arm)
            mean = 0.0
            for k in range(d):
                mean += arm[k] * theta_star[k]
            if CHECK_CHOICES and not (0 <= code < n_codes and np.isfinite(mean)):
                progress.invalid[i] = t
                break
            y = mean + noise_sd * noise[i, s]
            z = np.nan
            if gamma.shape[0] == 0:
                violated = mean < env.threshold
            else:
                cost = 0.0
                for k in range(d):
                    cost += arm[k] * gamma[k]
                violated = cost > env.limit
                if feedback:
                    z = cost + env.constraint_sd * env.constraint_noise[i, s]
            if not learn(policy, run, work, i, arm, y, code, z):
                progress.failed[i] = t
                break
            decision_counts[i, code] += 1
            last_decision[i] = code
            row = record_run_stage(i, t, s, mean, violated, code, env.optimal, env.threshold,
                                   recording, row)
        progress.rows[i] = row
    keep_alive(owned)


def _choose_all(policy, t, arms, codes):
    """Stage ``t`` of every run (the step API's ``select`` on a compiled set): ``choose_arm``
    per run into ``arms`` and ``codes``, from a stage record of that one stage."""
    work = scratch(policy, arms.shape[1])
    for i in range(arms.shape[0]):
        codes[i] = choose_arm(policy, run_view(policy, i), work, i, 0, t, arms[i])


def _bind(template: Callable, record: type, geometry: type | None, radius: type | None,
          **options):
    """``njit(template)`` with ``record``'s hooks for the names ``scratch``, ``run_view``,
    ``choose_arm`` and ``learn`` (a copy of the function with its own globals; its own name, so
    that numba caches it in its own file), the hooks' arm placeholders bound to ``geometry``'s
    functions and their radius placeholder to ``radius``'s kernel, where they are given."""
    try:
        hooks = _HOOKS[record]
    except KeyError:
        raise TypeError(f"no compiled stage loop for {record.__name__}: register its hooks with "
                        "register_stage_hooks") from None
    bindings = {}
    name = f"{template.__name__.lstrip('_')}_{record.__name__}"
    for chosen, bound in ((geometry, arm_bindings), (radius, radius_bindings)):
        if chosen is not None:
            bindings.update(bound(chosen))
            name = f"{name}_{chosen.__name__}"
    # The package's hooks are tested to choose finite arms and known codes; a user's are checked
    # at every stage (the check, a constant numba folds away, costs SEGE's loop a fifth).
    ours = all(getattr(f, "__module__", "").startswith("sege_cvx.")
               for f in (*hooks, *bindings.values()))
    hooks = StageHooks(*(bind_globals(hook, bindings, inline="always") for hook in hooks))
    # numba stamps the copy with this package's source only: hooks, arms or radii from elsewhere
    # (a user's module) could change under an unchanged stamp, so their loops compile in each
    # process.
    placeholders = {globals()[key]: hook for key, hook in hooks._asdict().items()}
    return bind_globals(template, placeholders, constants={"CHECK_CHOICES": not ours},
                        name=name, cache=ours, **options)


def _loop(template: Callable, record: type, geometry: type | None, radius: type | None,
          **options):
    """The compiled ``template`` of ``record``'s hooks (bound to ``geometry`` and ``radius``),
    made once."""
    key = (record, geometry, radius, template.__name__)
    if key not in _LOOPS:
        _LOOPS[key] = _bind(template, record, geometry, radius, **options)
    return _LOOPS[key]


def stage_loop(record: type, geometry: type | None = None, radius: type | None = None):
    """The compiled stage loop (:func:`_run_stages`) of the policy with stage record class
    ``record``: ``kernel(first, last, t0, n_stages, policy, env, recording, progress)``.
    ``geometry``, ``radius``: the classes of the record's ``geometry`` and ``radius`` fields,
    for a record that has them (:func:`geometry_of`, :func:`radius_of`; see the module's
    docstring)."""
    return _loop(_run_stages, record, geometry, radius, nogil=True)


def choose_loop(record: type, geometry: type | None = None, radius: type | None = None):
    """The compiled one stage of every run (:func:`_choose_all`) of the policy with stage
    record class ``record`` (and ``geometry`` and ``radius``, as for :func:`stage_loop`):
    ``kernel(policy, t, arms, codes)``."""
    return _loop(_choose_all, record, geometry, radius)


def geometry_of(policy) -> type | None:
    """The class of the stage record ``policy``'s ``geometry`` field if it holds a registered
    geometry record (:func:`~sege_cvx.arm_sets.kernels.registry.register_geometry`; else None,
    whatever the field holds): the ``geometry`` argument of :func:`stage_loop` and
    :func:`choose_loop` for that record."""
    cls = type(getattr(policy, "geometry", None))
    return cls if geometry_kernels(cls) is not None else None


def radius_of(policy) -> type | None:
    """The class of the stage record ``policy``'s ``radius`` field if it holds a registered
    radius rule (:func:`~sege_cvx.confidence.radius.register_radius`; else None): the ``radius``
    argument of :func:`stage_loop` and :func:`choose_loop` for that record."""
    cls = type(getattr(policy, "radius", None))
    return cls if is_radius_rule(cls) else None


def play_stages(policy, t0: int, env: Environment, recording: Recording) -> Progress:
    """Stages ``t0 .. t0 + k - 1`` (``k``: the columns of ``env.noise``) of every run of the
    stage record ``policy``, blocks of runs on threads (:func:`~sege_cvx._numba.over_runs`)."""
    n_runs, n_stages = env.noise.shape
    progress = Progress(np.empty(n_runs, dtype=np.int64), np.zeros(n_runs, dtype=np.int64),
                        np.zeros(n_runs, dtype=np.int64))
    kernel = stage_loop(type(policy), geometry_of(policy), radius_of(policy))
    over_runs(kernel, n_runs, t0, n_stages, policy, env, recording, progress)
    return progress
