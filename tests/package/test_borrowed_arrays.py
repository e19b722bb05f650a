"""``_numba.borrow`` and ``keep_alive``: borrowed arrays are the owner's memory, without its
reference count (what lets the plain stage loops run as fast as numba's parfor on the paper's
problem)."""

import numba
import numpy as np

from sege_cvx._numba import borrow, keep_alive, over_runs


@numba.njit
def _write_through_borrowed(data):
    (a, scale, (b, k)) = borrow(data)
    row = a[1]  # a view of a borrowed array: no reference counting
    for j in range(row.shape[0]):
        row[j] = scale * j
    b[k, k] = -1.0
    return a.sum() + b.sum()


@numba.njit
def _sum_of_scratch(n, d):
    total = 0.0
    for _ in range(n):
        owner = (np.empty((3, d)), np.empty(d))
        work, vec = borrow(owner)
        for j in range(d):
            vec[j] = j
            work[2, j] = 2.0 * vec[j]
        # Memory freed above (were ``owner`` freed after its last use) is handed out again here.
        others = (np.full((3, d), 99.0), np.full(d, 99.0))
        for j in range(d):
            total += work[2, j] + work[2][j] + 0.0 * others[0][0, j] * others[1][j]
        keep_alive(owner)
    return total


def test_a_borrowed_tuple_is_the_owners_memory_and_its_scalars():
    a = np.zeros((3, 4))
    b = np.zeros((2, 2))
    total = _write_through_borrowed((a, 2.5, (b, 1)))
    np.testing.assert_array_equal(a, [[0, 0, 0, 0], [0, 2.5, 5, 7.5], [0, 0, 0, 0]])
    np.testing.assert_array_equal(b, [[0, 0], [0, -1]])
    assert total == 15.0 - 1.0


def test_scratch_borrowed_inside_a_kernel_and_kept_alive():
    # Each pass allocates, borrows and writes its scratch, then allocates again: scratch freed too
    # early would be overwritten (without keep_alive, this sum is wrong).
    d = 7
    assert _sum_of_scratch(500, d) == 500 * 4.0 * (d * (d - 1) / 2)


@numba.njit(nogil=True)
def _square_rows(first, last, x, out):
    x, out = borrow((x, out))
    for i in range(first, last):
        out[i] = x[i] * x[i]


def test_over_runs_covers_every_run_once_whatever_the_threads():
    x = np.arange(11.0)
    previous = numba.get_num_threads()
    try:
        for threads in range(1, numba.config.NUMBA_NUM_THREADS + 1):
            numba.set_num_threads(threads)
            out = np.full(11, np.nan)
            over_runs(_square_rows, 11, x, out)
            np.testing.assert_array_equal(out, x * x)
    finally:
        numba.set_num_threads(previous)
