"""Lifted arm sets: ``X = {x : exists u, (x, u) satisfies the constraints}``.

A convex hull by weights, an epigraph, a Minkowski sum: constraints that create auxiliary
variables ``u`` of their own.  Membership of ``x`` then needs a *witness* ``u``; a point comes
with one from the program that produced it (the auxiliary values of a greedy or LCB solve), a
convex combination of points with the same combination of their witnesses, and an arbitrary
point gets one from a small solve (:func:`~sege_cvx.conic.programs.witness_program`).

What "exact" means for a pair ``(x, u)`` (:meth:`LiftedMembership.certify`):

* every inequality and cone constraint is evaluated by cvxpy at ``(x, u)`` and must hold with
  ``tol`` (0 for exact membership), as for any other arm set;
* an attribute of an auxiliary variable (``nonneg``, ``PSD``, ...) is one of those constraints
  (:func:`plain_constraints` states it so);
* an affine equality ``a^T z + beta = 0`` (``z = (x, u)``) can rarely hold to the last bit after
  a contraction or a convex combination: it must hold to within ``tol`` plus the worst-case
  error of evaluating it in floating point, :data:`EQUALITY_ROUNDING` ``(n + 2) eps (|a|^T |z| +
  |beta|)`` with ``n`` its number of terms.  A residual that small cannot be told apart from
  zero by evaluating the constraint: the equality holds as exactly as floating point can state
  it.  Before the check the witness is moved onto the equalities for the given ``x`` by a
  least-squares correction (:meth:`LiftedMembership.repair`), so that a solver's ``u``, whose
  equalities hold only to its tolerance (1e-8), is judged on its inequalities.

cvxpy is imported by the module's functions (it is only needed once a lifted set is built).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import cvxpy as cp

#: Safety factor on the rounding-error bound ``(n + 2) eps (|a|^T |z| + |beta|)`` within which an
#: affine equality counts as holding (see the module docstring).
EQUALITY_ROUNDING = 2.0

#: Attributes of auxiliary variables that :func:`plain_constraints` states as constraints.
STATED_ATTRIBUTES = ("nonneg", "pos", "nonpos", "neg", "bounds", "symmetric", "diag", "PSD",
                     "NSD")

_EPS = np.finfo(float).eps


def check_auxiliary(aux: Sequence[cp.Variable]) -> None:
    """Refuse auxiliary variables that make the set nonconvex or that membership cannot check.

    Raises
    ------
    ValueError
        A boolean or integer variable (the set would not be convex), a complex one (arms and
        witnesses are real), or one declared with an attribute :func:`plain_constraints` does
        not state as a constraint (``sparsity``).
    """
    for v in aux:
        kinds = [k for k in ("boolean", "integer") if v.attributes.get(k)]
        if kinds:
            raise ValueError(f"arm-set constraints must be convex: variable {v.name()} {v.shape} "
                             f"is {'/'.join(kinds)}")
        kinds = [k for k in ("complex", "imag", "hermitian") if v.attributes.get(k)]
        if kinds:
            raise ValueError(f"the auxiliary variable {v.name()} {v.shape} is {kinds[0]}: arms and "
                             "their witnesses are real; write the set with real variables")
        other = [k for k, val in v.attributes.items()
                 if k not in STATED_ATTRIBUTES and val not in (False, None)]
        if other:
            raise ValueError(f"the auxiliary variable {v.name()} {v.shape} is declared {other[0]}: "
                             "state it as constraints on a plain cp.Variable instead")


def _attribute_constraints(v: cp.Variable, plain: cp.Variable) -> list:
    """The constraints on ``plain`` that say what ``v``'s attributes say."""
    import cvxpy as cp

    a = v.attributes
    out = []
    if a.get("nonneg") or a.get("pos"):  # pos: its closure (the set is compact, hence closed)
        out.append(plain >= 0)
    if a.get("nonpos") or a.get("neg"):
        out.append(plain <= 0)
    if a.get("bounds") is not None:
        for bound, upper in zip(a["bounds"], (False, True), strict=True):
            if isinstance(bound, cp.Expression):  # a Parameter: its value now, as elsewhere
                if bound.value is None:
                    raise ValueError(f"a bound of {v.name()} {v.shape} has no value: give its "
                                     "Parameter one before building the set")
                bound = bound.value
            if bound is None:
                continue
            value = np.broadcast_to(np.asarray(bound, dtype=np.float64), v.shape)
            finite = np.isfinite(value)
            if finite.all():
                out.append(plain <= value if upper else plain >= value)
            elif finite.any():  # only the finite entries bound
                held = cp.multiply(finite.astype(np.float64), plain)
                value = np.where(finite, value, 0.0)
                out.append(held <= value if upper else held >= value)
    if a.get("symmetric") or a.get("PSD") or a.get("NSD"):
        out.append(plain == plain.T)
    if a.get("PSD"):
        out.append(plain >> 0)
    if a.get("NSD"):
        out.append(plain << 0)
    if a.get("diag"):
        n = v.shape[0]
        out.extend(plain[i, j] == 0 for i in range(n) for j in range(n) if i != j)
    return out


def plain_constraints(cons: list, x) -> list:
    """``cons`` as cvxpy users write them, restated for the set's programs and certificates.

    * An auxiliary variable declared with attributes (``cp.Variable(k, nonneg=True)``, ``pos``,
      ``nonpos``, ``neg``, ``bounds=``, ``symmetric``, ``diag``, ``PSD``, ``NSD``) is replaced by a
      plain variable of the same shape and name, and its attributes by the constraints they
      mean, appended after ``cons`` (so the witness layout is unchanged).  cvxpy would otherwise
      replace such a variable when it compiles, and the witness could not be read.
    * A ``cp.Parameter`` is replaced by its value (the set is the one it describes now; a later
      change of the value does not change the set).

    Applies to variables and parameters other than those of ``x``.  Raises ``ValueError`` for a Parameter
    without a value and for attributes :func:`check_auxiliary` refuses.
    """
    import cvxpy as cp

    own = {v.id for v in x.variables()} if hasattr(x, "variables") else set()
    own_parameters = {p.id for p in x.parameters()} if hasattr(x, "parameters") else set()
    replace = {}
    extra = []
    seen = set()
    for c in cons:
        for v in c.variables():
            if v.id in own or v.id in seen:
                continue
            seen.add(v.id)
            check_auxiliary([v])
            if any(val not in (False, None) for val in v.attributes.values()):
                plain = cp.Variable(v.shape, name=v.name())
                replace[id(v)] = plain
                extra.extend(_attribute_constraints(v, plain))
        for p in c.parameters():
            if id(p) in replace or p.id in own_parameters:  # x's own data stay parameters
                continue
            if p.value is None:
                raise ValueError(f"the cvxpy Parameter {p.name()} {p.shape} has no value: give it "
                                 "one before building the set (the set uses its value then)")
            replace[id(p)] = cp.Constant(np.array(p.value, dtype=np.float64))
    if not replace:
        return list(cons)
    return [c.tree_copy(id_objects=replace) for c in cons] + extra


def flat_values(variables: Sequence[cp.Variable]) -> np.ndarray:
    """The variables' values, each flattened column-major (cvxpy's order), concatenated."""
    parts = [np.asarray(v.value, dtype=np.float64).ravel(order="F") for v in variables]
    return np.concatenate(parts) if parts else np.empty(0)


class LiftedMembership:
    """Exact membership of pairs ``(x, u)`` in a set given by constraints with auxiliary variables.

    Built from one call of ``constraints(x)``; holds cvxpy expressions (rebuilt after
    unpickling, not pickled).

    Parameters
    ----------
    dim : int
    constraints : callable
        ``constraints(x) -> list`` of cvxpy constraints.

    Attributes
    ----------
    witness_dim : int
        Total size of the auxiliary variables.
    shapes : list of tuple
        Their shapes, in witness order.
    """

    def __init__(self, dim: int, constraints: Callable[[cp.Variable], list]) -> None:
        import cvxpy as cp

        from ..conic.programs import auxiliary_variables
        from .evaluation import ConstraintEvaluator

        self.dim = dim
        self.x = cp.Variable(dim)
        cons = constraints(self.x)
        self.aux = auxiliary_variables(cons, [self.x])
        check_auxiliary(self.aux)
        self.shapes = [v.shape for v in self.aux]
        sizes = [v.size for v in self.aux]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
        self.witness_dim = int(self.offsets[-1])
        self.evaluator = ConstraintEvaluator(cons, [self.x, *self.aux])
        self._extract_equalities()

    # ----------------------------------------------------------------- equalities
    def _extract_equalities(self) -> None:
        """``[A_x A_u] z + beta`` of the stacked equalities, by evaluating them at ``z = 0`` and
        at each unit vector (they are affine: DCP)."""
        n = self.dim + self.witness_dim
        z = np.zeros(n)
        beta = self.evaluator.equality_residuals(self.values(z[:self.dim], z[self.dim:]))
        A = np.empty((beta.size, n))
        for j in range(n):
            z[j] = 1.0
            A[:, j] = self.evaluator.equality_residuals(self.values(z[:self.dim], z[self.dim:])) - beta
            z[j] = 0.0
        self._abs_A, self._abs_beta = np.abs(A), np.abs(beta)
        terms = np.count_nonzero(A, axis=1) + (beta != 0)
        #: Per equality row: EQUALITY_ROUNDING (n + 2) eps, times the terms' magnitude at a point.
        self._round = EQUALITY_ROUNDING * (terms + 2.0) * _EPS
        # The least-squares correction of u onto the equalities for a given x.
        self._pinv_u = np.linalg.pinv(A[:, self.dim:]) if beta.size else None

    def values(self, x: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, ...]:
        """The variables' values at ``(x, u)``, in the evaluator's order (``u`` split and each
        part reshaped column-major, cvxpy's order)."""
        return (np.asarray(x, dtype=np.float64),
                *(np.asarray(u[lo:hi]).reshape(shape, order="F")
                  for shape, lo, hi in zip(self.shapes, self.offsets[:-1], self.offsets[1:],
                                           strict=True)))

    def _eq_tolerance(self, x: np.ndarray, u: np.ndarray, tol: float) -> np.ndarray:
        z = np.abs(np.concatenate([x, u]))
        return tol + self._round * (self._abs_A @ z + self._abs_beta)

    def repair(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        """``u`` moved onto the equalities for this ``x`` (least-squares, two refinement steps);
        ``u`` itself where they already hold to rounding."""
        return self._repaired(x, u)[0]

    def _repaired(self, x: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, tuple, np.ndarray]:
        """:meth:`repair`, with the variables' values and the equalities' residuals at the ``u``
        it returns (each residual evaluated once)."""
        values = self.values(x, u)
        r = self.evaluator.equality_residuals(values)
        for _ in range(2):  # at most two least-squares corrections
            if (self._pinv_u is None or not np.isfinite(r).all()
                    or (np.abs(r) <= self._eq_tolerance(x, u, 0.0)).all()):
                break
            u = u - self._pinv_u @ r
            values = self.values(x, u)
            r = self.evaluator.equality_residuals(values)
        return u, values, r

    # ----------------------------------------------------------------- membership
    def holds(self, x: np.ndarray, u: np.ndarray, tol: float) -> bool:
        """Whether ``(x, u)`` satisfies every constraint: inequalities and cones with ``tol``,
        equalities with ``tol`` plus their rounding bound (module docstring)."""
        values = self.values(x, u)
        return self._holds(x, u, values, self.evaluator.equality_residuals(values), tol)

    def _holds(self, x: np.ndarray, u: np.ndarray, values: tuple, residuals: np.ndarray,
               tol: float) -> bool:
        if not (np.isfinite(x).all() and np.isfinite(u).all()):
            return False
        if residuals.size and not (np.abs(residuals) <= self._eq_tolerance(x, u, tol)).all():
            return False
        return self.evaluator.inequalities_hold(values, tol)

    def certify(self, x: np.ndarray, u: np.ndarray, tol: float) -> tuple[bool, np.ndarray]:
        """:meth:`repair` then :meth:`holds`: ``(whether it holds, the repaired witness)``."""
        if not (np.isfinite(x).all() and np.isfinite(u).all()):
            return False, u
        u, values, residuals = self._repaired(x, u)
        return self._holds(x, u, values, residuals, tol), u

    def contraction_start(self, x: np.ndarray, u: np.ndarray, center: list[np.ndarray]) -> float:
        """:meth:`~sege_cvx.arm_sets.evaluation.ConstraintEvaluator.contraction_start` of the pair
        (``center``: the inequalities' values at the interior pair); 0 if it cannot say."""
        start = self.evaluator.contraction_start(self.values(x, u), center)
        return 0.0 if np.isnan(start) else start


def pull_in_pairs(points: np.ndarray, witnesses: np.ndarray, certify, center: np.ndarray,
                  center_witness: np.ndarray,
                  start: Callable[[np.ndarray, np.ndarray], float] | None = None) -> np.ndarray:
    """Move each pair ``(x, u)`` exactly into the lifted set, in place; returns ``ok``.

    The schedule of :meth:`~sege_cvx.arm_sets.base.ArmSet.pull_inside`, applied to the pair:
    ``(c, u_c) + (1 - eps)((x, u) - (c, u_c))`` toward the certified interior pair for ``eps``
    from 1e-15 up to :data:`~sege_cvx.arm_sets.kernels.pull_in.MAX_CONTRACTION` (or 16 ulps of ``x``'s
    coordinates), the least that :func:`certify` accepts at ``tol=0``, searched from
    ``start(x, u)`` (:func:`sege_cvx.arm_sets.kernels.pull_in.least_contraction`).  Row by row: a row's result
    does not depend on the others.

    Parameters
    ----------
    points, witnesses : ndarray, shapes (n, d) and (n, k)
        Changed in place (a witness is stored repaired even where its point did not move).
    certify : callable
        ``certify(x, u, tol) -> (bool, u)``, as :meth:`LiftedMembership.certify`.
    center, center_witness : ndarray
        A certified pair ``(c, u_c)`` in the relative interior (the exploration centre).
    start : callable, optional
        ``start(x, u) -> eps``, where the search starts (default: the schedule's first).
    """
    from .kernels import pull_in as _pull_in

    n = points.shape[0]
    ok = np.zeros(n, dtype=bool)
    for i in range(n):
        x, u = points[i], witnesses[i]
        if not (np.isfinite(x).all() and np.isfinite(u).all()):
            continue
        good, fixed = certify(x, u, 0.0)
        if good:
            witnesses[i], ok[i] = fixed, True
            continue
        offset, w_offset = x - center, u - center_witness

        def trial(eps: float, offset=offset, w_offset=w_offset):
            factor = 1.0 - eps
            point = center + factor * offset
            good, fixed = certify(point, center_witness + factor * w_offset, 0.0)
            return (point, fixed) if good else None

        limit = min(1.0, _pull_in.contraction_limit(x, center, offset))
        moved = _pull_in.least_contraction(trial, limit, 0.0 if start is None else start(x, u))
        if moved is not None:
            points[i], witnesses[i] = moved
            ok[i] = True
    return ok
