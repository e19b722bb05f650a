"""The conformance checks of an arm set: :func:`arm_set_checks` and :func:`check_arm_set`."""

from __future__ import annotations

import pickle
from functools import cached_property, partial

import numpy as np

from .._validation import as_positive_int
from ..arm_sets.base import ArmSet
from .checks import Check, run_checks

__all__ = ["arm_set_checks", "check_arm_set"]


def arm_set_checks(arm_set: object, *, instances: int = 20, seed: int = 0) -> list[Check]:
    """The named checks that ``arm_set`` answers what policies ask of an arm set, on
    ``instances`` random directions ``theta`` and information matrices ``V`` (from ``seed``).

    The checks, in order:

    * ``is_an_arm_set``: an :class:`sege_cvx.ArmSet`;
    * ``exploration_inside``: its exploration centre (and a cross-polytope's vertices) are in
      the set exactly (``contains(x, tol=0)``);
    * ``batches_as_one_at_a_time``: ``greedy_arm(theta)`` and ``lcb_arm(theta, V, r)`` are the
      same in batches and one at a time, bit for bit;
    * ``arms_in_the_set``: those arms are in the set exactly;
    * ``arms_optimal``: they are at least as good as every known point of the set (the
      exploration's vertices and centre, the other answers), up to ``1e-7`` of the objective's
      scale;
    * ``bounds_hold``: ``norm_bound()`` and ``diameter_bound()`` bound the norms of, and
      distances between, all those points;
    * ``refuses_points_outside``: ``contains`` refuses points beyond the greedy arms (convex
      sets);
    * ``pulls_points_inside``: ``pull_inside`` brings a point ``1e-9`` beyond a greedy arm
      exactly into the set and keeps points already inside unchanged (convex sets);
    * ``pickles``: the set pickles, and the copy returns the same greedy arms.

    Returns
    -------
    list of Check
    """
    instances = as_positive_int("instances", instances)
    case = _Case(arm_set, instances, seed)
    return [Check(check.__name__.removeprefix("_check_"), partial(check, case))
            for check in (_check_is_an_arm_set, _check_exploration_inside,
                          _check_batches_as_one_at_a_time, _check_arms_in_the_set,
                          _check_arms_optimal, _check_bounds_hold, _check_refuses_points_outside,
                          _check_pulls_points_inside, _check_pickles)]


def check_arm_set(arm_set: object, *, instances: int = 20, seed: int = 0,
                  skip: tuple[str, ...] = ()) -> None:
    """Run every check of :func:`arm_set_checks` on ``arm_set`` but those named in ``skip``;
    raise ``AssertionError`` with one sentence at the first that fails.

    Examples
    --------
    >>> import sege_cvx as sc
    >>> from sege_cvx.testing import check_arm_set
    >>> check_arm_set(sc.Box([0.0, 0.0], [1.0, 2.0]))
    """
    run_checks(arm_set_checks(arm_set, instances=instances, seed=seed), skip)


class _Case:
    """The set, its random instances and the answers every check shares (computed once, on
    first use)."""

    def __init__(self, arm_set, instances: int, seed: int) -> None:
        self.arm_set, self.instances, self.seed = arm_set, instances, seed

    @cached_property
    def data(self) -> tuple:
        """``(thetas, V, radii, greedy, lcb)``: the instances and the set's batched answers."""
        _require_arm_set(self.arm_set)
        d, n = self.arm_set.dim, self.instances
        rng = np.random.default_rng(self.seed)
        thetas = rng.standard_normal((n, d))
        factors = rng.standard_normal((n, d, d))
        V = factors @ factors.transpose(0, 2, 1) + 0.1 * np.eye(d)
        radii = rng.uniform(0.0, 2.0, n)
        return (thetas, V, radii, self.arm_set.greedy_arm(thetas),
                self.arm_set.lcb_arm(thetas, V, radii))

    @cached_property
    def known(self) -> np.ndarray:
        """Points known to be in the set: the exploration's vertices and centre (a finite set:
        its arms)."""
        _require_arm_set(self.arm_set)
        if not self.arm_set.is_convex:
            return np.array(self.arm_set.arms, dtype=np.float64)
        exploration = self.arm_set.exploration()
        return np.vstack([exploration.vertices(), exploration.center])

    @property
    def points(self) -> np.ndarray:
        _, _, _, greedy, lcb = self.data
        return np.vstack([self.known, greedy, lcb])


def _require_arm_set(arm_set: object) -> None:
    if not isinstance(arm_set, ArmSet):
        raise AssertionError(f"check_arm_set: {type(arm_set).__name__} is not a sege_cvx.ArmSet")


def _check_is_an_arm_set(case: _Case) -> None:
    _require_arm_set(case.arm_set)


def _check_exploration_inside(case: _Case) -> None:
    _require_arm_set(case.arm_set)
    if not case.arm_set.is_convex:
        return
    # A cross-polytope's vertices are certified points of the set; an inscribed ellipsoid's
    # axis points may be the set's own boundary (an ellipsoid explores on itself), which every
    # played mix is pulled in from.
    cross = case.arm_set.exploration().kind == "cross"
    _all_inside(case.arm_set, case.known if cross else case.known[-1:],
                "the exploration's vertices and centre")


def _check_batches_as_one_at_a_time(case: _Case) -> None:
    thetas, V, radii, greedy, lcb = case.data
    arm_set = case.arm_set
    for i in range(case.instances):
        for what, batched, alone in (("greedy_arm", greedy[i], arm_set.greedy_arm(thetas[i])),
                                     ("lcb_arm", lcb[i], arm_set.lcb_arm(thetas[i], V[i],
                                                                          float(radii[i])))):
            if batched.tobytes() != np.asarray(alone).tobytes():
                raise AssertionError(f"check_arm_set: {what} of instance {i} is {alone.tolist()} "
                                     f"alone and {batched.tolist()} in a batch")


def _check_arms_in_the_set(case: _Case) -> None:
    _, _, _, greedy, lcb = case.data
    _all_inside(case.arm_set, greedy, "greedy_arm")
    _all_inside(case.arm_set, lcb, "lcb_arm")


def _check_arms_optimal(case: _Case) -> None:
    thetas, V, radii, greedy, _ = case.data
    points, n_known, n = case.points, len(case.known), case.instances
    for i in range(n):
        values = points @ thetas[i]
        scale = 1e-7 * (1.0 + np.abs(values).max())
        if values.max() > greedy[i] @ thetas[i] + scale:
            raise AssertionError(f"check_arm_set: greedy_arm(theta) of instance {i} has "
                                 f"<x, theta> = {greedy[i] @ thetas[i]!r}, below "
                                 f"{values.max()!r} at the set's point "
                                 f"{points[np.argmax(values)].tolist()}")
        widths = np.sqrt(np.einsum("kd,kd->k", points @ np.linalg.inv(V[i]), points))
        objective = values - radii[i] * widths
        if objective.max() > objective[n_known + n + i] + scale * (1.0 + radii[i]):
            raise AssertionError(f"check_arm_set: lcb_arm of instance {i} has LCB "
                                 f"{objective[n_known + n + i]!r}, below "
                                 f"{objective.max()!r} at the set's point "
                                 f"{points[np.argmax(objective)].tolist()}")


def _check_bounds_hold(case: _Case) -> None:
    arm_set, points = case.arm_set, case.points
    rounding = 1.0 + 8.0 * arm_set.dim * np.finfo(float).eps  # of the norms computed here
    norms = np.linalg.norm(points, axis=1)
    if not norms.max() <= arm_set.norm_bound() * rounding:
        raise AssertionError(f"check_arm_set: norm_bound() = {arm_set.norm_bound()!r}, below the "
                             f"norm {norms.max()!r} of {points[np.argmax(norms)].tolist()}")
    spread = np.linalg.norm(points[:, None] - points[None], axis=2).max()
    if not spread <= arm_set.diameter_bound() * rounding:
        raise AssertionError(f"check_arm_set: diameter_bound() = {arm_set.diameter_bound()!r}, "
                             f"below the distance {spread!r} between two of its points")


def _check_refuses_points_outside(case: _Case) -> None:
    """``contains`` refuses ``g + (g - c)``, twice as far from the centre as a greedy arm ``g``:
    its ``<x, theta>`` exceeds the maximum over the set wherever ``<g - c, theta> > 0``."""
    thetas, _, _, greedy, _ = case.data
    if not case.arm_set.is_convex:
        return
    center = case.known[-1]
    beyond = greedy + (greedy - center)
    gain = np.einsum("kd,kd->k", greedy - center, thetas)
    scale = np.abs(np.einsum("kd,kd->k", greedy, thetas)) + 1.0
    accepted = np.atleast_1d(case.arm_set.contains(beyond, tol=0.0)) & (gain > 1e-6 * scale)
    if accepted.any():
        i = int(np.argmax(accepted))
        raise AssertionError(f"check_arm_set: contains accepts {beyond[i].tolist()}, beyond the "
                             f"greedy arm {greedy[i].tolist()} for theta {thetas[i].tolist()}")


def _check_pulls_points_inside(case: _Case) -> None:
    _, _, _, greedy, _ = case.data
    arm_set = case.arm_set
    if not arm_set.is_convex:
        return
    center = case.known[-1]
    beyond = center + (1.0 + 1e-9) * (greedy - center)
    moved, ok = arm_set.pull_inside(beyond)
    if not ok.all():
        raise AssertionError(f"check_arm_set: pull_inside could not bring "
                             f"{beyond[np.argmin(ok)].tolist()} (1e-9 beyond a greedy arm) in")
    _all_inside(arm_set, moved, "pull_inside")
    known = case.known[np.atleast_1d(arm_set.contains(case.known, tol=0.0))]
    kept, _ = arm_set.pull_inside(known)
    if kept.tobytes() != known.tobytes():
        raise AssertionError("check_arm_set: pull_inside moved a point already in the set")


def _check_pickles(case: _Case) -> None:
    thetas, _, _, greedy, _ = case.data
    try:
        copy = pickle.loads(pickle.dumps(case.arm_set))
    except Exception as exc:  # noqa: BLE001 - any failure to pickle is the finding
        raise AssertionError(f"check_arm_set: {case.arm_set!r} does not pickle ({exc})") from exc
    if copy.greedy_arm(thetas).tobytes() != greedy.tobytes():
        raise AssertionError("check_arm_set: a pickled copy returns other greedy arms")


def _all_inside(arm_set: ArmSet, points: np.ndarray, what: str) -> None:
    inside = np.atleast_1d(arm_set.contains(points, tol=0.0))
    if not inside.all():
        i = int(np.argmin(inside))
        raise AssertionError(f"check_arm_set: {what} point {points[i].tolist()} (row {i}) is not "
                             "in the set exactly (contains(x, tol=0))")
