"""sege_cvx: safe linear stochastic bandits with every arm choice a convex program.

Implements Khezeli & Bitar, "Safe Linear Stochastic Bandits" (AAAI 2020).

The public names load their modules on first use (PEP 562), so that ``import sege_cvx`` (and the
command line's argument checks) stays light.  cvxpy and Clarabel load only when a program is built
(a polytope, a general convex set, LCB arms by ``"solver"``) and matplotlib only for figures: an
ellipsoid or ball with its closed forms, as in the paper's study, never loads them.
"""

from ._lazy import lazy_exports

__version__ = "0.1.0"

#: Public name -> module that defines it.
_EXPORTS = {
    "ArmSet": ".arm_sets", "Ball": ".arm_sets", "Box": ".arm_sets", "ConvexArmSet": ".arm_sets",
    "ConvexHull": ".arm_sets", "CrossCheckError": ".arm_sets", "Ellipsoid": ".arm_sets",
    "Exploration": ".arm_sets.exploration", "FiniteArmSet": ".arm_sets",
    "Polytope": ".arm_sets", "StarSet": ".arm_sets",
    "LinearConstraint": ".safety", "KnownConstraint": ".safety", "RewardFloor": ".safety",
    "SafeSetting": ".setting",
    "ConfidenceEllipsoid": ".confidence", "confidence_radius": ".confidence", "lcb": ".confidence",
    "self_normalized_radius": ".confidence", "confidence": ".confidence",
    "SolverFailure": ".conic", "CLUCB": ".policies", "GNOP": ".policies", "Policy": ".policies",
    "ROFUL": ".policies", "SafeTS": ".policies", "SafeLUCB": ".policies",
    "StagewiseROFUL": ".policies", "policies": ".policies",
    "SEGE": ".policies", "policy_class": ".policies", "register_policy": ".policies",
    "registered_policies": ".policies", "grid_parameters": ".policies",
    "LinearBandit": ".simulation", "run_seeds": ".simulation", "simulate": ".simulation",
    "BanditProblem": ".problems", "paper_problem": ".problems",
    "StudySpec": ".experiments", "run_sweep": ".experiments", "experiments": ".experiments",
    "load_results": ".experiments", "simulation": ".simulation", "stages": ".stages",
    "testing": ".testing",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
