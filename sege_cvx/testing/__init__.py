"""The conformance kit for a policy or an arm set of your own (scikit-learn's
``check_estimator`` is the model).

Each check is named and runs alone (:class:`~.checks.Check`): :func:`policy_checks` and
:func:`arm_set_checks` list them, for pytest to parametrize; :func:`check_policy` and
:func:`check_arm_set` run them all (``skip`` names those not to run).  :mod:`.problems` holds
the small problems of each safety model the checks play by default.
"""

from .arm_sets import arm_set_checks, check_arm_set
from .checks import Check
from .policies import check_policy, policy_checks
from .problems import constrained_problem, problem_for, theta_constraint_problem

__all__ = ["Check", "arm_set_checks", "check_arm_set", "check_policy", "constrained_problem",
           "policy_checks", "problem_for", "theta_constraint_problem"]
