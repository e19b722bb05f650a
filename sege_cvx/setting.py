"""What a learner is told of a safe linear bandit problem: :class:`SafeSetting`.

A policy is given one setting, validated and certified here once: the arm set, a safe arm in
it, the bound ``S`` on the unknown parameters' norms (Assumption 1), the noise level
(Assumption 2) and the safety model (:mod:`sege_cvx.safety`): a :class:`~sege_cvx.RewardFloor`
(the stagewise floor) or a :class:`~sege_cvx.KnownConstraint` (an unknown linear constraint).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from ._validation import as_scalar, as_vector, format_value, scaled_norm
from .arm_sets.base import ArmSet
from .arm_sets.finite import FiniteArmSet
from .safety import KnownConstraint, RewardFloor

__all__ = ["MARGIN_ROUNDING", "SafeSetting", "margin_floor"]

#: The smallest safety margin ``b0 - b`` accepted, in units of ``d eps max(S L, |b0|)``: the
#: rounding of an arm's coordinates, of its reward ``<x, theta*>`` and of a pull-in toward the
#: interior (a relative contraction of 1e-15 to 1e-14, :mod:`sege_cvx.arm_sets.kernels.pull_in`)
#: each moves a reward by a few ``eps S L``; a margin below their sum is not one the arithmetic
#: can keep (with ``b = b0 - 4 ulp`` on the paper's disk, SEGE and ROFUL played arms below ``b``).
MARGIN_ROUNDING = 64.0


@dataclass(frozen=True, eq=False)
class SafeSetting:
    """What a learner is told of a safe linear bandit problem, validated and certified once.

    Under a :class:`~sege_cvx.RewardFloor` the safe arm is the paper's baseline arm ``x0``
    (Assumption 3).  One on the boundary may miss exact membership by rounding (up to 1e-9);
    it is then moved exactly into the set (:meth:`ArmSet.pull_inside
    <sege_cvx.ArmSet.pull_inside>`) and its reward bound certified for the arm actually played:
    ``<x0', theta*> >= b0 - S ||x0' - x0||`` by Cauchy-Schwarz and Assumption 1.  That certified
    bound is :attr:`safety` ``.baseline_reward`` from then on, and it must still exceed the
    threshold by a margin that rounding cannot consume (:func:`margin_floor`).  On a set that is
    not convex (a finite list of arms) nothing lies between arms to move it to: it must then be
    one of the arms exactly.  Under a :class:`~sege_cvx.KnownConstraint` the safe arm must lie in
    the set exactly: its constraint value is known for that arm only.

    Parameters
    ----------
    arm_set : ArmSet
        The arms.
    safe_arm : array_like, shape (d,)
        The known safe arm: the baseline arm of the stagewise floor, the safe arm of a
        constraint.
    S : float
        Bound on ``||theta*||`` (Assumption 1; and on ``||gamma*||`` under a constraint).
    noise_sd : float
        Sub-Gaussian noise level of the rewards (Assumption 2).
    safety : RewardFloor or KnownConstraint
        The safety model and what the learner knows of it.

    Attributes
    ----------
    arm_set, S, noise_sd
        As given (validated).
    safe_arm : ndarray, shape (d,)
        The safe arm as certified (read-only): moved into the set if rounding left it outside.
    safety : RewardFloor or KnownConstraint
        As given, with a moved baseline arm's certified reward bound.
    safe_witness : ndarray, shape (witness_dim,)
        The safe arm's witness on a lifted arm set (empty for other sets), for convex
        combinations with it.
    safe_shift : float
        ``||x0' - x0||``: how far the given safe arm was moved into the set (0 if inside).
    dim : int
    safety_model : str
        ``safety.model``: a key of :data:`sege_cvx.safety.SAFETY_MODELS`.

    Examples
    --------
    >>> import sege_cvx as sc
    >>> disk = sc.Ball(center=[1.0, 1.0], radius=1.0)
    >>> setting = sc.SafeSetting(disk, [1.2, 1.9], S=1.0, noise_sd=1.0,
    ...                          safety=sc.RewardFloor(2.24, 0.8 * 2.24))
    >>> setting.dim, setting.safety_model, setting.safe_shift
    (2, 'stagewise', 0.0)
    >>> sc.SafeSetting(disk, [1.2, 1.9], S=1.0, noise_sd=1.0, safety=0.8)
    Traceback (most recent call last):
    ...
    TypeError: safety must be a sc.RewardFloor or a sc.KnownConstraint, got float
    """

    arm_set: ArmSet
    safe_arm: np.ndarray
    S: float
    noise_sd: float
    safety: RewardFloor | KnownConstraint
    safe_witness: np.ndarray = field(init=False, repr=False)
    safe_shift: float = field(init=False, repr=False)

    def __init__(self, arm_set: ArmSet, safe_arm: np.ndarray, *, S: float, noise_sd: float,
                 safety: RewardFloor | KnownConstraint) -> None:
        if not isinstance(arm_set, ArmSet):
            raise TypeError(f"arm_set must be an ArmSet, got {type(arm_set).__name__}")
        if not isinstance(safety, RewardFloor | KnownConstraint):
            raise TypeError(f"safety must be a sc.RewardFloor or a sc.KnownConstraint, got "
                            f"{type(safety).__name__}")
        set_ = object.__setattr__
        set_(self, "arm_set", arm_set)
        set_(self, "S", as_scalar("S", S, low=0.0, low_open=True))
        set_(self, "noise_sd", as_scalar("noise_sd", noise_sd, low=0.0))
        x0 = as_vector("safe_arm", safe_arm, arm_set.dim)
        if isinstance(safety, RewardFloor):
            x0, witness, shift, safety = _certified_floor(arm_set, x0, self.S, safety)
        else:
            witness, shift = _constraint_safe_arm(arm_set, x0, safety)
        x0 = np.array(x0, dtype=np.float64)
        x0.flags.writeable = False
        set_(self, "safe_arm", x0)
        set_(self, "safe_witness", witness)
        set_(self, "safe_shift", shift)
        set_(self, "safety", safety)

    def __setstate__(self, state: dict) -> None:
        # A pickle restores arrays writeable: the safe arm read-only again, so that compiled
        # stages see the same array type in every process (numba compiles one loop per type).
        self.__dict__.update(state)
        self.safe_arm.flags.writeable = False

    @property
    def dim(self) -> int:
        return self.arm_set.dim

    @property
    def safety_model(self) -> str:
        """``safety.model``: ``"stagewise"``, ``"linear_constraint"`` or
        ``"linear_constraint_on_theta"`` (:data:`sege_cvx.safety.SAFETY_MODELS`)."""
        return self.safety.model

    def assumption_violations(self, theta_star: np.ndarray,
                              gamma_star: np.ndarray | None = None) -> list[str]:
        """What of this setting the truth ``theta_star`` (and a constraint's ``gamma_star``)
        breaks, one sentence each (empty if nothing): ``||theta*|| <= S`` (the paper's
        Assumption 1, on which every confidence set rests), ``||gamma*|| <= S`` under a
        constraint with its own vector (in ``B``'s model ``gamma* = B^T theta*`` is bounded
        through ``theta*``), and ``<x0, theta*> >= b0`` under a reward floor (Assumption 3).  Each up to
        the rounding of computing its left side (a few ulps), so that a parameter on the sphere
        ``||theta|| = S`` passes."""
        theta = as_vector("theta_star", theta_star, self.dim)
        eps, d = float(np.finfo(np.float64).eps), self.dim
        broken = []
        own_vector = isinstance(self.safety, KnownConstraint) and self.safety.B is None
        for name, vector in (("theta*", theta), ("gamma*", gamma_star if own_vector else None)):
            if vector is None:
                continue
            norm = float(scaled_norm(np.asarray(vector, dtype=np.float64)))
            if norm > self.S * (1 + 2 * (d + 1) * eps):
                which = " (the paper's Assumption 1)" if name == "theta*" else ""
                broken.append(f"||{name}|| = {norm:.6g} exceeds S = {self.S:.6g}{which}")
        if isinstance(self.safety, RewardFloor):
            terms = self.safe_arm * theta
            reward = math.fsum(terms)
            if reward < self.safety.baseline_reward - 2 * (d + 1) * eps * math.fsum(abs(terms)):
                broken.append(f"the baseline arm's reward <x0, theta*> = {reward:.6g} is below "
                              f"b0 = {self.safety.baseline_reward:.6g} (the paper's "
                              "Assumption 3)")
        return broken

    def __repr__(self) -> str:
        return (f"SafeSetting({self.arm_set!r}, safe_arm={format_value(self.safe_arm)}, "
                f"S={self.S!r}, noise_sd={self.noise_sd!r}, safety={self.safety!r})")


def _certified_floor(arm_set: ArmSet, x0: np.ndarray, S: float, floor: RewardFloor) -> tuple:
    """The baseline arm moved exactly into the set, its witness, the move's length and the
    floor with the moved arm's certified reward bound (the class docstring)."""
    if not arm_set.is_convex and not arm_set.contains(x0, tol=0.0):
        raise ValueError(f"the safe arm {format_value(x0)} must be one of the arms of "
                         f"{arm_set!r} exactly{_nearest_arm(arm_set, x0)}")
    if not arm_set.contains(x0, tol=1e-9):
        raise ValueError(f"the safe arm {format_value(x0)} lies outside the arm set")
    inside, witness, ok = arm_set.pull_inside(x0[None], return_witnesses=True)
    if not ok[0]:
        raise ValueError(f"the safe arm {format_value(x0)} could not be moved exactly into the "
                         "arm set")
    shift = float(np.linalg.norm(inside[0] - x0))
    b0, b = floor.baseline_reward, floor.threshold
    if shift > 0.0:
        # A few ulps more than S * shift, so that rounding cannot overstate the bound.
        loss = S * shift
        b0 = b0 - loss - 4.0 * np.finfo(float).eps * (abs(b0) + loss)
        if not b < b0:
            raise ValueError(f"threshold must be < baseline_reward {float(b0)!r} (the safe arm "
                             f"was moved {shift:.3g} into the set, so its certified reward is "
                             f"b0 - S * {shift:.3g} = {float(b0)!r}), got {b!r}")
        floor = RewardFloor(b0, b)
    least = margin_floor(arm_set, S, b0)
    if not _margin_at_least(b0, b, least):
        largest = b0 - least
        while not _margin_at_least(b0, largest, least):  # the suggestion must itself pass
            largest = np.nextafter(largest, -np.inf)
        raise ValueError(f"threshold {b!r} is {b0 - b:.3g} below baseline_reward {float(b0)!r}, "
                         f"a margin lost to rounding: b0 - b must be at least {least:.3g} "
                         f"(64 d eps max(S L, |b0|), L = {arm_set.norm_bound():.6g} bounding "
                         f"the arms' norm); use threshold <= {float(largest)!r}")
    return inside[0], witness[0], shift, floor


def _constraint_safe_arm(arm_set: ArmSet, x0: np.ndarray, known: KnownConstraint) -> tuple:
    """The safe arm of a constraint checked (in the set exactly; ``B`` of the set's
    dimension): its (empty) witness and move."""
    if not arm_set.contains(x0, tol=0.0):
        raise ValueError(f"the safe arm {format_value(x0)} must lie in {arm_set!r} exactly "
                         "(contains(x, tol=0)): its constraint value is known for that arm "
                         "only")
    if known.B is not None and known.B.shape != (arm_set.dim, arm_set.dim):
        raise ValueError(f"the constraint's B has shape {known.B.shape}, not "
                         f"({arm_set.dim}, {arm_set.dim})")
    return np.empty(0), 0.0


def margin_floor(arm_set: ArmSet, S: float, baseline_reward: float) -> float:
    """The smallest ``b0 - b`` a setting accepts on ``arm_set`` (:data:`MARGIN_ROUNDING`)."""
    scale = max(S * arm_set.norm_bound(), abs(float(baseline_reward)))
    return MARGIN_ROUNDING * arm_set.dim * float(np.finfo(float).eps) * scale


def _margin_at_least(b0: float, b: float, floor: float) -> bool:
    """``b0 - b >= floor`` in exact arithmetic (the float difference can round up)."""
    return Fraction(float(b0)) - Fraction(float(b)) >= Fraction(float(floor))


def _nearest_arm(arm_set: ArmSet, x: np.ndarray) -> str:
    """``"; the nearest is row k [...], max-abs distance ..."`` for a finite set."""
    if not isinstance(arm_set, FiniteArmSet):
        return ""
    k, distance = arm_set.nearest(x)
    return (f"; the nearest is row {k} {format_value(arm_set.arms[k])}, at max-abs distance "
            f"{distance:.3g}")
