"""GNOP: generalized naive optimism under an unknown linear constraint, as its authors' code
defines it (Hutchinson, Turan and Alizadeh, AISTATS 2024; :mod:`.directional` has the rule)."""

from __future__ import annotations

from .directional import GNOP_RULE, DirectionalPolicy


class GNOP(DirectionalPolicy):
    r"""GNOP on ``n_runs`` runs at once: optimism over rays, each scaled to the largest step whose
    pessimistic constraint value stays within the limit, with the bonus inflated by
    ``kappa = 1 + 2 S / c`` (:mod:`sege_cvx.policies.directional`).

    **Why it is safe.**  On the event of the confidence set of ``gamma*`` (probability
    ``1 - delta / 2``), ``<x, gamma*> <= <x, gamma_hat> + beta ||x||_{V^{-1}}``, and the arm is
    played only if that bound is at most ``c`` (certified before it is played; the safe arm,
    counted in ``solver_fallbacks``, otherwise).

    A policy of the linear-constraint model (a :class:`~sege_cvx.KnownConstraint` with its own
    feedback), from the origin; its state is :class:`~sege_cvx.policies.directional.DirectionalPolicy`'s.

    Parameters
    ----------
    setting : SafeSetting
        A :class:`~sege_cvx.StarSet` (compiled stages) or a convex set holding the origin, the
        origin as safe arm, ``S`` bounding ``||theta*||`` and ``||gamma*||``.
    lam : float, default 1.0
    delta : float, default 0.01
        Overall risk, split between the two confidence sets (the authors' ``delta / 2``).
    radius : {"theorem1", "self_normalized"}, default "theorem1"
        The authors' ``beta_t`` (:mod:`sege_cvx.confidence.radius`) or the self-normalized bound.
    n_directions : int, optional
        Rays on a convex set (default: CLUCB's count, at least 64); a star set has its own.
    refine : bool, default True
        On a box, polytope, ball or ellipsoid: the fan's best ray refined toward the rule's
        continuous optimum (:func:`~sege_cvx.policies.directional.refine_update`).
    n_runs : int, default 1
    seed : optional
        GNOP draws nothing; accepted (and validated) as every policy's.

    Examples
    --------
    >>> import sege_cvx as sc
    >>> star = sc.StarSet([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]], radius=1.0)
    >>> con = sc.LinearConstraint(0.5, gamma_star=[0.8, 0.1], noise_sd=0.1)
    >>> setting = sc.SafeSetting(star, [0.0, 0.0], S=1.0, noise_sd=0.1,
    ...                          safety=con.known([0.0, 0.0], theta_star=[0.6, 0.3]))
    >>> policy = sc.GNOP(setting, n_runs=3)
    >>> bandit = sc.LinearBandit([0.6, 0.3], 0.1, sc.run_seeds(0, 3)[1], constraint=con)
    >>> result = sc.simulate(policy, bandit, 500)
    >>> int(result.stats.total_violations.sum()), bool(star.contains(policy.select()).all())
    (0, True)
    """

    rule = GNOP_RULE


__all__ = ["GNOP"]
