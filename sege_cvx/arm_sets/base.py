"""The arm-set interface: a compact convex set with its greedy and LCB programs.

Every arm set gives its cvxpy representation (:meth:`ArmSet.constraints`); from it the base
class compiles, once per set, the greedy linear program and the LCB-arm SOCP on Clarabel
(:mod:`sege_cvx.conic`).  Subclasses with closed forms (ellipsoid, ball, box) override the
corresponding ``_closed_form`` hooks; ``method="auto"`` uses a closed form where there is one.

A *lifted* set (``witness_dim > 0``: constraints with auxiliary variables, :mod:`.lifted`)
certifies each arm together with a witness, the auxiliary values it came with; every batch of
arms carries its witnesses (an empty second axis for other sets).

The programs, and with them cvxpy and Clarabel, are imported when first compiled: a set whose
closed forms serve every call never loads them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from functools import cached_property
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .._rowwise import row_dots
from .._validation import (
    as_batch_of_vectors,
    as_finite_array,
    as_radius_batch,
    as_scalar,
    as_vector,
    format_value,
    scaled_norm,
)
from ..confidence import cholesky
from ..confidence.validation import as_spd_batch
from ..conic.errors import SolverFailure
from .exploration import MIN_SOLVER_SCALE, Exploration, inscribed_cross_polytope
from .kernels import pull_in as _pull_in
from .scaling import scale_directions, scale_lcb_data

if TYPE_CHECKING:
    import cvxpy as cp

    from ..conic.compiled import CompiledConicProgram

#: Largest relative contraction toward the set's certified interior point used to move a
#: solver's slightly infeasible point exactly into the set (:meth:`ArmSet.pull_inside`).
MAX_CONTRACTION = _pull_in.MAX_CONTRACTION

#: Relative widening of solver-computed support values in :meth:`ArmSet.bounding_box`.
SUPPORT_MARGIN = 1e-5

#: Agreement required by ``cross_check``: objective (relative) and arm (relative to its scale).
CROSS_CHECK_OBJECTIVE_RTOL = 1e-7
CROSS_CHECK_ARM_RTOL = 1e-5

LCB_METHODS = ("auto", "solver", "closed_form")


class BatchArms(NamedTuple):
    """Arms computed for a batch of instances.

    Attributes
    ----------
    arms : ndarray, shape (n, d)
        The arms; rows of failed instances hold NaN.
    ok : ndarray of bool, shape (n,)
        Instances that succeeded and whose arm was verified to lie in the set.
    status : list of str
        Per instance: ``"closed_form"``, Clarabel's accepted status, or why it failed
        (Clarabel's status, ``"NotMember"``, ``"NotFinite"``, or ``"error: <type>"`` for an
        exception raised inside the solve).
    witnesses : ndarray, shape (n, witness_dim)
        Each arm's witness, certified with it (lifted sets; rows of failed instances hold NaN).
        Shape ``(n, 0)`` for other sets.
    """

    arms: np.ndarray
    ok: np.ndarray
    status: list[str]
    witnesses: np.ndarray


class CrossCheckError(AssertionError):
    """The solver and the closed form disagree beyond the documented tolerances."""


class ArmSet(ABC):
    """A compact convex set of arms in ``R^d`` (or a finite one: ``is_convex`` False).

    Subclasses implement :meth:`constraints` and :meth:`contains`; they may override the
    closed-form hooks.  All batched methods accept a single vector ``(d,)`` or a batch
    ``(n, d)`` and return the same layout.

    Arm sets pickle (and copy): the caches named in ``_UNPICKLED_CACHES`` are left out and
    rebuilt at first use, while certified data computed once (bounding box, exploration
    ellipsoid or cross-polytope) is kept, so that a loaded set solves nothing it had solved.
    """

    dim: int

    #: Whether the set is convex, so that mixtures of its arms are arms (SEGE's exploration).
    #: False for :class:`~sege_cvx.arm_sets.FiniteArmSet`, which has no cvxpy representation.
    is_convex: bool = True
    #: Size of a witness: the auxiliary variables of a lifted set's constraints (:mod:`.lifted`);
    #: 0 for a set described by ``x`` alone.
    witness_dim: int = 0

    #: The data of compiled per-point greedy and LCB arms, for sets that have them (ellipsoids:
    #: :class:`~sege_cvx.arm_sets.ellipsoid.arms.EllipsoidArms`; boxes and polytopes:
    #: :class:`~sege_cvx.arm_sets.polytope.arms.PolytopeArms`; convex hulls:
    #: :class:`~sege_cvx.arm_sets.hull.arms.HullArms`); SEGE then runs whole stages as
    #: compiled code.  ``None``: SEGE calls the set's methods.
    compiled_arms = None

    #: Lazily built attributes left out of a pickle: they hold Clarabel solvers and cones, which
    #: do not pickle, or cvxpy expressions, bulky to ship and rebuilt cheaply from
    #: :meth:`constraints`.
    #: Rebuilt programs solve each instance from scratch (they never warm start), so a loaded
    #: set returns the same arms bit for bit; only a program's ``tier_counts`` restart at zero.
    #: Subclasses with more such caches extend this tuple.
    _UNPICKLED_CACHES: tuple[str, ...] = ("_greedy_program", "_lcb_program")

    def __getstate__(self) -> dict:
        """The instance dictionary without the caches named in ``_UNPICKLED_CACHES``.

        Nothing else is needed to load: the caches are ``cached_property`` values, recomputed
        when absent from the instance dictionary.
        """
        state = self.__dict__.copy()
        for name in self._UNPICKLED_CACHES:
            state.pop(name, None)
        return state

    # ----------------------------------------------------------------- representation
    @abstractmethod
    def constraints(self, x: cp.Variable) -> list:
        """cvxpy constraints describing ``x in X``."""

    def fingerprint_data(self) -> dict:
        """The data that defines the set, exactly: what a problem's fingerprint records of it
        (:meth:`sege_cvx.problems.problem.BanditProblem.fingerprint`), so that a sweep resumed
        or computed elsewhere is known to play the same set.

        Sets given by numbers return them (an ellipsoid's centre and shape, a polytope's rows);
        this default canonicalizes :meth:`constraints` into the cone program cvxpy gives
        Clarabel, ``A x + s = b, s in K``: the same constraints give the same data in every
        process.

        Returns
        -------
        dict
            Plain data: strings, numbers and numpy arrays.
        """
        import cvxpy as cp
        import scipy.sparse as sp

        from ..conic.canonical import clarabel_problem_data

        x = cp.Variable(self.dim)
        data, _, _ = clarabel_problem_data(cp.Problem(cp.Minimize(0), self.constraints(x)))
        A = sp.csc_matrix(data["A"])
        A.sort_indices()
        dims = data["dims"]
        return {"kind": "cone program", "dim": self.dim, "A_shape": list(A.shape),
                "A_indptr": A.indptr.astype(np.int64), "A_indices": A.indices.astype(np.int64),
                "A_data": np.asarray(A.data, dtype=np.float64),
                "b": np.asarray(data["b"], dtype=np.float64),
                "cones": {"zero": dims.zero, "nonneg": dims.nonneg, "exp": dims.exp,
                          "soc": list(dims.soc), "psd": list(dims.psd),
                          "p3d": [float(p) for p in getattr(dims, "p3d", [])]}}

    def contains(self, x: np.ndarray, tol: float = 1e-9) -> bool | np.ndarray:
        """Whether ``x`` (or each row of ``x``) lies in the set, up to ``tol``.

        On a lifted set (``witness_dim > 0``) a witness is first found by a small solve, then
        ``(x, witness)`` is checked: membership is decided by that solve, within its tolerance
        (about 1e-8), so a point that close to the boundary may be reported outside for a
        smaller ``tol``.

        Parameters
        ----------
        x : array_like, shape (d,) or (n, d)
        tol : float, default 1e-9
            Allowed constraint violation (0 for exact membership).

        Returns
        -------
        bool, or ndarray of bool of shape (n,)
        """
        xs, single = as_batch_of_vectors("x", x, self.dim)
        inside = self._inside(xs, check_tol(tol))
        return bool(inside[0]) if single else inside

    @abstractmethod
    def _inside(self, xs: np.ndarray, tol: float) -> np.ndarray:
        """Unvalidated membership of the rows of ``xs`` (NaN rows are outside)."""

    # ----------------------------------------------------------------- compiled programs
    @cached_property
    def _greedy_program(self) -> CompiledConicProgram:
        from ..conic.programs import greedy_program

        return greedy_program(self.dim, self.constraints)

    @cached_property
    def _lcb_program(self) -> CompiledConicProgram:
        from ..conic.programs import lcb_arm_program

        return lcb_arm_program(self.dim, self.constraints)

    @property
    def greedy_program(self) -> CompiledConicProgram:
        """The compiled conic program of greedy arms, ``max <x, theta>`` over the set, built on
        first use (:class:`~sege_cvx.conic.compiled.CompiledConicProgram`: ``solve(theta)``,
        its Clarabel ``solvers``, ``tier_counts``): what :meth:`greedy_arm` solves where the
        set has no closed form, for inspection and benchmarks."""
        return self._greedy_program

    @property
    def lcb_program(self) -> CompiledConicProgram:
        """The compiled conic program of LCB arms (eq. (lcb arm)), built on first use, as
        :attr:`greedy_program`: what :meth:`lcb_arm` solves with ``method="solver"``."""
        return self._lcb_program

    # ----------------------------------------------------------------- greedy arm
    def support(self, theta: np.ndarray) -> np.ndarray | float:
        """Support function ``h(theta) = max_{x in X} <x, theta>``."""
        thetas, single = as_batch_of_vectors("theta", theta, self.dim)
        values = row_dots(self._checked(self.greedy_arm_batch(thetas)), thetas)
        if not np.all(np.isfinite(values)):
            raise ValueError(f"theta {format_value(thetas[~np.isfinite(values)][0])} gives a support value "
                             "beyond the float range: rescale the problem")
        return float(values[0]) if single else values

    def constrained_support(self, theta: np.ndarray, gamma: np.ndarray, limit: float) -> float:
        """``max <x, theta>`` over the arms ``x`` with ``<x, gamma> <= limit``: the optimal reward
        under an unknown linear constraint (:mod:`sege_cvx.safety`), computed once per
        problem.  Default: one conic program on Clarabel (cvxpy), solved to 1e-10.

        Raises
        ------
        sege_cvx.SolverFailure
            The program is infeasible or the solver failed.
        """
        import cvxpy as cp

        from ..conic.canonical import solve_on_clarabel

        theta = as_vector("theta", theta, self.dim)
        gamma = as_vector("gamma", gamma, self.dim)
        limit = as_scalar("limit", limit)
        x = cp.Variable(self.dim)
        problem = cp.Problem(cp.Maximize(theta @ x), [*self.constraints(x), gamma @ x <= limit])
        try:
            value = solve_on_clarabel(problem, tol_gap_abs=1e-10, tol_gap_rel=1e-10,
                                      tol_feas=1e-10)
        except cp.error.SolverError as exc:
            raise SolverFailure(f"the constrained optimum failed: {exc}") from exc
        if problem.status != cp.OPTIMAL or value is None or not np.isfinite(value):
            raise SolverFailure(f"the constrained optimum has status {problem.status}")
        return float(value)

    def greedy_arm(self, theta: np.ndarray) -> np.ndarray:
        """``argmax_{x in X} <x, theta>`` (paper eq. (greedy arm) for an ellipsoid).

        Raises
        ------
        sege_cvx.SolverFailure
            The solver's status was not one its accuracy tier accepts
            (:data:`sege_cvx.conic.compiled.TIERS`), or its point could not be verified in the set.
        """
        thetas, single = as_batch_of_vectors("theta", theta, self.dim)
        arms = self._checked(self.greedy_arm_batch(thetas))
        return arms[0] if single else arms

    def greedy_arm_batch(self, thetas: np.ndarray) -> BatchArms:
        """Greedy arms for ``(n, d)`` directions, unvalidated; for simulation loops.

        Never raises for a solver failure: failed instances are flagged in the result.
        Directions are first scaled exactly to order one (:mod:`.scaling`).
        """
        thetas = scale_directions(thetas)
        if self.has_closed_form_greedy:
            return self._closed_form_each(self._greedy_closed_form, thetas)
        return self._solve_each(self._greedy_program, thetas)

    def _greedy_points_unverified(self, thetas: np.ndarray) -> np.ndarray:
        """Greedy points for ``(n, d)`` directions, to measure with (the discretization's
        arm-count search and error, :mod:`.discretization`), not to play.  Here the verified
        arms of :meth:`greedy_arm_batch`; a set whose proof of membership costs far more than
        the points' values need may return them unproven
        (:class:`~sege_cvx.arm_sets.generic.ConvexArmSet`).

        Raises
        ------
        sege_cvx.SolverFailure
            An arm failed.
        """
        return self._checked(self.greedy_arm_batch(thetas))

    @property
    def has_closed_form_greedy(self) -> bool:
        """Whether :meth:`greedy_arm` has an exact closed form for this set."""
        return False

    def _greedy_closed_form(self, thetas: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _closed_form_each(self, compute, *batches: np.ndarray) -> BatchArms:
        """A batched closed form, verified like a solver's points (:meth:`_verified`).

        Should it raise, each instance is computed alone, so that a fault fails only the
        instance that causes it (its status records the exception), as in :meth:`_solve_each`.
        """
        n = len(batches[0])
        try:
            # A copy: _verified moves rows in place, and a closed form may return shared data.
            return self._verified(np.array(compute(*batches), dtype=np.float64, order="C"),
                                  ["closed_form"] * n, np.full((n, self.witness_dim), np.nan))
        except Exception:
            points = np.full((n, self.dim), np.nan)
            status = []
            for i in range(n):
                try:
                    points[i] = compute(*(b[i:i + 1] for b in batches))[0]
                    status.append("closed_form")
                except Exception as exc:
                    status.append(_error_status(exc))
            return self._verified(points, status, np.full((n, self.witness_dim), np.nan))

    def _solve_each(self, program: CompiledConicProgram, *batches: np.ndarray) -> BatchArms:
        """Solve ``program`` per instance, then verify the points (see :meth:`_verified`).

        Any exception inside a solve (a failed status, or an error raised by the solver or its
        binding) marks that instance failed; ``KeyboardInterrupt`` and ``SystemExit`` propagate.
        """
        n = len(batches[0])
        points = np.full((n, self.dim), np.nan)
        witnesses = np.full((n, self.witness_dim), np.nan)
        status = []
        for i, args in enumerate(zip(*batches, strict=True)):
            try:
                solution = program.solve(*args)
            except SolverFailure as exc:
                status.append(exc.status)
                continue
            except Exception as exc:
                status.append(_error_status(exc))
                continue
            points[i] = solution.x
            if self.witness_dim:
                witnesses[i] = solution.aux
            status.append(solution.status)
        return self._verified(points, status, witnesses)

    def _verified(self, points: np.ndarray, status: list[str], witnesses: np.ndarray) -> BatchArms:
        """Keep the points that lie in the set exactly (``tol=0``), after :meth:`pull_inside`.

        ``points`` (and ``witnesses``, a lifted set's: each point's own) are the caller's own new
        arrays: their rows are moved into the set in place.  Rows already marked failed in
        ``status`` (NaN points) stay failed; others become ``"NotFinite"`` or ``"NotMember"`` if
        they cannot be verified (a closed form gives no witnesses: on a lifted set it must
        return them, as :class:`~sege_cvx.arm_sets.hull.ConvexHull` does).
        """
        ok = self._pull_in_with(points, witnesses)
        if ok.all():  # the common case, kept cheap for simulation loops
            return BatchArms(points, ok, status, witnesses)
        for i in np.flatnonzero(~ok):
            if np.all(np.isfinite(points[i])):
                status[i] = "NotMember"
            elif status[i] in ("Solved", "AlmostSolved", "closed_form"):
                status[i] = "NotFinite"
        return BatchArms(np.where(ok[:, None], points, np.nan), ok, status,
                         np.where(ok[:, None], witnesses, np.nan))

    def pull_inside(
        self, points: np.ndarray, witnesses: np.ndarray | None = None, *,
        return_witnesses: bool = False,
    ) -> tuple[np.ndarray, np.ndarray] | tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Move points that lie just outside the set exactly into it.

        Each row failing ``contains(tol=0)`` is replaced by the least contraction
        ``c + (1 - eps)(x - c)`` toward the certified interior point ``c`` of :meth:`exploration`
        that passes, for ``eps`` from 1e-15 (rounding) up to :data:`MAX_CONTRACTION` (solver
        tolerance), in steps of 10.  Solvers and rounding leave points feasible only up to a
        tolerance; by convexity the contraction moves them inside by a distance of order
        ``eps ||x - c||``.  Sets given by cvxpy inequalities start the search at the contraction
        convexity guarantees from the constraints' values at ``x`` and ``c``, and step down from
        there (:func:`sege_cvx.arm_sets.kernels.pull_in.least_contraction`): about two tests instead of up to
        eleven, and the same contraction wherever passing is monotone in ``eps``.  Far from the
        origin the floats themselves are coarser than that (spacing 1.2e-4 at 1e12): the limit
        is then raised to 16 ulps of the coordinates.

        On a lifted set (``witness_dim > 0``) each point is certified with a witness: the pair
        ``(x, u)`` is contracted toward the certified interior pair ``(c, u_c)`` (the exploration
        centre and its witness) and checked at ``tol=0`` (:mod:`.lifted`: equalities to their
        rounding bound).  Witnesses not given are found by a small solve per point
        (:func:`~sege_cvx.conic.programs.witness_program`); a convex combination of certified
        arms should pass the same combination of their witnesses.  A
        :class:`~sege_cvx.arm_sets.ConvexHull` proves each point exactly from its weights instead
        (:func:`~sege_cvx.arm_sets.hull.arms.pull_into_hull`).  Other sets ignore
        ``witnesses``.  Rows already in the set exactly (``contains(tol=0)``) are returned
        unchanged.

        Parameters
        ----------
        points : ndarray, shape (n, d)
        witnesses : ndarray, shape (n, witness_dim), optional
            The points' witnesses (lifted sets).
        return_witnesses : bool, default False
            Also return the witnesses the points were certified with.

        Returns
        -------
        points : ndarray, shape (n, d)
            Rows in the set (unchanged where they already were).
        witnesses : ndarray, shape (n, witness_dim)
            Only with ``return_witnesses``: each row's certified witness (NaN rows where not ok;
            shape ``(n, 0)`` for other sets).
        ok : ndarray of bool, shape (n,)
            False where no contraction up to :data:`MAX_CONTRACTION` sufficed (or, on a lifted
            set, no witness was found).

        Raises
        ------
        ValueError, TypeError
            Points (or witnesses) of the wrong shape, not numbers, or not finite: NaN or inf
            has no place in the set to be moved to.
        """
        points = as_finite_array("points", points)
        if points.ndim != 2 or points.shape[1] != self.dim:
            raise ValueError(f"points must have shape (n, {self.dim}), got {points.shape}")
        if witnesses is not None:
            witnesses = as_finite_array("witnesses", witnesses)
        moved, found, ok = self.pull_inside_unchecked(points, witnesses, return_witnesses=True)
        # Rows in the set exactly stay as they are, even where the pull-in's own certificate (a
        # hull's, from the weights) would have moved them.
        inside = self._inside(points, 0.0)
        moved[inside] = points[inside]
        ok = ok | inside
        return (moved, found, ok) if return_witnesses else (moved, ok)

    def pull_inside_unchecked(self, points: np.ndarray, witnesses: np.ndarray | None = None, *,
                              return_witnesses: bool = False):
        """:meth:`pull_inside` without checking its input, for the policies' own arrays: a row
        that is not finite is reported not ``ok`` (the policy then falls back to a safe arm)."""
        points = np.array(points, dtype=np.float64, order="C")  # a copy: moved in place
        n = points.shape[0]
        if self.witness_dim == 0:
            ws = np.empty((n, 0))
        elif witnesses is None:
            ws = self._find_witnesses(points)
        else:
            ws = np.array(witnesses, dtype=np.float64, order="C")
            if ws.shape != (n, self.witness_dim):
                raise ValueError(f"witnesses must have shape ({n}, {self.witness_dim}), "
                                 f"got {ws.shape}")
        ok = self._pull_in_with(points, ws)
        if not return_witnesses:
            return points, ok
        return points, np.where(ok[:, None], ws, np.nan), ok

    def _pull_in_with(self, points: np.ndarray, witnesses: np.ndarray) -> np.ndarray:
        """:meth:`_pull_in`, or for a lifted set the pairs' pull-in, in place on both arrays."""
        if self.witness_dim == 0:
            return self._pull_in(points)
        from .lifted import pull_in_pairs

        expl = self.exploration()
        return pull_in_pairs(points, witnesses, self._certify_pair, expl.center,
                             expl.center_witness, self._pair_contraction_start)

    def _certify_pair(self, x: np.ndarray, u: np.ndarray, tol: float) -> tuple[bool, np.ndarray]:
        """Lifted sets: whether ``(x, u)`` is in the set, and the repaired witness."""
        raise NotImplementedError

    def _find_witnesses(self, points: np.ndarray) -> np.ndarray:
        """Lifted sets: a witness per row from a solve (NaN rows where it failed)."""
        raise NotImplementedError

    def _pull_in(self, points: np.ndarray) -> np.ndarray:
        """:meth:`pull_inside` in place on ``points`` (C-ordered float64); returns ``ok``.

        Row by row, searching the schedule from :meth:`_contraction_start`
        (:func:`sege_cvx.arm_sets.kernels.pull_in.least_contraction`); sets with a cheap compiled
        membership test override it with the schedule compiled per row
        (:mod:`sege_cvx.arm_sets.kernels.pull_in`).
        """
        ok = self._inside(points, 0.0)
        if ok.all():
            return ok
        center = self.exploration().center
        # Rows with NaN or inf cannot be moved in.
        for i in np.flatnonzero(~ok & np.all(np.isfinite(points), axis=1)):
            x = points[i]
            offset = x - center

            def trial(eps: float, offset=offset) -> np.ndarray | None:
                point = center + (1.0 - eps) * offset
                return point if self._inside(point[None], 0.0)[0] else None

            moved = _pull_in.least_contraction(
                trial, _pull_in.contraction_limit(x, center, offset), self._contraction_start(x))
            if moved is not None:
                points[i], ok[i] = moved, True
        return ok

    def _contraction_start(self, x: np.ndarray) -> float:
        """Where :meth:`_pull_in`'s search starts for ``x`` (0: the schedule's first contraction);
        sets that can bound the contraction ``x`` needs say so."""
        return 0.0

    def _pair_contraction_start(self, x: np.ndarray, u: np.ndarray) -> float:
        """Lifted sets: :meth:`_contraction_start` for the pair ``(x, u)``."""
        return 0.0

    @staticmethod
    def _checked(result: BatchArms) -> np.ndarray:
        """The arms, or :class:`SolverFailure` naming the first failed instance and its status."""
        if not result.ok.all():
            i = int(np.argmin(result.ok))
            status = result.status[i]
            what = "returned a point outside the set" if status == "NotMember" else "failed"
            raise SolverFailure(f"instance {i}: solver {what} (status {status})", status=status)
        return result.arms

    # ----------------------------------------------------------------- LCB arm
    def lcb_arm(
        self,
        theta_hat: np.ndarray,
        V: np.ndarray,
        radius: float | np.ndarray,
        method: str = "auto",
        cross_check: bool = False,
    ) -> np.ndarray:
        """The LCB arm ``argmax_{x in X} <x, theta_hat> - r ||x||_{V^{-1}}`` (paper eq. (lcb arm)).

        Parameters
        ----------
        theta_hat : ndarray, shape (d,) or (n, d)
            Least-squares estimates.
        V : ndarray, shape (d, d) or (n, d, d)
            Information matrices (symmetric positive definite).
        radius : float or ndarray of shape (n,)
            Confidence radii ``r >= 0``.
        method : {"auto", "solver", "closed_form"}
            ``"solver"``: the SOCP on Clarabel, compiled once per arm set.  ``"closed_form"``:
            the exact fast path (sets that have one).  ``"auto"``: closed form where there is one.
        cross_check : bool
            Solve both ways and raise :class:`CrossCheckError` on disagreement (objective
            beyond 1e-7 relative, arm beyond 1e-5 relative).

        Returns
        -------
        ndarray, shape (d,) or (n, d)

        Raises
        ------
        sege_cvx.SolverFailure
            The solver's status was not one its accuracy tier accepts
            (:data:`sege_cvx.conic.compiled.TIERS`), or its point could not be verified in the set.
        """
        if (self.compiled_arms is not None and not cross_check and isinstance(method, str)
                and method in ("auto", "closed_form")):
            # One instance in float64 arrays: validated and computed in one compiled call.
            arm = self.compiled_arms.checked_lcb_arm(theta_hat, V, radius)
            if arm is not None:
                return arm
        thetas, single = as_batch_of_vectors("theta_hat", theta_hat, self.dim)
        _, chol = as_spd_batch("V", V, self.dim)
        n = max(thetas.shape[0], chol.shape[0])
        if thetas.shape[0] not in (1, n) or chol.shape[0] not in (1, n):
            raise ValueError(f"theta_hat has {thetas.shape[0]} rows but V has {chol.shape[0]}")
        if thetas.shape[0] != n:
            thetas = np.broadcast_to(thetas, (n, self.dim))
        # The Cholesky factor that proved V positive definite carries everything else.
        if chol.shape[0] != n:
            chol = np.broadcast_to(chol, (n, self.dim, self.dim))
        thetas, chols = np.ascontiguousarray(thetas), np.ascontiguousarray(chol)
        radii = as_radius_batch("radius", radius, n)
        if not isinstance(method, str) or method not in LCB_METHODS:
            raise ValueError(f"method must be one of {LCB_METHODS}, got {method!r}")
        if (method == "closed_form" or cross_check) and not self.has_closed_form_lcb:
            raise ValueError(f"{type(self).__name__} has no closed-form LCB arm; use 'solver'")
        if cross_check:
            closed = self._checked(self.lcb_arm_batch(thetas, chols, radii, "closed_form"))
            solved = self._checked(self.lcb_arm_batch(thetas, chols, radii, "solver"))
            self._cross_check(closed, solved, thetas, chols, radii)
            arms = closed
        else:
            arms = self._checked(self.lcb_arm_batch(thetas, chols, radii, method))
        return arms[0] if single and n == 1 else arms

    def lcb_arm_batch(
        self, thetas: np.ndarray, chols: np.ndarray, radii: np.ndarray, method: str = "auto"
    ) -> BatchArms:
        """LCB arms from ``(n, d)`` estimates, ``(n, d, d)`` lower Cholesky factors of ``V`` and
        ``(n,)`` radii.

        Unvalidated, for simulation loops.  Never raises for a solver failure: failed or
        unverified instances are flagged in the result and the caller falls back to a provably
        safe arm.  Each instance is computed alone, whatever the batch.
        """
        if method == "closed_form" or (method == "auto" and self.has_closed_form_lcb):
            return self._closed_form_each(self._lcb_closed_form, thetas, chols, radii)
        # M = r L^{-1} up to an exact power of two (see conic.programs and .scaling).
        return self._solve_each(self._lcb_program, *scale_lcb_data(thetas, chols, radii))

    def _certified_or_solved(self, arms: np.ndarray, codes: np.ndarray, witnesses: np.ndarray,
                             method: str, solve) -> BatchArms:
        """Compiled certified arms (status codes of :mod:`sege_cvx.arm_sets.kernels.status`, with
        their witnesses on a lifted set), verified; with ``method="auto"`` the instances that
        did not certify or verify are replaced by ``solve(rows)`` (Clarabel's)."""
        from .kernels.status import STATUS, VERIFIED

        ok = codes == VERIFIED
        arms[~ok] = np.nan
        witnesses[~ok] = np.nan
        result = self._verified(arms, [STATUS[c] for c in codes], witnesses)
        failed = np.flatnonzero(~result.ok)
        if method == "auto" and failed.size:
            solved = solve(failed)
            result.arms[failed] = solved.arms
            result.ok[failed] = solved.ok
            result.witnesses[failed] = solved.witnesses
            for j, i in enumerate(failed):
                result.status[i] = solved.status[j]
        return result

    @property
    def has_closed_form_lcb(self) -> bool:
        """Whether :meth:`lcb_arm` has an exact fast path for this set."""
        return False

    def _lcb_closed_form(self, thetas: np.ndarray, chols: np.ndarray,
                         radii: np.ndarray) -> np.ndarray:
        """LCB arms from estimates, lower Cholesky factors of ``V`` and radii (sets with a
        closed form)."""
        raise NotImplementedError

    def _cross_check(self, closed: np.ndarray, solved: np.ndarray, thetas: np.ndarray,
                     chols: np.ndarray, radii: np.ndarray) -> None:
        f_closed = cholesky.lcb_values(closed, thetas, chols, radii)
        f_solved = cholesky.lcb_values(solved, thetas, chols, radii)
        obj_err = np.abs(f_closed - f_solved) / np.maximum(1.0, np.abs(f_solved))
        arm_err = np.linalg.norm(closed - solved, axis=1) / np.maximum(
            1.0, np.linalg.norm(solved, axis=1))
        i = int(np.argmax(obj_err / CROSS_CHECK_OBJECTIVE_RTOL + arm_err / CROSS_CHECK_ARM_RTOL))
        if obj_err[i] > CROSS_CHECK_OBJECTIVE_RTOL or arm_err[i] > CROSS_CHECK_ARM_RTOL:
            raise CrossCheckError(
                f"instance {i}: closed form and solver disagree (objective rel. error "
                f"{obj_err[i]:.3g}, arm rel. error {arm_err[i]:.3g})")

    # ----------------------------------------------------------------- certified bounds
    def norm_bound(self) -> float:
        """Certified upper bound ``L >= max_{x in X} ||x||`` (used in the radius r_t).

        Default: the norm of the farthest corner of the bounding box from 2d linear programs.

        Raises
        ------
        ValueError
            The bound exceeds the largest float (the set is too large to work with).
        """
        lo, hi = self.bounding_box()
        bound = scaled_norm(np.maximum(np.abs(lo), np.abs(hi)))
        if not np.isfinite(bound):
            raise ValueError(f"norm bound max ||x|| of {self!r} is not representable (it exceeds "
                             f"the largest float {np.finfo(float).max:.3g}); bounding box "
                             f"{format_value(lo)} to {format_value(hi)}: rescale the problem")
        return bound

    def distance_bound(self, point: np.ndarray) -> float:
        """Certified upper bound on ``max_{x in X} ||x - point||`` (ROFUL's ``L`` for the radius of
        Theorem 1 in coordinates relative to the baseline arm).

        Default: the distance from ``point`` to the farthest corner of the bounding box.
        """
        lo, hi = self.bounding_box()
        p = np.asarray(point, dtype=np.float64)
        bound = scaled_norm(np.maximum(np.abs(lo - p), np.abs(hi - p)))
        if not np.isfinite(bound):
            raise ValueError(f"distance bound max ||x - point|| of {self!r} is not representable:"
                             " rescale the problem")
        return float(bound)

    def diameter_bound(self) -> float:
        """Certified upper bound on ``max_{x, y in X} ||x - y||`` (SEGE's rho-bar).

        Default: the diagonal of the bounding box, computed without intermediate overflow (it is
        returned whenever it is a representable float).

        Raises
        ------
        ValueError
            The bound exceeds the largest float (the set is too large to work with).
        """
        lo, hi = self.bounding_box()
        # Halving first keeps hi - lo finite (|hi|, |lo| <= float max); halving is exact.
        bound = 2.0 * scaled_norm(0.5 * hi - 0.5 * lo)
        if not np.isfinite(bound):
            raise ValueError(f"diameter bound of {self!r} is not representable (it exceeds the "
                             f"largest float {np.finfo(float).max:.3g}); bounding box "
                             f"{format_value(lo)} to {format_value(hi)}: rescale the problem")
        return bound

    def exploration(self) -> Exploration:
        """The default distribution of SEGE's exploratory arms ``U_t``, certified in the set.

        Default: an inscribed cross-polytope (its ``2d`` vertices checked against the set's
        constraints); subclasses return an inscribed ellipsoid where one can be certified.
        """
        return self._cross_polytope

    @cached_property
    def _cross_polytope(self) -> Exploration:
        return inscribed_cross_polytope(self.dim, self.constraints, self.contains)

    def certify_exploration(self, exploration: Exploration) -> bool:
        """Whether every point ``exploration`` can draw lies in the set.

        ``cross``: its ``2d`` vertices are checked (exact for any convex set); on a lifted set,
        with the witnesses the exploration carries (vertices and centre), else by
        :meth:`contains`.  ``sphere``: needs :meth:`_contains_ellipsoid`, available for
        ellipsoids, boxes and polytopes.
        """
        if exploration.center.shape != (self.dim,):
            raise ValueError(f"exploration has dimension {exploration.center.shape[0]}, "
                             f"the arm set {self.dim}")
        if exploration.kind == "cross" and exploration.witnesses is not None:
            if exploration.witnesses.shape[1] != self.witness_dim:
                return False
            pairs = zip(exploration.vertices(), exploration.witnesses, strict=True)
            return all(self._certify_pair(v, w, 0.0)[0] for v, w in pairs) and \
                self._certify_pair(exploration.center, exploration.center_witness, 0.0)[0]
        if exploration.kind == "cross":
            return bool(np.all(self.contains(exploration.vertices(), tol=0.0)))
        return self._contains_ellipsoid(exploration.center, exploration.B)

    def _contains_ellipsoid(self, center: np.ndarray, B: np.ndarray) -> bool:
        raise ValueError(f"an ellipsoid cannot be certified inside a general {type(self).__name__};"
                         " use an Exploration of kind 'cross' (its vertices are checked)")

    @cached_property
    def _box(self) -> tuple[np.ndarray, np.ndarray]:
        d = self.dim
        directions = np.vstack([np.eye(d), -np.eye(d)])
        if self.has_closed_form_greedy:
            points = self._greedy_closed_form(directions)
        else:
            # Unverified solver points: verifying them (pull_inside) would need a certified
            # interior point, which is itself computed from this box; the margin below covers
            # their infeasibility (at most the accepted tiers' 1e-6) as well as the gap.
            points = np.empty((2 * d, d))
            for k, u in enumerate(directions):
                try:
                    points[k] = self._greedy_program.solve(u).x
                except SolverFailure as exc:
                    status = exc.status
                else:
                    continue
                if status in ("PrimalInfeasible", "AlmostPrimalInfeasible"):
                    raise ValueError(f"{self!r} is empty (its constraints are infeasible)")
                if status in ("DualInfeasible", "AlmostDualInfeasible"):
                    raise ValueError(f"{self!r} is unbounded: a linear objective is unbounded "
                                     "above on it")
                raise ValueError(
                    f"could not bound {self!r}: Clarabel ended with status {status} maximizing "
                    f"{'+-'[k // d]}x[{k % d}] over it; its constraints may be numerically "
                    "ill-posed (data of very different magnitudes, or a set too small, too large "
                    "or too far from the origin for the solver's tolerances): rescale the problem")
        values = np.einsum("ni,ni->n", points, directions)
        hi, lo = values[:d], -values[d:]
        if not (np.all(np.isfinite(hi)) and np.all(np.isfinite(lo))):
            raise ValueError(f"{self!r}: the support values are not finite (lo {format_value(lo)}, "
                             f"hi {format_value(hi)}): rescale the problem")
        check_resolvable(self, lo, hi)
        # Support values at solver points are within the accepted tiers' gap and feasibility
        # tolerances (at most 1e-6, absolute or relative) of the true support; widening by more
        # than that makes the box certified.
        with np.errstate(over="ignore"):  # overflow is reported below
            hi = hi + SUPPORT_MARGIN * np.maximum(1.0, np.abs(hi))
            lo = lo - SUPPORT_MARGIN * np.maximum(1.0, np.abs(lo))
        if not (np.all(np.isfinite(hi)) and np.all(np.isfinite(lo))):
            raise ValueError(f"bounding box of {self!r} is not representable (it reaches beyond "
                             f"the largest float): rescale the problem")
        return lo, hi

    def bounding_box(self) -> tuple[np.ndarray, np.ndarray]:
        """Coordinate-wise bounds ``lo <= x <= hi`` on the set, from ``2d`` support values.

        Raises
        ------
        ValueError
            The set is empty or unbounded, too small for the solver's tolerances to certify, or
            its box is not representable in floating point.
        """
        lo, hi = self._box
        return lo.copy(), hi.copy()


def check_resolvable(arm_set: ArmSet, lo: np.ndarray, hi: np.ndarray) -> None:
    """Refuse a set whose extent the solver cannot resolve (``ValueError``, one line).

    The solver's accuracy is about its tolerances (1e-8) times ``max(1, |x|)``: a set whose
    extent ``max(hi - lo)`` is not at least :data:`MIN_SOLVER_SCALE` times that cannot be told
    apart from a point, an empty set or solver noise.  Every set with a bounding box applies it
    (a :class:`~sege_cvx.arm_sets.Box` to its bounds, so that boxes and polytopes agree).
    """
    extent = float(np.max(hi - lo))
    magnitude = float(max(np.max(np.abs(lo)), np.max(np.abs(hi))))
    if not extent >= MIN_SOLVER_SCALE * max(1.0, magnitude):
        raise ValueError(
            f"{arm_set!r} is too small for the solver's tolerances (about 1e-8 absolute and "
            f"relative): its extent along the axes is {extent:.3g} at coordinates of magnitude "
            f"{magnitude:.3g}, so its boundedness, emptiness and interior cannot be certified; "
            f"rescale the problem (other units for the arms, or a set centred near the origin)"
            f" so that its extent is at least {MIN_SOLVER_SCALE:g} * max(1, |x|)")


def _error_status(exc: Exception) -> str:
    """The status recorded for an instance whose solve raised ``exc``."""
    return f"error: {type(exc).__name__}"


def check_tol(tol: float) -> float:
    """Validate a membership tolerance."""
    return as_scalar("tol", tol, low=0.0)
