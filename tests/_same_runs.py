"""Compiled stages against select/observe: simulate on a number of threads, compare bit for bit."""

import numba
import numpy as np

import sege_cvx as sc


def simulate_on_threads(policy, bandit, horizon: int, threads: int, **options):
    """``sc.simulate(policy, bandit, horizon, **options)`` with numba on ``threads`` threads (at
    most the machine's), restored afterwards."""
    previous = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        return sc.simulate(policy, bandit, horizon, **options)
    finally:
        numba.set_num_threads(previous)


def assert_same_simulations(a, b) -> None:
    """Two simulations' traces (``traces=True``) and every statistic are bitwise equal."""
    np.testing.assert_array_equal(a.expected_reward, b.expected_reward)
    np.testing.assert_array_equal(a.decisions, b.decisions)
    for name in vars(a.stats):
        np.testing.assert_array_equal(getattr(a.stats, name), getattr(b.stats, name), err_msg=name)


def assert_same_confidence(fused, stepped) -> None:
    """Two policies' confidence sets are bitwise equal, array by array."""
    for name in ("V", "chol", "xy_sum", "theta_hat", "counts"):
        np.testing.assert_array_equal(getattr(fused.confidence, name),
                                      getattr(stepped.confidence, name), err_msg=name)
