"""Small problems of each safety model, for the conformance checks and for tests: a policy's
default problem is one of its model (:func:`problem_for`)."""

from __future__ import annotations

import numpy as np

from ..arm_sets.polytope import Box
from ..arm_sets.star import StarSet
from ..problems.problem import BanditProblem, paper_problem
from ..safety import LinearConstraint

__all__ = ["constrained_problem", "paper_problem", "problem_for", "theta_constraint_problem"]


def constrained_problem() -> BanditProblem:
    """A small problem with an unknown linear constraint (:mod:`sege_cvx.safety`): a star of
    eight rays, ``theta* = (0.6, 0.3)``, ``<x, (0.7, 0.5)> <= 0.3`` observed with noise 0.1, the
    origin safe; the default problem of a policy of that model."""
    rays = [[1.0, 0.0], [0.6, 0.8], [0.0, 1.0], [-0.6, 0.8], [-1.0, 0.0], [-0.6, -0.8],
            [0.0, -1.0], [0.6, -0.8]]
    return BanditProblem.from_truth(
        StarSet(rays, 1.0), theta_star=(0.6, 0.3), safe_arm=(0.0, 0.0), S=1.0, noise_sd=0.1,
        constraint=LinearConstraint(0.3, gamma_star=(0.7, 0.5), noise_sd=0.1),
        name="constrained")


def theta_constraint_problem() -> BanditProblem:
    """A small problem of the constraint on ``theta*`` itself, ``<B x, theta*> <= c`` with ``B``
    known (Safe-LUCB's model): the box ``[-1, 1]^2``, ``theta* = (0.6, 0.3)``,
    ``B = -[[1, 0.5], [0.2, 1]]``, ``c = 0.5``, noise 0.1, the origin safe."""
    B = -np.array([[1.0, 0.5], [0.2, 1.0]])
    return BanditProblem.from_truth(
        Box([-1.0, -1.0], [1.0, 1.0]), theta_star=(0.6, 0.3), safe_arm=(0.0, 0.0), S=1.0,
        noise_sd=0.1, constraint=LinearConstraint(0.5, B=B), name="theta-constraint")


#: The default problem of each safety model.
_DEFAULTS = {"stagewise": paper_problem, "linear_constraint": constrained_problem,
             "linear_constraint_on_theta": theta_constraint_problem}


def problem_for(cls: type) -> BanditProblem:
    """A small problem of the first safety model policy class ``cls`` runs on: the paper's
    (:func:`~sege_cvx.paper_problem`), :func:`constrained_problem` or
    :func:`theta_constraint_problem`."""
    return _DEFAULTS[cls.safety_models[0]]()
