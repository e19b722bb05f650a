"""GNOP: generalized naive optimism under an unknown linear constraint, as its authors' code
defines it (Hutchinson, Turan and Alizadeh, AISTATS 2024; :mod:`.directional` has the rule)."""

from __future__ import annotations

import numpy as np

from .._random import SeedLike
from ..arm_sets.base import ArmSet
from ..safety import KnownConstraint
from .base import Policy
from .directional import GNOP_RULE, DirectionalMixin, DirectionalPolicy


class GNOP(DirectionalMixin, Policy):
    r"""GNOP on ``n_runs`` runs at once: optimism over rays, each scaled to the largest step whose
    pessimistic constraint value stays within the limit, with the bonus inflated by
    ``kappa = 1 + 2 S / c`` (:mod:`sege_cvx.policies.directional`).

    **Why it is safe.**  On the event of the confidence set of ``gamma*`` (probability
    ``1 - delta / 2``), ``<x, gamma*> <= <x, gamma_hat> + beta ||x||_{V^{-1}}``, and the arm is
    played only if that bound is at most ``c`` (certified before it is played; the safe arm,
    counted in ``solver_fallbacks``, otherwise).

    A policy of the linear-constraint model only: ``constraint`` is required.  Its state, by
    :class:`~sege_cvx.policies.directional.DirectionalMixin`: ``gamma_hat`` (per run),
    ``solver_fallbacks`` (per run, the stages whose arm failed its certificate or exact
    membership: the safe arm was played) and ``fallback_reasons``.

    Parameters
    ----------
    arm_set : ArmSet
        A :class:`~sege_cvx.StarSet` (compiled stages) or a convex set holding the origin.
    baseline_arm : array_like, shape (d,)
        The safe arm: the origin.
    baseline_reward, threshold : None
        The stagewise model's; None here.
    S : float
        ``||theta*|| <= S`` and ``||gamma*|| <= S``.
    noise_sd : float
        The reward's noise level.
    lam : float, default 1.0
    delta : float, default 0.01
        Overall risk, split between the two confidence sets (the authors' ``delta / 2``).
    radius : {"theorem1", "self_normalized"}, default "theorem1"
        The authors' ``beta_t`` (:mod:`sege_cvx.confidence.radius`) or the self-normalized bound.
    n_directions : int, optional
        Rays on a convex set (default: CLUCB's count, at least 64); a star set has its own.
    n_runs : int, default 1
    seed : optional
        GNOP draws nothing; accepted (and validated) as every policy's.
    constraint : KnownConstraint
        What is known of the linear constraint (:meth:`sege_cvx.LinearConstraint.known`).

    Attributes
    ----------
    directions, caps : ndarray
        The rays ``u_k`` and their largest scales.
    confidence : ConfidenceEllipsoid
        ``V`` and ``theta_hat``; ``gamma_hat`` the constraint's estimate, shape ``(n_runs, d)``.

    Examples
    --------
    >>> import numpy as np
    >>> import sege_cvx as sc
    >>> star = sc.StarSet([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]], radius=1.0)
    >>> con = sc.LinearConstraint(0.5, gamma_star=[0.8, 0.1], noise_sd=0.1)
    >>> policy = sc.GNOP(star, [0.0, 0.0], S=1.0, noise_sd=0.1, n_runs=3,
    ...                  constraint=con.known([0.0, 0.0], theta_star=[0.6, 0.3]))
    >>> bandit = sc.LinearBandit([0.6, 0.3], 0.1, sc.run_seeds(0, 3)[1], constraint=con)
    >>> result = sc.simulate(policy, bandit, 500)
    >>> int(result.stats.total_violations.sum()), bool(star.contains(policy.select()).all())
    (0, True)
    """

    decision_names: tuple[str | None, ...] = ("full_step", "scaled_step", "baseline")
    safety_models = ("linear_constraint",)

    def __init__(
        self,
        arm_set: ArmSet,
        baseline_arm: np.ndarray,
        baseline_reward: float | None = None,
        threshold: float | None = None,
        *,
        S: float,
        noise_sd: float,
        lam: float = 1.0,
        delta: float = 0.01,
        radius: str = "theorem1",
        n_directions: int | None = None,
        n_runs: int = 1,
        seed: SeedLike = None,
        constraint: KnownConstraint | None = None,
    ) -> None:
        if constraint is None:
            raise TypeError("GNOP is a policy of the linear-constraint model: give constraint= "
                            "(sc.LinearConstraint(...).known(safe_arm, theta_star), or "
                            "BanditProblem(..., constraint=...).policy('GNOP')); on the stagewise "
                            "model use ROFUL")
        super().__init__(arm_set, baseline_arm, baseline_reward, threshold, S=S,
                         noise_sd=noise_sd, lam=lam, n_runs=n_runs, seed=seed,
                         constraint=constraint)
        self._use(DirectionalPolicy(self, GNOP_RULE, delta, radius, n_directions))
        self.directions, self.caps = self._directional.directions, self._directional.caps

    def summary(self, stats, stages: list[int]) -> dict:
        """The number of rays and the confidence radius."""
        return {"n_directions": int(self.directions.shape[0]), "radius": self.radius}


__all__ = ["GNOP"]
