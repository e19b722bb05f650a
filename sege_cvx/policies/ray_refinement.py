r"""ROFUL's and GNOP's best ray on a convex set, refined toward their rule's continuous optimum.

On a convex set the rules scan a fan of ``K`` rays (:mod:`sege_cvx.policies.directional`).
Each rule values a direction ``u`` by ``v(u) = f(u) sigma(u)``: the valued term ``f(u) =
<theta_hat, u> + b ||u||_{V^{-1}}`` (``b = beta`` for ROFUL, ``kappa beta`` for GNOP) times the
scale ``sigma(u) = min(c / unit(u), cap(u))``, with ``unit(u) = <gamma_hat, u> -+ beta
||u||_{V^{-1}}`` (ROFUL's optimistic, GNOP's pessimistic constraint per unit step) and
``cap(u)`` the set's extent along ``u``.  ``v`` is unchanged by scaling ``u``, so its maximum
is over directions; the fan finds it to within the fan's spacing, and at the optimum the
constraint and a face of the set are typically both active, where ``v`` has a kink and the
loss is first order in the angle.  With a fan of 64 rays on a box in R^3, GNOP's regret was a
third more than with 4,096 rays, and half as much again as with its best ray refined
(``benchmarks/measure_directional_regret.py``).

The refinement starts from the direction it refined at the previous stage if that is worth more
than the fan's best ray (as the fan valued it; a first step of :data:`WARM_STEP` times the fan's
spacing), else from the fan's best ray (half the spacing), and climbs ``v`` by steepest ascent
for a nonsmooth function: ``log v = log f + min_j log sigma_j`` over the smooth pieces ``sigma_j`` of
the scale (``c / unit`` and the set's pieces of its cap,
:func:`~sege_cvx.arm_sets.kernels.registry.radial_extent`).  A step of length ``h`` goes along
the point of least norm in the convex hull of the gradients of the pieces that a step of ``h``
may make the least (:func:`min_norm_point`): every such piece rises along it, so on a ridge
where pieces meet the step follows the ridge.  The step stops short of ``h`` where the linear
model of ``log v`` along it turns down, at the crossing of two pieces (:func:`_step_length`):
it lands on the kink.  A trial direction is kept only if ``v`` grows (``h`` then doubles, up to
half the fan's spacing); else ``h`` is quartered, as it is where no direction raises every
piece within its reach.  The search ends when ``h`` is shorter than :data:`REFINE_TOL` times
the fan's spacing or after :data:`REFINE_STEPS` trials.  The value played is never below the
fan's best.

The loop is written for the compiled stage: the caller asks the set's extent at ``probe`` (a
geometry's kernel, bound when the stage loop compiles) and passes the answer to
:func:`refine_update`, which names the next direction to ask, so that no function here calls
a geometry's kernel.  The played arm is then certified and moved into the set like any
other (:mod:`sege_cvx.policies.directional`).
"""

from __future__ import annotations

import math

import numpy as np

from .._numba import njit

#: At most this many trial directions, and none at a step shorter than :data:`REFINE_TOL`
#: times the first (the fan's spacing).
REFINE_STEPS, REFINE_TOL = 16, 1e-3
#: The first step from the previous stage's refined direction, relative to the fan's spacing:
#: the estimates change by ``O(1 / t)`` a stage, and so does the optimum (measured on a box in
#: R^3 and R^5: 3e-4 and 1.4e-3 of the spacing a stage, median), so a search from there needs a
#: few trials where one from the fan's ray needs a dozen or more.
WARM_STEP = 3e-3
#: An ascent of norm at most this (the gradients of the logs are of order 1) is none.
STATIONARY = 1e-12
# The refinement's state (work.state): step length, value, cap and rows of pieces at the
# current direction, its slot of the scratch, whether it moved, trial directions asked, the
# last step's length, whether the previous stage's direction is being asked about, and the
# fan's value of its best ray.
_H, _VALUE, _CAP, _ROWS, _CUR, _MOVED, _ASKED, _LENGTH, _WARM, _FAN = range(10)
#: Length of the refinement's state.
STATE_SIZE = 10
# Rows of work.vecs: L^{-1} u, V^{-1} u.  (Scratch is indexed by row and slot, not sliced: a
# view costs two atomic reference counts, a fair part of a trial.)
_W, _MU = range(2)


def fan_spacing(d: int, K: int) -> float:
    """The angular spacing of ``K`` well-spread directions in ``R^d``: the side of a cap of
    the unit sphere's area over ``K``, ``(2 pi^{d/2} / Gamma(d/2) / K)^{1/(d-1)}`` (``2 pi /
    K`` on the circle)."""
    area = 2.0 * math.pi ** (d / 2.0) / math.gamma(d / 2.0)
    return (area / K) ** (1.0 / (d - 1))


@njit(inline="always")
def _affine_min_norm(P, idx, m, system, mu) -> bool:
    """The point of least norm in the affine hull of the rows ``P[idx[:m]]``: its weights
    ``mu[:m]`` (summing to 1) from ``[G 1; 1^T 0] [mu; nu] = [0; 1]``, ``G`` their Gram matrix,
    by Gaussian elimination with partial pivoting (``system``: scratch of at least ``m + 1``
    rows and ``m + 2`` columns).  False if the rows are affinely dependent to rounding."""
    d = P.shape[1]
    size = m + 1
    for a in range(m):
        for b in range(a, m):
            acc = 0.0
            for j in range(d):
                acc += P[idx[a], j] * P[idx[b], j]
            system[a, b] = acc
            system[b, a] = acc
        system[a, m] = 1.0
        system[m, a] = 1.0
        system[a, size] = 0.0
    system[m, m] = 0.0
    system[m, size] = 1.0
    scale = 0.0
    for a in range(m):
        scale = max(scale, system[a, a])
    for col in range(size):
        pivot = col
        for r in range(col + 1, size):
            if abs(system[r, col]) > abs(system[pivot, col]):
                pivot = r
        if not abs(system[pivot, col]) > 1e-14 * max(scale, 1.0):
            return False
        if pivot != col:
            for c in range(size + 1):
                system[col, c], system[pivot, c] = system[pivot, c], system[col, c]
        for r in range(col + 1, size):
            factor = system[r, col] / system[col, col]
            for c in range(col, size + 1):
                system[r, c] -= factor * system[col, c]
    for r in range(size - 1, -1, -1):
        acc = system[r, size]
        for c in range(r + 1, size):
            acc -= system[r, c] * system[c, size]
        system[r, size] = acc / system[r, r]
    for a in range(m):
        mu[a] = system[a, size]
    return True


# Called, not inlined (its own compiled unit: a second less to compile the refinement).
@njit
def min_norm_point(P, n, idx, lam, mu, system, out) -> float:
    """The point of least norm in the convex hull of the rows ``P[:n]`` into ``out``, its norm
    returned: Wolfe's algorithm ("Finding the nearest point in a polytope", Math. Programming
    11, 1976), exact up to rounding in finitely many steps.  A corral ``idx[:m]`` with weights
    ``lam[:m]``; a major step adds the row most below ``out``'s level, minor steps move toward
    the corral's affine minimizer and drop rows whose weight reaches 0.  Scratch: ``idx``
    (int), ``lam``, ``mu`` of length ``n + 1``, ``system`` of ``(n + 2, n + 3)``."""
    d = P.shape[1]
    if n <= 2:  # a point, or a segment in closed form
        along, ww, pp = 0.0, 0.0, 0.0
        for j in range(d):
            out[j] = P[0, j]
        if n == 2:
            for j in range(d):
                diff = P[1, j] - P[0, j]
                along += P[0, j] * diff
                ww += diff * diff
            t = min(max(-along / ww, 0.0), 1.0) if ww > 0.0 else 0.0
            for j in range(d):
                out[j] = P[0, j] + t * (P[1, j] - P[0, j])
        for j in range(d):
            pp += out[j] * out[j]
        return np.sqrt(pp)
    best, low = 0, np.inf
    for r in range(n):
        acc = 0.0
        for j in range(d):
            acc += P[r, j] * P[r, j]
        if acc < low:
            best, low = r, acc
    idx[0], lam[0], m = best, 1.0, 1
    biggest = low
    for r in range(n):
        acc = 0.0
        for j in range(d):
            acc += P[r, j] * P[r, j]
        biggest = max(biggest, acc)
    for j in range(d):
        out[j] = P[best, j]
    for _ in range(4 * n + 4):
        xx, pick, level = 0.0, -1, np.inf
        for j in range(d):
            xx += out[j] * out[j]
        for r in range(n):
            acc = 0.0
            for j in range(d):
                acc += out[j] * P[r, j]
            if acc < level:
                pick, level = r, acc
        if xx - level <= 1e-12 * biggest:
            break  # no row lies below out's level: out is the hull's least point
        present = False
        for a in range(m):
            present = present or idx[a] == pick
        if present:
            break  # rounding: the row is in the corral already
        idx[m], lam[m] = pick, 0.0
        m += 1
        for _minor in range(n + 1):
            if not _affine_min_norm(P, idx, m, system, mu):
                m -= 1  # affinely dependent: keep the corral without the newest row
                break
            positive = True
            for a in range(m):
                positive = positive and mu[a] > 0.0
            if positive:
                for a in range(m):
                    lam[a] = mu[a]
                break
            theta = 1.0
            for a in range(m):
                if mu[a] <= 0.0:
                    theta = min(theta, lam[a] / (lam[a] - mu[a]))
            kept = 0
            for a in range(m):
                weight = lam[a] + theta * (mu[a] - lam[a])
                if weight > 1e-14:
                    idx[kept], lam[kept] = idx[a], weight
                    kept += 1
            m = kept
            if m == 1:
                lam[0] = 1.0
                break
        for j in range(d):
            acc = 0.0
            for a in range(m):
                acc += lam[a] * P[idx[a], j]
            out[j] = acc
    acc = 0.0
    for j in range(d):
        acc += out[j] * out[j]
    return np.sqrt(acc)


@njit(inline="always")
def _ray_pieces(theta, gamma, inv, beta, sign, bonus, margin, k, u, caps, cgrads, vecs, levels,
                grads, gnorm, gf, slot) -> float:
    """The pieces of the value at the direction ``u``, given the set's ``k`` pieces of its
    extent along it in ``caps``, ``cgrads``: ``v = f min_j sigma_j``
    with ``f = <theta_hat, u> + bonus ||u||_{V^{-1}}`` and ``sigma_j``: ``c / unit`` (row 0,
    ``inf`` where ``unit = <gamma_hat, u> + sign beta ||u||_{V^{-1}} <= 0``) and the cap's
    (rows 1..).  Into the slot ``slot`` of ``levels`` the ``sigma_j``, of ``grads`` the
    gradients of their logs, of ``gnorm`` their norms, of ``gf`` the gradient of ``log f``.
    Returns ``v``, ``-inf`` where it is not positive."""
    d = u.shape[0]
    quad = 0.0
    for j in range(d):  # L^{-1} u
        acc = 0.0
        for m in range(j + 1):
            acc += inv[j, m] * u[m]
        vecs[_W, j] = acc
        quad += acc * acc
    norm = np.sqrt(quad)
    for j in range(d):  # V^{-1} u = L^{-T} L^{-1} u
        acc = 0.0
        for m in range(j, d):
            acc += inv[m, j] * vecs[_W, m]
        vecs[_MU, j] = acc
    dot, cdot = 0.0, 0.0
    for j in range(d):
        dot += theta[j] * u[j]
        cdot += gamma[j] * u[j]
    unit = cdot + sign * beta * norm
    f = dot + bonus * norm
    if k == 0 or not (f > 0.0 and norm > 0.0):
        return -np.inf
    for j in range(d):
        gf[slot, j] = (theta[j] + bonus * vecs[_MU, j] / norm) / f
    for r in range(k):
        levels[slot, r + 1] = caps[r]
        acc = 0.0
        for j in range(d):
            g = cgrads[r, j]
            grads[slot, r + 1, j] = g
            acc += g * g
        gnorm[slot, r + 1] = np.sqrt(acc)
    low = levels[slot, 1]
    levels[slot, 0], gnorm[slot, 0] = np.inf, 0.0  # (row 0 absent: its gradient unread)
    if unit > 0.0:
        levels[slot, 0] = margin / unit
        acc = 0.0
        for j in range(d):
            g = -(gamma[j] + sign * beta * vecs[_MU, j] / norm) / unit
            grads[slot, 0, j] = g
            acc += g * g
        gnorm[slot, 0] = np.sqrt(acc)
        low = min(low, levels[slot, 0])
    return f * low


@njit(inline="always")
def _ascent(levels, grads, gnorm, gf, act, corral, lam, mu, system, out, slot, rows,
            h) -> float:
    """The steepest ascent of ``log f + min_j log sigma_j`` for a step of length ``h``: the
    point of least norm (:func:`min_norm_point`) in the convex hull of ``gf + grad log
    sigma_j`` over the pieces within a factor ``1 + h (|grad_j| + |grad_min|)`` of the least
    (those a step of ``h`` may make the least); into ``out``, its norm returned."""
    d = gf.shape[1]
    first = 0 if levels[slot, 0] <= levels[slot, 1] else 1
    n = 0
    for r in range(rows):
        if levels[slot, r] < np.inf and levels[slot, r] <= levels[slot, first] * (
                1.0 + h * (gnorm[slot, r] + gnorm[slot, first])):
            for j in range(d):
                act[n, j] = gf[slot, j] + grads[slot, r, j]
            n += 1
    return min_norm_point(act, n, corral, lam, mu, system, out)


@njit(inline="always")
def _step_length(levels, grads, gf, step, size, slot, rows, h, logs, slopes) -> float:
    """How far to go along the ascent ``step`` (norm ``size``): the maximizer in ``(0, h]`` of
    the linear model of ``log v``, ``log f + min_j (log sigma_j + t s_j)`` with ``s_j`` the
    slope of ``log (f sigma_j)`` along the unit step.  The model is concave and piecewise
    linear; its maximizer is where its slope turns negative, at a crossing of two pieces (a
    kink of ``v``: the step lands on it, and the next step follows the ridge there), or ``h``.
    ``logs``, ``slopes``: scratch of length ``rows``."""
    d = gf.shape[1]
    base = 0.0
    for j in range(d):
        base += step[j] * gf[slot, j]
    current = 0
    for r in range(rows):
        logs[r] = np.log(levels[slot, r]) if levels[slot, r] < np.inf else np.inf
        acc = base
        for j in range(d):
            acc += step[j] * grads[slot, r, j]
        slopes[r] = acc / size
        if logs[r] < logs[current]:
            current = r
    t = 0.0
    for _ in range(rows):
        if slopes[current] <= 0.0:
            return t
        nearest, pick = h, -1
        for r in range(rows):  # the first piece the current one crosses beyond t
            if slopes[r] < slopes[current] and logs[r] < np.inf:
                cross = (logs[r] - logs[current]) / (slopes[current] - slopes[r])
                if t < cross < nearest:
                    nearest, pick = cross, r
        if pick < 0:
            return h
        t, current = nearest, pick
    return t


@njit(inline="always")
def refine_start(state, probe, u, h0, warm, fan_value) -> None:
    """Start :func:`refine_update` from the fan's best direction ``u`` (of value
    ``fan_value`` as the fan computed it) or from ``warm``, the direction refined at the
    previous stage, unless it is zero (none yet): the first direction to ask the set about,
    ``probe``, is ``warm``, kept if its value is above the fan's; else, or without it, ``u``."""
    state[_H], state[_VALUE], state[_CAP], state[_ROWS] = 0.5 * h0, -np.inf, 0.0, 0.0
    state[_CUR], state[_MOVED], state[_ASKED], state[_WARM] = 0.0, 0.0, 0.0, 0.0
    state[_FAN] = fan_value
    d = u.shape[0]
    for j in range(d):
        state[_WARM] = 1.0 if warm[j] != 0.0 else state[_WARM]
    for j in range(d):
        probe[j] = warm[j] if state[_WARM] != 0.0 else u[j]


# Called, not inlined: compiled once for every geometry and cached (inlined into each stage
# loop, it tripled their compile time).
@njit
def refine_update(theta, gamma, inv, beta, sign, bonus, margin, u, warm, h0, cap, k, state,
                  probe, caps, cgrads, vecs, levels, grads, gnorm, gfs, step, act, corral, lam,
                  mu, system) -> bool:
    """One step of the refinement (the module docstring) from the fan's best direction ``u``
    (unit, moved in place) or the previous stage's ``warm`` (see :func:`refine_start`), for the
    rule with ``unit = <gamma_hat, u> + sign beta
    ||u||_{V^{-1}}`` and ``f = <theta_hat, u> + bonus ||u||_{V^{-1}}``.

    After :func:`refine_start`, the caller asks the set's
    :func:`~sege_cvx.arm_sets.kernels.registry.radial_extent` at ``probe`` (into ``caps`` and
    ``cgrads``) and passes its ``(cap, k)`` here, while this returns True.  Returns False when
    done; then ``state[2]`` is the set's extent along the final ``u`` and ``state[5]`` whether
    ``u`` moved (else the fan's ray and cap are played).  Scratch, for dimension ``d``:
    ``state`` (:data:`STATE_SIZE`), ``probe``, ``step`` (d), ``caps`` (d + 1), ``cgrads`` (d + 1, d), ``vecs``
    (2, d), ``levels``, ``gnorm`` (2, d + 2), ``grads`` (2, d + 2, d), ``gfs`` (2, d), ``act``
    (d + 2, d), ``corral`` (int), ``lam``, ``mu`` (d + 3), ``system`` (d + 4, d + 5); the arrays
    come one by one (read from a record in this loop, they made each trial twice as slow).
    """
    d = u.shape[0]
    cur = int(state[_CUR])
    h = state[_H]
    if state[_WARM] != 0.0:  # the previous stage's direction: start there if it is better
        state[_WARM] = 0.0
        value = _ray_pieces(theta, gamma, inv, beta, sign, bonus, margin, k, probe, caps,
                            cgrads, vecs, levels, grads, gnorm, gfs, cur)
        if not value > state[_FAN]:  # else from the fan's direction, as without it
            for j in range(d):
                probe[j] = u[j]
            return True
        for j in range(d):
            u[j] = probe[j]
        state[_VALUE], state[_CAP], state[_ROWS], state[_MOVED] = value, cap, k + 1, 1.0
        h = WARM_STEP * h0
    elif state[_ASKED] == 0.0:  # the pieces at the fan's direction
        value = _ray_pieces(theta, gamma, inv, beta, sign, bonus, margin, k, probe, caps,
                            cgrads, vecs, levels, grads, gnorm, gfs, cur)
        if value == -np.inf:
            return False
        state[_VALUE], state[_CAP], state[_ROWS] = value, cap, k + 1
    else:  # the trial's
        other = 1 - cur
        value = _ray_pieces(theta, gamma, inv, beta, sign, bonus, margin, k, probe, caps,
                            cgrads, vecs, levels, grads, gnorm, gfs, other)
        if value > state[_VALUE]:
            for j in range(d):
                u[j] = probe[j]
            cur = other
            state[_VALUE], state[_CAP], state[_ROWS] = value, cap, k + 1
            state[_CUR], state[_MOVED] = cur, 1.0
            h = min(2.0 * h, 0.5 * h0)
        else:
            h = 0.25 * min(h, state[_LENGTH])
    while True:
        if h < REFINE_TOL * h0 or state[_ASKED] >= REFINE_STEPS:
            return False
        size = _ascent(levels, grads, gnorm, gfs, act, corral, lam, mu, system, step, cur,
                       int(state[_ROWS]), h)
        if size > STATIONARY:
            break
        # No direction raises every piece a step of h may make the least: a shorter step
        # makes fewer of them the least (at the optimum, none ever does).
        h *= 0.25
    state[_H] = h
    length = _step_length(levels, grads, gfs, step, size, cur, int(state[_ROWS]), h, lam, mu)
    if not length > 0.0:
        length = h
    state[_LENGTH] = length
    quad = 0.0
    for j in range(d):
        probe[j] = u[j] + length * step[j] / size
        quad += probe[j] * probe[j]
    scale = 1.0 / np.sqrt(quad)
    for j in range(d):
        probe[j] *= scale
    state[_ASKED] += 1.0
    return True


__all__ = ["REFINE_STEPS", "REFINE_TOL", "STATE_SIZE", "WARM_STEP", "fan_spacing",
           "min_norm_point", "refine_start", "refine_update"]
