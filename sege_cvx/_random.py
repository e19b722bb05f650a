"""Per-run random streams, reproducible whether a run is simulated alone or in a batch.

Each run owns its own ``numpy.random.Generator`` (from a ``SeedSequence``) and draws in blocks of
fixed size, so the value a run sees at step ``t`` depends only on its own seed and ``t``.
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ._validation import as_nonnegative_int, as_positive_int, format_value

SeedLike = int | np.random.SeedSequence | Sequence[np.random.SeedSequence] | None

#: Steps drawn per refill; fixed so that single runs and batches consume streams identically.
BLOCK = 512

#: Most runs one call may seed: each holds a generator and a ``BLOCK x d`` buffer, so a larger
#: count (e.g. a mistyped ``10**30``) would exhaust memory or never finish; split such studies.
MAX_RUNS = 10**6


def seed_sequences(seed: SeedLike, n_runs: int, name: str = "seed") -> list[np.random.SeedSequence]:
    """One ``SeedSequence`` per run.

    An int, ``None`` or a single ``SeedSequence`` is spawned into ``n_runs`` children (a single
    run uses the root itself); a sequence must hold exactly ``n_runs`` seed sequences.

    Parameters
    ----------
    seed : int, SeedSequence, sequence of SeedSequence, or None
        An int must be nonnegative (numpy's own requirement, checked here to name the argument).
    n_runs : int
        Number of runs, ``>= 1``.
    name : str, default "seed"
        The argument's name in error messages.

    Raises
    ------
    TypeError
        ``seed`` of another type (a bool included) or a non-integer ``n_runs``.
    ValueError
        A negative ``seed``, ``n_runs`` outside ``[1, MAX_RUNS]``, or a sequence of the wrong
        length or content.
    """
    n_runs = as_positive_int("n_runs", n_runs)
    if n_runs > MAX_RUNS:
        raise ValueError(f"n_runs must be at most {MAX_RUNS} per call (split larger studies into "
                         f"batches), got {n_runs}")
    if isinstance(seed, Sequence) and not isinstance(seed, str | bytes):
        seqs = list(seed)
        if len(seqs) != n_runs or not all(isinstance(s, np.random.SeedSequence) for s in seqs):
            raise ValueError(f"{name} must hold {n_runs} numpy SeedSequence objects (one per run), "
                             f"got {format_value(seed)}")
        return seqs
    if seed is None or isinstance(seed, np.random.SeedSequence):
        root = np.random.SeedSequence() if seed is None else seed
    elif isinstance(seed, numbers.Integral) and not isinstance(seed, bool | np.bool_):
        root = np.random.SeedSequence(as_nonnegative_int(name, seed))
    else:
        raise TypeError(f"{name} must be an int, a SeedSequence, a list of them, or None, "
                        f"got {format_value(seed)}")
    return [root] if n_runs == 1 else children(root, n_runs)


def children(root: np.random.SeedSequence, n: int) -> list[np.random.SeedSequence]:
    """The first ``n`` children of ``root``, as ``root.spawn(n)`` would give on a fresh root.

    Unlike ``spawn``, this does not advance ``root``: the same seed object always maps to the
    same children, so a run can be reproduced alone from the seeds that produced it in a batch.
    """
    return [np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, i),
                                   pool_size=root.pool_size) for i in range(n)]


def run_seeds(seed: SeedLike, n_runs: int) -> tuple[list, list]:
    """Split each run's seed into a policy stream and an environment (noise) stream.

    Parameters
    ----------
    seed : int, SeedSequence, sequence of SeedSequence, or None
        As for :func:`seed_sequences` (a nonnegative int, typically).
    n_runs : int
        Number of runs, ``>= 1``.

    Returns
    -------
    policy_seeds, noise_seeds : list of SeedSequence
        ``n_runs`` of each.

    Examples
    --------
    >>> policy_seeds, noise_seeds = run_seeds(0, 3)
    >>> len(policy_seeds), len(noise_seeds)
    (3, 3)
    """
    pairs = [children(s, 2) for s in seed_sequences(seed, n_runs)]
    return [p for p, _ in pairs], [e for _, e in pairs]


#: Runs whose streams one task refills; larger batches are refilled by a thread pool.
FILL_CHUNK = 64
_pool: ThreadPoolExecutor | None = None


def _fill_pool() -> ThreadPoolExecutor:
    """The thread pool that refills large batches of streams, created at first use."""
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=max(1, min(os.cpu_count() or 1, 8)),
                                   thread_name_prefix="sege_cvx-draws")
    return _pool


class NormalStreams:
    """Standard normal vectors of length ``width`` per run and step, drawn in blocks.

    Parameters
    ----------
    seeds : list of SeedSequence
        One per run.
    width : int
        Length of the vector drawn per step.
    """

    def __init__(self, seeds: Sequence[np.random.SeedSequence], width: int) -> None:
        self._gens = [np.random.default_rng(s) for s in seeds]
        self.width = width
        self._buf = np.empty((len(self._gens), BLOCK, width))
        self._pos = BLOCK

    def next(self) -> np.ndarray:
        """The next step's draws, shape ``(n_runs, width)``."""
        return self.take(1)[:, 0]

    def available(self) -> int:
        """Steps left in the current block (a new block is drawn if none is)."""
        if self._pos == BLOCK:
            n = len(self._gens)
            # Each generator fills its own row, so splitting the rows over threads (numpy
            # releases the GIL while it draws) changes no number.
            chunks = [(lo, min(lo + FILL_CHUNK, n)) for lo in range(0, n, FILL_CHUNK)]
            if len(chunks) > 1:
                list(_fill_pool().map(lambda c: self._fill(*c), chunks))
            else:
                self._fill(0, n)
            self._pos = 0
        return BLOCK - self._pos

    def _fill(self, lo: int, hi: int) -> None:
        for i in range(lo, hi):
            self._gens[i].standard_normal(out=self._buf[i])

    def take(self, steps: int) -> np.ndarray:
        """The next ``steps`` steps' draws, shape ``(n_runs, steps, width)``: the numbers
        :meth:`next` would give one step at a time.  ``steps <= available()``."""
        if not 1 <= steps <= self.available():
            raise ValueError(f"steps must be in 1..{self.available()}, got {steps}")
        out = self._buf[:, self._pos:self._pos + steps]
        self._pos += steps
        return out


class GivenNormals:
    """Standard normal draws given in advance, ``(n_runs, horizon, width)``, served as
    :class:`NormalStreams` serves its own (a replay: another code's noise, to compare runs).

    Parameters
    ----------
    draws : ndarray, shape (n_runs, horizon, width)
        Finite numbers (copied).
    """

    def __init__(self, draws: np.ndarray) -> None:
        self._draws = np.array(draws, dtype=np.float64, order="C")
        self.width = self._draws.shape[2]
        self._pos = 0

    def next(self) -> np.ndarray:
        """The next step's draws, shape ``(n_runs, width)``."""
        return self.take(1)[:, 0]

    def available(self) -> int:
        """Steps left (0 once the draws are used up)."""
        return self._draws.shape[1] - self._pos

    def take(self, steps: int) -> np.ndarray:
        """The next ``steps`` steps' draws, shape ``(n_runs, steps, width)``."""
        if not 1 <= steps <= self.available():
            raise ValueError(f"the given noise holds {self._draws.shape[1]} stages: {steps} more "
                             f"asked after stage {self._pos}")
        out = self._draws[:, self._pos:self._pos + steps]
        self._pos += steps
        return out


class PacedNormals:
    """Standard normal vectors of length ``width``, each run drawing at its own pace.

    Run ``i``'s ``k``-th draw is the ``k``-th vector of its own generator, whenever it is
    taken: SEGE draws its exploration direction only at the stages where a run explores, so a
    run's directions depend on its own history alone, not on its companions.  Each run keeps a
    buffer of :data:`BLOCK` vectors and a cursor; :meth:`reserve` refills (in stream order) the
    runs with fewer than ``k`` unread vectors, so that a compiled loop can read
    ``buffer[i, cursor[i]]`` and advance the cursor itself.

    Parameters
    ----------
    seeds : list of SeedSequence
        One per run.
    width : int
        Length of each vector.
    """

    def __init__(self, seeds: Sequence[np.random.SeedSequence], width: int) -> None:
        self._gens = [np.random.default_rng(s) for s in seeds]
        self.buffer = np.empty((len(self._gens), BLOCK, width))
        #: Per run: the index in ``buffer`` of its next unread vector.
        self.cursor = np.full(len(self._gens), BLOCK, dtype=np.int64)

    def reserve(self, k: int) -> None:
        """Make at least ``k <= BLOCK`` unread vectors available to every run."""
        if not 1 <= k <= BLOCK:
            raise ValueError(f"k must be in 1..{BLOCK}, got {k}")
        for i in np.flatnonzero(self.cursor > BLOCK - k):
            unread = BLOCK - self.cursor[i]
            self.buffer[i, :unread] = self.buffer[i, self.cursor[i]:]
            self._gens[i].standard_normal(out=self.buffer[i, unread:])
            self.cursor[i] = 0

    def take(self, rows: np.ndarray) -> np.ndarray:
        """The next vector of each run in ``rows`` (distinct), shape ``(len(rows), width)``."""
        rows = np.asarray(rows, dtype=np.int64)
        self.reserve(1)
        out = self.buffer[rows, self.cursor[rows]]
        self.cursor[rows] += 1
        return out
