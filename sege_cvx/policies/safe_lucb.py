r"""Safe-LUCB (Amani, Alizadeh and Thrampoulidis, NeurIPS 2019) as its first author's code
defines it (``Codes/CLBwithD_0.m`` of ``sanaeamani/SafeLinearBandits``).

The model: the constraint is on the reward's own parameter, ``<B x, theta*> <= c`` with ``B``
known and invertible (:class:`~sege_cvx.LinearConstraint` with ``B``), the origin safe, the
reward the only feedback.  (Their code minimizes a loss ``<x, mu*>`` under ``<B x, mu*> <= c``:
with ``theta* = -mu*`` and ``B`` replaced by ``-B`` it is this model.)

**Pure exploration** for the first ``exploration_stages`` stages (their ``tp = 10000``): the arm
``x = B^{-1} r``, ``r`` uniform in the ball of radius ``c / S``.  It is safe for every
``theta*`` of norm at most ``S``: ``<B x, theta*> = <r, theta*> <= ||r|| S <= c``.

**Then optimism over a relaxed confidence set.**  The confidence ellipsoid
``||theta - theta_hat||_V <= beta`` (``beta`` their ``sqrt(beta_t)``, the ``"theorem1"`` radius
with their ``R``, ``L``, ``lambda``, ``delta``) lies inside the polytope with the ``2d``
vertices ``w_k = theta_hat +- sqrt(d) beta V^{-1/2} e_i`` (an l2 ball inside the l1 ball
``sqrt(d)`` times larger).  The estimated safe set is the polytope's pessimism,
``{x in X : <B x, w_k> <= c for every k}``, and the optimistic arm maximizes ``<x, theta>`` over
it and over the relaxed confidence set: a bilinear program, which the maximum over the ``2d``
vertices splits into ``2d`` linear programs (conic programs on a conic arm set) over the
estimated safe set, one per vertex (their code enumerates the safe polytope's vertices instead;
on a box, as there, the two agree), compiled once on Clarabel.  Ties go to the first vertex.

**Certified before it is played.**  An exploration arm is drawn within ``(1 - e) c / S``, ``e``
the larger of ``2^-40`` and ``16 d eps cond(B)`` (the rounding of ``B^{-1} r``), and is played
only if it lies in ``X`` exactly and ``S ||B x|| <= c``; else the safe arm, counted.  An
optimistic arm's largest ``<B x, w_k>`` is recomputed and the arm scaled toward the safe arm
where the solver's tolerance leaves it above ``(1 - 2^-40) c`` (the values are linear in
``x``), moved exactly into ``X`` and checked again; a solver failure or an arm that still fails
plays the safe arm, counted with its reason.  On the confidence event (probability
``1 - delta``) every ``w_k`` bound holds for ``theta*``, so ``<B x, theta*> <= c``.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from .._random import SeedLike
from .._validation import as_nonnegative_int, as_scalar
from ..arm_sets.base import ArmSet
from ..arm_sets.star import StarSet
from ..confidence.ellipsoid import ConfidenceEllipsoid
from ..confidence.radius import CountTable, check_radius, make_radius
from ..conic.errors import SolverFailure
from ..setting import SafeSetting
from .base import Policy
from .directional import SHRINK, require_origin

#: Decision codes: an exploration arm, an optimistic arm, the safe arm.
EXPLORE, OPTIMISTIC, BASELINE = 0, 1, 2


class SafeLUCB(Policy):
    r"""Safe-LUCB on ``n_runs`` runs at once (the rule, its relaxation and its safety argument
    are in :mod:`sege_cvx.policies.safe_lucb`): pure exploration in the certified-safe
    ellipsoid, then optimism over the estimated safe set, ``2d`` linear programs a stage.

    Registered as ``"Safe-LUCB"``.  A policy of the linear-constraint model with a known ``B``
    (``LinearConstraint(c, B=...)``), with the origin as the safe arm, on a convex set.

    Parameters
    ----------
    setting : SafeSetting
        A convex set holding the origin, or a :class:`~sege_cvx.StarSet` (its rays scanned in
        closed form, and its exploration arms drawn ray by ray within the safe ellipsoid); the
        origin as safe arm; ``S`` bounding ``||theta*||``; the reward's noise level; a
        :class:`~sege_cvx.KnownConstraint` with ``B`` (invertible).
    lam : float, default 1.0
    delta : float, default 0.01
    exploration_stages : int, default 10000
        The pure-exploration phase (their code's ``tp``).
    R : float, optional
        The noise's sub-Gaussian constant in ``beta`` (default ``noise_sd``; their code: 1).
    radius : {"theorem1", "self_normalized"}, default "theorem1"
    n_runs : int, default 1
    seed : int, SeedSequence or list of SeedSequence, optional
        Run ``i``'s exploration arms come from :attr:`rngs` ``[i]`` alone.

    Attributes
    ----------
    B_inverse : ndarray, shape (d, d)
    confidence : ConfidenceEllipsoid
    solver_fallbacks : ndarray of int, shape (n_runs,)
        Stages whose arm could not be solved, certified or found in the set (the safe arm was
        played); :attr:`fallback_reasons` says why.

    Examples
    --------
    >>> import numpy as np
    >>> import sege_cvx as sc
    >>> box = sc.Box([-1.0, -1.0], [1.0, 1.0])
    >>> con = sc.LinearConstraint(0.9, B=-np.array([[3.0, 9.0], [9.0, 2.0]]) / 5)
    >>> problem = sc.BanditProblem.from_truth(box, theta_star=-np.array([20.8, 1.0]) / 23,
    ...                                       safe_arm=[0.0, 0.0], S=1.0, noise_sd=0.01,
    ...                                       constraint=con)
    >>> policy = problem.policy("Safe-LUCB", 2, seed=0, exploration_stages=20)
    >>> result = sc.simulate(policy, problem.bandit(sc.run_seeds(1, 2)[1]), 40)
    >>> policy.decision_counts.tolist(), int(result.stats.total_violations.sum())
    ([[20, 20, 0], [20, 20, 0]], 0)
    """

    decision_names: tuple[str | None, ...] = ("explore", "optimistic", "baseline")
    safety_models = ("linear_constraint_on_theta",)

    def __init__(
        self,
        setting: SafeSetting,
        *,
        lam: float = 1.0,
        delta: float = 0.01,
        exploration_stages: int = 10_000,
        R: float | None = None,
        radius: str = "theorem1",
        n_runs: int = 1,
        seed: SeedLike = None,
    ) -> None:
        super().__init__(setting, lam=lam, n_runs=n_runs, seed=seed)
        arm_set, constraint = setting.arm_set, setting.safety
        if not (arm_set.is_convex or isinstance(arm_set, StarSet)):
            raise TypeError(f"Safe-LUCB needs a convex arm set (it solves programs over it) or a "
                            f"sc.StarSet (it scans its rays), not {arm_set!r}")
        require_origin(self)
        d = self.d
        B = constraint.B
        if np.linalg.matrix_rank(B) < d or not np.isfinite(np.linalg.cond(B)) \
                or np.linalg.cond(B) > 1e12:
            raise ValueError(f"Safe-LUCB needs B invertible (its exploration plays B^-1 r), "
                             f"but B has condition number {np.linalg.cond(B):.3g}")
        self.B = B
        self.B_inverse = np.linalg.inv(B)
        self.delta = as_scalar("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
        self.exploration_stages = as_nonnegative_int("exploration_stages", exploration_stages)
        self.R = setting.noise_sd if R is None else as_scalar("R", R, low=0.0)
        self.radius = check_radius(radius)
        self.margin = float(constraint.margin)
        self.L = arm_set.norm_bound()
        self._check_lam(self.L)
        self._radius = make_radius(self.radius, d, self.R, self.lam, setting.S, self.L)
        self._beta = CountTable(self._radius, self.delta)
        self.confidence = ConfidenceEllipsoid(d, self.lam, self.n_runs)
        self._fallbacks = np.zeros(self.n_runs, dtype=np.int64)
        self._reasons: Counter[str] = Counter()
        # Room for the rounding of B^-1 r, which grows with B's condition number.
        slack = max(SHRINK, 16.0 * d * np.finfo(float).eps * np.linalg.cond(B))
        self._exploration_radius = (1.0 - slack) * self.margin / setting.S
        self._star = isinstance(arm_set, StarSet)
        self._program = self._optimistic_program()

    def _optimistic_program(self):
        if self._star:
            return None  # the rays are scanned in closed form
        return _optimistic_program(self.setting.arm_set, 2 * self.d, self.margin)

    def __getstate__(self) -> dict:
        # Clarabel's solvers do not pickle; the program is compiled again on loading and, as
        # it solves each instance from scratch, gives the same arms.
        return {**self.__dict__, "_program": None}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._program = self._optimistic_program()

    @property
    def solver_fallbacks(self) -> np.ndarray:
        """Per run: stages whose arm could not be solved, certified or found in the set (the
        safe arm was played)."""
        return self._fallbacks

    @property
    def fallback_reasons(self) -> Counter[str]:
        """Why the safe arm replaced an arm: a solver status, ``"Uncertified"`` or
        ``"NotMember"``."""
        return self._reasons.copy()

    def radii(self) -> np.ndarray:
        """Every run's current confidence radius ``beta``."""
        conf = self.confidence
        return self._radius.radii(conf.chol, self._beta[conf.counts])

    def summary(self, stats, stages: list[int]) -> dict:
        """The exploration phase and the confidence radius."""
        return {"exploration_stages": self.exploration_stages, "radius": self.radius}

    def vertices(self) -> np.ndarray:
        """Every run's relaxed confidence set: its ``2d`` vertices
        ``theta_hat +- sqrt(d) beta V^{-1/2} e_i`` (``+`` first), shape ``(n_runs, 2d, d)``."""
        conf, d = self.confidence, self.d
        beta = self.radii()
        out = np.empty((self.n_runs, 2 * d, d))
        for i in range(self.n_runs):
            values, vectors = np.linalg.eigh(conf.V[i])
            root = (vectors / np.sqrt(values)) @ vectors.T  # V^{-1/2}
            spread = np.sqrt(d) * beta[i] * root.T  # row j: sqrt(d) beta V^{-1/2} e_j
            out[i, :d] = conf.theta_hat[i] + spread
            out[i, d:] = conf.theta_hat[i] - spread
        return out

    def select(self) -> np.ndarray:
        """Every run's arm: an exploration arm for the first ``exploration_stages`` stages, then
        the optimistic arm over the estimated safe set, each certified."""
        n, d = self.n_runs, self.d
        arms = np.zeros((n, d))
        codes = np.full(n, BASELINE, dtype=np.int8)
        if self.t < self.exploration_stages:
            for i, rng in enumerate(self.rngs):
                z = rng.standard_normal(d + 2)  # z[:d] / ||z||: uniform in the unit ball
                if self._star:
                    arms[i] = self._star_exploration(z)
                else:
                    arms[i] = self.B_inverse @ (self._exploration_radius * z[:d]
                                                / np.linalg.norm(z))
            codes[:] = EXPLORE
            inside = self.setting.arm_set.contains(arms, tol=0.0)
            safe = self.setting.S * np.linalg.norm(arms @ self.B.T, axis=1) <= self.margin
            for reason, failed in (("NotMember", ~inside), ("Uncertified", inside & ~safe)):
                if failed.any():
                    self._reasons[reason] += int(failed.sum())
                    self._fallbacks += failed
                    arms[failed], codes[failed] = 0.0, BASELINE
            self.last_decision = codes
            return arms
        corners = self.vertices()
        bounds = corners @ self.B  # rows: B^T w_k, the estimated safe set's normals
        for i, vertices in enumerate(corners):
            if self._star:
                arms[i], codes[i] = self._star_optimistic(vertices, bounds[i])
                continue
            best, value = None, -np.inf
            try:
                for w in vertices:
                    x = self._program.solve(w, bounds[i]).x
                    if float(w @ x) > value:
                        best, value = x, float(w @ x)
            except SolverFailure as exc:
                self._reasons[exc.status] += 1
                self._fallbacks[i] += 1
                continue
            top = float(np.max(bounds[i] @ best))
            if top > (1.0 - SHRINK) * self.margin:
                best = best * ((1.0 - SHRINK) * self.margin / top)
            arms[i], codes[i] = best, OPTIMISTIC
        played = codes != BASELINE
        moved, inside = self.setting.arm_set.pull_inside_unchecked(arms)
        safe = np.einsum("ikj,ij->ik", bounds, moved).max(axis=1) <= self.margin
        ok = ~played | (inside & safe)
        if not ok.all():
            self._reasons["Uncertified"] += int((~ok).sum())
            self._fallbacks += ~ok
            codes[~ok] = BASELINE
        moved[codes == BASELINE] = 0.0
        self.last_decision = codes
        return moved

    def _star_exploration(self, z: np.ndarray) -> np.ndarray:
        """On a star set, the exploration arm ``fl(s u_k)``: a ray ``k`` uniformly, then ``s``
        uniformly along its part inside the safe ellipsoid ``||B x|| <= (1 - e) c / S`` (both from
        standard normals ``z``, by their normal quantiles)."""
        star: StarSet = self.setting.arm_set
        K = star.n_directions
        uniform = [0.5 * math.erfc(-float(v) / math.sqrt(2.0)) for v in z[:2]]  # in [0, 1]
        k = min(int(K * uniform[0]), K - 1)
        u = star.directions[k]
        reach = min(star.caps[k], self._exploration_radius / np.linalg.norm(self.B @ u))
        return (uniform[1] * reach) * u

    def _star_optimistic(self, vertices: np.ndarray, normals: np.ndarray) -> tuple:
        """On a star set, the optimistic arm in closed form: along ray ``k`` the estimated safe
        set is ``s <= sigma_k = min(cap_k, min_j c / <n_j, u_k>)`` (over the normals with
        ``<n_j, u_k> > 0``), and the best ``(vertex, ray)`` maximizes ``sigma_k <w_i, u_k>``;
        the safe arm if no value is positive.  ``(arm, code)``."""
        star: StarSet = self.setting.arm_set
        slopes = star.directions @ normals.T  # (K, 2d): <n_j, u_k>
        with np.errstate(divide="ignore"):
            limits = np.where(slopes > 0.0, self.margin / np.where(slopes > 0.0, slopes, 1.0),
                              np.inf)
        sigma = np.minimum(star.caps, limits.min(axis=1))
        cut = sigma < star.caps
        values = sigma[None, :] * (vertices @ star.directions.T)  # (2d, K)
        i, k = np.unravel_index(int(np.argmax(values)), values.shape)  # first of ties
        if not values[i, k] > 0.0:
            return np.zeros(self.d), BASELINE
        s = sigma[k] * (1.0 - SHRINK) if cut[k] else sigma[k]
        return s * star.directions[k], OPTIMISTIC

    def observe(self, x: np.ndarray, y: np.ndarray, constraint_values: None = None) -> None:
        """Record the rewards (the constraint's feedback is the reward's)."""
        self.confidence.update(x, y)


def _optimistic_program(arm_set: ArmSet, n_bounds: int, margin: float):
    """``max <x, w>`` s.t. ``x`` in the set and ``G x <= c`` (``G``: ``n_bounds`` rows), compiled
    once (:class:`~sege_cvx.conic.compiled.CompiledConicProgram`): ``.solve(w, G)``."""
    import cvxpy as cp

    from ..conic.compiled import CompiledConicProgram
    from ..conic.programs import auxiliary_variables

    d = arm_set.dim
    x = cp.Variable(d)
    w, G = cp.Parameter(d), cp.Parameter((n_bounds, d))
    cons = [*arm_set.constraints(x), G @ x <= margin]
    problem = cp.Problem(cp.Maximize(w @ x), cons)
    return CompiledConicProgram(problem, x, [w, G], None, auxiliary_variables(cons, [x]))


__all__ = ["SafeLUCB"]
