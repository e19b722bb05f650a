r"""What safety means: the two safety models of the field, as what a learner is told of them
(:class:`RewardFloor`, :class:`KnownConstraint`) and as the truth a bandit scores violations
against (:class:`LinearConstraint`; the floor's threshold).

**The stagewise floor** (Khezeli and Bitar, the paper's Definition 1): every stage's expected
reward must keep a floor, ``<x_t, theta*> >= b``, below the known lower bound ``b0`` on a safe
arm's reward (Assumption 3).  A learner is told :class:`RewardFloor` ``(b0, b)``.

**An unknown linear constraint** (most of the safe-linear-bandit literature): every stage must
keep

.. math:: \langle x_t, \gamma^* \rangle \le c,

learned from noisy feedback alongside the reward.  Two variants:

* ``gamma_star`` given (Hutchinson, Turan and Alizadeh, AISTATS 2024: ROFUL and GNOP): the
  constraint's vector is separate from ``theta*`` and each stage also returns its noisy value
  ``<x_t, gamma*> + noise``, with its own noise level;
* ``B`` given (Amani, Alizadeh and Thrampoulidis, NeurIPS 2019: Safe-LUCB): the constraint is
  on ``theta*`` itself, ``<B x_t, theta*> <= c`` with ``B`` known, so ``gamma* = B^T theta*`` and
  the reward's feedback is the constraint's.

The stagewise floor is the special case ``B = -I`` shifted to the baseline arm: with
``x' = x - x0``, ``<x', -theta*> <= b0 - b``.

:class:`LinearConstraint` is the problem's side (it holds the truth); :class:`KnownConstraint`
is what a policy is told of it (never ``gamma*``): the limit, the safe arm's constraint value,
``B`` if it is known, and the constraint's noise level.  Each safety object names its model
(``.model``, a key of :data:`SAFETY_MODELS`), which a policy's
:attr:`~sege_cvx.Policy.safety_models` is checked against.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ._fingerprint import fingerprint
from ._validation import as_finite_array, as_scalar, as_vector, format_value, scaled_norm

__all__ = ["SAFETY_MODELS", "KnownConstraint", "LinearConstraint", "RewardFloor"]

#: The safety models, by the name a policy's ``safety_models`` declares, and what each asks.
SAFETY_MODELS = {
    "stagewise": "the stagewise floor (a reward floor below a known baseline arm)",
    "linear_constraint": "an unknown linear constraint with its own feedback",
    "linear_constraint_on_theta": "a linear constraint <B x, theta*> <= c on the reward's "
                                  "parameter",
}


def square_matrix(B: object) -> np.ndarray:
    """``B`` as a read-only float64 ``(d, d)`` array, finite, ``d >= 1`` (one-line errors)."""
    B = as_finite_array("B", B)
    if B.ndim != 2 or B.shape[0] != B.shape[1] or B.shape[0] == 0:
        raise ValueError(f"B must be a square (d, d) matrix, got shape {B.shape}")
    B = np.array(B, dtype=np.float64, order="C")
    B.flags.writeable = False
    return B


@dataclass(frozen=True)
class RewardFloor:
    """The stagewise floor a learner is told: the safe arm's reward is at least
    ``baseline_reward`` (``b0``, Assumption 3) and every stage's expected reward must be at least
    ``threshold`` (``b < b0``, Definition 1).

    Attributes
    ----------
    baseline_reward : float
        ``b0``, a lower bound on the safe (baseline) arm's expected reward.
    threshold : float
        ``b``, strictly below ``b0``.

    Examples
    --------
    >>> import sege_cvx as sc
    >>> floor = sc.RewardFloor(2.24, 0.8 * 2.24)
    >>> floor.model, round(floor.margin, 3)
    ('stagewise', 0.448)
    >>> sc.RewardFloor(1.0, 1.0)
    Traceback (most recent call last):
    ...
    ValueError: threshold must be < baseline_reward 1.0, got 1.0
    """

    baseline_reward: float
    threshold: float

    def __post_init__(self) -> None:
        b0 = as_scalar("baseline_reward", self.baseline_reward)
        b = as_scalar("threshold", self.threshold)
        if not b < b0:
            raise ValueError(f"threshold must be < baseline_reward {b0!r}, got {b!r}")
        object.__setattr__(self, "baseline_reward", b0)
        object.__setattr__(self, "threshold", b)

    #: The safety model (:data:`SAFETY_MODELS`).
    model = "stagewise"

    @property
    def margin(self) -> float:
        """``b0 - b`` (> 0)."""
        return self.baseline_reward - self.threshold


@dataclass(frozen=True, eq=False)
class KnownConstraint:
    """What a policy knows of a :class:`LinearConstraint` (never ``gamma*``).

    Attributes
    ----------
    limit : float
        ``c`` in ``<x, gamma*> <= c``.
    safe_value : float
        The safe arm's constraint value ``<x0, gamma*>`` (known, as ``b0`` is in the stagewise
        model), strictly below ``limit``.
    B : ndarray of shape (d, d), or None
        The known matrix of ``<B x, theta*> <= c`` (Safe-LUCB's model); None when ``gamma*``
        is a separate vector with its own feedback.
    noise_sd : float or None
        The sd of the constraint's own feedback (None in the ``B`` model: the reward's is used).

    Examples
    --------
    >>> import sege_cvx as sc
    >>> known = sc.LinearConstraint(0.5, gamma_star=[0.3, -0.4], noise_sd=0.1).known(
    ...     [0.0, 0.0], theta_star=[0.6, 0.8])
    >>> known.limit, known.safe_value, known.margin, known.separate_feedback
    (0.5, 0.0, 0.5, True)
    """

    limit: float
    safe_value: float
    B: np.ndarray | None = None
    noise_sd: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "limit", as_scalar("limit", self.limit))
        object.__setattr__(self, "safe_value", as_scalar("safe_value", self.safe_value))
        if not self.safe_value < self.limit:
            raise ValueError(f"the safe arm is not strictly safe: its constraint value "
                             f"{self.safe_value!r} is not below the limit {self.limit!r}")
        if self.B is None:
            if self.noise_sd is None:
                raise ValueError("KnownConstraint needs noise_sd (the constraint's own feedback's "
                                 "sd) unless B is given")
            object.__setattr__(self, "noise_sd", as_scalar("noise_sd", self.noise_sd, low=0.0))
        else:
            if self.noise_sd is not None:
                raise ValueError("KnownConstraint with B takes no noise_sd: the reward's feedback "
                                 "is the constraint's")
            object.__setattr__(self, "B", square_matrix(self.B))

    @property
    def margin(self) -> float:
        """``c - <x0, gamma*>``: how far the safe arm is from the limit (> 0)."""
        return self.limit - self.safe_value

    @property
    def separate_feedback(self) -> bool:
        """Whether each stage returns the constraint's own noisy value (``gamma*`` model)."""
        return self.B is None

    @property
    def model(self) -> str:
        """The safety model (:data:`SAFETY_MODELS`): ``"linear_constraint"`` (``gamma*`` with
        its own feedback) or ``"linear_constraint_on_theta"`` (``B`` known)."""
        return "linear_constraint" if self.B is None else "linear_constraint_on_theta"


@dataclass(frozen=True, eq=False)
class LinearConstraint:
    """An unknown linear constraint ``<x, gamma*> <= limit`` that must hold at every stage.

    Exactly one of ``gamma_star`` (a separate unknown vector, observed each stage as
    ``<x, gamma*> + noise`` with sd ``noise_sd``) or ``B`` (the constraint
    ``<B x, theta*> <= limit`` on the reward's own parameter, ``B`` known) is given.

    Parameters
    ----------
    limit : float
        ``c``.
    gamma_star : array_like, shape (d,), optional
        The unknown constraint vector (its feedback's sd: ``noise_sd``, required).
    B : array_like, shape (d, d), optional
        The known matrix of ``<B x, theta*> <= limit`` (``noise_sd`` must then be left out: the
        reward's feedback is the constraint's).
    noise_sd : float, optional
        The sd of the constraint's feedback (``gamma_star`` only).

    Examples
    --------
    >>> import sege_cvx as sc
    >>> con = sc.LinearConstraint(0.5, gamma_star=[0.3, -0.4], noise_sd=0.1)
    >>> con.vector([0.6, 0.8]), con.dim
    (array([ 0.3, -0.4]), 2)
    >>> sc.LinearConstraint(0.5, gamma_star=[0.3, -0.4])
    Traceback (most recent call last):
    ...
    ValueError: LinearConstraint with gamma_star needs noise_sd, the sd of the constraint's own feedback
    """

    limit: float
    gamma_star: tuple[float, ...] | None = None
    B: np.ndarray | None = field(default=None, repr=False)
    noise_sd: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "limit", as_scalar("limit", self.limit))
        if (self.gamma_star is None) == (self.B is None):
            raise ValueError("LinearConstraint needs exactly one of gamma_star (a separate unknown "
                             "vector with its own feedback) or B (the constraint <B x, theta*> <= "
                             f"limit), got {'both' if self.B is not None else 'neither'}")
        if self.gamma_star is not None:
            gamma = as_vector("gamma_star", self.gamma_star)
            object.__setattr__(self, "gamma_star", tuple(float(v) for v in gamma))
            if self.noise_sd is None:
                raise ValueError("LinearConstraint with gamma_star needs noise_sd, the sd of the "
                                 "constraint's own feedback")
            object.__setattr__(self, "noise_sd",
                               as_scalar("noise_sd", self.noise_sd, low=0.0,
                                         high=np.finfo(float).max / 64))
        else:
            if self.noise_sd is not None:
                raise ValueError("LinearConstraint with B takes no noise_sd: the reward's feedback "
                                 f"is the constraint's (got noise_sd={self.noise_sd!r})")
            object.__setattr__(self, "B", square_matrix(self.B))

    @property
    def dim(self) -> int:
        return len(self.gamma_star) if self.gamma_star is not None else self.B.shape[0]

    def vector(self, theta_star: np.ndarray) -> np.ndarray:
        """``gamma*``: the given vector, or ``B^T theta*`` (each entry summed in index order)."""
        if self.gamma_star is not None:
            return np.array(self.gamma_star)
        theta = as_vector("theta_star", theta_star, self.dim)
        return np.array([math.fsum(self.B[:, j] * theta) for j in range(self.dim)])

    def known(self, safe_arm: np.ndarray, theta_star: np.ndarray) -> KnownConstraint:
        """What a policy is told: the limit, the safe arm's value ``<x0, gamma*>``, ``B`` and the
        feedback's sd.  Raises ``ValueError`` if the safe arm is not strictly safe."""
        x0 = as_vector("safe arm", safe_arm, self.dim)
        theta = as_vector("theta_star", theta_star, self.dim)
        value = math.fsum(x0 * self.vector(theta))
        if not value < self.limit:
            raise ValueError(f"the safe arm {format_value(x0)} is not strictly safe: its "
                             f"constraint value {value:.6g} is not below the limit {self.limit:.6g}")
        return KnownConstraint(self.limit, value, self.B, self.noise_sd)

    def violations(self, S: float) -> list[str]:
        """The model's assumptions it breaks, one sentence each: ``||gamma*|| <= S``."""
        if self.gamma_star is None:
            return []
        norm = float(scaled_norm(np.array(self.gamma_star)))
        d, eps = self.dim, np.finfo(float).eps
        if norm > S * (1 + 2 * (d + 1) * eps):
            return [f"||gamma*|| = {norm:.6g} exceeds S = {S:.6g}"]
        return []

    def fingerprint_data(self) -> dict:
        """Everything of the constraint to the last bit (a problem's fingerprint)."""
        return {"limit": self.limit, "gamma_star": self.gamma_star,
                "B": None if self.B is None else self.B.tolist(), "noise_sd": self.noise_sd}

    def describe(self) -> dict:
        """JSON-ready description."""
        return {"limit": self.limit, "gamma_star": None if self.gamma_star is None
                else list(self.gamma_star), "B": None if self.B is None else self.B.tolist(),
                "noise_sd": self.noise_sd}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LinearConstraint):
            return NotImplemented
        return fingerprint(self.fingerprint_data()) == fingerprint(other.fingerprint_data())

    def __hash__(self) -> int:
        return hash(fingerprint(self.fingerprint_data()))
