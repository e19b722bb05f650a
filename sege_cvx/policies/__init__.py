"""Policies for safe linear bandits, each acting on a batch of runs (a single run is a batch of one).

Every policy, built-in or a user's, is a :class:`Policy` told a :class:`~sege_cvx.SafeSetting`,
and is named through one registry (:mod:`.registry`): SEGE, CLUCB, ROFUL (one class per safety
model: :class:`StagewiseROFUL` and :class:`ROFUL`), GNOP, SafeTS and Safe-LUCB register there
like any user's policy.
"""

from .base import Policy
from .clucb import CLUCB
from .gnop import GNOP
from .registry import grid_parameters, policy_class, register_policy, registered_policies
from .roful import ROFUL, StagewiseROFUL
from .safe_lucb import SafeLUCB
from .safe_ts import SafeTS
from .sege import SEGE, PaperRisk, default_c, paper_risk, rho_bar

register_policy("SEGE", SEGE, color="tab:blue")
register_policy("CLUCB", CLUCB, color="tab:green")
register_policy("ROFUL", StagewiseROFUL, color="tab:purple")
register_policy("ROFUL", ROFUL)  # its authors' model, under the same name
register_policy("GNOP", GNOP, color="tab:orange")
register_policy("SafeTS", SafeTS, color="tab:brown")
register_policy("Safe-LUCB", SafeLUCB, color="tab:pink")

__all__ = ["CLUCB", "GNOP", "ROFUL", "SafeLUCB", "SafeTS", "PaperRisk", "Policy", "SEGE",
           "StagewiseROFUL", "default_c", "grid_parameters", "paper_risk", "policy_class",
           "register_policy", "registered_policies", "rho_bar"]
