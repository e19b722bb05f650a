"""The conformance checks of a policy class: :func:`policy_checks` and :func:`check_policy`.

Each check plays the policy through the protocol of :class:`sege_cvx.Policy` on a small problem
of its safety model and fails with an ``AssertionError`` naming what went wrong, in one
sentence.  The suite runs them on every built-in policy, on each safety model it runs on.
"""

from __future__ import annotations

import pickle
from functools import partial
from typing import Any

import numpy as np

from .._random import run_seeds
from .._validation import as_positive_int
from ..policies.base import Policy, decision_names_problem, model_problem
from ..problems.problem import BanditProblem
from ..simulation.engine import observe, simulate
from .checks import Check, run_checks
from .problems import problem_for

__all__ = ["check_policy", "policy_checks"]


def policy_checks(cls: type, problem: BanditProblem | None = None, *, stages: int = 40,
                  n_runs: int = 3, **params: Any) -> list[Check]:
    """The named checks of policy class ``cls`` on ``problem`` (default: a small problem of its
    first safety model, :func:`~sege_cvx.testing.problems.problem_for`), each playing
    ``stages`` stages of batches of ``n_runs`` runs of ``cls(problem.setting, seed=...,
    n_runs=..., **defaults, **params)`` (``defaults``: :meth:`Policy.defaults
    <sege_cvx.Policy.defaults>`).

    The checks, in order:

    * ``protocol``: ``cls`` is a :class:`~sege_cvx.Policy` subclass whose ``decision_names`` are
      valid and at most as many as ``simulate`` records, and which runs on ``problem``'s
      safety model;
    * ``stores_its_setting``: the constructor keeps the setting, ``lam``, ``n_runs`` and
      ``t = 0`` as the base does (``super().__init__(setting, ...)``);
    * ``refuses_calls_out_of_order``: ``observe`` before ``select``, and ``select`` twice, raise
      ``RuntimeError``;
    * ``arms_in_the_set``: every stage's arms have shape ``(n_runs, d)``, lie in the arm set
      exactly (``contains(x, tol=0)``) and carry known decision codes, and the decision counts
      add up;
    * ``reproducible``: the same seeds play the same arms, bit for bit;
    * ``runs_alone_as_in_a_batch``: each run played alone plays the arms it plays in the batch;
    * ``runs_use_their_own_seeds``: a policy whose arms depend on its seeds does not play the
      same arms in every run of a batch whose rewards are alike (it would ignore its runs'
      seeds);
    * ``pickles_mid_run``: a policy pickled mid-run continues as the original;
    * ``compiled_stages_as_stepped``: where :attr:`~sege_cvx.Policy.compiled_stages`, the
      compiled stage loop plays the decisions and rewards of ``select``/``observe``;
    * ``keeps_safety``: where :attr:`~sege_cvx.Policy.stagewise_safe`, no stage of a
      simulation breaks the problem's floor or constraint.

    A fault that shows only after ``stages`` stages is not seen: raise ``stages`` to look
    further.

    Parameters
    ----------
    cls : type
        The policy class.
    problem : BanditProblem, optional
    stages, n_runs : int
        The stages each check plays and the runs of its batches (default 40 and 3).
    **params
        The policy's own keyword parameters.

    Returns
    -------
    list of Check
        Each callable, named (its ``repr`` is its name: a pytest id).

    Examples
    --------
    Each check as a test of its own:

    .. code-block:: python

        @pytest.mark.parametrize("check", sc.testing.policy_checks(MyPolicy), ids=repr)
        def test_my_policy(check):
            check()
    """
    stages = as_positive_int("stages", stages)
    n_runs = as_positive_int("n_runs", n_runs)
    if isinstance(cls, Policy):
        raise AssertionError(f"check_policy: pass the class, not an instance of "
                             f"{type(cls).__name__}")
    name = getattr(cls, "__name__", repr(cls))
    if problem is None and isinstance(cls, type) and issubclass(cls, Policy):
        problem = problem_for(cls)
    case = _Case(cls, name, problem, stages, n_runs, params)
    return [Check(check.__name__.removeprefix("_check_"), partial(check, case))
            for check in (_check_protocol, _check_stores_its_setting,
                          _check_refuses_calls_out_of_order, _check_arms_in_the_set,
                          _check_reproducible, _check_runs_alone_as_in_a_batch,
                          _check_runs_use_their_own_seeds, _check_pickles_mid_run,
                          _check_compiled_stages_as_stepped, _check_keeps_safety)]


def check_policy(cls: type, problem: BanditProblem | None = None, *, stages: int = 40,
                 n_runs: int = 3, skip: tuple[str, ...] = (), **params: Any) -> None:
    """Run every check of :func:`policy_checks` on ``cls`` but those named in ``skip``; raise
    ``AssertionError`` with one sentence at the first that fails.

    Parameters
    ----------
    cls : type
        The policy class.
    problem : BanditProblem, optional
        Default: a small problem of its first safety model.
    stages, n_runs : int
        The stages each check plays (default 40) and the runs of its batches (default 3).
    skip : tuple of str
        Names of checks not to run.
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
    run_checks(policy_checks(cls, problem, stages=stages, n_runs=n_runs, **params), skip)


class _Case:
    """What every check of one :func:`policy_checks` call shares: the class, the problem, the
    sizes and the policy's parameters, and how to build and play it."""

    def __init__(self, cls, name, problem, stages, n_runs, params) -> None:
        self.cls, self.name, self.problem = cls, name, problem
        self.stages, self.n_runs, self.params = stages, n_runs, params
        self.policy_seeds, self.noise_seeds = run_seeds(0, n_runs)

    def fail(self, message: str) -> None:
        raise AssertionError(f"check_policy: {self.name}{message}")

    def build(self, seeds, klass: type | None = None) -> Policy:
        klass = self.cls if klass is None else klass
        kwargs = {**klass.defaults(self.problem), **self.params}
        return klass(self.problem.setting, n_runs=len(seeds), seed=list(seeds), **kwargs)

    def play(self, policy: Policy, noise_seeds) -> np.ndarray:
        """``stages`` stages through select/observe, each stage's arms checked; the arms,
        shape ``(stages, n, d)``."""
        n, d = policy.n_runs, self.problem.setting.dim
        bandit = self.problem.bandit(noise_seeds)
        out = np.empty((self.stages, n, d))
        for t in range(self.stages):
            arms = np.asarray(policy.select(), dtype=np.float64).reshape(n, d)
            inside = np.atleast_1d(self.problem.arm_set.contains(arms, tol=0.0))
            if not np.all(inside):
                i = int(np.argmin(inside))
                self.fail(f" played {arms[i].tolist()} at stage {t + 1}, run {i}: not in the "
                          "arm set exactly (contains(x, tol=0))")
            observe(policy, arms if n > 1 else arms[0], bandit.feedback(arms))
            out[t] = arms
        return out


def _check_protocol(case: _Case) -> None:
    cls = case.cls
    if not (isinstance(cls, type) and issubclass(cls, Policy)):
        raise AssertionError(f"check_policy: {case.name} is not a subclass of sege_cvx.Policy")
    if (problem := decision_names_problem(cls)) is not None:
        raise AssertionError(f"check_policy: {problem}")
    if (wrong := model_problem(cls, case.problem.safety_model)) is not None:
        raise AssertionError(f"check_policy: {wrong} (the problem's)")


def _check_stores_its_setting(case: _Case) -> None:
    policy = case.build(case.policy_seeds)
    setting = case.problem.setting
    expected = {"setting": setting, "n_runs": case.n_runs, "d": setting.dim, "t": 0}
    for attribute, value in expected.items():
        got = getattr(policy, attribute, None)
        if got is not value and got != value:
            case.fail(f".{attribute} is {got!r}, expected {value!r}: call "
                      "super().__init__(setting, lam=..., n_runs=..., seed=...)")
    if not (isinstance(policy.lam, float) and policy.lam > 0.0):
        case.fail(f".lam is {policy.lam!r}, not a positive float: pass lam to "
                  "super().__init__")


def _check_refuses_calls_out_of_order(case: _Case) -> None:
    policy, d = case.build(case.policy_seeds), case.problem.setting.dim
    try:
        policy.observe(np.zeros((case.n_runs, d)), np.zeros(case.n_runs))
    except RuntimeError:
        pass
    else:
        case.fail(".observe before select was accepted")
    policy.select()
    try:
        policy.select()
    except RuntimeError:
        pass
    else:
        case.fail(".select twice without observe was accepted")


def _check_arms_in_the_set(case: _Case) -> None:
    policy = case.build(case.policy_seeds)
    case.play(policy, case.noise_seeds)
    counts, n = np.asarray(policy.decision_counts), case.n_runs
    if counts.sum() != n * case.stages or policy.t != case.stages:
        case.fail(f": after {case.stages} stages .t is {policy.t} and its decision_counts add "
                  f"up to {counts.sum()}, expected {n * case.stages}")


def _check_reproducible(case: _Case) -> None:
    first = case.play(case.build(case.policy_seeds), case.noise_seeds)
    again = case.play(case.build(case.policy_seeds), case.noise_seeds)
    if (stage := _first_difference(first, again)) is not None:
        case.fail(f" played {again[stage].tolist()} at stage {stage + 1} and "
                  f"{first[stage].tolist()} with the same seeds: draw from self.rngs, not a "
                  "global or unseeded generator")


def _check_runs_alone_as_in_a_batch(case: _Case) -> None:
    played = case.play(case.build(case.policy_seeds), case.noise_seeds)
    for i in range(case.n_runs):
        alone = case.play(case.build(case.policy_seeds[i:i + 1]), case.noise_seeds[i:i + 1])
        if (stage := _first_difference(alone[:, 0], played[:, i])) is not None:
            case.fail(f"'s run {i} alone played {alone[stage, 0].tolist()} at stage "
                      f"{stage + 1}, in a batch of {case.n_runs} {played[stage, i].tolist()}: a "
                      "run's draws must come from its own seed (self.rngs[i])")


def _check_runs_use_their_own_seeds(case: _Case) -> None:
    if case.n_runs < 2:
        return
    # Every run of the batch sees the same rewards: only their own seeds tell them apart.
    same_noise = [case.noise_seeds[0]] * case.n_runs
    played = case.play(case.build(case.policy_seeds), same_noise)
    if any(_first_difference(played[:, i], played[:, 0]) is not None
           for i in range(1, case.n_runs)):
        return  # the runs differ: each follows its own seed
    others = run_seeds(1, case.n_runs)[0]
    reseeded = case.play(case.build(others), same_noise)
    if _first_difference(reseeded, played) is not None:  # its arms depend on its seeds
        case.fail("'s runs all played the same arms at every stage, though each has a seed of "
                  "its own and the arms depend on the seeds: draw run i's randomness from "
                  "self.rngs[i]")


def _check_pickles_mid_run(case: _Case) -> None:
    policy = case.build(case.policy_seeds)
    n, d, half = case.n_runs, case.problem.setting.dim, case.stages // 2
    bandit = case.problem.bandit(case.noise_seeds)
    for _ in range(half):
        arms = np.asarray(policy.select()).reshape(n, d)
        observe(policy, arms if n > 1 else arms[0], bandit.feedback(arms))
    try:
        restored = pickle.loads(pickle.dumps(policy))
    except Exception as exc:  # noqa: BLE001 - any failure to pickle is the finding
        case.fail(f" does not pickle mid-run ({type(exc).__name__}: {exc})")
    ours, theirs = np.asarray(policy.select()), np.asarray(restored.select())
    if ours.tobytes() != theirs.tobytes():
        case.fail(f" restored from a pickle after {half} stages selected {theirs.tolist()}, the "
                  f"original {ours.tolist()}")


def _check_compiled_stages_as_stepped(case: _Case) -> None:
    if not case.build(case.policy_seeds).compiled_stages:
        return
    stepped = type(f"Stepped{case.cls.__name__}", (case.cls,), {"compiled_stages": False})
    traces = []
    for klass in (case.cls, stepped):
        policy = case.build(case.policy_seeds, klass)
        if klass is stepped and policy.compiled_stages:
            case.fail(" sets compiled_stages on its instances; make it a class attribute or a "
                      "property")
        result = simulate(policy, case.problem.bandit(case.noise_seeds), case.stages,
                          traces=True, misspecified=case.problem.misspecified)
        traces.append((result.expected_reward, result.decisions, policy.decision_counts))
    (reward, decision, counts), (reward_s, decision_s, counts_s) = traces
    for what, ours, theirs in (("decision", decision, decision_s),
                               ("expected reward", reward, reward_s)):
        if (stage := _first_difference(ours, theirs)) is not None:
            case.fail(f"'s compiled stages gave {what}s {ours[stage].tolist()} at stage "
                      f"{stage + 1}, select/observe {theirs[stage].tolist()}: its stage hooks "
                      "must compute what select and observe compute")
    if counts.tobytes() != counts_s.tobytes():
        case.fail(f"'s decision_counts after its compiled stages are {counts.tolist()}, after "
                  f"select/observe {counts_s.tolist()}")


def _check_keeps_safety(case: _Case) -> None:
    if not case.cls.stagewise_safe:
        return
    policy = case.build(case.policy_seeds)
    result = simulate(policy, case.problem.bandit(case.noise_seeds), case.stages,
                      misspecified=case.problem.misspecified)
    stats = result.stats
    if stats.total_violations.any():
        i = int(np.argmax(stats.total_violations > 0))
        what = ("its expected reward below the threshold" if case.problem.constraint is None
                else "its constraint value above the limit")
        count = int(stats.total_violations[i])
        case.fail(f"'s run {i} broke the safety criterion at stage {stats.first_violation[i]} "
                  f"({what}; {count} such stage{'s' if count != 1 else ''} in {case.stages}), "
                  "though it declares stagewise_safe")


def _first_difference(a: np.ndarray, b: np.ndarray) -> int | None:
    """The first stage at which ``a`` and ``b`` (stages first) differ in any bit."""
    for t in range(a.shape[0]):
        if a[t].tobytes() != b[t].tobytes():
            return t
    return None

