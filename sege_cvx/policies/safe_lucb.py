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
on a box, as there, the two agree).  Ties go to the first vertex.  On a polytope or a box the
stages are compiled (:class:`SafeLUCBStages`): each program is solved by the simplex method
over the set cut by the estimated safe set's half-spaces and certified by its duality gap
(:func:`~sege_cvx.arm_sets.kernels.registry.greedy_arm_within`); on a set of second-order cones
built with ``compiled=True`` each is solved in the stage by the package's interior-point method
with the cuts 1e-8 inside ``c`` (:func:`~sege_cvx.arm_sets.cone.arms.greedy_within_one`) and
proven in the set with its witness; on other convex sets (and with ``method="solver"``) each is
a conic program compiled once on Clarabel.

**Certified before it is played.**  An exploration arm is drawn within ``(1 - e) c / S``, ``e``
the larger of ``2^-40`` and ``16 d eps cond(B)`` (the rounding of ``B^{-1} r``), and is played
only if it lies in ``X`` exactly and ``S ||B x|| <= c``; else the safe arm, counted.  An
optimistic arm's largest ``<B x, w_k>`` is recomputed and the arm scaled toward the safe arm
where the solver's tolerance leaves it above ``(1 - 2^-40) c`` (the values are linear in
``x``), moved exactly into ``X`` and checked again; a solver failure (compiled: a program
without its certificate) or an arm that still fails plays the safe arm, counted with its
reason.  (The compiled stages move an exploration arm just outside ``X`` in by the set's exact
pull-in, then check its bound at the point moved.)  On the confidence event (probability
``1 - delta``) every ``w_k`` bound holds for ``theta*``, so ``<B x, theta*> <= c``.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import NamedTuple

import numpy as np

from .._numba import njit
from .._random import SeedLike
from .._validation import as_nonnegative_int, as_scalar
from ..arm_sets.base import ArmSet
from ..arm_sets.kernels.registry import (
    geometry_kernels,
    greedy_arm_within,
    has_greedy_within,
    has_pull_in,
    pull_in,
    within_scratch,
)
from ..arm_sets.kernels.status import FALLBACK_REASONS, NOT_MEMBER, UNCERTIFIED, VERIFIED
from ..arm_sets.star import StarSet
from ..confidence.ellipsoid import ConfidenceEllipsoid
from ..confidence.radius import CountTable, check_radius, make_radius, radius_one
from ..confidence.state import (
    ConfidenceState,
    LearnScratch,
    RunConfidence,
    learn_scratch,
    run_confidence,
)
from ..confidence.state import learn as update_confidence
from ..conic.errors import SolverFailure
from ..setting import SafeSetting
from ..stages.loop import Decisions, StageHooks, choose_loop, register_stage_hooks, stage_loop
from .base import Policy
from .directional import SHRINK, fall_back, require_origin

#: Decision codes: an exploration arm, an optimistic arm, the safe arm.
EXPLORE, OPTIMISTIC, BASELINE = 0, 1, 2
#: How the optimistic programs are solved: compiled where the set's geometry can
#: (:class:`SafeLUCBStages`), or on Clarabel from Python (the cross-check).
METHODS = ("auto", "solver")


class SafeLUCBStages(NamedTuple):
    """Safe-LUCB's stage record (:mod:`sege_cvx.stages.loop`) on a set whose geometry solves the
    greedy arm over the set cut by half-spaces (polytopes and boxes:
    :func:`~sege_cvx.arm_sets.kernels.registry.greedy_arm_within`).

    Per run: the ``confidence`` state, the ``decisions``, the ``fallbacks`` and their
    ``reasons`` (columns :data:`~sege_cvx.arm_sets.kernels.status.FALLBACK_REASONS`).  The
    constants: the ``radius`` rule and its values by count (``beta_table``), ``B`` and
    ``B_inverse``, the ``margin`` ``c``, ``S``, the last exploration stage, the exploration
    ball's radius, the exploration's normal ``draws`` (``(n_runs, stages, d + 2)``, only for the
    stages that explore) and the set's ``geometry``.
    """

    confidence: ConfidenceState
    decisions: Decisions
    fallbacks: np.ndarray
    reasons: np.ndarray
    radius: tuple
    beta_table: np.ndarray
    B: np.ndarray
    B_inverse: np.ndarray
    margin: float
    S: float
    exploration_stages: int
    exploration_radius: float
    draws: np.ndarray
    geometry: tuple
    starts: np.ndarray


class SafeLUCBRun(NamedTuple):
    """Run ``i``'s views of a :class:`SafeLUCBStages` (:func:`run_view`)."""

    confidence: RunConfidence


class SafeLUCBScratch(NamedTuple):
    """:func:`choose_arm`'s scratch (:func:`scratch`): ``V``'s eigen-decomposition's
    ``root = V^{-1/2}``, the relaxed confidence set's ``corners`` ``(2d, d)`` and the estimated
    safe set's ``cuts`` ``B^T w_k``, the program's arm ``x``, the ``best`` so far, the
    pull-in's ``offset`` and ``trial``, the programs' ``within`` scratch; :func:`learn`'s."""

    root: np.ndarray
    corners: np.ndarray
    cuts: np.ndarray
    x: np.ndarray
    best: np.ndarray
    offset: np.ndarray
    trial: np.ndarray
    within: tuple
    learn: LearnScratch


@njit(inline="always")
def scratch(policy, d):
    """A :class:`SafeLUCBScratch` for dimension ``d``."""
    return SafeLUCBScratch(root=np.empty((d, d)), corners=np.empty((2 * d, d)),
                           cuts=np.empty((2 * d, d)), x=np.empty(d), best=np.empty(d),
                           offset=np.empty(d), trial=np.empty(d),
                           within=within_scratch(policy.geometry, 2 * d), learn=learn_scratch(d))


@njit(inline="always")
def run_view(policy, i):
    """Run ``i``'s :class:`SafeLUCBRun`."""
    return SafeLUCBRun(confidence=run_confidence(policy.confidence, i))


@njit
def relaxed_corners(V, theta_hat, beta, root, corners) -> None:
    """The relaxed confidence set's ``2d`` vertices ``theta_hat +- sqrt(d) beta V^{-1/2} e_j``
    (``+`` first) into ``corners``, ``V^{-1/2} = Q diag(lambda)^{-1/2} Q^T`` from ``V``'s
    eigen-decomposition into ``root``: the polytope that holds the confidence ellipsoid
    ``||theta - theta_hat||_V <= beta`` (an l2 ball inside the l1 ball ``sqrt(d)`` times
    larger)."""
    d = theta_hat.shape[0]
    values, vectors = np.linalg.eigh(V)
    for a in range(d):
        for b in range(d):
            s = 0.0
            for k in range(d):
                s += (vectors[a, k] / math.sqrt(values[k])) * vectors[b, k]
            root[a, b] = s
    spread = math.sqrt(d) * beta
    for j in range(d):
        for a in range(d):
            corners[j, a] = theta_hat[a] + spread * root[a, j]
            corners[d + j, a] = theta_hat[a] - spread * root[a, j]


@njit(inline="always")
def _largest_cut(cuts, x) -> float:
    """``max_k <cuts_k, x>``."""
    top = -np.inf
    for k in range(cuts.shape[0]):
        s = 0.0
        for a in range(x.shape[0]):
            s += cuts[k, a] * x[a]
        top = max(top, s)
    return top


@njit(inline="always")
def choose_arm(policy, run, work, i, s, t, arm) -> int:
    """Run ``i``'s arm at stage ``t`` (the module docstring's rule): an exploration arm
    ``B^{-1} r`` while ``t <= exploration_stages``, else the best of the ``2d`` programs
    ``max <w_k, x>`` over the set cut by ``B^T w_j x <= c`` (:func:`greedy_arm_within`), scaled
    toward the safe arm where rounding left it above ``(1 - 2^-40) c``; moved exactly into the
    set and its bound checked at the point moved, else the safe arm, counted."""
    d = arm.shape[0]
    margin = policy.margin
    if t <= policy.exploration_stages:
        z = policy.draws[i, s]
        norm = 0.0
        for k in range(z.shape[0]):
            norm += z[k] * z[k]
        norm = math.sqrt(norm)
        r = work.x
        for a in range(d):
            r[a] = policy.exploration_radius * z[a] / norm
        for a in range(d):
            v = 0.0
            for b in range(d):
                v += policy.B_inverse[a, b] * r[b]
            arm[a] = v
        if not pull_in(policy.geometry, arm, work.offset, work.trial):
            fall_back(policy, i, NOT_MEMBER, arm)
            return BASELINE
        square = 0.0
        for a in range(d):
            v = 0.0
            for b in range(d):
                v += policy.B[a, b] * arm[b]
            square += v * v
        if not policy.S * math.sqrt(square) <= margin:
            fall_back(policy, i, UNCERTIFIED, arm)
            return BASELINE
        return EXPLORE
    conf = run.confidence
    beta = radius_one(policy.radius, policy.beta_table[policy.confidence.counts[i]], conf.chol)
    corners, cuts, x, best = work.corners, work.cuts, work.x, work.best
    relaxed_corners(conf.V, conf.theta_hat, beta, work.root, corners)
    for k in range(2 * d):  # the estimated safe set's normals B^T w_k
        for a in range(d):
            v = 0.0
            for b in range(d):
                v += corners[k, b] * policy.B[b, a]
            cuts[k, a] = v
    value = -np.inf
    for k in range(2 * d):
        status = greedy_arm_within(policy.geometry, corners[k], cuts, margin,
                                   policy.starts[i, k], x, work.within)
        if status != VERIFIED:
            fall_back(policy, i, status, arm)
            return BASELINE
        v = 0.0
        for a in range(d):
            v += corners[k, a] * x[a]
        if v > value:  # ties: the first vertex
            value = v
            for a in range(d):
                best[a] = x[a]
    top = _largest_cut(cuts, best)
    scaled = top > (1.0 - SHRINK) * margin
    if scaled:
        scale = (1.0 - SHRINK) * margin / top
        for a in range(d):
            best[a] *= scale
    for a in range(d):
        arm[a] = best[a]
    # A program's arm is in the set exactly (VERIFIED); a scaled one is moved in.
    if scaled and not pull_in(policy.geometry, arm, work.offset, work.trial):
        fall_back(policy, i, NOT_MEMBER, arm)
        return BASELINE
    if not _largest_cut(cuts, arm) <= margin:
        fall_back(policy, i, UNCERTIFIED, arm)
        return BASELINE
    return OPTIMISTIC


@njit(inline="always")
def learn(policy, run, work, i, arm, y, code, z) -> bool:
    """The reward's update (:func:`~sege_cvx.confidence.state.learn`); the constraint's
    feedback is the reward's (``z`` is NaN)."""
    return update_confidence(policy.confidence, run.confidence, i, arm, y, work.learn)


register_stage_hooks(SafeLUCBStages, StageHooks(scratch, run_view, choose_arm, learn))


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
    method : {"auto", "solver"}, default "auto"
        ``"auto"``: on a polytope or a box the stages are compiled, each program solved by the
        simplex method and certified by its duality gap
        (:func:`~sege_cvx.arm_sets.kernels.registry.greedy_arm_within`); elsewhere, and with
        ``"solver"``, one Clarabel program per vertex from Python.
    n_runs : int, default 1
    seed : int, SeedSequence or list of SeedSequence, optional
        Run ``i``'s exploration arms come from :attr:`rngs` ``[i]`` alone.

    Attributes
    ----------
    B_inverse : ndarray, shape (d, d)
    compiled_stages : bool
        Whether the stages are compiled (``method="auto"`` on a polytope or a box).
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
        method: str = "auto",
        n_runs: int = 1,
        seed: SeedLike = None,
    ) -> None:
        super().__init__(setting, lam=lam, n_runs=n_runs, seed=seed)
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        self.method = method
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
        # Compiled stages where the set's geometry solves the programs itself (polytopes and
        # boxes); elsewhere one Clarabel program per vertex from Python.
        compiled = None if self._star or method == "solver" else arm_set.compiled_arms
        geometry = None if compiled is None else compiled.geometry()
        self._compiled = has_greedy_within(geometry) and has_pull_in(geometry)
        self._geometry = geometry if self._compiled else None
        # Each run's start of each of its 2d programs (the geometry's: kept between stages).
        self._starts = np.zeros((self.n_runs, 2 * d, 0))
        if self._compiled:
            start = geometry_kernels(type(geometry)).within_start(geometry, 2 * d)
            self._starts = np.tile(start, (self.n_runs, 2 * d, 1))
        self._stage_reasons = np.zeros((self.n_runs, len(FALLBACK_REASONS)), dtype=np.int64)
        self._program = self._optimistic_program()

    def _optimistic_program(self):
        if self._star or self._compiled:
            return None  # the rays are scanned in closed form; the compiled stages solve theirs
        return _optimistic_program(self.setting.arm_set, 2 * self.d, self.margin)

    @property
    def compiled_stages(self) -> bool:
        """Whether the stages are compiled (:class:`SafeLUCBStages`): on polytopes and boxes."""
        return self._compiled

    @property
    def compiled_kernels(self) -> tuple:
        if not self._compiled:
            return ()
        return (stage_loop(SafeLUCBStages, type(self._geometry), type(self._radius.rule)),)

    def _draws(self, t0: int, n_stages: int) -> np.ndarray:
        """The exploration's standard normals for those of stages ``t0 .. t0 + n_stages - 1``
        that explore, ``d + 2`` a stage, each run's from its own generator (the numbers the
        step API draws, whatever the stages per call)."""
        count = min(max(self.exploration_stages - t0 + 1, 0), n_stages)
        return np.stack([rng.standard_normal((count, self.d + 2)) for rng in self.rngs])

    def stage_record(self, t0: int, n_stages: int) -> SafeLUCBStages:
        """The record of the compiled stage loop (:attr:`compiled_stages`)."""
        conf = self.confidence
        table = self._beta.covering(int(conf.counts.max()) + n_stages)
        return SafeLUCBStages(
            confidence=conf.state(), decisions=self.decision_record(),
            fallbacks=self._fallbacks, reasons=self._stage_reasons, radius=self._radius.rule,
            beta_table=table, B=self.B, B_inverse=self.B_inverse, margin=self.margin,
            S=self.setting.S, exploration_stages=self.exploration_stages,
            exploration_radius=self._exploration_radius, draws=self._draws(t0, n_stages),
            geometry=self._geometry, starts=self._starts)

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
        ``"NotMember"`` (compiled stages: a program's status of
        :mod:`~sege_cvx.arm_sets.kernels.status`, or ``"Uncertified"``)."""
        reasons = self._reasons.copy()
        for name, count in zip(FALLBACK_REASONS, self._stage_reasons.sum(axis=0), strict=True):
            if count:
                reasons[name] += int(count)
        return reasons

    def radii(self) -> np.ndarray:
        """Every run's current confidence radius ``beta``."""
        conf = self.confidence
        return self._radius.radii(conf.chol, self._beta[conf.counts])

    def summary(self, stats, stages: list[int]) -> dict:
        """The exploration phase, the confidence radius and whether the stages are compiled."""
        return {"exploration_stages": self.exploration_stages, "radius": self.radius,
                "compiled": self._compiled}

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
        if self._compiled:
            arms = np.empty((n, d))
            codes = np.empty(n, dtype=np.int8)
            kernel = choose_loop(SafeLUCBStages, type(self._geometry), type(self._radius.rule))
            kernel(self.stage_record(self.t + 1, 1), self.t + 1, arms, codes)
            self.last_decision = codes
            return arms
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
