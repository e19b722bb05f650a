"""The tests' one library of problems and settings: the conformance kit's problems of each
safety model (:mod:`sege_cvx.testing.problems`) and the builders the tests share."""

from __future__ import annotations

import numpy as np

import sege_cvx as sc
from sege_cvx.testing.problems import constrained_problem, problem_for, theta_constraint_problem

__all__ = ["B_THEIRS", "assert_certified", "b_problem", "constrained_problem",
           "constraint_problem", "floor_setting", "paper_problem", "paper_setting", "problem_for",
           "theta_constraint_problem"]

paper_problem = sc.paper_problem

#: Safe-LUCB's authors' B (their code's, before the sign that maximizes rewards).
B_THEIRS = np.array([[3.0, 9.0], [9.0, 2.0]]) / 5


def paper_setting(**overrides) -> sc.SafeSetting:
    """The setting of the paper's problem (:func:`sege_cvx.paper_problem`)."""
    return sc.paper_problem(**overrides).setting


def floor_setting(arm_set, safe_arm, baseline_reward, threshold, *, S=1.0,
                  noise_sd=1.0) -> sc.SafeSetting:
    """A stagewise setting: ``safe_arm`` with the reward floor ``(baseline_reward, threshold)``."""
    return sc.SafeSetting(arm_set, safe_arm, S=S, noise_sd=noise_sd,
                          safety=sc.RewardFloor(baseline_reward, threshold))


def constraint_problem(arm_set, *, limit=0.3, gamma=(0.7, 0.5), theta=(0.6, 0.3),
                       S=1.0) -> sc.BanditProblem:
    """An unknown linear constraint ``<x, gamma> <= limit`` with feedback of noise 0.1 on
    ``arm_set``, the origin safe."""
    con = sc.LinearConstraint(limit, gamma_star=gamma, noise_sd=0.1)
    return sc.BanditProblem.from_truth(arm_set, theta_star=theta, safe_arm=np.zeros(len(theta)),
                                       S=S, noise_sd=0.1, constraint=con, name="test")


def b_problem(arm_set, limit=0.9) -> sc.BanditProblem:
    """Safe-LUCB's model: the constraint on theta* itself (their problem, rewards maximized)."""
    return sc.BanditProblem.from_truth(arm_set, theta_star=-np.array([20.8, 1.0]) / 23,
                                       safe_arm=(0.0, 0.0), S=1.0, noise_sd=0.01,
                                       constraint=sc.LinearConstraint(limit, B=-B_THEIRS))


def assert_certified(policy, arms, gamma, limit) -> None:
    """Every arm of a constraint-model policy certified as it is played: the UCB of
    ``<x, gamma*>`` at most ``limit`` (up to the UCB's own rounding), or ``S ||x||`` at most
    ``limit``; and the true constraint ``<x, gamma> <= limit`` met."""
    conf, beta = policy.confidence, policy.radii()
    width = np.sqrt(np.einsum("ij,ijk,ik->i", arms, np.linalg.inv(conf.V), arms))
    ucb = np.einsum("ij,ij->i", arms, policy.gamma_hat) + beta * width
    near = policy.setting.S * np.linalg.norm(arms, axis=1) <= limit
    assert np.all((ucb <= limit * (1 + 1e-9)) | near)
    assert np.all(arms @ np.asarray(gamma) <= limit)
