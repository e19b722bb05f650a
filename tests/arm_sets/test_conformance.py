"""sc.testing.check_arm_set on every built-in kind of set, and on sets that break a promise."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest

import sege_cvx as sc


def l15_ball(x: cp.Variable) -> list:
    """The l1.5 ball of radius 1 around (1, 1): module level, so that the set pickles."""
    return [cp.pnorm(x - 1.0, 1.5) <= 1]


SETS = {
    "ellipsoid": lambda: sc.Ellipsoid([1.0, 1.0], [[1.0, 0.3], [0.3, 0.5]]),
    "ball": lambda: sc.Ball([1.0, 1.0], 1.0),
    "box": lambda: sc.Box([0.0, -1.0], [1.0, 2.0]),
    "polytope": lambda: sc.Polytope(np.vstack([-np.eye(3), np.ones((1, 3))]), [0, 0, 0, 1.5]),
    "hull": lambda: sc.ConvexHull(np.random.default_rng(3).uniform(0.0, 1.0, (12, 3))),
    "cvxpy": lambda: sc.ConvexArmSet(2, l15_ball),
    "finite": lambda: sc.FiniteArmSet([[0.0, 0.0], [1.0, 0.2], [0.3, 0.9], [0.5, 0.5]]),
}


@pytest.mark.parametrize("kind", SETS)
def test_every_built_in_set_passes_check_arm_set(kind):
    sc.testing.check_arm_set(SETS[kind](), instances=8)


class LyingNorm(sc.Box):
    def norm_bound(self) -> float:
        return 0.5


class Sloppy(sc.Box):
    """A greedy arm that is a corner of the box only for theta > 0: otherwise the low corner."""

    def greedy_arm_batch(self, thetas):
        result = super().greedy_arm_batch(thetas)
        result.arms[:] = self.lower
        return result


@pytest.mark.parametrize("arm_set, match", [
    (LyingNorm([0.0, 0.0], [1.0, 1.0]), r"norm_bound\(\) = 0.5, below the norm"),
    (Sloppy([0.0, 0.0], [1.0, 1.0]), r"greedy_arm\(theta\) of instance \d+ has <x, theta>"),
    (np.eye(2), "ndarray is not a sege_cvx.ArmSet"),
])
def test_check_arm_set_names_what_fails(arm_set, match):
    with pytest.raises(AssertionError, match=match):
        sc.testing.check_arm_set(arm_set, instances=8)


class AcceptsAll(sc.Ball):
    def contains(self, x, tol=1e-9):
        x = np.asarray(x, dtype=float)
        return True if x.ndim == 1 else np.ones(x.shape[0], dtype=bool)


def test_check_arm_set_finds_a_contains_that_accepts_everything():
    with pytest.raises(AssertionError, match="contains accepts .* beyond the greedy arm"):
        sc.testing.check_arm_set(AcceptsAll([1.0, 1.0], 1.0), instances=8)


def test_check_arm_set_validates_its_arguments():
    with pytest.raises(ValueError, match="instances must be"):
        sc.testing.check_arm_set(SETS["box"](), instances=0)


# ------------------------------------------------------------------ named checks, each alone
CHECK_NAMES = ["is_an_arm_set", "exploration_inside", "batches_as_one_at_a_time", "arms_in_the_set",
               "arms_optimal", "bounds_hold", "refuses_points_outside", "pulls_points_inside",
               "pickles"]


def test_arm_set_checks_are_named_checks_in_order():
    checks = sc.testing.arm_set_checks(SETS["box"](), instances=8)
    assert all(isinstance(check, sc.testing.Check) for check in checks)
    assert [check.name for check in checks] == CHECK_NAMES
    assert [repr(check) for check in checks] == CHECK_NAMES  # pytest's ids (ids=repr)


@pytest.mark.parametrize("check", sc.testing.arm_set_checks(SETS["polytope"](), instances=8), ids=repr)
def test_each_check_runs_alone(check):
    check()
    # And first on a fresh set: nothing another check computed before it.
    fresh = {c.name: c for c in sc.testing.arm_set_checks(SETS["polytope"](), instances=8)}
    fresh[check.name]()


# Each broken set breaks one promise: exactly the check of that promise fails, run alone, and
# check_arm_set passes with that one check skipped.
BROKEN = [
    (LyingNorm([0.0, 0.0], [1.0, 1.0]), "bounds_hold", r"norm_bound\(\) = 0.5, below the norm"),
    (Sloppy([0.0, 0.0], [1.0, 1.0]), "arms_optimal", r"greedy_arm\(theta\) of instance \d+ has"),
    (AcceptsAll([1.0, 1.0], 1.0), "refuses_points_outside", "contains accepts .* beyond the greedy"),
]


@pytest.mark.parametrize("arm_set, failing, match", BROKEN, ids=[failing for _, failing, _ in BROKEN])
def test_a_broken_promise_fails_its_own_check_alone(arm_set, failing, match):
    for check in sc.testing.arm_set_checks(arm_set, instances=8):
        if check.name == failing:
            with pytest.raises(AssertionError, match=match):
                check()
        else:
            check()
    with pytest.raises(AssertionError, match=match):
        sc.testing.check_arm_set(arm_set, instances=8)
    sc.testing.check_arm_set(arm_set, instances=8, skip=(failing,))


def test_check_arm_set_skips_the_checks_named():
    lying = LyingNorm([0.0, 0.0], [1.0, 1.0])
    sc.testing.check_arm_set(lying, instances=8, skip=("bounds_hold",))
    sc.testing.check_arm_set(lying, instances=8, skip="bounds_hold")  # one name, as a string
    sc.testing.check_arm_set(lying, instances=8, skip=CHECK_NAMES[1:])  # all but is_an_arm_set
    with pytest.raises(AssertionError, match="norm_bound"):
        sc.testing.check_arm_set(lying, instances=8, skip=("pickles",))


def test_a_skip_that_names_no_check_is_a_value_error():
    with pytest.raises(ValueError, match=r"skip names no check: \['bound_holds'\] \(the checks: "
                                         r"is_an_arm_set, .*bounds_hold"):
        sc.testing.check_arm_set(SETS["box"](), instances=8, skip=("bound_holds",))
    with pytest.raises(ValueError, match="skip names no check"):
        sc.testing.check_arm_set(SETS["box"](), instances=8, skip=("bounds_hold", "pickle"))
