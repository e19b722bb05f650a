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
