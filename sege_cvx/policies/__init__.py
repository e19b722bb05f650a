"""Policies for safe linear bandits, each acting on a batch of runs (a single run is a batch of one).

Every policy, built-in or a user's, is a :class:`Policy`, and is named through one registry
(:mod:`.registry`): SEGE, CLUCB, ROFUL, GNOP, SafeTS and Safe-LUCB register there like any user's policy.
"""

from .base import Policy
from .clucb import CLUCB
from .gnop import GNOP
from .registry import grid_parameters, policy_class, register_policy, registered_policies
from .roful import ROFUL
from .safe_lucb import SafeLUCB
from .safe_ts import SafeTS
from .sege import SEGE, PaperRisk, paper_risk, rho_bar

register_policy("SEGE", SEGE, color="tab:blue")
register_policy("CLUCB", CLUCB, color="tab:green")
register_policy("ROFUL", ROFUL, color="tab:purple")
register_policy("GNOP", GNOP, color="tab:orange")
register_policy("SafeTS", SafeTS, color="tab:brown")
register_policy("Safe-LUCB", SafeLUCB, color="tab:pink")

__all__ = ["CLUCB", "GNOP", "ROFUL", "SafeLUCB", "SafeTS", "PaperRisk", "Policy", "SEGE",
           "grid_parameters", "paper_risk", "policy_class", "register_policy",
           "registered_policies", "rho_bar"]
