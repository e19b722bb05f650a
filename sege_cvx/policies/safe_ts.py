r"""Safe Thompson sampling under an unknown linear constraint: one SOCP a stage.

The rule and its safety argument are this package's (not a published algorithm's code).  Each
stage, for each run:

1. sample ``theta~ = theta_hat + beta L^{-T} eta``, ``eta`` uniform in the unit ball
   (``V = L L^T``): ``theta~`` is uniform in the confidence ellipsoid
   ``||theta - theta_hat||_V <= beta`` (:func:`~sege_cvx.policies.directional.sample_parameter`);
2. play the best arm for ``theta~`` over the *estimated safe set*

   .. math:: \max_x \langle x, \tilde\theta \rangle \quad \text{s.t.} \quad x \in X,\;
             \langle x, \hat\gamma \rangle + \beta \|x\|_{V^{-1}} \le c,

   a second-order cone program (compiled once on Clarabel, :mod:`sege_cvx.conic`; on a
   :class:`~sege_cvx.ConvexArmSet` of second-order cones built with ``compiled=True`` solved in
   the compiled stages by the package's interior-point method and its arm proven in the set
   exactly, :func:`~sege_cvx.arm_sets.cone.arms.safe_set_one`; on a
   :class:`~sege_cvx.StarSet` its exact solution by a scan of the rays, compiled with the
   stages); the safe arm (the origin) if that best value is not positive.

**Why it is safe.**  Whatever ``theta~``, the arm's upper confidence bound on its constraint
value is at most ``c``: on the event of the confidence set of ``gamma*`` (probability
``1 - delta / 2``), ``<x, gamma*> <= <x, gamma_hat> + beta ||x||_{V^{-1}} <= c``.  The
solver's point is certified before it is played: its bound is recomputed, and where rounding
or the solver's tolerance leave it above ``c`` the arm is scaled toward the safe arm (the
bound is positively homogeneous: ``UCB(t x) = t UCB(x)``) to ``(1 - 2^-40) c``; it is then moved
exactly into ``X`` and checked once more.  (The compiled program on a cone set is solved with
its bound ``1e-8`` inside ``c`` instead, as a scaled arm would lose its proof of membership, and
its arm checked at the point played.)  A solver failure, or an arm that still fails, is
replaced by the safe arm and counted in ``SafeTS.solver_fallbacks`` with its reason.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from .._random import SeedLike
from ..arm_sets.base import ArmSet
from ..arm_sets.star import StarSet
from ..confidence.cholesky import inverse_factor_one
from ..conic.errors import SolverFailure
from ..setting import SafeSetting
from .directional import (
    ACTIVE,
    BASELINE,
    FULL_STEP,
    SCALED_STEP,
    SHRINK,
    TS_RULE,
    DirectionalPolicy,
    sample_parameter,
)


class SafeTS(DirectionalPolicy):
    r"""Safe Thompson sampling on ``n_runs`` runs at once (the rule and its safety argument are
    in :mod:`sege_cvx.policies.safe_ts`): the best arm for a parameter sampled in the confidence
    ellipsoid, over the estimated safe set, one SOCP a stage.

    A policy of the linear-constraint model (a :class:`~sege_cvx.KnownConstraint` with its own
    feedback), from the origin.  ``solver_fallbacks`` counts per run the stages whose arm could
    not be solved, certified or moved into the set (the safe arm was played);
    ``fallback_reasons`` says why.

    Parameters
    ----------
    setting : SafeSetting
        A :class:`~sege_cvx.StarSet` (compiled stages) or a convex set holding the origin, the
        origin as safe arm, ``S`` bounding ``||theta*||`` and ``||gamma*||``.
    lam : float, default 1.0
    delta : float, default 0.01
        Overall risk, split between the two confidence sets.
    radius : {"theorem1", "self_normalized"}, default "theorem1"
    n_runs : int, default 1
    seed : int, SeedSequence or list of SeedSequence, optional
        Run ``i``'s samples come from :attr:`rngs` ``[i]`` alone.

    Examples
    --------
    >>> import sege_cvx as sc
    >>> box = sc.Box([-1.0, -1.0], [1.0, 1.0])
    >>> con = sc.LinearConstraint(0.3, gamma_star=[0.7, 0.5], noise_sd=0.1)
    >>> problem = sc.BanditProblem.from_truth(box, theta_star=[0.6, 0.3], safe_arm=[0.0, 0.0],
    ...                                       S=1.0, noise_sd=0.1, constraint=con)
    >>> policy = problem.policy("SafeTS", 2, seed=0)
    >>> result = sc.simulate(policy, problem.bandit(sc.run_seeds(1, 2)[1]), 50)
    >>> int(result.stats.total_violations.sum()), int(policy.solver_fallbacks.sum())
    (0, 0)
    """

    rule = TS_RULE
    #: Codes 0-2 of the shared ray step, named for a sample: its best arm played with the
    #: estimated safe set's bound slack, or on that bound; or the safe arm.
    decision_names: tuple[str | None, ...] = ("sampled", "sampled_on_bound", "baseline")

    def __init__(
        self,
        setting: SafeSetting,
        *,
        lam: float = 1.0,
        delta: float = 0.01,
        radius: str = "theorem1",
        n_runs: int = 1,
        seed: SeedLike = None,
    ) -> None:
        super().__init__(setting, lam=lam, delta=delta, radius=radius, n_runs=n_runs, seed=seed)
        self._reasons: Counter[str] = Counter()
        self._program = (None if self._star or self._compiled
                         else _safe_set_program(setting.arm_set, self.margin))

    def _scans_rays(self, setting: SafeSetting) -> bool:
        """Only a star set's: on a convex set SafeTS solves its program over the estimated safe
        set."""
        return isinstance(setting.arm_set, StarSet)

    def __getstate__(self) -> dict:
        # Clarabel's solvers do not pickle; the program is compiled again on loading, and (it
        # solves each instance from scratch) gives the same arms.
        return {**self.__dict__, "_program": None}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if not (self._star or self._compiled):
            self._program = _safe_set_program(self.setting.arm_set, self.margin)

    @property
    def fallback_reasons(self) -> Counter[str]:
        """Why the safe arm replaced an arm: a solver status, ``"Uncertified"`` or
        ``"NotMember"``."""
        if self._star or self._compiled:
            return super().fallback_reasons
        return self._reasons.copy()

    def summary(self, stats, stages: list[int]) -> dict:
        """The confidence radius."""
        return {"radius": self.radius}

    def select(self) -> np.ndarray:
        """Every run's arm (the module docstring's rule), certified before it is returned."""
        if self._star or self._compiled:  # the compiled scan of the rays, or program
            return super().select()
        n, d = self.n_runs, self.d
        conf, margin, setting = self.confidence, self.margin, self.setting
        beta = self.radii()
        draws = self._draws(1)[:, 0]
        arms = np.zeros((n, d))
        codes = np.full(n, BASELINE, dtype=np.int8)
        inv, e, col, sampled = np.empty((d, d)), np.empty(d), np.empty(d), np.empty(d)
        for i in range(n):
            inverse_factor_one(conf.chol[i], inv, e, col)  # L^{-1}
            sample_parameter(conf.theta_hat[i], inv, beta[i], draws[i], sampled)
            try:
                x = self._program.solve(sampled, self.gamma_hat[i], beta[i] * inv).x
            except SolverFailure as exc:
                self._reasons[exc.status] += 1
                self._fallbacks[i] += 1
                continue
            if not float(sampled @ x) > 0.0:
                continue  # the safe arm is as good for theta~
            ucb = float(x @ self.gamma_hat[i]) + beta[i] * float(np.linalg.norm(inv @ x))
            code = SCALED_STEP if ucb >= (1.0 - ACTIVE) * margin else FULL_STEP
            if ucb > (1.0 - SHRINK) * margin:
                x = x * ((1.0 - SHRINK) * margin / ucb)
            arms[i], codes[i] = x, code
        played = codes != BASELINE
        moved, inside = setting.arm_set.pull_inside_unchecked(arms)
        ok = ~played | (inside & self._certified(moved))
        if not ok.all():
            self._reasons["Uncertified"] += int((~ok).sum())
            self._fallbacks[~ok] += 1
            moved[~ok] = setting.safe_arm
            codes[~ok] = BASELINE
        moved[~played] = setting.safe_arm
        self.last_decision = codes
        return moved


def _safe_set_program(arm_set: ArmSet, margin: float):
    """``max <x, theta~>`` s.t. ``x`` in the set and ``<x, gamma_hat> + ||M x|| <= c`` with
    ``M = beta L^{-1}``, compiled once (:class:`~sege_cvx.conic.compiled.CompiledConicProgram`):
    ``.solve(theta~, gamma_hat, M)``."""
    import cvxpy as cp

    from ..conic.compiled import CompiledConicProgram
    from ..conic.programs import auxiliary_variables

    d = arm_set.dim
    x = cp.Variable(d)
    theta, gamma, M = cp.Parameter(d), cp.Parameter(d), cp.Parameter((d, d))
    cons = [*arm_set.constraints(x), gamma @ x + cp.norm(M @ x, 2) <= margin]
    problem = cp.Problem(cp.Maximize(theta @ x), cons)
    return CompiledConicProgram(problem, x, [theta, gamma, M], None,
                                auxiliary_variables(cons, [x]))


__all__ = ["SafeTS"]
