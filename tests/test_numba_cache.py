"""``import sege_cvx`` works where numba can write no cache (read-only package and home)."""

import subprocess
import sys

# numba finds no cache locator when neither the package's __pycache__ nor the user-wide cache
# directory is writable; as root every directory is writable, so the test removes the locators.
SCRIPT = """
import warnings
from numba.core import caching
caching.CacheImpl._locator_classes = []
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import numpy as np
    import sege_cvx
    from sege_cvx._rowwise import row_dot
    print(row_dot(np.ones((2, 3)), np.arange(3.0)).tolist())
print(sum("no writable numba cache" in str(w.message) for w in caught))
"""


def test_import_falls_back_to_uncached_kernels_with_one_warning():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:2] == ["[3.0, 3.0]", "1"]
