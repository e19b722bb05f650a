"""A safe linear bandit problem: the arm set, ``theta*``, the baseline and the algorithms' constants.

:class:`BanditProblem` is what every layer above the policies builds its runs from: the paper's
study (:mod:`.paper`), the built-in examples (:mod:`.examples`), a sweep's shards
(:mod:`.sweeps.shards`) and the command line.  :func:`paper_problem` is the paper's Section 6 instance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .._fingerprint import fingerprint
from .._validation import as_scalar, as_vector, scaled_norm
from ..arm_sets import ArmSet, Ball
from ..policies import Policy
from ..policies.registry import grid_parameters, policy_class, safety_model_problem
from ..safety import KnownConstraint, LinearConstraint
from ..simulation.engine import LinearBandit


@dataclass(frozen=True)
class BanditProblem:
    """A safe linear bandit instance and the algorithms' constants.

    The baseline reward is, as in the paper's study, the baseline arm's true expected reward
    ``b0 = <x0, theta*>``, unless a smaller known lower bound ``b0`` is given (the paper's
    Assumption 3 asks only ``<x0, theta*> >= b0``); the threshold is
    ``b = threshold_fraction * b0``.

    With ``constraint`` (a :class:`~sege_cvx.LinearConstraint`) the problem is of the other
    safety model: every stage must keep ``<x_t, gamma*> <= limit``, the baseline arm is the
    known safe arm (its constraint value known to the learner, as ``b0`` is in the stagewise
    model), regret is against the best arm meeting the constraint, and ``threshold_fraction`` and
    ``b0`` play no part.  Only policies that declare its model in their
    :attr:`~sege_cvx.Policy.safety_models` run on it; others are refused in one line.

    The paper's assumptions are checked when the problem is made: ``||theta*|| <= S``
    (Assumption 1, on which every confidence set and SEGE's safety rest) and
    ``<x0, theta*> >= b0`` (Assumption 3).  A problem that breaks one is refused with a
    ``ValueError`` naming both numbers, unless ``misspecified=True`` asks for it: a
    misspecification study, whose results say so (a sweep's spec must then say
    ``misspecified = true`` for the problem too).

    Parameters
    ----------
    arm_set : ArmSet
    theta_star : sequence of float
        The unknown parameter (stored as a tuple of floats).
    baseline_arm : sequence of float
        The known safe arm ``x0`` (stored as a tuple of floats).
    threshold_fraction : float
    S, noise_sd, c, lam, delta_bar : float
        ``||theta*|| <= S``, noise sd, SEGE's ``c`` and ``lambda``, and the overall risk
        ``delta_bar`` (SEGE's ``delta_t = 6 delta_bar / (pi^2 t^2)``; CLUCB's ``delta``).
    clucb_arms : int, optional
        CLUCB's number of discrete arms (default: the smallest meeting a 3e-3 error).
    name, description : str
    b0 : float, optional
        The learner's known lower bound on the baseline arm's reward (default: its true
        reward ``<x0, theta*>``).
    misspecified : bool
        Allow a problem that breaks the paper's assumptions (see above).
    constraint : LinearConstraint, optional
        The unknown linear constraint (default: none, the stagewise model); its safe arm, the
        baseline arm, must be strictly safe, and ``||gamma*|| <= S`` (unless ``misspecified``).

    Examples
    --------
    >>> from sege_cvx import Ball
    >>> BanditProblem(Ball((1.0, 1.0), 1.0), theta_star=(3.0, 4.0),
    ...               baseline_arm=(1.2, 1.9))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: ||theta*|| = 5 exceeds S = 1 (the paper's Assumption 1); pass misspecified=True...
    >>> problem = BanditProblem(Ball((1.0, 1.0), 1.0), theta_star=(3.0, 4.0),
    ...                         baseline_arm=(1.2, 1.9), misspecified=True)
    >>> problem.assumption_violations()
    ["||theta*|| = 5 exceeds S = 1 (the paper's Assumption 1)"]
    """

    arm_set: ArmSet
    theta_star: tuple[float, ...]
    baseline_arm: tuple[float, ...]
    threshold_fraction: float = 0.8
    S: float = 1.0
    noise_sd: float = 1.0
    c: float = 0.5
    lam: float = 0.1
    delta_bar: float = 0.1
    clucb_arms: int | None = None
    name: str = ""
    description: str = ""
    b0: float | None = None
    misspecified: bool = False
    constraint: LinearConstraint | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.arm_set, ArmSet):
            raise TypeError(f"arm_set must be a sege_cvx arm set, got {type(self.arm_set).__name__}")
        d = self.arm_set.dim
        for name in ("theta_star", "baseline_arm"):
            vector = as_vector(name, getattr(self, name), d)
            object.__setattr__(self, name, tuple(float(v) for v in vector))
        object.__setattr__(self, "S", as_scalar("S", self.S, low=0.0, low_open=True))
        object.__setattr__(self, "noise_sd", as_scalar("noise_sd", self.noise_sd, low=0.0))
        object.__setattr__(self, "threshold_fraction",
                           as_scalar("threshold_fraction", self.threshold_fraction))
        if self.b0 is not None:
            object.__setattr__(self, "b0", as_scalar("b0", self.b0))
        if not isinstance(self.misspecified, bool | np.bool_):
            raise TypeError(f"misspecified must be True or False, got {self.misspecified!r}")
        object.__setattr__(self, "misspecified", bool(self.misspecified))
        if self.constraint is not None:
            if not isinstance(self.constraint, LinearConstraint):
                raise TypeError(f"constraint must be a sc.LinearConstraint, got "
                                f"{type(self.constraint).__name__}")
            if self.constraint.dim != d:
                raise ValueError(f"the constraint has dimension {self.constraint.dim} but the arm "
                                 f"set {d}")
            if self.b0 is not None:
                raise ValueError("b0 is the stagewise model's (a lower bound on the baseline "
                                 "arm's reward); a problem with a linear constraint takes none")
            if not self.arm_set.contains(np.array(self.baseline_arm), tol=0.0):
                raise ValueError(f"the safe arm {list(self.baseline_arm)} is not in "
                                 f"{self.arm_set!r} exactly (contains(x, tol=0))")
            self.known_constraint()  # the safe arm strictly safe: one line if not
        broken = self.assumption_violations()
        if broken and not self.misspecified:
            raise ValueError(f"{'; '.join(broken)}; pass misspecified=True to study a "
                             "misspecified problem")

    @property
    def baseline_reward(self) -> float | None:
        """``b0``: the given bound, or the baseline arm's true reward ``<x0, theta*>``; None
        under a linear constraint (no reward floor)."""
        if self.constraint is not None:
            return None
        if self.b0 is not None:
            return self.b0
        # Summed left to right in Python floats, not by np.dot: BLAS kernels (which one a CPU
        # gets) round differently, and b0 must be the same bits on every machine of a sweep.
        return float(sum(x * t for x, t in zip(self.baseline_arm, self.theta_star, strict=True)))

    @property
    def threshold(self) -> float | None:
        """``b = threshold_fraction * b0``; None under a linear constraint."""
        if self.constraint is not None:
            return None
        return self.threshold_fraction * self.baseline_reward

    def assumption_violations(self) -> list[str]:
        """The paper's assumptions this problem breaks, one sentence each (empty if none).

        ``||theta*|| <= S`` and ``<x0, theta*> >= b0``, each up to the rounding of computing
        its left side (a few ulps), so that a parameter on the sphere ``||theta|| = S`` passes.
        """
        theta, x0 = np.array(self.theta_star), np.array(self.baseline_arm)
        eps, d = np.finfo(np.float64).eps, len(theta)
        broken = []
        norm = float(scaled_norm(theta))
        if norm > self.S * (1 + 2 * (d + 1) * eps):
            broken.append(f"||theta*|| = {norm:.6g} exceeds S = {self.S:.6g} (the paper's "
                          "Assumption 1)")
        if self.constraint is not None:
            broken.extend(self.constraint.violations(self.S))
        if self.b0 is not None and self.constraint is None:
            reward = math.fsum(x0 * theta)
            if reward < self.b0 - 2 * (d + 1) * eps * math.fsum(np.abs(x0 * theta)):
                broken.append(f"the baseline arm's reward <x0, theta*> = {reward:.6g} is below "
                              f"b0 = {self.b0:.6g} (the paper's Assumption 3)")
        return broken

    @property
    def safety_model(self) -> str:
        """``"stagewise"`` (a reward floor), ``"linear_constraint"`` (``gamma*`` with its own
        feedback) or ``"linear_constraint_on_theta"`` (``B`` known): the keys of
        :data:`~sege_cvx.policies.base.SAFETY_MODELS`."""
        if self.constraint is None:
            return "stagewise"
        return "linear_constraint" if self.constraint.B is None else "linear_constraint_on_theta"

    def known_constraint(self) -> KnownConstraint | None:
        """What a policy is told of the constraint (:meth:`LinearConstraint.known
        <sege_cvx.LinearConstraint.known>` at the baseline arm), or None (stagewise model)."""
        if self.constraint is None:
            return None
        return self.constraint.known(self.baseline_arm, self.theta_star)

    def bandit(self, noise_seeds: list[np.random.SeedSequence]) -> LinearBandit:
        """The environment of this problem, one noise stream per seed: ``theta*``, the noise and
        the constraint (:class:`~sege_cvx.LinearBandit`)."""
        return LinearBandit(self.theta_star, self.noise_sd, noise_seeds, constraint=self.constraint)

    @cached_property
    def optimal_reward(self) -> float:
        """``max <x, theta*>`` over the arm set, within the constraint if there is one."""
        theta = np.asarray(self.theta_star)
        if self.constraint is None:
            return float(self.arm_set.support(theta))
        return float(self.arm_set.constrained_support(theta, self.constraint.vector(theta),
                                                      self.constraint.limit))

    @cached_property
    def fingerprint(self) -> str:
        """SHA-256 of everything a policy reads of this problem: the arm set's data
        (:meth:`~sege_cvx.arm_sets.ArmSet.fingerprint_data`), ``theta*``, the baseline arm and
        reward, the threshold, ``S``, the noise and the algorithms' constants, each to the last
        bit.  A sweep refuses to mix runs of problems whose fingerprints differ."""
        return fingerprint({
            "arm_set": {"class": type(self.arm_set).__name__, **self.arm_set.fingerprint_data()},
            "theta_star": self.theta_star, "baseline_arm": self.baseline_arm,
            "baseline_reward": self.baseline_reward, "threshold": self.threshold,
            "threshold_fraction": self.threshold_fraction, "S": self.S,
            "noise_sd": self.noise_sd, "c": self.c, "lam": self.lam, "delta_bar": self.delta_bar,
            "clucb_arms": self.clucb_arms, "misspecified": self.misspecified,
            # Only when given: a stagewise problem's fingerprint is what it always was.
            **({} if self.constraint is None
               else {"constraint": self.constraint.fingerprint_data()})})

    def policy_defaults(self) -> dict:
        """The constants this problem gives a policy, by constructor parameter name: ``lam``;
        SEGE's ``c`` and ``delta_bar``; ``delta`` (``delta_bar``: Corollary 1's overall risk
        ``sum_t delta_t``); ``n_arms`` and ``n_directions`` (``clucb_arms``, so that CLUCB and
        ROFUL use the same boundary points).  :meth:`policy` passes each to a constructor that
        has a parameter of that name (``None``: the constructor's own default).  Under a linear
        constraint SEGE's ``c`` is left out: there ``c`` is the constraint's limit, which a
        policy reads from its ``constraint``."""
        defaults = {"lam": self.lam, "c": self.c, "delta_bar": self.delta_bar,
                    "delta": self.delta_bar, "n_arms": self.clucb_arms,
                    "n_directions": self.clucb_arms}
        if self.constraint is not None:
            del defaults["c"]
        return defaults

    def policy(self, algorithm, n_runs: int = 1, seed=None, **settings) -> Policy:
        """The policy ``algorithm`` on this problem, over ``n_runs`` runs seeded by ``seed``.

        Parameters
        ----------
        algorithm : str or type
            A registered name (:func:`sege_cvx.registered_policies`), an import path
            ``"module:Class"``, or a :class:`~sege_cvx.Policy` subclass.
        n_runs : int
        seed : int, SeedSequence, sequence of SeedSequence, or None
        **settings
            Values of the policy's grid parameters
            (:func:`~sege_cvx.policies.registry.grid_parameters`), overriding the problem's
            (:meth:`policy_defaults`) and the constructor's defaults.

        Examples
        --------
        >>> problem = paper_problem()
        >>> problem.policy("SEGE", 4, seed=0, c=0.25).c
        0.25
        >>> problem.policy("CLUCB", 1, n_arms=20).arms.shape
        (20, 2)
        >>> problem.policy("SEGE", 1, step=2)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        TypeError: SEGE has no parameter 'step' (its grid parameters: lam, c, rho, L, ...)
        """
        cls = algorithm if isinstance(algorithm, type) else policy_class(algorithm)
        if not issubclass(cls, Policy):
            raise TypeError(f"algorithm must name a subclass of sege_cvx.Policy, got {cls!r}")
        accepted = grid_parameters(cls)
        for key in settings:
            if key not in accepted:
                raise TypeError(f"{cls.__name__} has no parameter {key!r} (its grid parameters: "
                                f"{', '.join(accepted)})")
        params = {key: value for key, value in self.policy_defaults().items()
                  if key in accepted and value is not None}
        params.update(settings)
        if (wrong := safety_model_problem(cls, self.safety_model)) is not None:
            raise TypeError(f"{wrong} (problem {self.name or '(unnamed)'})")
        if self.constraint is None:
            return cls(self.arm_set, self.baseline_arm, self.baseline_reward, self.threshold,
                       S=self.S, noise_sd=self.noise_sd, n_runs=n_runs, seed=seed, **params)
        return cls(self.arm_set, self.baseline_arm, S=self.S, noise_sd=self.noise_sd,
                   n_runs=n_runs, seed=seed, constraint=self.known_constraint(), **params)

    def describe(self) -> dict:
        """JSON-ready description (``summary.json``'s ``setup``)."""
        return {"name": self.name, "description": self.description,
                "arm_set": repr(self.arm_set), "theta_star": list(self.theta_star),
                "baseline_arm": list(self.baseline_arm), "baseline_reward": self.baseline_reward,
                "threshold": self.threshold, "S": self.S, "noise_sd": self.noise_sd, "c": self.c,
                "lam": self.lam, "delta_bar": self.delta_bar,
                "misspecified": self.misspecified,
                "assumption_violations": self.assumption_violations(),
                **({} if self.constraint is None
                   else {"constraint": self.constraint.describe()})}


def paper_problem(**overrides) -> BanditProblem:
    """Section 6's model and algorithm parameters, verbatim (keyword overrides allowed).

    Disk of radius 1 centred at (1, 1); ``theta* = (0.6, 0.8)``, ``S = 1``; baseline arm
    ``x0 = (1.2, 1.9)`` with ``b0 = <x0, theta*> = 2.24``; ``b = 0.8 b0``; N(0, 1) noise;
    ``c = 0.5``, ``lambda = 0.1``, ``rho = rho_bar = 0.224``, ``delta_t = 6 (0.1) / (pi^2 t^2)``.
    """
    params = dict(arm_set=Ball((1.0, 1.0), 1.0), theta_star=(0.6, 0.8), baseline_arm=(1.2, 1.9),
                  threshold_fraction=0.8, S=1.0, noise_sd=1.0, c=0.5, lam=0.1, delta_bar=0.1,
                  name="paper", description="Khezeli & Bitar (2020), Section 6")
    params.update(overrides)
    return BanditProblem(**params)
