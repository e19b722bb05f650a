"""Every public entry point rejects bad input with an error that names what is wrong."""

import cvxpy as cp
import numpy as np
import pytest

import sege_cvx as sc

DISK = sc.Ball([1.0, 1.0], 1.0)
V = np.array([[2.0, 0.5], [0.5, 1.0]])


@pytest.mark.parametrize("make, error, match", [
    (lambda: sc.Ellipsoid([0.0, np.nan], np.eye(2)), ValueError, "center must be finite"),
    (lambda: sc.Ellipsoid([0.0, 0.0], np.eye(3)), ValueError, r"shape must have shape \(2, 2\)"),
    (lambda: sc.Ellipsoid([0.0, 0.0], [[1.0, 0.5], [0.0, 1.0]]), ValueError, "symmetric"),
    (lambda: sc.Ellipsoid([0.0, 0.0], [[1.0, 0.0], [0.0, -1.0]]), ValueError, "positive definite"),
    (lambda: sc.Ellipsoid([0.0, 0.0], [[1.0, 0.0], [0.0, np.inf]]), ValueError, "finite"),
    (lambda: sc.Ball([0.0, 0.0], -1.0), ValueError, "radius must be > 0"),
    (lambda: sc.Ball([[0.0, 0.0]], 1.0), ValueError, "center must have shape"),
    (lambda: sc.Box([0.0, 1.0], [1.0, 1.0]), ValueError, "coordinate 1"),
    (lambda: sc.Box([0.0, 0.0], [1.0]), ValueError, "upper"),
    (lambda: sc.Polytope(np.eye(2), [1.0, 1.0]), ValueError, "unbounded"),
    (lambda: sc.Polytope(np.vstack([np.eye(2), -np.eye(2)]), [-1.0, 0, 0, 0]), ValueError, "empty"),
    (lambda: sc.Polytope(np.vstack([np.eye(2), -np.eye(2)]), [1.0, 0, 0, 0]), ValueError,
     "empty interior"),
    (lambda: sc.Polytope(np.zeros((2, 2)), [1.0, 1.0]), ValueError, "all-zero row"),
    (lambda: sc.ConvexArmSet(2, lambda x: [x >= 0]), ValueError, "unbounded"),
    (lambda: sc.ConvexArmSet(2, lambda x: [cp.norm(x) <= 1, x[0] >= 2]), ValueError, "empty"),
    (lambda: sc.ConvexArmSet(2, lambda x: [cp.norm(x) >= 1]), ValueError, "DCP"),
    (lambda: sc.ConvexArmSet(2, lambda x: 3), TypeError, "cvxpy constraints"),
    (lambda: sc.ConvexArmSet(0, lambda x: [x <= 1]), ValueError, "dim"),
])
def test_arm_set_construction_errors(make, error, match):
    with pytest.raises(error, match=match):
        make()


@pytest.mark.parametrize("call, error, match", [
    (lambda: DISK.lcb_arm([0.6, np.nan], V, 1.0), ValueError, "theta_hat must be finite"),
    (lambda: DISK.lcb_arm([0.6, 0.8, 1.0], V, 1.0), ValueError, "theta_hat must have shape"),
    (lambda: DISK.lcb_arm([0.6, 0.8], -V, 1.0), ValueError, "V must be positive definite"),
    (lambda: DISK.lcb_arm([0.6, 0.8], [[1.0, 0.2], [0.0, 1.0]], 1.0), ValueError, "V must be symmetric"),
    (lambda: DISK.lcb_arm([0.6, 0.8], np.eye(3), 1.0), ValueError, "V must have shape"),
    (lambda: DISK.lcb_arm([0.6, 0.8], V, -0.5), ValueError, "radius must be nonnegative"),
    (lambda: DISK.lcb_arm([0.6, 0.8], V, np.inf), ValueError, "radius must be finite"),
    (lambda: DISK.lcb_arm([0.6, 0.8], V, 1.0, method="newton"), ValueError, "method"),
    (lambda: DISK.lcb_arm(np.ones((3, 2)), np.stack([V, V]), 1.0), ValueError, "3 rows"),
    (lambda: sc.Box([0, 0], [1, 1]).lcb_arm([1.0, 1.0], V, 1.0, method="closed_form"),
     ValueError, "no closed-form"),
    (lambda: DISK.greedy_arm([1.0, "a"]), TypeError, "theta must be numeric"),
    (lambda: DISK.contains([1.0, 1.0], tol=-1.0), ValueError, "tol"),
    (lambda: sc.lcb([1.0, 1.0], [0.6, 0.8], V, -1.0), ValueError, "radius"),
    (lambda: sc.lcb([1.0, 1.0], [0.6, 0.8], -V, 1.0), ValueError, "positive definite"),
    (lambda: sc.confidence_radius(10, 1.5, dim=2, noise_sd=1, lam=0.1, S=1, L=1), ValueError, "delta"),
    (lambda: sc.confidence_radius(-1, 0.1, dim=2, noise_sd=1, lam=0.1, S=1, L=1), ValueError, "t must"),
    (lambda: sc.confidence_radius(1, 0.1, dim=2, noise_sd=1, lam=0.0, S=1, L=1), ValueError, "lam"),
    (lambda: sc.ConfidenceEllipsoid(2, lam=-1.0), ValueError, "lam"),
])
def test_call_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_exploration_and_bandit_errors():
    from sege_cvx.arm_sets.exploration import Exploration
    with pytest.raises(ValueError, match="kind"):
        Exploration([0.0, 0.0], np.eye(2), "cube")
    with pytest.raises(ValueError, match="center must be finite"):
        Exploration([0.0, np.nan], np.eye(2), "sphere")
    with pytest.raises(ValueError, match=r"B must have shape \(2, 2\)"):
        Exploration([0.0, 0.0], np.eye(3), "sphere")
    with pytest.raises(ValueError, match="nonsingular"):
        Exploration([0.0, 0.0], np.zeros((2, 2)), "cross")
    with pytest.raises(TypeError, match="seeds"):
        sc.LinearBandit([0.6, 0.8], 1.0, 7)
    with pytest.raises(ValueError, match="SeedSequence"):
        sc.LinearBandit([0.6, 0.8], 1.0, [1, 2])


def test_simulation_and_reproduce_errors():
    policy = sc.SEGE(DISK, [1.2, 1.9], 2.24, 1.8, S=1.0, noise_sd=1.0)
    with pytest.raises(ValueError, match="horizon"):
        sc.simulate(policy, sc.LinearBandit([0.6, 0.8], 1.0, sc.run_seeds(0, 1)[1]), 0)
    with pytest.raises(ValueError, match="seed must hold 2"):
        sc.SEGE(DISK, [1.2, 1.9], 2.24, 1.8, S=1.0, noise_sd=1.0, n_runs=2,
                seed=[np.random.SeedSequence(0)])
    from sege_cvx.experiments import run_study
    with pytest.raises(ValueError, match="runs"):
        run_study(runs=0, horizon=10)
    with pytest.raises(ValueError, match="horizon"):
        run_study(runs=1, horizon=0)
