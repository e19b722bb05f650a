"""The machine and package versions a benchmark ran on, printed at the top of every table."""

from __future__ import annotations

import os
import platform

import clarabel
import cvxpy as cp
import numba
import numpy as np

import sege_cvx as sc


def machine() -> list[str]:
    """Two lines: platform, CPU model and count; Python and package versions."""
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return [
        f"Machine: {platform.platform()}, {cpu}, {os.cpu_count()} CPUs",
        f"Python {platform.python_version()}, numpy {np.__version__}, cvxpy {cp.__version__}, "
        f"clarabel {clarabel.__version__}, numba {numba.__version__}, sege_cvx {sc.__version__}",
    ]
