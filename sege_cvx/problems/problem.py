"""A safe linear bandit problem: what the learner is told (its setting) and the truth.

:class:`BanditProblem` is what every layer above the policies builds its runs from: the paper's
study (:mod:`sege_cvx.experiments.paper`), the built-in examples (:mod:`.examples`), a sweep's
shards (:mod:`sege_cvx.experiments.sweeps.shards`) and the command line.
:func:`paper_problem` is the paper's Section 6 instance.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .._fingerprint import fingerprint
from .._validation import as_finite_array, as_scalar, as_vector
from ..arm_sets import ArmSet, Ball
from ..policies import Policy
from ..policies.registry import grid_parameters, policy_class
from ..safety import KnownConstraint, LinearConstraint, RewardFloor
from ..setting import SafeSetting
from ..simulation.engine import LinearBandit

__all__ = ["BanditProblem", "paper_problem"]


@dataclass(frozen=True, eq=False)
class BanditProblem:
    """A safe linear bandit instance: the :class:`~sege_cvx.SafeSetting` a learner is told and
    the truth, ``theta*`` and (under the linear-constraint model) the
    :class:`~sege_cvx.LinearConstraint`; :meth:`bandit` makes its environment and :meth:`policy`
    a policy told its setting.

    The truth is checked against the setting when the problem is made: the safety model agrees
    (a reward floor without a constraint; under a constraint, the setting's
    :class:`~sege_cvx.KnownConstraint` is what the truth tells of it at the safe arm), and the
    setting's assumptions hold (:meth:`SafeSetting.assumption_violations
    <sege_cvx.SafeSetting.assumption_violations>`: ``||theta*|| <= S``, ``||gamma*|| <= S``,
    ``<x0, theta*> >= b0``).  A problem that breaks an assumption is refused with a
    ``ValueError`` naming both numbers, unless ``misspecified=True`` asks for it: a
    misspecification study, whose results say so (a sweep's spec must then say
    ``misspecified = true`` for the problem too).

    :meth:`from_truth` builds the setting from the truth as the paper's study does.

    Parameters
    ----------
    setting : SafeSetting
    theta_star : sequence of float
        The unknown parameter (stored as a tuple of floats).
    constraint : LinearConstraint, optional
        The unknown linear constraint, under the linear-constraint model (the setting's safety
        a :class:`~sege_cvx.KnownConstraint`).
    name, description : str
    misspecified : bool
        Allow a problem that breaks the setting's assumptions (see above).
    replayed_noise : array_like, shape (T, width), optional
        Standard normal draws that every run of :meth:`bandit` replays instead of drawing its
        own from its seed (``width`` 2 under a constraint with feedback of its own: the reward's,
        then the constraint's; else 1): another code's noise, to compare runs draw for draw (the
        ROFUL paper's trials, :mod:`sege_cvx.experiments.roful2024`).  Part of the problem's
        fingerprint; a run may play at most ``T`` stages.

    Examples
    --------
    >>> import sege_cvx as sc
    >>> disk = sc.Ball((1.0, 1.0), 1.0)
    >>> sc.BanditProblem.from_truth(disk, theta_star=(3.0, 4.0),
    ...                             safe_arm=(1.2, 1.9))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: ||theta*|| = 5 exceeds S = 1 (the paper's Assumption 1); pass misspecified=True...
    >>> problem = sc.BanditProblem.from_truth(disk, theta_star=(3.0, 4.0), safe_arm=(1.2, 1.9),
    ...                                       misspecified=True)
    >>> problem.assumption_violations()
    ["||theta*|| = 5 exceeds S = 1 (the paper's Assumption 1)"]
    """

    setting: SafeSetting
    theta_star: tuple[float, ...]
    constraint: LinearConstraint | None = None
    name: str = ""
    description: str = ""
    misspecified: bool = False
    replayed_noise: np.ndarray | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.setting, SafeSetting):
            raise TypeError(f"setting must be a sc.SafeSetting, got {type(self.setting).__name__}")
        d = self.setting.dim
        theta = as_vector("theta_star", self.theta_star, d)
        object.__setattr__(self, "theta_star", tuple(float(v) for v in theta))
        if not isinstance(self.misspecified, bool | np.bool_):
            raise TypeError(f"misspecified must be True or False, got {self.misspecified!r}")
        object.__setattr__(self, "misspecified", bool(self.misspecified))
        safety = self.setting.safety
        if self.constraint is None:
            if not isinstance(safety, RewardFloor):
                raise ValueError("the setting is told a linear constraint but the problem has "
                                 "none: give its constraint=sc.LinearConstraint(...)")
        else:
            if not isinstance(self.constraint, LinearConstraint):
                raise TypeError(f"constraint must be a sc.LinearConstraint, got "
                                f"{type(self.constraint).__name__}")
            if self.constraint.dim != d:
                raise ValueError(f"the constraint has dimension {self.constraint.dim} but the arm "
                                 f"set {d}")
            if not isinstance(safety, KnownConstraint):
                raise ValueError("the problem has a linear constraint but its setting is told a "
                                 "reward floor: tell it constraint.known(safe_arm, theta_star)")
            told = self.constraint.known(self.setting.safe_arm, theta)
            if not _same_constraint(safety, told):
                raise ValueError(f"the setting's constraint is not the truth's: limit "
                                 f"{safety.limit!r}, safe arm's value {safety.safe_value!r}, "
                                 f"noise sd {safety.noise_sd!r} against {told.limit!r}, "
                                 f"{told.safe_value!r}, {told.noise_sd!r} (or another B)")
        if self.replayed_noise is not None:
            width = 2 if self.constraint is not None and self.constraint.gamma_star is not None else 1
            noise = as_finite_array("replayed_noise", self.replayed_noise)
            if noise.ndim != 2 or noise.shape[0] < 1 or noise.shape[1] != width:
                raise ValueError(f"replayed_noise must have shape (T, {width}): T standard normal "
                                 f"draws of {width} number(s) a stage, got shape {noise.shape}")
            noise = noise.copy()
            noise.flags.writeable = False
            object.__setattr__(self, "replayed_noise", noise)
        broken = self.assumption_violations()
        if broken and not self.misspecified:
            raise ValueError(f"{'; '.join(broken)}; pass misspecified=True to study a "
                             "misspecified problem")

    @classmethod
    def from_truth(cls, arm_set: ArmSet, theta_star, safe_arm, *, S: float = 1.0,
                   noise_sd: float = 1.0, threshold_fraction: float = 0.8,
                   b0: float | None = None, constraint: LinearConstraint | None = None,
                   name: str = "", description: str = "", misspecified: bool = False,
                   replayed_noise: np.ndarray | None = None) -> BanditProblem:
        """A problem whose setting is made from the truth, as the paper's study makes it.

        Under the stagewise floor the baseline reward is the safe arm's true expected reward
        ``b0 = <x0, theta*>``, unless a smaller known lower bound ``b0`` is given (the paper's
        Assumption 3 asks only ``<x0, theta*> >= b0``), and the threshold is
        ``b = threshold_fraction * b0``.  Under a ``constraint`` the setting is told
        :meth:`constraint.known(safe_arm, theta_star) <sege_cvx.LinearConstraint.known>` (the
        safe arm's constraint value, as ``b0`` is in the stagewise model), and
        ``threshold_fraction`` and ``b0`` play no part.

        Parameters
        ----------
        arm_set : ArmSet
        theta_star, safe_arm : sequence of float
        S, noise_sd : float
        threshold_fraction : float, default 0.8
            ``b / b0``: the threshold as a fraction of the baseline reward.
        b0 : float, optional
            The learner's known lower bound on the safe arm's reward (default: its true reward).
        constraint : LinearConstraint, optional
        name, description : str
        misspecified : bool
        replayed_noise : array_like, shape (T, width), optional
            As for the class.

        Returns
        -------
        BanditProblem
        """
        if not isinstance(arm_set, ArmSet):
            raise TypeError(f"arm_set must be a sege_cvx arm set, got {type(arm_set).__name__}")
        d = arm_set.dim
        theta = as_vector("theta_star", theta_star, d)
        x0 = as_vector("safe_arm", safe_arm, d)
        if constraint is None:
            safety = _floor(x0, theta, threshold_fraction, b0)
        else:
            if b0 is not None:
                raise ValueError("b0 is the stagewise model's (a lower bound on the baseline "
                                 "arm's reward); a problem with a linear constraint takes none")
            if not isinstance(constraint, LinearConstraint):
                raise TypeError(f"constraint must be a sc.LinearConstraint, got "
                                f"{type(constraint).__name__}")
            if not arm_set.contains(x0, tol=0.0):
                raise ValueError(f"the safe arm {x0.tolist()} is not in {arm_set!r} exactly "
                                 "(contains(x, tol=0))")
            safety = constraint.known(x0, theta)
        setting = SafeSetting(arm_set, x0, S=S, noise_sd=noise_sd, safety=safety)
        return cls(setting, tuple(theta), constraint, name, description, misspecified,
                   replayed_noise)

    @property
    def arm_set(self) -> ArmSet:
        """The setting's arm set."""
        return self.setting.arm_set

    @property
    def safety_model(self) -> str:
        """The setting's safety model (:data:`sege_cvx.safety.SAFETY_MODELS`)."""
        return self.setting.safety_model

    @property
    def gamma_star(self) -> np.ndarray | None:
        """The constraint's true vector (``B^T theta*`` in ``B``'s model), or None."""
        return None if self.constraint is None else self.constraint.vector(self.theta_star)

    def assumption_violations(self) -> list[str]:
        """The setting's assumptions the truth breaks, one sentence each (empty if none):
        :meth:`SafeSetting.assumption_violations <sege_cvx.SafeSetting.assumption_violations>`."""
        return self.setting.assumption_violations(np.array(self.theta_star), self.gamma_star)

    def bandit(self, noise_seeds: list[np.random.SeedSequence]) -> LinearBandit:
        """The environment of this problem, one noise stream per seed (or, for every run, the
        problem's ``replayed_noise``): ``theta*``, the noise and the safety criterion that
        scores violations, the floor's threshold or the constraint
        (:class:`~sege_cvx.LinearBandit`)."""
        safety = self.setting.safety
        threshold = safety.threshold if isinstance(safety, RewardFloor) else None
        if self.replayed_noise is not None:  # every run the same draws
            draws = np.broadcast_to(self.replayed_noise, (len(noise_seeds),
                                                          *self.replayed_noise.shape))
            return LinearBandit(self.theta_star, self.setting.noise_sd, draws=draws,
                                threshold=threshold, constraint=self.constraint)
        return LinearBandit(self.theta_star, self.setting.noise_sd, noise_seeds,
                            threshold=threshold, constraint=self.constraint)

    @cached_property
    def optimal_reward(self) -> float:
        """``max <x, theta*>`` over the arm set, within the constraint if there is one."""
        theta = np.asarray(self.theta_star)
        if self.constraint is None:
            return float(self.arm_set.support(theta))
        return float(self.arm_set.constrained_support(theta, self.gamma_star,
                                                      self.constraint.limit))

    @cached_property
    def fingerprint(self) -> str:
        """SHA-256 of everything a run reads of this problem: the setting (the arm set's data,
        :meth:`~sege_cvx.arm_sets.ArmSet.fingerprint_data`; the safe arm as certified, ``S``,
        the noise, the safety model's numbers) and the truth, each to the last bit.  A sweep
        refuses to mix runs of problems whose fingerprints differ."""
        setting, safety = self.setting, self.setting.safety
        data = {
            "arm_set": {"class": type(self.arm_set).__name__, **self.arm_set.fingerprint_data()},
            "safe_arm": tuple(float(v) for v in setting.safe_arm), "S": setting.S,
            "noise_sd": setting.noise_sd, "safety": _safety_data(safety),
            "theta_star": self.theta_star, "misspecified": self.misspecified,
            "constraint": None if self.constraint is None else self.constraint.fingerprint_data()}
        if self.replayed_noise is not None:
            data["replayed_noise"] = hashlib.sha256(self.replayed_noise.tobytes()).hexdigest()
        return fingerprint(data)

    def policy(self, algorithm, n_runs: int = 1, seed=None, **settings) -> Policy:
        """The policy ``algorithm`` told this problem's setting, over ``n_runs`` runs seeded by
        ``seed``.

        Parameters
        ----------
        algorithm : str or type
            A registered name (:func:`sege_cvx.registered_policies`; the class of this
            problem's safety model), an import path ``"module:Class"``, or a
            :class:`~sege_cvx.Policy` subclass.
        n_runs : int
        seed : int, SeedSequence, sequence of SeedSequence, or None
        **settings
            Values of the policy's grid parameters
            (:func:`~sege_cvx.policies.registry.grid_parameters`), overriding the policy's
            defaults for this problem (:meth:`Policy.defaults <sege_cvx.Policy.defaults>`) and
            its constructor's.

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
        if isinstance(algorithm, type):
            cls = algorithm
            if not issubclass(cls, Policy):
                raise TypeError(f"algorithm must name a subclass of sege_cvx.Policy, got {cls!r}")
        else:
            try:
                cls = policy_class(algorithm, self.safety_model)
            except TypeError as exc:
                raise TypeError(f"{exc} (problem {self.name or '(unnamed)'})") from None
        accepted = grid_parameters(cls)
        for key in settings:
            if key not in accepted:
                raise TypeError(f"{cls.__name__} has no parameter {key!r} (its grid parameters: "
                                f"{', '.join(accepted)})")
        params = {**cls.defaults(self), **settings}
        return cls(self.setting, n_runs=n_runs, seed=seed, **params)

    def describe(self) -> dict:
        """JSON-ready description (``summary.json``'s ``setup``)."""
        setting = self.setting
        return {"name": self.name, "description": self.description,
                "arm_set": repr(self.arm_set), "theta_star": list(self.theta_star),
                "safe_arm": setting.safe_arm.tolist(), "S": setting.S,
                "noise_sd": setting.noise_sd, "safety_model": self.safety_model,
                **_safety_data(setting.safety), "misspecified": self.misspecified,
                "assumption_violations": self.assumption_violations(),
                **({} if self.constraint is None
                   else {"constraint": self.constraint.describe()})}


def _floor(x0: np.ndarray, theta: np.ndarray, threshold_fraction, b0) -> RewardFloor:
    """The reward floor the paper's study tells: ``b0`` (given, or ``<x0, theta*>``) and
    ``b = threshold_fraction * b0``, refused naming the fraction if ``b`` is not below
    ``b0``."""
    fraction = as_scalar("threshold_fraction", threshold_fraction)
    if b0 is None:
        # Summed left to right in Python floats, not by np.dot: BLAS kernels (which one a CPU
        # gets) round differently, and b0 must be the same bits on every machine of a sweep.
        b0 = float(sum(x * t for x, t in zip(x0.tolist(), theta.tolist(), strict=True)))
    else:
        b0 = as_scalar("b0", b0)
    b = fraction * b0
    if not b < b0:
        raise ValueError(f"threshold_fraction {fraction!r} gives the threshold b = {b!r}, not below "
                         f"the baseline reward b0 = {b0!r}: use a fraction below 1 (b0 > 0), or "
                         "above 1 (b0 < 0)")
    return RewardFloor(b0, b)


def _safety_data(safety: RewardFloor | KnownConstraint) -> dict:
    """The safety model's numbers, JSON-ready."""
    if isinstance(safety, RewardFloor):
        return {"baseline_reward": safety.baseline_reward, "threshold": safety.threshold}
    return {"limit": safety.limit, "safe_value": safety.safe_value,
            "B": None if safety.B is None else safety.B.tolist(),
            "constraint_noise_sd": safety.noise_sd}


def _same_constraint(known: KnownConstraint, told: KnownConstraint) -> bool:
    same_B = (told.B is None) == (known.B is None) and (
        told.B is None or np.array_equal(told.B, known.B))
    return (known.limit == told.limit and known.safe_value == told.safe_value
            and known.noise_sd == told.noise_sd and same_B)


def paper_problem(**overrides) -> BanditProblem:
    """Section 6's model, verbatim (keyword overrides of :meth:`BanditProblem.from_truth`).

    Disk of radius 1 centred at (1, 1); ``theta* = (0.6, 0.8)``, ``S = 1``; baseline arm
    ``x0 = (1.2, 1.9)`` with ``b0 = <x0, theta*> = 2.24``; ``b = 0.8 b0``; N(0, 1) noise.  The
    paper's algorithm parameters are SEGE's and CLUCB's defaults: ``c = 0.5`` (SEGE's default on
    this disk), ``lambda = 0.1``, ``rho = rho_bar = 0.224``, ``delta_t = 6 (0.1) / (pi^2 t^2)``.
    """
    params = dict(arm_set=Ball((1.0, 1.0), 1.0), theta_star=(0.6, 0.8), safe_arm=(1.2, 1.9),
                  threshold_fraction=0.8, S=1.0, noise_sd=1.0, name="paper",
                  description="Khezeli & Bitar (2020), Section 6")
    params.update(overrides)
    return BanditProblem.from_truth(**params)
