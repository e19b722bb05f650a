"""Conformance checks for a policy of your own (scikit-learn's ``check_estimator`` is the model).

:func:`check_policy` plays a policy class through the protocol of :class:`sege_cvx.Policy` and
raises an ``AssertionError`` naming the first thing that fails.  The suite runs it on every
built-in policy, on each safety model it runs on.
"""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np

from ._random import run_seeds
from ._validation import as_positive_int
from .arm_sets.base import ArmSet
from .policies.base import Policy, decision_names_problem
from .policies.registry import safety_model_problem
from .problems.problem import BanditProblem, paper_problem
from .simulation.engine import observe, simulate
from .stages.statistics import decision_count_problem

__all__ = ["check_arm_set", "check_policy", "constrained_problem"]


def check_policy(cls: type, problem: BanditProblem | None = None, *, stages: int = 40,
                 n_runs: int = 3, **params: Any) -> None:
    """Check that ``cls`` follows the policy protocol; raise ``AssertionError`` if not.

    On ``problem`` (default: the paper's, :func:`sege_cvx.problems.problem.paper_problem`;
    for a policy of the linear-constraint model only, :func:`constrained_problem`),
    ``cls(arm_set, baseline_arm, baseline_reward, threshold, S=..., noise_sd=..., lam=...,
    n_runs=..., seed=..., **params)`` is built (under a linear constraint
    ``cls(arm_set, baseline_arm, S=..., ..., constraint=problem.known_constraint())``) and
    played for ``stages`` stages through ``select``/``observe``.  Checked, in this order:

    1. ``cls`` is a subclass of :class:`sege_cvx.Policy` with ``decision_names`` a nonempty
       tuple of at most three str (or ``None``), and the constructor stores the problem as
       public attributes;
    2. ``select`` twice, or ``observe`` first, is refused (``RuntimeError``);
    3. every stage: arms of shape ``(n_runs, d)``, each in the arm set exactly
       (``contains(x, tol=0)``), and ``last_decision`` one known code per run;
    4. ``decision_counts`` adds up to ``n_runs * stages``;
    5. each run played alone (``seed=[its SeedSequence]``) plays the same arms, bit for bit;
    6. a policy pickled mid-run and restored plays the same next arms, bit for bit;
    7. where :attr:`~sege_cvx.Policy.compiled_stages`, the compiled stage loop
       (:func:`~sege_cvx.simulate`) plays the decisions and rewards of ``select``/``observe``,
       bit for bit.

    It does not check safety (that the expected reward stays above the threshold): simulate
    the policy on your problems and read ``stats.total_violations``.  Only ``stages`` stages are
    played: a fault that shows later is not seen.

    Parameters
    ----------
    cls : type
        The policy class.
    problem : BanditProblem, optional
    stages, n_runs : int
        The stages played and the runs of the batch (default 40 and 3).
    **params
        The policy's own keyword parameters.

    Raises
    ------
    AssertionError
        Naming the check that failed, the stage and the run.

    Examples
    --------
    >>> import sege_cvx as sc
    >>> from sege_cvx.testing import check_policy
    >>> check_policy(sc.CLUCB, stages=10)
    """
    stages = as_positive_int("stages", stages)
    n_runs = as_positive_int("n_runs", n_runs)
    if isinstance(cls, Policy):
        raise AssertionError(f"check_policy: pass the class, not an instance of "
                             f"{type(cls).__name__}")
    name = getattr(cls, "__name__", repr(cls))
    if not (isinstance(cls, type) and issubclass(cls, Policy)):
        raise AssertionError(f"check_policy: {name} is not a subclass of sege_cvx.Policy")
    if (problem_with_names := decision_names_problem(cls)) is not None:
        raise AssertionError(f"check_policy: {problem_with_names}")
    if (too_many := decision_count_problem(cls)) is not None:
        raise AssertionError(f"check_policy: {too_many}")
    if problem is None:
        problem = (paper_problem() if safety_model_problem(cls, "stagewise") is None
                   else constrained_problem())
    if (wrong := safety_model_problem(cls, problem.safety_model)) is not None:
        raise AssertionError(f"check_policy: {wrong}")
    known = problem.known_constraint()
    try:
        pickle.dumps(problem.arm_set)
    except Exception as exc:
        raise AssertionError(f"check_policy: the problem's arm set does not pickle ({exc}): give "
                             "its constraints as a module-level function") from exc
    policy_seeds, noise_seeds = run_seeds(0, n_runs)

    def build(seeds, klass: type = cls) -> Policy:
        if known is not None:
            return klass(problem.arm_set, np.asarray(problem.baseline_arm), S=problem.S,
                         noise_sd=problem.noise_sd, n_runs=len(seeds), seed=list(seeds),
                         constraint=known, **{"lam": problem.lam, **params})
        return klass(problem.arm_set, np.asarray(problem.baseline_arm), problem.baseline_reward,
                   problem.threshold, S=problem.S, noise_sd=problem.noise_sd, n_runs=len(seeds),
                   seed=list(seeds), **{"lam": problem.lam, **params})

    policy = build(policy_seeds)
    d = problem.arm_set.dim
    # The problem as the base validates and certifies it (a baseline arm moved into the set).
    if known is not None:
        reference = _Reference(problem.arm_set, problem.baseline_arm, S=problem.S,
                               noise_sd=problem.noise_sd, lam=problem.lam, n_runs=n_runs,
                               constraint=known)
    else:
        reference = _Reference(problem.arm_set, problem.baseline_arm, problem.baseline_reward,
                               problem.threshold, S=problem.S, noise_sd=problem.noise_sd,
                               lam=problem.lam, n_runs=n_runs)
    reward = getattr(policy, "baseline_reward", None)
    if (np.asarray(getattr(policy, "baseline_arm", None)).tobytes()
            != reference.baseline_arm.tobytes()
            or not (reward == reference.baseline_reward
                    or (known is not None and isinstance(reward, float) and np.isnan(reward)))
            or getattr(policy, "constraint", None) is not known):
        raise AssertionError(f"check_policy: {name} holds baseline_arm "
                             f"{getattr(policy, 'baseline_arm', None)!r} and baseline_reward "
                             f"{getattr(policy, 'baseline_reward', None)!r}, the problem "
                             f"{reference.baseline_arm!r} and {reference.baseline_reward!r}: "
                             "pass them to super().__init__ as given")
    for attribute, expected in (("arm_set", problem.arm_set), ("n_runs", n_runs), ("d", d),
                                ("S", problem.S), ("noise_sd", problem.noise_sd),
                                ("lam", problem.lam), ("threshold", reference.threshold),
                                ("t", 0)):
        if getattr(policy, attribute, None) is not expected and getattr(
                policy, attribute, None) != expected:
            raise AssertionError(f"check_policy: {name}.{attribute} is "
                                 f"{getattr(policy, attribute, None)!r}, expected {expected!r}: "
                                 "call super().__init__ with the problem")
    try:
        policy.observe(np.zeros((n_runs, d)), np.zeros(n_runs))
    except RuntimeError:
        pass
    else:
        raise AssertionError(f"check_policy: {name}.observe before select was accepted")
    played = _play(policy, problem, noise_seeds, stages, name)
    for i in range(n_runs):
        alone = build(policy_seeds[i:i + 1])
        arms = _play(alone, problem, noise_seeds[i:i + 1], stages, name)
        stage = _first_difference(arms[:, 0], played[:, i])
        if stage is not None:
            raise AssertionError(f"check_policy: {name}'s run {i} alone played "
                                 f"{arms[stage, 0].tolist()} at stage {stage + 1}, in a batch of "
                                 f"{n_runs} {played[stage, i].tolist()}: a run's draws must come "
                                 "from its own seed (self.rngs[i])")
    _check_pickle(build, problem, policy_seeds, noise_seeds, stages, name)
    if build(policy_seeds).compiled_stages:
        _check_compiled_stages(cls, build, problem, policy_seeds, noise_seeds, stages, name)


class _Reference(Policy):
    """The base alone: what it stores of a problem."""

    decision_names = ("reference",)


def _check_compiled_stages(cls, build, problem, policy_seeds, noise_seeds, stages, name) -> None:
    """The compiled stage loop plays what ``select``/``observe`` play, bit for bit (expected
    rewards and decisions at every stage)."""
    stepped = type(f"Stepped{cls.__name__}", (cls,), {"compiled_stages": False})
    traces = []
    for klass in (cls, stepped):
        policy = build(policy_seeds, klass)
        if klass is stepped and policy.compiled_stages:
            raise AssertionError(f"check_policy: {name} sets compiled_stages on its instances; "
                                 "make it a class attribute or a property")
        result = simulate(policy, problem.bandit(noise_seeds), stages, traces=True)
        traces.append((result.expected_reward, result.decisions, policy.decision_counts))
    (reward, decision, counts), (reward_s, decision_s, counts_s) = traces
    for what, ours, theirs in (("decision", decision, decision_s),
                               ("expected reward", reward, reward_s)):
        stage = _first_difference(ours, theirs)
        if stage is not None:
            raise AssertionError(f"check_policy: {name}'s compiled stages gave {what}s "
                                 f"{ours[stage].tolist()} at stage {stage + 1}, select/observe "
                                 f"{theirs[stage].tolist()}: its stage hooks must compute what "
                                 "select and observe compute")
    if counts.tobytes() != counts_s.tobytes():
        raise AssertionError(f"check_policy: {name}'s decision_counts after its compiled stages "
                             f"are {counts.tolist()}, after select/observe {counts_s.tolist()}")


def _play(policy: Policy, problem: BanditProblem, noise_seeds, stages: int, name: str
          ) -> np.ndarray:
    """Play ``stages`` stages through select/observe, checking each; the arms ``(stages, n, d)``."""
    n, d = policy.n_runs, problem.arm_set.dim
    bandit = problem.bandit(noise_seeds)
    out = np.empty((stages, n, d))
    for t in range(stages):
        arms = np.asarray(policy.select(), dtype=np.float64).reshape(n, d)
        if t == 0:
            try:
                policy.select()
            except RuntimeError:
                pass
            else:
                raise AssertionError(f"check_policy: {name}.select twice without observe was "
                                     "accepted")
        inside = problem.arm_set.contains(arms, tol=0.0)
        if not np.all(inside):
            i = int(np.argmin(inside))
            raise AssertionError(f"check_policy: {name} played {arms[i].tolist()} at stage "
                                 f"{t + 1}, run {i}: not in the arm set exactly "
                                 "(contains(x, tol=0))")
        _observe(policy, bandit, arms)
        out[t] = arms
    counts = np.asarray(policy.decision_counts)
    if counts.sum() != n * stages or policy.t != stages:
        raise AssertionError(f"check_policy: after {stages} stages {name}.t is {policy.t} and its "
                             f"decision_counts add up to {counts.sum()}, expected {n * stages}")
    return out


def _observe(policy: Policy, bandit, arms: np.ndarray) -> None:
    """:func:`~sege_cvx.simulation.engine.observe` of ``arms`` (one run's as ``(d,)``)."""
    observe(policy, arms if policy.n_runs > 1 else arms[0], bandit.feedback(arms))


def constrained_problem() -> BanditProblem:
    """A small problem with an unknown linear constraint (:mod:`sege_cvx.safety`): a star of
    eight rays, ``theta* = (0.6, 0.3)``, ``<x, (0.7, 0.5)> <= 0.3`` observed with noise 0.1, the
    origin safe; :func:`check_policy`'s default for a policy of that model alone."""
    from .arm_sets.star import StarSet
    from .safety import LinearConstraint

    rays = [[1.0, 0.0], [0.6, 0.8], [0.0, 1.0], [-0.6, 0.8], [-1.0, 0.0], [-0.6, -0.8],
            [0.0, -1.0], [0.6, -0.8]]
    return BanditProblem(StarSet(rays, 1.0), theta_star=(0.6, 0.3), baseline_arm=(0.0, 0.0),
                         S=1.0, noise_sd=0.1, lam=1.0, delta_bar=0.01, name="constrained",
                         constraint=LinearConstraint(0.3, gamma_star=(0.7, 0.5), noise_sd=0.1))


def _first_difference(a: np.ndarray, b: np.ndarray) -> int | None:
    """The first stage at which ``a`` and ``b`` (``(stages, d)``) differ in any bit."""
    for t in range(a.shape[0]):
        if a[t].tobytes() != b[t].tobytes():
            return t
    return None


def _check_pickle(build, problem, policy_seeds, noise_seeds, stages, name) -> None:
    """A policy pickled after ``stages // 2`` stages continues as the original."""
    policy = build(policy_seeds)
    n, d = policy.n_runs, problem.arm_set.dim
    bandit = problem.bandit(noise_seeds)
    for _ in range(stages // 2):
        _observe(policy, bandit, np.asarray(policy.select()).reshape(n, d))
    try:
        restored = pickle.loads(pickle.dumps(policy))
    except Exception as exc:
        raise AssertionError(f"check_policy: {name} does not pickle mid-run ({exc})") from exc
    ours, theirs = np.asarray(policy.select()), np.asarray(restored.select())
    if ours.tobytes() != theirs.tobytes():
        raise AssertionError(f"check_policy: {name} restored from a pickle after {stages // 2} "
                             f"stages selected {theirs.tolist()}, the original {ours.tolist()}")


def check_arm_set(arm_set: object, *, instances: int = 20, seed: int = 0) -> None:
    """Check that ``arm_set`` answers what policies ask of an arm set; raise ``AssertionError``.

    On ``instances`` random directions ``theta`` and information matrices ``V``:

    1. ``arm_set`` is an :class:`sege_cvx.ArmSet` whose exploration centre (and a
       cross-polytope's vertices) are in the set exactly (``contains(x, tol=0)``);
    2. ``greedy_arm(theta)`` and ``lcb_arm(theta, V, r)`` are in the set exactly, in batches and
       one at a time, bit for bit alike;
    3. they are at least as good as every known point of the set (the exploration's vertices
       and centre, the other answers), up to ``1e-7`` of the objective's scale;
    4. ``norm_bound()`` and ``diameter_bound()`` bound the norms of, and distances between, all
       those points;
    5. ``contains`` refuses points beyond the greedy arms; ``pull_inside`` brings a point
       ``1e-9`` beyond a greedy arm exactly into the set and keeps points already inside
       unchanged;
    6. the set pickles, and the copy returns the same greedy arms.

    Examples
    --------
    >>> import sege_cvx as sc
    >>> from sege_cvx.testing import check_arm_set
    >>> check_arm_set(sc.Box([0.0, 0.0], [1.0, 2.0]))
    """
    instances = as_positive_int("instances", instances)
    if not isinstance(arm_set, ArmSet):
        raise AssertionError(f"check_arm_set: {type(arm_set).__name__} is not a sege_cvx.ArmSet")
    d = arm_set.dim
    rng = np.random.default_rng(seed)
    convex = arm_set.is_convex
    if convex:
        exploration = arm_set.exploration()
        known = np.vstack([exploration.vertices(), exploration.center])
        # A cross-polytope's vertices are certified points of the set; an inscribed ellipsoid's
        # axis points may be the set's own boundary (an ellipsoid explores on itself), which
        # every played mix is pulled in from.
        _all_inside(arm_set, known if exploration.kind == "cross" else known[-1:],
                    "the exploration's vertices and centre")
    else:  # a finite set: its arms
        known = np.array(arm_set.arms, dtype=np.float64)
    thetas = rng.standard_normal((instances, d))
    factors = rng.standard_normal((instances, d, d))
    V = factors @ factors.transpose(0, 2, 1) + 0.1 * np.eye(d)
    radii = rng.uniform(0.0, 2.0, instances)
    greedy = arm_set.greedy_arm(thetas)
    lcb = arm_set.lcb_arm(thetas, V, radii)
    for i in range(instances):
        for what, batched, alone in (("greedy_arm", greedy[i], arm_set.greedy_arm(thetas[i])),
                                     ("lcb_arm", lcb[i], arm_set.lcb_arm(thetas[i], V[i],
                                                                          float(radii[i])))):
            if batched.tobytes() != np.asarray(alone).tobytes():
                raise AssertionError(f"check_arm_set: {what} of instance {i} is {alone.tolist()} "
                                     f"alone and {batched.tolist()} in a batch")
    _all_inside(arm_set, greedy, "greedy_arm")
    _all_inside(arm_set, lcb, "lcb_arm")
    points = np.vstack([known, greedy, lcb])
    for i in range(instances):
        values = points @ thetas[i]
        scale = 1e-7 * (1.0 + np.abs(values).max())
        if values.max() > greedy[i] @ thetas[i] + scale:
            raise AssertionError(f"check_arm_set: greedy_arm(theta) of instance {i} has "
                                 f"<x, theta> = {greedy[i] @ thetas[i]!r}, below "
                                 f"{values.max()!r} at the set's point "
                                 f"{points[np.argmax(values)].tolist()}")
        widths = np.sqrt(np.einsum("kd,kd->k", points @ np.linalg.inv(V[i]), points))
        objective = values - radii[i] * widths
        if objective.max() > objective[len(known) + instances + i] + scale * (1.0 + radii[i]):
            raise AssertionError(f"check_arm_set: lcb_arm of instance {i} has LCB "
                                 f"{objective[len(known) + instances + i]!r}, below "
                                 f"{objective.max()!r} at the set's point "
                                 f"{points[np.argmax(objective)].tolist()}")
    rounding = 1.0 + 8.0 * d * np.finfo(float).eps  # of the norms computed here
    norms = np.linalg.norm(points, axis=1)
    if not norms.max() <= arm_set.norm_bound() * rounding:
        raise AssertionError(f"check_arm_set: norm_bound() = {arm_set.norm_bound()!r}, below the "
                             f"norm {norms.max()!r} of {points[np.argmax(norms)].tolist()}")
    spread = np.linalg.norm(points[:, None] - points[None], axis=2).max()
    if not spread <= arm_set.diameter_bound() * rounding:
        raise AssertionError(f"check_arm_set: diameter_bound() = {arm_set.diameter_bound()!r}, "
                             f"below the distance {spread!r} between two of its points")
    if convex:
        _check_rejects(arm_set, exploration.center, greedy, thetas)
        _check_pull_inside(arm_set, exploration.center, greedy, known)
    try:
        copy = pickle.loads(pickle.dumps(arm_set))
    except Exception as exc:
        raise AssertionError(f"check_arm_set: {arm_set!r} does not pickle ({exc})") from exc
    if copy.greedy_arm(thetas).tobytes() != greedy.tobytes():
        raise AssertionError("check_arm_set: a pickled copy returns other greedy arms")


def _check_rejects(arm_set: ArmSet, center: np.ndarray, greedy: np.ndarray,
                   thetas: np.ndarray) -> None:
    """``contains`` refuses ``g + (g - c)``, twice as far from the centre as a greedy arm ``g``:
    its ``<x, theta>`` exceeds the maximum over the set wherever ``<g - c, theta> > 0``."""
    beyond = greedy + (greedy - center)
    gain = np.einsum("kd,kd->k", greedy - center, thetas)
    scale = np.abs(np.einsum("kd,kd->k", greedy, thetas)) + 1.0
    accepted = np.atleast_1d(arm_set.contains(beyond, tol=0.0)) & (gain > 1e-6 * scale)
    if accepted.any():
        i = int(np.argmax(accepted))
        raise AssertionError(f"check_arm_set: contains accepts {beyond[i].tolist()}, beyond the "
                             f"greedy arm {greedy[i].tolist()} for theta {thetas[i].tolist()}")


def _check_pull_inside(arm_set: ArmSet, center: np.ndarray, greedy: np.ndarray,
                       known: np.ndarray) -> None:
    beyond = center + (1.0 + 1e-9) * (greedy - center)
    moved, ok = arm_set.pull_inside(beyond)
    if not ok.all():
        raise AssertionError(f"check_arm_set: pull_inside could not bring "
                             f"{beyond[np.argmin(ok)].tolist()} (1e-9 beyond a greedy arm) in")
    _all_inside(arm_set, moved, "pull_inside")
    known = known[np.atleast_1d(arm_set.contains(known, tol=0.0))]
    kept, _ = arm_set.pull_inside(known)
    if kept.tobytes() != known.tobytes():
        raise AssertionError("check_arm_set: pull_inside moved a point already in the set")


def _all_inside(arm_set: ArmSet, points: np.ndarray, what: str) -> None:
    inside = np.atleast_1d(arm_set.contains(points, tol=0.0))
    if not inside.all():
        i = int(np.argmin(inside))
        raise AssertionError(f"check_arm_set: {what} point {points[i].tolist()} (row {i}) is not "
                             "in the set exactly (contains(x, tol=0))")
