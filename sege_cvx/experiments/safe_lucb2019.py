"""The Safe-LUCB experiment of its first author's code, as a problem of this package.

``Codes/CLBwithD_0.m`` of ``sanaeamani/SafeLinearBandits`` (Amani, Alizadeh and Thrampoulidis,
NeurIPS 2019): ``d = 2``, the box ``[-1, 1]^2``, a loss ``<x, mu*>`` with
``mu* = (20.8, 1) / 23`` to minimize under ``<B x, mu*> <= C``, ``B = [[3, 9], [9, 2]] / 5``,
``C = 0.9``, noise sd 0.01, ``lambda = 1``, ``delta = 0.01``, ``S = 1``, ``T = 10^5`` stages of
which ``tp = 10^4`` explore, and ``beta_t`` with ``R = 1`` and ``L = sqrt(2)`` (the box's largest
norm).  Its optimum ``(-1, -1)`` lies inside the constraint (their "Delta > 0").  In this package
rewards are maximized: ``theta* = -mu*`` and the constraint ``<(-B) x, theta*> <= C``.  The code
sets no seed and runs once; ``studies/safe_lucb_2019.toml`` runs it over seeded runs.
"""

from __future__ import annotations

import numpy as np

from ..arm_sets import Box
from ..problems.problem import BanditProblem
from ..safety import LinearConstraint

#: Their ``B``, ``mu*`` and ``C``.
B = np.array([[3.0, 9.0], [9.0, 2.0]]) / 5
MU = np.array([20.8, 1.0]) / 23
LIMIT = 0.9
#: Their horizon and exploration phase.
HORIZON, EXPLORATION_STAGES = 100_000, 10_000


def problem() -> BanditProblem:
    """Their problem (module docstring), rewards maximized."""
    return BanditProblem.from_truth(Box([-1.0, -1.0], [1.0, 1.0]), theta_star=-MU,
                                    safe_arm=(0.0, 0.0), S=1.0, noise_sd=0.01,
                                    constraint=LinearConstraint(LIMIT, B=-B),
                                    name="safe-lucb-2019",
                                    description="Amani et al. (2019), Codes/CLBwithD_0.m")
