"""An arm set's constraints as cone rows: the data compiled solves and certificates read.

:func:`cone_form`

* **accepts** a set's cvxpy constraints on ``x`` (any DCP form whose canonicalization uses only
  the zero, nonnegative and second-order cones: linear rows, norms, quadratic forms, geometric
  means and rational p-norms through their second-order representation, lifted sets with
  auxiliary variables);
* **applies** cvxpy's canonicalization for Clarabel once (``Problem.get_problem_data``), and
  reorders the variables so that ``z = (x, u)``: ``x`` first, then every auxiliary variable,
  the user's and cvxpy's (the *canonical witness* ``u``);
* **returns** :class:`ConeForm`: ``X = {x : exists u, A z = b, h - G z in K}`` with ``G`` by
  cone block (:class:`~sege_cvx.conic.socp.ConeBlocks`).

Sets whose canonical form needs an exponential, power or semidefinite cone raise
:class:`UnsupportedCone`, naming them: such sets keep the Clarabel path.  cvxpy's
canonicalization copies a constraint's data into ``G`` and ``h`` as it is (a norm's matrix, a
half-space's row and right-hand side, up to sign), so a certificate against these rows is a
certificate against the user's data; a quadratic form enters through a factor of its matrix
that cvxpy computes in floating point.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .socp import ConeBlocks


class UnsupportedCone(ValueError):
    """The set's canonical form needs a cone other than zero, nonnegative and second-order."""


@dataclass(frozen=True)
class ConeForm:
    """``X = {x : exists u, A z = b, h - G z in K}``, ``z = (x, u)``.

    Attributes
    ----------
    dim : int
        ``d``, the arms' dimension (``z[:d] = x``).
    n : int
        Length of ``z``.
    blocks : ConeBlocks
        ``G`` by block: nonnegative rows, then second-order cones, in cvxpy's order.
    h : ndarray, shape (m,)
    A : ndarray, shape (p, n)
        Equalities (dense: few rows).
    b : ndarray, shape (p,)
    witness_cols : ndarray of int64
        The columns of ``z`` holding the user's auxiliary variables, in the order of a
        :class:`~sege_cvx.arm_sets.generic.ConvexArmSet`'s witness (each variable flattened in
        cvxpy's column-major order): a solution's user witness is ``z[witness_cols]``.
    """

    dim: int
    n: int
    blocks: ConeBlocks
    h: np.ndarray
    A: np.ndarray
    b: np.ndarray
    witness_cols: np.ndarray

    @property
    def n_blocks(self) -> int:
        return int(self.blocks.kind.shape[0])

    @property
    def m(self) -> int:
        return int(self.blocks.rows[-1])

    def dense_G(self) -> np.ndarray:
        """``G`` as a dense ``(m, n)`` array (for tests and certificates in Python)."""
        G = np.zeros((self.m, self.n))
        blk = self.blocks
        for j in range(self.n_blocks):
            r0, r1 = blk.rows[j], blk.rows[j + 1]
            cols = blk.cols[blk.col_ptr[j]:blk.col_ptr[j + 1]]
            vals = blk.values[blk.val_ptr[j]:blk.val_ptr[j + 1]].reshape(r1 - r0, len(cols))
            G[r0:r1, cols] = vals
        return G


def blocks_from_rows(G, sizes: list[int], kinds: list[int]) -> ConeBlocks:
    """:class:`ConeBlocks` of the sparse or dense ``G`` cut into blocks of ``sizes`` rows, each
    over the columns where it has a nonzero (a block with none keeps column 0)."""
    G = G.tocsr() if hasattr(G, "tocsr") else np.asarray(G, dtype=np.float64)
    rows, col_ptr, val_ptr = [0], [0], [0]
    cols, values = [], []
    r0 = 0
    for q in sizes:
        part = G[r0:r0 + q]
        dense = part.toarray() if hasattr(part, "toarray") else np.asarray(part)
        used = np.flatnonzero(np.any(dense != 0.0, axis=0))
        if used.size == 0:
            used = np.array([0])
        cols.extend(used.tolist())
        values.extend(dense[:, used].ravel().tolist())
        r0 += q
        rows.append(r0)
        col_ptr.append(len(cols))
        val_ptr.append(len(values))
    return ConeBlocks(np.array(kinds, dtype=np.int64), np.array(rows, dtype=np.int64),
                      np.array(col_ptr, dtype=np.int64), np.array(cols, dtype=np.int64),
                      np.array(val_ptr, dtype=np.int64), np.array(values, dtype=np.float64))


def cone_form(dim: int, constraints: Callable) -> ConeForm:
    """The cone rows of ``{x in R^dim : constraints(x)}`` (see the module docstring).

    Raises
    ------
    UnsupportedCone
        The canonical form needs exponential, power or semidefinite cones.
    """
    import cvxpy as cp

    from .canonical import clarabel_problem_data
    from .programs import auxiliary_variables

    x = cp.Variable(dim)
    cons = constraints(x)
    problem = cp.Problem(cp.Minimize(0), cons)
    data, chain, inverse = clarabel_problem_data(problem)
    dims = data["dims"]
    other = [name for name, count in (("exponential", dims.exp), ("power", len(dims.p3d)),
                                      ("semidefinite", len(dims.psd))) if count]
    if other or data.get("lower_bounds") is not None or data.get("upper_bounds") is not None:
        raise UnsupportedCone(f"its canonical form needs {' and '.join(other) or 'bound'} "
                              "constraints, which the compiled cone programs do not solve")
    # The columns of z are those of the matrix stuffing's variables (an earlier reduction's
    # inverse data has offsets of its own).
    offsets = next(i.var_offsets for r, i in zip(chain.reductions, inverse, strict=True)
                   if type(r).__name__ == "ConeMatrixStuffing")
    M = data["A"].tocsc()
    n = M.shape[1]
    start = offsets[x.id]
    order = np.r_[start:start + dim, np.delete(np.arange(n), np.arange(start, start + dim))]
    M = M[:, order].tocsr()
    position = np.empty(n, dtype=np.int64)
    position[order] = np.arange(n)
    user = [position[offsets[v.id] + np.arange(v.size)] for v in auxiliary_variables(cons, [x])]
    witness_cols = np.concatenate(user) if user else np.zeros(0, dtype=np.int64)
    rhs = np.asarray(data["b"], dtype=np.float64)
    p, nonneg = dims.zero, dims.nonneg
    sizes = [1] * nonneg + list(dims.soc)
    kinds = [0] * nonneg + [1] * len(dims.soc)
    blocks = blocks_from_rows(M[p:], sizes, kinds)
    return ConeForm(dim=dim, n=n, blocks=blocks, h=np.ascontiguousarray(rhs[p:]),
                    A=np.ascontiguousarray(M[:p].toarray()), b=np.ascontiguousarray(rhs[:p]),
                    witness_cols=witness_cols)
