"""``import sege_cvx`` works where numba can write no cache (read-only package and home)."""

import os
import pickle
import subprocess
import sys
from functools import partial

import pytest

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
from sege_cvx._numba import has_disk_cache
print(has_disk_cache(row_dot))  # warm_up then starts no helper process: it could share nothing
"""


def test_import_falls_back_to_uncached_kernels_with_one_warning():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:3] == ["[3.0, 3.0]", "1", "False"]


STALE = """
import pickle, sys
import numba
import numpy as np
from sege_cvx._rowwise import row_dot
print(row_dot(np.ones((2, 3)), np.arange(3.0)).tolist())
if sys.argv[1] == "spoil":
    # An index as an older version of the package leaves it: its entries name a record class
    # that has since moved (numba unpickles the index before it compares the stamp).
    with open(row_dot._cache._cache_file._index_path, "wb") as f:
        pickle.dump(numba.__version__, f)
        f.write(b"csege_cvx.arm_sets.ellipsoid.lcb\\nNoSuchRecord\\n.")
else:
    print(row_dot.stats.cache_hits and "hit" or "miss")
"""


def test_a_stale_cache_index_is_a_miss_not_an_error(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    run = partial(subprocess.run, capture_output=True, text=True, check=True, env=env)
    assert run([sys.executable, "-c", STALE, "spoil"]).stdout.split("\n")[0] == "[3.0, 3.0]"
    with pytest.raises(AttributeError, match="NoSuchRecord"):  # what numba alone would do
        pickle.loads(b"csege_cvx.arm_sets.ellipsoid.lcb\nNoSuchRecord\n.")
    # Recompiled (a miss, the index rewritten), then loaded from the cache (a hit).
    assert run([sys.executable, "-c", STALE, "load"]).stdout.split("\n")[:2] == ["[3.0, 3.0]", "miss"]
    assert run([sys.executable, "-c", STALE, "load"]).stdout.split("\n")[:2] == ["[3.0, 3.0]", "hit"]


def test_package_kernels_are_stamped_with_the_whole_package_source():
    # A cached kernel embeds the kernels it calls; numba stamps it with its own file only, so an
    # edit of a callee's module alone would leave the caller running the old callee.
    import numba

    from sege_cvx._numba import PackageSourceLocator, source_digest
    from sege_cvx._rowwise import row_dot
    from sege_cvx.arm_sets.ellipsoid.arms import EllipsoidGeometry
    from sege_cvx.confidence.radius import Theorem1Rule
    from sege_cvx.policies import sege_rule
    from sege_cvx.stages.loop import stage_loop

    for kernel in (row_dot, stage_loop(sege_rule.SEGEStages, EllipsoidGeometry, Theorem1Rule)):
        locator = kernel._cache._impl.locator
        assert isinstance(locator, PackageSourceLocator)
        assert locator.get_source_stamp() == source_digest()

    @numba.njit(cache=True)
    def outside(x):  # a kernel of another package keeps numba's own locator and stamp
        return x + 1

    assert not isinstance(outside._cache._impl.locator, PackageSourceLocator)


def test_kernels_with_a_cache_say_so_and_numba_s_compile_events_are_timed():
    import time

    import numba

    from sege_cvx._numba import compile_timer, has_disk_cache
    from sege_cvx.confidence.radius import Theorem1Rule
    from sege_cvx.policies import clucb
    from sege_cvx.stages.loop import stage_loop

    assert has_disk_cache(stage_loop(clucb.CLUCBStages, None, Theorem1Rule))
    start = time.perf_counter()
    with compile_timer() as timer:
        inner = numba.njit(lambda x: x + 1.0)
        outer = numba.njit(lambda x: inner(x) * 2.0)
        assert outer(1.0) == 4.0  # compiles outer, and inner within it: counted once
    assert 0.0 < timer.seconds <= time.perf_counter() - start
    with compile_timer() as again:
        assert outer(2.0) == 6.0  # compiled already
    assert again.seconds == 0.0


def test_the_heap_is_frozen_only_while_a_package_kernel_compiles():
    import gc

    import numba
    from numba.core import event

    from sege_cvx._numba import FrozenHeapWhileCompiling
    from sege_cvx._rowwise import row_dot

    def ev(status, dispatcher):
        return event.Event("numba:compile", status, data={"dispatcher": dispatcher})

    start, end = event.EventStatus.START, event.EventStatus.END
    listener = FrozenHeapWhileCompiling()
    assert gc.get_freeze_count() == 0
    listener.on_start(ev(start, row_dot))
    frozen = gc.get_freeze_count()
    listener.on_start(ev(start, row_dot))  # a kernel it calls, compiled within
    listener.on_end(ev(end, row_dot))
    assert frozen > 0 and gc.get_freeze_count() == frozen
    listener.on_end(ev(end, row_dot))
    assert gc.get_freeze_count() == 0
    other = numba.njit(lambda x: x)  # another package's kernel: left to the collector as it is
    listener.on_start(ev(start, other))
    assert gc.get_freeze_count() == 0
    listener.on_end(ev(end, other))
    gc.freeze()  # an application's own freeze is left as it is: neither frozen more nor thawed
    calls = []
    try:
        # Spies, not the frozen count, which falls whenever a frozen object is freed meanwhile.
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(gc, "freeze", lambda: calls.append("freeze"))
            patch.setattr(gc, "unfreeze", lambda: calls.append("unfreeze"))
            listener.on_start(ev(start, row_dot))
            listener.on_end(ev(end, row_dot))
        assert calls == [] and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
    assert sum(isinstance(x, FrozenHeapWhileCompiling) for x in event._registered["numba:compile"]) == 1
