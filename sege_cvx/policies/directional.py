r"""ROFUL and GNOP under an unknown linear constraint, as their authors' code defines them.

Hutchinson, Turan and Alizadeh, "Directional Optimism for Safe Linear Bandits" (AISTATS 2024);
their code: ``safe_linear_bandit.py`` (functions ``roful`` and ``gnop``) in the repository
``shutch1/Directional-Optimism-for-Safe-Linear-Bandits``.  The model
(:mod:`sege_cvx.safety`): rewards ``<x, theta*> + eta``, the constraint
``<x, gamma*> <= c`` observed as ``<x, gamma*> + eta'``, the origin a known safe arm.  Both
estimates come from one ``V = lam I + sum x x^T``: ``theta_hat = V^{-1} sum x y`` and
``gamma_hat = V^{-1} sum x z``; ``beta`` is the radius of both confidence sets.

The arms are scanned along rays ``s u_k``, ``0 <= s <= cap_k``: a :class:`~sege_cvx.StarSet`'s
own directions and caps (``radius / ||u_k||``, as the authors' ``xlim / ||u||``), or on a convex
set holding the origin ``K`` well-spread unit directions, ``cap_k`` the set's extent along each
(:func:`radial_caps`).  Per ray, with ``w_k = ||u_k||_{V^{-1}}``:

**ROFUL** (``roful``): the optimistic constraint per unit step ``o_k = <gamma_hat, u_k> - beta
w_k``; scale ``sigma_k = min(c / o_k, cap_k)`` if ``o_k > 0``, else ``cap_k``; value
``sigma_k (<theta_hat, u_k> + beta w_k)``.  If the best value is negative, the safe arm;
else ``x~ = sigma u`` of the best ray, then ``mu = min(c / p, 1)`` with the pessimistic value
``p = <gamma_hat, x~> + beta ||x~||_{V^{-1}}`` (1 if ``p <= 0``), the known-safe scale
``b~ = min((c / S) / ||x~||, 1)``, and ``x = max(b~, mu) x~``.

**GNOP** (``gnop``): the pessimistic constraint per unit step ``p_k = <gamma_hat, u_k> + beta
w_k``; scale ``sigma_k = min(c / p_k, cap_k)`` if ``p_k > 0``, else ``cap_k``; value
``sigma_k (<theta_hat, u_k> + kappa beta w_k)`` with ``kappa = 1 + 2 S / c``; play the best
``sigma u`` (the safe arm if its value is negative).

**At the rule's best on a convex set.**  A fan finds the best ray only to within its spacing,
and where the constraint and a face of the set meet (where these optima usually lie) the value
has a kink, so the loss is first order in the angle: on a box in R^5 GNOP's regret with its
default fan of 114 rays is 2.9 times that with its rays refined.  Where the set's compiled
geometry gives its extent along a ray (boxes, polytopes, balls, ellipsoids), the fan's best ray
is refined toward the rule's continuous optimum (:mod:`~sege_cvx.policies.ray_refinement`;
``refine=False`` plays the fan as scanned).  Star sets keep their authors' scan of their rays.

**Certified before it is played.**  An arm ``x = s u`` is played only if its upper confidence
bound ``s (<gamma_hat, u> + beta w) <= c`` or ``S ||x|| <= c`` (safe for every ``gamma*`` of norm
at most ``S``).  Both rules put a scaled-down arm on one of these boundaries, where rounding may
land either side: such a scale is shrunk by a relative ``2^-40`` (:data:`SHRINK`, a change of
1e-12, far below any effect on regret), which leaves the certificate that much room; an arm
that still fails it is replaced by the safe arm and counted in ``fallbacks``.  The float arm
``fl(s u_k)`` is an arm of a star set by its definition; on a convex set it is moved exactly into
the set (or the safe arm is played, counted), and its certificate is checked again at the
point moved.

The rule is written once (:func:`ray_value`, :func:`best_ray`, :func:`ray_scale`; on star
sets :func:`ray_step`); :class:`DirectionalStages` and its hooks put it in
the compiled stage loop (:mod:`sege_cvx.stages.loop`) on star sets and on the sets whose
exact membership is compiled (ellipsoids, balls, boxes, polytopes: the arm moved in by the
set's compiled pull-in and certified again at the point moved), and ``select`` and ``observe``
run the same functions one stage at a time; on other convex sets ``select`` moves the arm in
and certifies it in Python.
"""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple

import numpy as np

from .._numba import njit
from .._random import SeedLike
from .._validation import as_scalar, scaled_norm
from ..arm_sets.base import ArmSet
from ..arm_sets.discretization import as_arm_count, default_arm_count, sphere_directions
from ..arm_sets.kernels.registry import (
    Unmoved,
    geometry_kernels,
    has_pull_in,
    has_radial_extent,
    has_safe_set_arm,
    pull_in,
    radial_extent,
    safe_set_arm,
    safe_set_scratch,
)
from ..arm_sets.kernels.status import FALLBACK_REASONS, UNCERTIFIED, VERIFIED
from ..arm_sets.star import StarSet
from ..confidence.cholesky import (
    directional_terms,
    inverse_factor_one,
    inverse_norm,
    lcb_values,
    observe_one,
    solve_lower,
    solve_lower_transposed,
)
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
from ..setting import SafeSetting
from ..stages.loop import Decisions, StageHooks, choose_loop, register_stage_hooks, stage_loop
from .base import Policy
from .ray_refinement import STATE_SIZE, fan_spacing, refine_start, refine_update

#: Decision codes: the step played in full (ROFUL: ``max(b~, mu) >= 1``; GNOP and SafeTS: at
#: the ray's cap), scaled down to the certificate's boundary, or the safe arm.
FULL_STEP, SCALED_STEP, BASELINE = 0, 1, 2
#: The rules of :func:`ray_step`: ROFUL's, GNOP's and safe Thompson sampling's
#: (:class:`~sege_cvx.SafeTS`).
ROFUL_RULE, GNOP_RULE, TS_RULE = 0, 1, 2
#: The fewest rays scanned on a convex set by default (CLUCB's count, which meets a reward
#: tolerance at the set's support points, is 4 or 5 on a box: too few to come near the best arm
#: on a constraint's face).
MIN_RAYS = 64
#: Relative shrink of a scale whose certificate failed by rounding (see the module docstring).
SHRINK = 2.0 ** -40
#: SafeTS: a solved arm whose bound is within this fraction of ``c`` counts as cut by the
#: constraint (code ``scaled_step``).
ACTIVE = 1e-6


@njit(inline="always")
def _certified(s, cdot, w, beta, unorm, margin, S) -> bool:
    """``s u`` certified safe: its UCB ``s (<gamma_hat, u> + beta w) <= c`` or
    ``S ||s u|| <= c``."""
    return s * (cdot + beta * w) <= margin or S * (s * unorm) <= margin


@njit(inline="always")
def gnop_kappa(S, margin) -> float:
    """GNOP's inflation of the bonus, ``kappa = 1 + 2 S / c``."""
    return 1.0 + 2.0 * S / margin


@njit(inline="always")
def ray_value(algorithm, dot, cdot, norm, cap, beta, margin, kappa) -> float:
    """A ray's value under ``algorithm``'s rule (the module docstring): its scale
    ``sigma = min(c / unit, cap)`` (``cap`` if ``unit <= 0``) times ``dot`` plus the bonus, for
    the ray's ``dot = <theta_hat, u>``, ``cdot = <gamma_hat, u>``, ``norm = ||u||_{V^{-1}}``
    (``kappa``: GNOP's inflation of the bonus)."""
    if algorithm == ROFUL_RULE:
        unit = cdot - beta * norm  # optimistic constraint per unit step
        bonus = beta * norm
    else:
        unit = cdot + beta * norm  # pessimistic constraint per unit step
        bonus = kappa * beta * norm if algorithm == GNOP_RULE else 0.0
    sigma = min(margin / unit, cap) if unit > 0.0 else cap
    return sigma * (dot + bonus)


@njit(inline="always")
def ray_scale(algorithm, dot, cdot, norm, unorm, cap, beta, margin, S) -> tuple:
    """The scale ``s`` the rule plays on its best ray and its decision code (the module
    docstring; ``unorm = ||u||``), shrunk by :data:`SHRINK` where it lands on the certificate's
    boundary; ``s = -1`` if no scale passed the certificate."""
    unit = cdot - beta * norm if algorithm == ROFUL_RULE else cdot + beta * norm
    sigma = min(margin / unit, cap) if unit > 0.0 else cap
    s, code = sigma, FULL_STEP
    if algorithm == ROFUL_RULE:
        pessimistic = sigma * (cdot + beta * norm)  # <gamma_hat, x~> + beta ||x~||
        mu = min(margin / pessimistic, 1.0) if pessimistic > 0.0 else 1.0
        length = sigma * unorm  # ||x~||
        known_safe = min((margin / S) / length, 1.0) if length > 0.0 else 1.0
        gamma = max(known_safe, mu)
        if gamma < 1.0:  # x~ scaled to the certificate's boundary (mu or the known-safe ball)
            s, code = gamma * sigma, SCALED_STEP
    elif sigma < cap:  # cut at the pessimistic boundary, the certificate's
        code = SCALED_STEP
    if code == SCALED_STEP:
        s = s * (1.0 - SHRINK)  # room for the certificate's rounding
    if not _certified(s, cdot, norm, beta, unorm, margin, S):
        s = s * (1.0 - SHRINK)  # a boundary reached otherwise (mu = 1 exactly)
        if not _certified(s, cdot, norm, beta, unorm, margin, S):
            return -1.0, BASELINE
    return s, code


@njit(inline="always")
def best_ray(algorithm, dot, cdot, norm, caps, beta, margin, S, value) -> int:
    """The ray of the largest :func:`ray_value` (the first of ties) on the per-ray terms
    (``value``: scratch of length K, the values written into it)."""
    kappa = gnop_kappa(S, margin)
    best = 0
    for k in range(caps.shape[0]):
        value[k] = ray_value(algorithm, dot[k], cdot[k], norm[k], caps[k], beta, margin, kappa)
        if value[k] > value[best]:
            best = k
    return best


@njit(inline="always")
def ray_step(algorithm, dot, cdot, norm, unorm, caps, beta, margin, S, value):
    """ROFUL's, GNOP's or SafeTS's choice (``algorithm``: :data:`ROFUL_RULE`, :data:`GNOP_RULE`,
    :data:`TS_RULE`) for one run among its rays, the module docstring's rule on the per-ray
    terms (SafeTS: GNOP's pessimistic scales, valued by a sampled parameter without a bonus):
    :func:`best_ray`, then :func:`ray_scale`.

    ``dot[k] = <theta_hat, u_k>`` (SafeTS: ``<theta~, u_k>``), ``cdot[k] = <gamma_hat, u_k>``,
    ``norm[k] = ||u_k||_{V^{-1}}``,
    ``unorm[k] = ||u_k||``, ``caps[k]`` the largest scale; ``margin`` is ``c`` less the safe
    arm's value; ``value``: scratch of length K.  Returns ``(k, s, code)``: play ``s u_k``
    (``s = 0`` and :data:`BASELINE`: the safe arm is the best; ``s < 0``: no scale passed the
    certificate, the safe arm is played and counted as a fallback).
    """
    k = best_ray(algorithm, dot, cdot, norm, caps, beta, margin, S, value)
    if value[k] < 0.0:
        return 0, 0.0, BASELINE
    s, code = ray_scale(algorithm, dot[k], cdot[k], norm[k], unorm[k], caps[k], beta, margin, S)
    return k, s, code


def radial_caps(arm_set: ArmSet, directions: np.ndarray) -> np.ndarray:
    """Per unit direction ``u`` of a convex set holding the origin: the largest ``s`` (to the
    float, by bisection on the set's membership test ``contains(x, tol=0)``) with ``fl(s u)`` in
    the set, less a relative :data:`SHRINK`.  By convexity every ``s u`` below it is in the set
    too; the margin keeps ``fl(s u)`` inside despite its rounding and that of a float membership
    test (an ellipsoid's, a cvxpy set's), and the played arm's exact pull-in is the backstop."""
    lo = np.zeros(len(directions))
    hi = np.full(len(directions), 2.0 * arm_set.norm_bound())
    for _ in range(1100):  # each step halves the bracket or moves it by an ulp
        mid = lo + 0.5 * (hi - lo)
        open_ = (mid > lo) & (mid < hi)
        if not open_.any():
            break
        inside = arm_set.contains(mid[:, None] * directions, tol=0.0)
        lo = np.where(open_ & inside, mid, lo)
        hi = np.where(open_ & ~inside, mid, hi)
    return lo * (1.0 - SHRINK)


class DirectionalStages(NamedTuple):
    """ROFUL's, GNOP's and SafeTS's stage record under a linear constraint
    (:mod:`sege_cvx.stages.loop`).

    Per run: the reward's ``confidence`` state, the constraint's ``xz_sum`` and ``gamma_hat``
    (the same ``V``), the ``decisions``, the ``fallbacks``.  The constants: the ``radius`` rule
    and its values by count (``beta_table``), the ``algorithm`` (:data:`ROFUL_RULE`,
    :data:`GNOP_RULE` or :data:`TS_RULE`), the rays' directions as columns (``dirs_t``), their
    norms (``unorm``) and ``caps``, the ``margin`` ``c``, ``S``, SafeTS's normal ``draws`` and
    the set's ``geometry`` record, and the first step of :func:`refine_update` (0: the fan's best
    ray as scanned); per run again, the direction ``refined`` at its last stage (zero: none
    yet), where the next stage's refinement may start; whether SafeTS ``solves`` its program
    over the estimated safe set on the set's geometry
    (:func:`~sege_cvx.arm_sets.kernels.registry.safe_set_arm`: cone sets compiled) rather than
    scanning rays; per run, the fallbacks' ``reasons`` (columns
    :data:`~sege_cvx.arm_sets.kernels.status.FALLBACK_REASONS`) and the ``starts`` of that
    program (:func:`~sege_cvx.arm_sets.kernels.registry.safe_set_start`: its last solution,
    kept from one stage to the next; empty rows where SafeTS does not solve it).
    """

    confidence: ConfidenceState
    xz_sum: np.ndarray
    gamma_hat: np.ndarray
    decisions: Decisions
    fallbacks: np.ndarray
    radius: tuple
    beta_table: np.ndarray
    algorithm: int
    dirs_t: np.ndarray
    unorm: np.ndarray
    caps: np.ndarray
    margin: float
    S: float
    draws: np.ndarray
    geometry: tuple
    refine_step: float
    refined: np.ndarray
    solves: bool
    reasons: np.ndarray
    starts: np.ndarray


class DirectionalRun(NamedTuple):
    """Run ``i``'s views of a :class:`DirectionalStages` (:func:`run_view`)."""

    confidence: RunConfidence
    xz_sum: np.ndarray
    gamma_hat: np.ndarray


class DirectionalScratch(NamedTuple):
    """:func:`choose_arm`'s scratch (:func:`scratch`): ``L^{-1}`` (``inverse``) and the vectors
    :func:`inverse_factor_one` uses (``e``, ``column``), the per-ray terms ``(4, K)``, the
    certificate's vector (``w``), SafeTS's ``sampled`` parameter, the pull-in's two vectors
    (``offset``, ``trial``), :func:`refine_update`'s (``ray``: the direction played;
    ``probe``, ``state``, ``caps``, ``cgrads``, ``levels``, ``grads``, ``gnorm``, ``gfs``,
    ``vecs``, ``step``, ``act``, ``corral``, ``lam``, ``mu``, ``system``: see
    :mod:`~sege_cvx.policies.ray_refinement`); SafeTS's program's (``safe_set``:
    :func:`~sege_cvx.arm_sets.kernels.registry.safe_set_scratch`); :func:`learn`'s."""

    inverse: np.ndarray
    e: np.ndarray
    column: np.ndarray
    terms: np.ndarray
    w: np.ndarray
    sampled: np.ndarray
    offset: np.ndarray
    trial: np.ndarray
    ray: np.ndarray
    probe: np.ndarray
    state: np.ndarray
    caps: np.ndarray
    cgrads: np.ndarray
    levels: np.ndarray
    grads: np.ndarray
    gnorm: np.ndarray
    gfs: np.ndarray
    vecs: np.ndarray
    step: np.ndarray
    act: np.ndarray
    corral: np.ndarray
    lam: np.ndarray
    mu: np.ndarray
    system: np.ndarray
    safe_set: tuple
    learn: LearnScratch


@njit(inline="always")
def scratch(policy, d):
    """A :class:`DirectionalScratch` for dimension ``d``."""
    return DirectionalScratch(inverse=np.empty((d, d)), e=np.empty(d), column=np.empty(d),
                              terms=np.empty((4, policy.dirs_t.shape[1])), w=np.empty(d),
                              sampled=np.empty(d), offset=np.empty(d), trial=np.empty(d),
                              ray=np.empty(d), probe=np.empty(d),
                              state=np.empty(STATE_SIZE),
                              caps=np.empty(d + 1), cgrads=np.empty((d + 1, d)),
                              levels=np.empty((2, d + 2)), grads=np.empty((2, d + 2, d)),
                              gnorm=np.empty((2, d + 2)), gfs=np.empty((2, d)),
                              vecs=np.empty((2, d)), step=np.empty(d),
                              act=np.empty((d + 2, d)),
                              corral=np.empty(d + 3, dtype=np.int64), lam=np.empty(d + 3),
                              mu=np.empty(d + 3), system=np.empty((d + 4, d + 5)),
                              safe_set=safe_set_scratch(policy.geometry),
                              learn=learn_scratch(d))


@njit(inline="always")
def certified_arm(x, gamma_hat, chol, beta, margin, S, w) -> bool:
    """The certificate at the arm itself: ``<x, gamma_hat> + beta ||x||_{V^{-1}} <= c`` or
    ``S ||x|| <= c`` (``w``: scratch of length d)."""
    dot, square = 0.0, 0.0
    for j in range(x.shape[0]):
        dot += x[j] * gamma_hat[j]
        square += x[j] * x[j]
    return dot + beta * inverse_norm(chol, x, w) <= margin or S * np.sqrt(square) <= margin


@njit(inline="always")
def sample_parameter(theta_hat, inv, beta, z, out) -> None:
    """``out = theta_hat + beta L^{-T} eta`` with ``eta = z[:d] / ||z||`` (``z``: ``d + 2``
    standard normals), uniform in the unit ball: ``out`` is uniform in the confidence ellipsoid
    ``||theta - theta_hat||_V <= beta`` (``V = L L^T``, ``inv = L^{-1}``)."""
    d = theta_hat.shape[0]
    norm = 0.0
    for k in range(z.shape[0]):
        norm += z[k] * z[k]
    norm = np.sqrt(norm)
    for j in range(d):
        acc = 0.0
        for k in range(j, d):  # L^{-1} is lower triangular: (L^{-T})[j, k] = inv[k, j]
            acc += inv[k, j] * z[k]
        out[j] = theta_hat[j] + beta * (acc / norm)


@njit(inline="always")
def run_view(policy, i):
    """Run ``i``'s :class:`DirectionalRun`."""
    return DirectionalRun(confidence=run_confidence(policy.confidence, i),
                          xz_sum=policy.xz_sum[i], gamma_hat=policy.gamma_hat[i])


@njit(inline="always")
def choose_arm(policy, run, work, i, s, t, arm) -> int:
    """The rule on the run's terms: :func:`best_ray`, that ray refined where the record asks
    (:func:`refine_update`), :func:`ray_scale`; the arm ``fl(s u)`` (the safe arm, the origin, for
    :data:`BASELINE`; a failed certificate counted in ``fallbacks``)."""
    d = arm.shape[0]
    chol, theta_hat, gamma_hat = run.confidence.chol, run.confidence.theta_hat, run.gamma_hat
    inv, terms = work.inverse, work.terms
    beta = radius_one(policy.radius, policy.beta_table[policy.confidence.counts[i]], chol)
    inverse_factor_one(chol, inv, work.e, work.column)
    if policy.algorithm == TS_RULE:
        sampled = work.sampled
        sample_parameter(theta_hat, inv, beta, policy.draws[i, s], sampled)
        if policy.solves:  # its program over the estimated safe set, on the set's geometry
            status = safe_set_arm(policy.geometry, sampled, gamma_hat, inv, beta, policy.margin,
                                  policy.starts[i], arm, work.safe_set)
            return _solved_arm(policy, i, status, sampled, gamma_hat, chol, beta, arm, work.w)
        directional_terms(inv, sampled, policy.dirs_t, terms)
    else:
        directional_terms(inv, theta_hat, policy.dirs_t, terms)
    cdot = terms[3]
    dirs_t = policy.dirs_t
    K = dirs_t.shape[1]
    for k in range(K):
        cdot[k] = 0.0
    for j in range(d):
        g = gamma_hat[j]
        for k in range(K):
            cdot[k] += g * dirs_t[j, k]
    algorithm, margin, S = policy.algorithm, policy.margin, policy.S
    value = terms[2]
    k = best_ray(algorithm, terms[0], cdot, terms[1], policy.caps, beta, margin, S, value)
    u = work.ray
    for j in range(d):
        u[j] = dirs_t[j, k]
    dot, ck, norm, unorm, cap = terms[0, k], cdot[k], terms[1, k], policy.unorm[k], policy.caps[k]
    if value[k] < 0.0:
        scale, code = 0.0, BASELINE
    else:
        if policy.refine_step > 0.0:
            h0 = policy.refine_step
            if algorithm == ROFUL_RULE:  # optimistic unit step, bonus beta
                sign, bonus = -1.0, beta
            else:  # GNOP: pessimistic unit step, bonus kappa beta
                sign, bonus = 1.0, gnop_kappa(S, margin) * beta
            state, probe, cap_pieces, cgrads = work.state, work.probe, work.caps, work.cgrads
            vecs, levels, grads = work.vecs, work.levels, work.grads
            gnorm, gfs = work.gnorm, work.gfs
            step, act, corral, lam, mu, system = (work.step, work.act, work.corral, work.lam,
                                                  work.mu, work.system)
            geometry, warm = policy.geometry, policy.refined[i]
            refine_start(state, probe, u, h0, warm, value[k])
            more = True
            while more:
                found, pieces = radial_extent(geometry, probe, h0, cap_pieces, cgrads)
                more = refine_update(theta_hat, gamma_hat, inv, beta, sign, bonus, margin, u,
                                     warm, h0, found, pieces, state, probe, cap_pieces, cgrads,
                                     vecs, levels, grads, gnorm, gfs, step, act, corral, lam,
                                     mu, system)
            for j in range(d):  # where the next stage's refinement may start
                warm[j] = u[j]
            if state[5] > 0.0:  # moved: the refined ray's terms, as the fan's are computed
                cap = state[2] * (1.0 - SHRINK)
                dot, ck, unorm = 0.0, 0.0, 0.0
                for j in range(d):
                    dot += theta_hat[j] * u[j]
                    ck += gamma_hat[j] * u[j]
                    unorm += u[j] * u[j]
                unorm = np.sqrt(unorm)
                norm = inverse_norm(chol, u, work.w)
        scale, code = ray_scale(algorithm, dot, ck, norm, unorm, cap, beta, margin, S)
    for j in range(d):
        arm[j] = max(scale, 0.0) * u[j]
    if code == BASELINE and scale == 0.0:
        return code  # the safe arm, the best
    # Moved exactly into the set (a star's arms are members already: Unmoved) and certified at
    # the point moved; else the safe arm, counted.
    if not (scale > 0.0 and pull_in(policy.geometry, arm, work.offset, work.trial)
            and certified_arm(arm, gamma_hat, chol, beta, policy.margin, policy.S, work.w)):
        fall_back(policy, i, UNCERTIFIED, arm)
        return BASELINE
    return code


@njit(inline="always")
def fall_back(policy, i, reason, arm) -> None:
    """The safe arm (the origin) into ``arm``, run ``i``'s fallback counted in the stage
    record's ``fallbacks`` and ``reasons`` (column ``reason``, of
    :data:`~sege_cvx.arm_sets.kernels.status.FALLBACK_REASONS`); ROFUL's, GNOP's, SafeTS's and
    Safe-LUCB's stages."""
    policy.fallbacks[i] += 1
    policy.reasons[i, reason] += 1
    for j in range(arm.shape[0]):
        arm[j] = 0.0


@njit(inline="always")
def _solved_arm(policy, i, status, sampled, gamma_hat, chol, beta, arm, w) -> int:
    """SafeTS's solved arm (:func:`~sege_cvx.arm_sets.kernels.registry.safe_set_arm`, in the set
    exactly) played if its status is verified, its value for the sample positive (else the safe
    arm, as good) and its bound at most ``c`` at the point played (else the safe arm, counted);
    ``scaled_step`` where the bound is active."""
    if status != VERIFIED:
        fall_back(policy, i, status, arm)
        return BASELINE
    d = arm.shape[0]
    value, dot = 0.0, 0.0
    for j in range(d):
        value += sampled[j] * arm[j]
        dot += gamma_hat[j] * arm[j]
    if not value > 0.0:
        for j in range(d):
            arm[j] = 0.0
        return BASELINE  # the safe arm is as good for the sample
    if not certified_arm(arm, gamma_hat, chol, beta, policy.margin, policy.S, w):
        fall_back(policy, i, UNCERTIFIED, arm)
        return BASELINE
    ucb = dot + beta * inverse_norm(chol, arm, w)
    return SCALED_STEP if ucb >= (1.0 - ACTIVE) * policy.margin else FULL_STEP


@njit(inline="always")
def learn_constraint(xz_sum, gamma_hat, chol, x, z, w) -> None:
    """The constraint's estimate after ``(x, z)`` entered ``V`` (``chol``: its new factor):
    ``xz_sum += z x`` and ``gamma_hat = V^{-1} xz_sum`` (``w``: scratch of length d)."""
    for a in range(x.shape[0]):
        xz_sum[a] += x[a] * z
    solve_lower(chol, xz_sum, w)
    solve_lower_transposed(chol, w, gamma_hat)


@njit(inline="always")
def learn_one(V, chol, xy_sum, theta_hat, xz_sum, gamma_hat, x, y, z, V_new, L, w) -> bool:
    """Add ``(x, y, z)``: :func:`observe_one` for ``V`` and the reward, then
    :func:`learn_constraint`."""
    if not observe_one(V, chol, xy_sum, theta_hat, x, y, V_new, L, w):
        return False
    learn_constraint(xz_sum, gamma_hat, chol, x, z, w)
    return True


@njit(inline="always")
def learn(policy, run, work, i, arm, y, code, z) -> bool:
    """The reward's update (:func:`~sege_cvx.confidence.state.learn`), then the constraint's
    with its value ``z`` (:func:`learn_constraint`)."""
    if not update_confidence(policy.confidence, run.confidence, i, arm, y, work.learn):
        return False
    learn_constraint(run.xz_sum, run.gamma_hat, run.confidence.chol, arm, z, work.learn.w)
    return True


register_stage_hooks(DirectionalStages, StageHooks(scratch, run_view, choose_arm, learn))


@njit
def learn_all(V, chol, xy_sum, theta_hat, counts, xz_sum, gamma_hat, x, y, z) -> int:
    """:func:`learn_one` for every run (the step API's ``observe``); the first run whose ``V``
    would lose definiteness (left unchanged), or -1."""
    n, d = x.shape
    V_new, L, w = np.empty((d, d)), np.empty((d, d)), np.empty(d)
    for i in range(n):
        if not learn_one(V[i], chol[i], xy_sum[i], theta_hat[i], xz_sum[i], gamma_hat[i], x[i],
                         y[i], z[i], V_new, L, w):
            return i
        counts[i] += 1
    return -1


def require_origin(policy: Policy) -> None:
    """Refuse a safe arm other than the origin, the safe arm of the ROFUL and Safe-LUCB papers'
    models, whose constraint value is 0 whatever ``gamma*``."""
    name, setting = type(policy).__name__, policy.setting
    if np.any(setting.safe_arm != 0.0):
        raise ValueError(f"{name} works from the origin, the safe arm of its authors' model: give "
                         f"safe_arm = 0 (got {setting.safe_arm.tolist()})")
    if setting.safety.safe_value != 0.0:
        raise ValueError(f"the safe arm is the origin, whose constraint value is 0, but {name} "
                         f"was told {setting.safety.safe_value!r}")


class DirectionalPolicy(Policy):
    """The base of ROFUL, GNOP and SafeTS under an unknown linear constraint with its own
    feedback: their state (one ``V`` for both estimates, ``theta_hat`` and ``gamma_hat``), the
    rays they scan, their step API and their compiled stages, for the rule of :attr:`rule`
    (:func:`ray_step`).

    A subclass sets :attr:`rule` (ROFUL and GNOP take this constructor as it is).  The safe arm
    is the origin (:func:`require_origin`).

    Parameters
    ----------
    setting : SafeSetting
        A :class:`~sege_cvx.StarSet` (its rays, compiled stages) or a convex set holding the
        origin, the origin as safe arm, and a :class:`~sege_cvx.KnownConstraint` with its own
        feedback.
    lam : float, default 1.0
    delta : float, default 0.01
        Overall risk, split between the two confidence sets (the authors' ``delta / 2``).
    radius : {"theorem1", "self_normalized"}, default "theorem1"
        ``beta``: the authors' ``beta_t`` (:mod:`sege_cvx.confidence.radius`) or the
        self-normalized bound.
    n_directions : int, optional
        Rays on a convex set (default: CLUCB's count, at least :data:`MIN_RAYS`); a star set has
        its own.
    refine : bool, default True
        ROFUL and GNOP on a convex set whose compiled geometry gives its extent along a ray
        (boxes, polytopes, balls, ellipsoids): refine the fan's best ray toward the rule's
        continuous optimum (:func:`refine_update`).  Ignored elsewhere (star sets: the authors'
        scan of their rays, unchanged).
    n_runs : int, default 1
    seed : optional
        ROFUL and GNOP draw nothing; accepted (and validated) as every policy's.

    Attributes
    ----------
    directions, caps : ndarray
        The rays ``u_k`` (rows) and their largest scales (empty where the policy scans none).
    refine_step : float
        The first step of the refinement of the best ray, the fan's angular spacing (0: the
        best ray is played as scanned).
    margin : float
        ``c`` less the safe arm's value.
    L : float
        The bound on the arms' norm in the radius.
    confidence : ConfidenceEllipsoid
        ``V`` and ``theta_hat``.
    gamma_hat : ndarray, shape (n_runs, d)
        Every run's estimate of ``gamma*``.
    """

    #: The rule of :func:`ray_step`: :data:`ROFUL_RULE`, :data:`GNOP_RULE` or :data:`TS_RULE`.
    rule: int
    safety_models = ("linear_constraint",)
    decision_names: tuple[str | None, ...] = ("full_step", "scaled_step", "baseline")

    def __init__(self, setting: SafeSetting, *, lam: float = 1.0, delta: float = 0.01,
                 radius: str = "theorem1", n_directions: int | None = None,
                 refine: bool = True, n_runs: int = 1, seed: SeedLike = None) -> None:
        super().__init__(setting, lam=lam, n_runs=n_runs, seed=seed)
        if not isinstance(refine, (bool, np.bool_)):
            raise TypeError(f"refine must be True or False, got {refine!r}")
        self.refine = bool(refine)
        arm_set: ArmSet = setting.arm_set
        name = type(self).__name__
        star = isinstance(arm_set, StarSet)
        rays = self._scans_rays(setting)
        if not (arm_set.is_convex or star):
            raise TypeError(f"{name} needs a convex set or a sc.StarSet, not {arm_set!r}")
        require_origin(self)
        d = self.d
        self.delta = as_scalar("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
        self.margin = float(setting.safety.margin)
        if star:
            directions = np.array(arm_set.directions)
            caps = np.array(arm_set.caps)
        elif not rays:  # the policy solves its own program over a convex set (SafeTS)
            directions, caps = np.empty((0, d)), np.empty(0)
        else:
            K = (max(default_arm_count(arm_set, setting.S), MIN_RAYS) if n_directions is None
                 else as_arm_count("n_directions", n_directions))
            directions = sphere_directions(d, K)
            caps = radial_caps(arm_set, directions)
            keep = caps > 0.0  # the origin on the boundary: no step along these
            if not keep.any():
                raise ValueError(f"no direction leaves the origin into {arm_set!r}")
            directions, caps = directions[keep], caps[keep]
        self.directions = np.ascontiguousarray(directions)
        #: The rays scanned (0 where SafeTS solves its program on a convex set): the default
        #: count a convex set was given, or the star set's.
        self.n_directions = int(self.directions.shape[0])
        self.caps = np.ascontiguousarray(caps, dtype=np.float64)
        self._unorm = np.ascontiguousarray(scaled_norm(self.directions, axis=1))
        self._dirs_t = np.ascontiguousarray(self.directions.T)
        self.radius = check_radius(radius)
        # One radius for both confidence sets: the larger noise, the risk split between them.
        sd = max(setting.noise_sd, setting.safety.noise_sd)
        self.L = arm_set.norm_bound()
        self._check_lam(self.L)
        self._radius = make_radius(self.radius, d, sd, self.lam, setting.S, self.L)
        self._beta = CountTable(self._radius, self.delta / 2.0)
        self.confidence = ConfidenceEllipsoid(d, self.lam, self.n_runs)
        self._xz_sum = np.zeros((self.n_runs, d))
        self.gamma_hat = np.zeros((self.n_runs, d))
        self._fallbacks = np.zeros(self.n_runs, dtype=np.int64)
        self._fallback_codes = np.zeros((self.n_runs, len(FALLBACK_REASONS)), dtype=np.int64)
        self._star = star
        # The compiled stages move an arm exactly into the set where its membership is compiled
        # (ellipsoids, balls, boxes, polytopes); a star's arms are members already.  Other sets
        # move the arms in Python, after the compiled scan (:meth:`select`).
        compiled = arm_set.compiled_arms
        geometry = None if compiled is None or star else compiled.geometry()
        # SafeTS on a convex set solves its own program: compiled where the set's geometry
        # solves it (cone sets with compiled=True), else on Clarabel from Python.
        self._solves = self.rule == TS_RULE and not star and has_safe_set_arm(geometry)
        self._geometry = geometry if has_pull_in(geometry) or self._solves else Unmoved()
        # Each run's start of SafeTS's program (the geometry's: kept between stages).
        self._starts = np.zeros((self.n_runs, 0))
        if self._solves:
            start = geometry_kernels(type(geometry)).safe_set_start(geometry)
            self._starts = np.tile(start, (self.n_runs, 1))
        self._compiled = star or self._solves or (rays and not isinstance(self._geometry,
                                                                          Unmoved))
        refines = (self.refine and self._compiled and not star and self.rule != TS_RULE
                   and d >= 2 and has_radial_extent(self._geometry))
        self.refine_step = fan_spacing(d, len(self.directions)) if refines else 0.0
        self._refined = np.zeros((self.n_runs, d))

    def _scans_rays(self, setting: SafeSetting) -> bool:
        """Whether the policy scans rays on ``setting``'s set (SafeTS solves its own program on
        a convex set)."""
        return True

    @property
    def compiled_stages(self) -> bool:
        return self._compiled

    @property
    def compiled_kernels(self) -> tuple:
        if not self._compiled:
            return ()
        return (stage_loop(DirectionalStages, type(self._geometry), type(self._radius.rule)),)

    @property
    def solver_fallbacks(self) -> np.ndarray:
        """Per run: stages whose arm failed its certificate or exact membership (the safe arm
        was played)."""
        return self._fallbacks

    @property
    def fallback_reasons(self) -> Counter[str]:
        """Why the safe arm replaced an arm: its bound or its move into the set failed
        (``"Uncertified"``), or a compiled program's status
        (:mod:`~sege_cvx.arm_sets.kernels.status`)."""
        counts = self._fallback_codes.sum(axis=0)
        return Counter({name: int(count) for name, count
                        in zip(FALLBACK_REASONS, counts, strict=True) if count})

    def radii(self) -> np.ndarray:
        """Every run's current confidence radius ``beta`` (both confidence sets')."""
        conf = self.confidence
        return self._radius.radii(conf.chol, self._beta[conf.counts])

    def summary(self, stats, stages: list[int]) -> dict:
        """The number of rays, whether the best is refined, and the confidence radius."""
        return {"n_directions": int(self.directions.shape[0]),
                "refined": bool(self.refine_step > 0.0), "radius": self.radius}

    def _draws(self, n_stages: int) -> np.ndarray:
        """SafeTS's standard normals for the next ``n_stages`` stages, ``d + 2`` a stage, each
        run's from its own generator (the same numbers whatever the stages per call); an empty
        ``(n_runs, 0, 0)`` for ROFUL and GNOP, which draw nothing."""
        if self.rule != TS_RULE:
            return np.empty((self.n_runs, 0, 0))
        return np.stack([rng.standard_normal((n_stages, self.d + 2)) for rng in self.rngs])

    def stage_record(self, t0: int, n_stages: int) -> DirectionalStages:
        """The record of the compiled stage loop (:attr:`compiled_stages`)."""
        conf = self.confidence
        table = self._beta.covering(int(conf.counts.max()) + n_stages)
        return DirectionalStages(
            confidence=conf.state(), xz_sum=self._xz_sum, gamma_hat=self.gamma_hat,
            decisions=self.decision_record(), fallbacks=self._fallbacks,
            radius=self._radius.rule, beta_table=table, algorithm=self.rule,
            dirs_t=self._dirs_t, unorm=self._unorm, caps=self.caps, margin=self.margin,
            S=self.setting.S, draws=self._draws(n_stages), geometry=self._geometry,
            refine_step=self.refine_step, refined=self._refined, solves=self._solves,
            reasons=self._fallback_codes, starts=self._starts)

    def select(self) -> np.ndarray:
        """Every run's arm by the policy's rule (the compiled stage of :func:`choose_loop`),
        certified, and moved exactly into a convex set (the safe arm, counted, where it cannot
        be)."""
        n, d = self.n_runs, self.d
        arms = np.empty((n, d))
        codes = np.empty(n, dtype=np.int8)
        kernel = choose_loop(DirectionalStages, type(self._geometry), type(self._radius.rule))
        kernel(self.stage_record(self.t + 1, 1), self.t + 1, arms, codes)
        if not self._compiled:
            arms, inside = self.setting.arm_set.pull_inside_unchecked(arms)
            played = codes != BASELINE
            ok = inside & (~played | self._certified(arms))
            if not ok.all():
                self._fallbacks += ~ok
                self._fallback_codes[:, UNCERTIFIED] += ~ok
                arms[~ok] = self.setting.safe_arm
                codes[~ok] = BASELINE
        self.last_decision = codes
        return arms

    def _certified(self, arms: np.ndarray) -> np.ndarray:
        """Per run: whether its arm's UCB ``<x, gamma_hat> + beta ||x||_{V^{-1}} <= c`` or
        ``S ||x|| <= c`` (NaN arms: False)."""
        # UCB = -LCB of -gamma_hat (negation is exact).
        ucb = -lcb_values(arms, -self.gamma_hat, self.confidence.chol, self.radii())
        with np.errstate(invalid="ignore"):
            return ((ucb <= self.margin)
                    | (self.setting.S * scaled_norm(arms, axis=1) <= self.margin))

    def observe(self, x: np.ndarray, y: np.ndarray, constraint_values: np.ndarray) -> None:
        """Record the rewards ``y`` and the constraint's values: ``V``, ``theta_hat`` and
        ``gamma_hat``."""
        conf = self.confidence
        bad = learn_all(conf.V, conf.chol, conf.xy_sum, conf.theta_hat, conf.counts, self._xz_sum,
                        self.gamma_hat, np.ascontiguousarray(x), np.ascontiguousarray(y),
                        np.ascontiguousarray(constraint_values))
        if bad >= 0:
            raise ValueError(f"run {bad}: V = lam I + sum x x^T is not numerically positive "
                             f"definite (lam is too small): use a larger lam")
