"""Compile a parametrized cvxpy problem once; re-solve it on Clarabel by passing new data only.

cvxpy canonicalizes a DPP problem into a cone program whose data ``(q, A, b)`` is an affine
function of the parameter values.  cvxpy re-applies that map on every ``solve`` (about 0.4 ms
at d = 2, more than Clarabel's own solve).  This module instead

* **accepts** a DPP-compliant ``cvxpy.Problem``, one ``cvxpy.Variable`` to recover, and the
  problem's parameters in a fixed order;
* **applies** cvxpy's canonicalization for Clarabel once, then records the affine map
  ``data = J @ [p, 1]`` by evaluating it at ``p = 0`` and at each unit vector, with the sparsity
  pattern of ``A`` frozen (explicit zeros kept), so that every later solve is one compiled
  sparse mat-vec followed by Clarabel's in-place ``DefaultSolver.update`` of the parts of
  ``(q, A, b)`` that a parameter enters (passed as lists: Clarabel's binding reads a numpy
  array element by element, and twice for ``A``);
* **inverts** by reading the variable's columns out of Clarabel's primal solution, and those of
  any auxiliary variables asked for (a lifted arm set's witness, :mod:`sege_cvx.arm_sets.lifted`).

Accuracy tiers.  An LCB arm is only as accurate as the square root of the objective gap (the
objective is flat at its maximizer), so the first attempt asks Clarabel for a 1e-12 gap.  Clarabel
often stalls short of that; it then reports ``AlmostSolved`` if its reduced tolerances hold, which
are set to 1e-8 (Clarabel's own default for ``Solved``), and that point is accepted.  A solve that
stalls even short of those is retried at 1e-10, and then at Clarabel's defaults accepting
``AlmostSolved`` at 1e-6 (:data:`TIERS`).  Any other status raises :class:`SolverFailure`: a
caller never gets a silent point.

The first tier regularizes Clarabel's KKT systems by 1e-10 instead of its default 1e-8.  With
1e-8, LCB programs over polytopes and boxes at d >= 5 stalled with primal residuals of 1e-8 to
1e-7 once the gap was far below 1e-8 (``InsufficientProgress``), on 10 to 30 % of SEGE's solves,
which then ran again at the next tiers; with 1e-10 the first tier meets the same reduced
tolerances on all but 0 to 2 % of them (boxes: 10 to 14 %), at the same number of iterations.
The acceptance tests are Clarabel's residuals on the problem's own data, so no less accurate
point is accepted.  The later tiers keep Clarabel's default regularization: a fallback for
problems where the smaller one is too little.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import clarabel
import cvxpy as cp
import numpy as np
import scipy.sparse as sp
from cvxpy.reductions.solvers.conic_solvers.clarabel_conif import dims_to_solver_cones
from numba import literal_unroll

from .._numba import njit
from .canonical import clarabel_problem_data
from .errors import SolverFailure  # lives in a module light code can import; re-exported here

# Presolve and chordal decomposition forbid in-place data updates.  Equilibration is off because
# Clarabel keeps the scaling computed for the first data it saw across in-place updates, which
# would make each solve depend on the solves before it (and a run differ alone and in a batch).
_COMMON = {"verbose": False, "presolve_enable": False, "chordal_decomposition_enable": False,
           "equilibrate_enable": False}
_REDUCED_1E8 = {"reduced_tol_gap_abs": 1e-8, "reduced_tol_gap_rel": 1e-8, "reduced_tol_feas": 1e-8,
                "reduced_tol_ktratio": 1e-6}

#: ``(settings, accepted statuses)`` tried in order.
TIERS: tuple[tuple[Mapping[str, object], frozenset[str]], ...] = (
    ({**_COMMON, **_REDUCED_1E8, "tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12,
      "tol_ktratio": 1e-10, "static_regularization_constant": 1e-10},
     frozenset({"Solved", "AlmostSolved"})),
    ({**_COMMON, **_REDUCED_1E8, "tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10,
      "tol_ktratio": 1e-8}, frozenset({"Solved", "AlmostSolved"})),
    ({**_COMMON, "reduced_tol_gap_abs": 1e-6, "reduced_tol_gap_rel": 1e-6, "reduced_tol_feas": 1e-6},
     frozenset({"Solved", "AlmostSolved"})),
)


class ConicSolution(NamedTuple):
    """What one solve returns (a named tuple: built at every solve, it must be cheap).

    Attributes
    ----------
    x : ndarray
        Value of the recovered variable.
    status : str
        Clarabel's status string (one accepted by ``tier``).
    tier : int
        Index into :data:`TIERS` of the settings that produced the point.
    solve_seconds : float
        Time Clarabel reports for its own solve.
    wall_seconds : float
        Wall time of the whole call, data update included.
    iterations : int
        Interior-point iterations.
    aux : ndarray, shape (k,)
        Values of the auxiliary variables, each flattened in cvxpy's column-major order and
        concatenated in the order given (empty if none were asked for).
    """

    x: np.ndarray
    status: str
    tier: int
    solve_seconds: float
    wall_seconds: float
    iterations: int
    aux: np.ndarray = np.empty(0)


@njit
def _apply_map(indptr: np.ndarray, indices: np.ndarray, coefs: np.ndarray, size: int,
               values: tuple) -> np.ndarray:
    """``J @ [p, 1]`` for ``J`` in CSR form and ``p`` the ``size`` entries of the arrays
    ``values``, each in C order (as ``np.ravel``).  Each row is summed in stored order from 0.0:
    the arithmetic of scipy's ``csr_matvec``, so the data are the same bits as ``J @ [p, 1]``."""
    params = np.empty(size + 1)
    k = 0
    for value in literal_unroll(values):
        for v in value.flat:
            params[k] = v
            k += 1
    params[size] = 1.0
    n = indptr.shape[0] - 1
    out = np.empty(n)
    for i in range(n):
        acc = 0.0
        for jj in range(indptr[i], indptr[i + 1]):
            acc += coefs[jj] * params[indices[jj]]
        out[i] = acc
    return out


def _canonical_data(param_prog, values: dict[int, np.ndarray]) -> tuple[np.ndarray, sp.csc_array]:
    """Apply parameter values; return the stacked vector ``[q, A.data, b]`` and ``A`` (Clarabel sign)."""
    q, _, A, b = param_prog.apply_parameters(id_to_param_value=values, keep_zeros=True)
    A = sp.csc_array(-A)  # cvxpy gives -A for the convention A x + s = b, s in K
    A.sort_indices()
    return np.concatenate([np.asarray(q).ravel(), A.data, np.atleast_1d(b)]), A


class CompiledConicProgram:
    """A parametrized cvxpy problem canonicalized once for Clarabel.

    Parameters
    ----------
    problem : cvxpy.Problem
        A DPP-compliant problem.
    variable : cvxpy.Variable
        The variable whose value :meth:`solve` returns.
    parameters : sequence of cvxpy.Parameter
        All parameters of ``problem``, in the order :meth:`solve` receives their values.
    settings : mapping, optional
        Clarabel settings overriding those of every tier in :data:`TIERS`.
    aux_variables : sequence of cvxpy.Variable, optional
        Further variables whose values :meth:`solve` returns, concatenated, in
        :attr:`ConicSolution.aux`.

    Examples
    --------
    >>> import cvxpy as cp, numpy as np
    >>> x, theta = cp.Variable(2), cp.Parameter(2)
    >>> prog = CompiledConicProgram(
    ...     cp.Problem(cp.Maximize(theta @ x), [cp.norm(x) <= 1]), x, [theta])
    >>> np.round(prog.solve(np.array([3.0, 4.0])).x, 6)
    array([0.6, 0.8])
    """

    def __init__(
        self,
        problem: cp.Problem,
        variable: cp.Variable,
        parameters: Sequence[cp.Parameter],
        settings: Mapping[str, object] | None = None,
        aux_variables: Sequence[cp.Variable] = (),
    ) -> None:
        if not problem.is_dcp(dpp=True):
            raise ValueError("problem must be DCP under DPP rules (parameters enter affinely)")
        missing = {p.id for p in problem.parameters()} - {p.id for p in parameters}
        if missing:
            raise ValueError(f"parameters list misses {len(missing)} parameter(s) of the problem")
        self.parameters = list(parameters)
        self._tiers = [({**tier, **(settings or {})}, accept) for tier, accept in TIERS]
        data, _, _ = clarabel_problem_data(problem)
        self._param_prog = data["param_prob"]
        self._cones = dims_to_solver_cones(data["dims"])
        col = self._param_prog.var_id_to_col.get(variable.id)
        if col is None:
            raise ValueError("variable does not appear in the canonicalized problem")
        self._x_slice = slice(col, col + variable.size)
        self._x_shape = variable.shape
        # cvxpy vectorizes each variable column-major into its columns: the witness layout.
        aux_cols = []
        for v in aux_variables:
            start = self._param_prog.var_id_to_col.get(v.id)
            if start is None:
                raise ValueError(f"auxiliary variable {v.name()} does not appear in the "
                                 "canonicalized problem")
            aux_cols.append(np.arange(start, start + v.size))
        self._aux_index = np.concatenate(aux_cols) if aux_cols else None
        J, self._A_pattern = self._affine_map()
        self._map = (J.indptr, J.indices, J.data)
        self._n_params = J.shape[1] - 1
        n, nnz = self._param_prog.x.size, self._A_pattern.nnz
        parts = {"q": slice(0, n), "A": slice(n, n + nnz), "b": slice(n + nnz, J.shape[0])}
        # Only the parts a parameter enters are sent at each update; the others keep the values
        # each solver was built with, which are the same at every solve.
        varies = np.diff(J[:, :-1].indptr) > 0
        self._parts = parts
        self._varying = tuple((key, part) for key, part in parts.items() if varies[part].any())
        # One Clarabel solver per tier, each built at first use and then updated in place.
        self._solvers: list[clarabel.DefaultSolver | None] = [None] * len(self._tiers)
        #: Number of solves that ended at each tier.
        self.tier_counts = [0] * len(self._tiers)
        #: Wall seconds spent inside Clarabel's ``solve()`` over all calls (every tier tried):
        #: what the library adds around the solver is the rest of a call's time.
        self.solver_seconds = 0.0

    @property
    def solvers(self) -> tuple:
        """Clarabel's own solvers, one per tier (None for a tier not yet used), each holding the
        data of its last solve: benchmarks re-run their ``solve()`` to time Clarabel alone."""
        return tuple(self._solvers)

    def _values(self, flat: np.ndarray) -> dict[int, np.ndarray]:
        out, k = {}, 0
        for p in self.parameters:
            out[p.id] = flat[k:k + p.size].reshape(p.shape)
            k += p.size
        return out

    def _affine_map(self) -> tuple[sp.csr_array, sp.csc_array]:
        """Record ``[q, A.data, b] = J @ [p, 1]`` by evaluating at 0 and at each unit vector.

        ``J`` is stored sparse: each parameter entry touches a few data entries, and a dense
        ``J`` grows like ``d^4`` (about 100 MB for the LCB program at d = 50).
        """
        size = sum(p.size for p in self.parameters)
        base, A0 = _canonical_data(self._param_prog, self._values(np.zeros(size)))
        rows, cols, vals = [np.flatnonzero(base)], [np.full(np.count_nonzero(base), size)], \
            [base[base != 0]]
        for k in range(size):
            unit = np.zeros(size)
            unit[k] = 1.0
            vec, A = _canonical_data(self._param_prog, self._values(unit))
            if not (np.array_equal(A.indices, A0.indices) and np.array_equal(A.indptr, A0.indptr)):
                raise RuntimeError("cvxpy changed the sparsity pattern of A across parameter values")
            delta = vec - base
            nz = np.flatnonzero(delta)
            rows.append(nz)
            cols.append(np.full(nz.size, k))
            vals.append(delta[nz])
        J = sp.csr_array((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                         shape=(base.size, size + 1))
        # The map must be affine: check it reproduces cvxpy at a random point.
        probe = np.append(np.random.default_rng(0).standard_normal(size), 1.0)
        expect, _ = _canonical_data(self._param_prog, self._values(probe[:-1]))
        if not np.allclose(J @ probe, expect, rtol=1e-10, atol=1e-10):
            raise RuntimeError("problem data is not affine in the parameters")
        return J, A0

    def _new_solver(self, tier: int, data: np.ndarray) -> clarabel.DefaultSolver:
        """Clarabel's solver for ``tier``, built on ``data`` (the stacked ``[q, A.data, b]``)."""
        q, a_data, b = (data[part] for part in self._parts.values())
        A = sp.csc_matrix((a_data, self._A_pattern.indices, self._A_pattern.indptr),
                          shape=self._A_pattern.shape)
        settings = clarabel.DefaultSettings()
        for key, value in self._tiers[tier][0].items():
            setattr(settings, key, value)
        return clarabel.DefaultSolver(sp.csc_matrix((q.size, q.size)), q, A, b, self._cones, settings)

    def solve(self, *values: np.ndarray) -> ConicSolution:
        """Solve for the given parameter values (in the order of ``parameters``).

        Raises
        ------
        SolverFailure
            If no tier of :data:`TIERS` ends with one of its accepted statuses.
        """
        start = time.perf_counter()
        # (An empty array stands for no parameters: the compiled map unrolls a nonempty tuple.)
        values = tuple(np.asarray(v, dtype=np.float64) for v in values) or (np.empty(0),)
        size = sum(v.size for v in values)
        if size != self._n_params:
            raise ValueError(f"expected {self._n_params} parameter entries, got {size}")
        data = _apply_map(*self._map, size, values)
        update = None
        for tier, (_, accept) in enumerate(self._tiers):
            solver = self._solvers[tier]
            if solver is None:
                solver = self._solvers[tier] = self._new_solver(tier, data)
            elif self._varying:
                if update is None:
                    update = {key: data[part].tolist() for key, part in self._varying}
                solver.update(**update)
            started = time.perf_counter()
            result = solver.solve()
            self.solver_seconds += time.perf_counter() - started
            status = str(result.status)
            if status in accept:
                self.tier_counts[tier] += 1
                break
        else:
            raise SolverFailure(f"Clarabel returned status {status} at every accuracy tier",
                                status=status)
        primal = result.x
        x = np.array(primal[self._x_slice]).reshape(self._x_shape)
        aux = np.empty(0) if self._aux_index is None else np.array(primal)[self._aux_index]
        return ConicSolution(x, status, tier, float(result.solve_time), time.perf_counter() - start,
                             int(result.iterations), aux)
