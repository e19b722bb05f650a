"""One way to compile every numba kernel of the package.

Kernels are cached on disk so that they compile once per machine.  numba raises at import time
when it finds no writable cache location (a read-only package directory *and* a read-only
home); :func:`njit` then compiles without a disk cache and warns once, so that
``import sege_cvx`` never fails for want of a writable directory.

Every kernel uses ``error_model="numpy"`` (a division by zero gives inf/NaN, as in numpy,
instead of raising) and no ``fastmath``: IEEE arithmetic, so that a kernel computes each run
with the same operations in the same order whatever else is in the batch.

A cached kernel holds the compiled code of every kernel it calls, but numba checks only the
source file of the kernel itself: after an edit of ``arm_sets/polytope/arms.py`` alone, a cached SEGE
stage loop would still run the old arms, while ``select`` might run the new ones.  The kernels
of this package are therefore cached under a stamp of the whole package's source
(:func:`source_digest`, through :class:`PackageSourceLocator`): any change of any file
recompiles them all.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import os
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import FunctionType

import numba
from numba.core import caching, cgutils, event, types
from numba.extending import intrinsic

_warned = False
_ROOT = Path(__file__).resolve().parent


@functools.lru_cache(maxsize=1)
def source_digest() -> str:
    """SHA-256 (16 hex digits) of the ``*.py`` files of the imported sege_cvx, by relative path
    and content."""
    digest = hashlib.sha256()
    for path in sorted(_ROOT.rglob("*.py")):
        digest.update(path.relative_to(_ROOT).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


class PackageSourceLocator(caching._CacheLocator):
    """numba's cache locator for this package's kernels: where numba's own locators would put
    the cache, stamped with :func:`source_digest` instead of the kernel's own file."""

    def __init__(self, inner: caching._CacheLocator) -> None:
        self._inner = inner

    def __getattr__(self, name: str):
        # numba reads other attributes of its own locators (``_py_file`` when it warns that a
        # function cannot be cached): the inner locator's.
        return getattr(self._inner, name)

    def ensure_cache_path(self) -> None:
        self._inner.ensure_cache_path()

    def get_cache_path(self) -> str:
        return self._inner.get_cache_path()

    def get_source_stamp(self) -> str:
        return source_digest()

    def get_disambiguator(self) -> str:
        return self._inner.get_disambiguator()

    @classmethod
    def from_function(cls, py_func, py_file):
        try:
            Path(py_file).resolve().relative_to(_ROOT)
        except (OSError, ValueError):
            return None  # not this package's: numba's own locators
        for locator in caching.CacheImpl._locator_classes:
            if locator is not cls:
                inner = locator.from_function(py_func, py_file)
                if inner is not None:
                    return cls(inner)
        return None


if PackageSourceLocator not in caching.CacheImpl._locator_classes:
    caching.CacheImpl._locator_classes.insert(0, PackageSourceLocator)


def _load_index_or_miss(self, _load_index=caching.IndexDataCacheFile._load_index) -> dict:
    """numba's cache index loader, where a stale index of this package's kernels is a miss.

    numba unpickles an index before it compares the stamp, and an index written by another
    version of the package names the record classes of that version: one that has since moved
    or gone (``EllipsoidGeometry`` moved module in this release) raised ``AttributeError`` at
    every call of the kernel, and at every attempt to save its new compilation.  For this
    package's kernels (stamped with :func:`source_digest`, so that a stale index is never
    used anyway) such an index counts as empty; other packages' caches are left to numba.
    """
    try:
        return _load_index(self)
    except Exception:
        if self._source_stamp != source_digest():
            raise
        return {}


if caching.IndexDataCacheFile._load_index.__name__ != _load_index_or_miss.__name__:
    caching.IndexDataCacheFile._load_index = _load_index_or_miss


def _warn_no_cache(name: str, reason: str) -> None:
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(f"sege_cvx: no writable numba cache ({reason}); kernels such as {name!r} "
                      "compile at every start. Set NUMBA_CACHE_DIR to a writable directory to "
                      "cache them.", RuntimeWarning, stacklevel=3)


def _without_literals(dispatcher):
    """Compile ``dispatcher`` for the plain types of the arguments a kernel passes it.

    numba specializes a kernel called from another for the *values* of constant arguments
    (``Literal[bool](True)``): ``_arm_one(..., True, ...)`` and ``_arm_one(..., False, ...)`` would
    compile twice, each with everything it calls.  One compilation for ``bool`` serves both.
    """
    typed_call = dispatcher.get_call_template

    def get_call_template(args, kws):
        return typed_call(tuple(types.unliteral(a) for a in args),
                          {k: types.unliteral(v) for k, v in kws.items()})

    dispatcher.get_call_template = get_call_template
    return dispatcher


def njit(fn: Callable | None = None, **options) -> Callable:
    """``numba.njit(cache=True, error_model="numpy")``, without the cache where none is writable
    (or with ``cache=False``), compiled once per argument type (not per constant value:
    :func:`_without_literals`).

    Usable bare (``@njit``) or with numba options (``@njit(inline="always")``).
    """

    cache = options.pop("cache", True)

    def compile_(f: Callable) -> Callable:
        opts = {"error_model": "numpy", **options}
        try:
            return _without_literals(numba.njit(cache=cache, **opts)(f))
        except RuntimeError as exc:
            if "no locator available" not in str(exc):
                raise
            _warn_no_cache(f.__name__, str(exc))
            return _without_literals(numba.njit(cache=False, **opts)(f))

    return compile_(fn) if fn is not None else compile_



def bind_globals(function: Callable, bindings: dict[Callable, Callable], *,
                 constants: dict[str, object] | None = None, name: str | None = None,
                 cache: bool = False, **options) -> Callable:
    """A compiled copy of the numba function ``function`` whose globals that are keys of
    ``bindings`` (placeholders: matched by identity) name their values instead.

    How a compiled template calls what a record's class chose (a geometry's arms, a radius
    rule, a policy's stage hooks): the choice is made when the copy compiles, and numba inlines
    it.  ``constants``: globals set by name (flags numba folds away).  ``name``: the copy's
    name, which names its disk-cache file (two copies of one source need two names);
    ``cache``: whether numba caches it on disk (only for code of this package, whose source
    stamps the cache: :class:`PackageSourceLocator`); ``options``: numba's
    (``inline="always"``, ``nogil=True``).  ``function`` itself if it uses no
    placeholder and no ``name`` is asked for.
    """
    py_func = getattr(function, "py_func", function)
    # By identity: a module's globals may hold objects that cannot be hashed or compared.
    by_id = {id(placeholder): bound for placeholder, bound in bindings.items()}
    names = {key: by_id[id(value)] for key, value in py_func.__globals__.items()
             if id(value) in by_id}
    names.update(constants or {})
    if not names and name is None:
        return function
    copy = FunctionType(py_func.__code__, dict(py_func.__globals__, **names),
                              py_func.__name__, py_func.__defaults__, py_func.__closure__)
    copy.__qualname__ = copy.__name__ = name or py_func.__name__
    copy.__module__, copy.__doc__ = py_func.__module__, py_func.__doc__
    return njit(cache=cache, **options)(copy)

def over_runs(kernel: Callable, n_runs: int, *args) -> None:
    """``kernel(first, last, *args)`` for blocks of runs ``[first, last)`` on threads.

    The runs are cut into ``numba.get_num_threads()`` contiguous blocks of nearly equal size
    (``NUMBA_NUM_THREADS``, or :func:`numba.set_num_threads`: every core by default), one
    thread each.  ``kernel`` is compiled with ``nogil=True`` and computes each run from that
    run's data only, so the numbers do not depend on the blocks.

    Threads over a plain kernel, rather than numba's ``parallel=True``, because the parfor
    compiles the inlined stage a second time as its gufunc (more than a third of SEGE's cold start;
    ``benchmarks/README.md``).
    With its arrays borrowed (:func:`borrow`), the plain kernel runs as fast as the parfor on
    the paper's problem (SEGE, CLUCB, ROFUL); SEGE on polyhedral sets runs somewhat slower (numba
    lowers the parfor's gufunc with LLVM's ``noalias`` on its arguments, which numba's ``njit``
    does not offer; forcing it slowed SEGE's ellipsoid stages by as much).
    """
    threads = min(numba.get_num_threads(), n_runs)
    if threads <= 1:
        kernel(0, n_runs, *args)
        return
    bounds = [n_runs * k // threads for k in range(threads + 1)]
    # The first block runs on the calling thread, the others on a pool kept between calls:
    # a pool made per call started a thread per block and call, which cost the paper's study
    # (450 calls) about a second on two cores.
    blocks = [_pool(threads - 1).submit(kernel, bounds[k], bounds[k + 1], *args)
              for k in range(1, threads)]
    try:
        kernel(bounds[0], bounds[1], *args)
    finally:
        for block in blocks:
            block.result()


_POOL: list = [None, 0]  # the pool and its workers
_POOL_LOCK = threading.Lock()


def _pool(workers: int) -> ThreadPoolExecutor:
    """The threads :func:`over_runs` gives its blocks after the first: at least ``workers``
    (a larger pool replaces a smaller one)."""
    pool, size = _POOL
    if pool is None or size < workers:
        with _POOL_LOCK:
            pool, size = _POOL
            if pool is None or size < workers:
                if pool is not None:
                    pool.shutdown(wait=False)
                pool = ThreadPoolExecutor(workers, thread_name_prefix="sege_cvx-runs")
                _POOL[:] = [pool, workers]
    return pool


def _forget_pool() -> None:
    """In a forked child: the parent's pool has no threads there (nor may its lock be free)."""
    global _POOL_LOCK
    _POOL[:] = [None, 0]
    _POOL_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _borrowed(context, builder, typ, value):
    """``value`` of numba type ``typ`` with every array's meminfo (its owner's reference count)
    and Python parent set to null; other values are new references, as numba expects."""
    if isinstance(typ, types.Array):
        array = context.make_array(typ)(context, builder, value)
        array.meminfo = cgutils.get_null_value(array.meminfo.type)
        array.parent = cgutils.get_null_value(array.parent.type)
        return array._getvalue()
    if isinstance(typ, types.BaseTuple):
        items = [_borrowed(context, builder, item, builder.extract_value(value, k))
                 for k, item in enumerate(typ)]
        return context.make_tuple(builder, typ, items)
    context.nrt.incref(builder, typ, value)
    return value


@intrinsic
def borrow(typingctx, value):
    """``value`` (an array, or a tuple of arrays and scalars, nested) as borrowed arrays: the
    same memory, without a reference to its owner.

    Every view a kernel takes of an owned array (``vecs[3]``, ``chol[i]``) adds one to its
    owner's reference count and subtracts it after use: two atomic operations, which were 31 %
    of a plain stage loop's time (perf, CLUCB on the paper's problem) and made it 1.7x slower
    than the same loop under ``parallel=True`` (whose gufunc receives borrowed arrays).  Views of
    borrowed arrays count nothing.

    Valid only while the owner lives: the caller's arguments of a kernel, or arrays the kernel
    allocated and passes to :func:`keep_alive` after their last borrowed use.  Never return a
    borrowed array, nor store it where it could outlive its owner.
    """
    def codegen(context, builder, signature, args):
        return _borrowed(context, builder, signature.args[0], args[0])

    return value(value), codegen


@intrinsic
def keep_alive(typingctx, value):
    """Does nothing with ``value``, at this point of the kernel: numba frees a variable after its
    last use, so the owner of arrays borrowed from it (:func:`borrow`) must be used after theirs."""
    def codegen(context, builder, signature, args):
        return context.get_dummy_value()

    return types.none(value), codegen


class OutermostCompile(event.Listener):
    """A numba compile-event listener that acts on the outermost compile only (a kernel compiles
    the kernels it calls within its own compile): :meth:`begin` and :meth:`finish`."""

    def __init__(self) -> None:
        self._depth = 0

    def on_start(self, ev: event.Event) -> None:
        if self._depth == 0:
            self.begin(ev)
        self._depth += 1

    def on_end(self, ev: event.Event) -> None:
        self._depth -= 1
        if self._depth == 0:
            self.finish(ev)

    def begin(self, ev: event.Event) -> None:
        """An outermost compile starts."""

    def finish(self, ev: event.Event) -> None:
        """The outermost compile ended (also when it raised)."""


class CompileTimer(OutermostCompile):
    """Seconds numba spends compiling (cache misses, not loads) while installed: ``seconds``.

    Nested compiles (a kernel and the kernels it calls) are counted once, by the outermost.
    """

    def __init__(self) -> None:
        super().__init__()
        self.seconds = 0.0
        self._start = 0.0

    def begin(self, ev: event.Event) -> None:
        self._start = time.perf_counter()

    def finish(self, ev: event.Event) -> None:
        self.seconds += time.perf_counter() - self._start


class FrozenHeapWhileCompiling(OutermostCompile):
    """While numba compiles a kernel of this package, Python's cyclic collector skips the objects
    that existed before (:func:`gc.freeze`, then :func:`gc.unfreeze`).

    numba's inliner deep-copies the IR of every inlined function, hundreds of thousands of
    short-lived objects, and their allocations set off full collections that traverse every
    object of the process (numpy, scipy and cvxpy loaded): about 1.4 s of SEGE's cold start on
    the paper's problem (``benchmarks/bench_cold_start.py``).  Garbage made while compiling is
    still collected.  Nothing is done where the collector is off or objects are frozen already
    (an application's own :func:`gc.freeze` is left as it is).  Installed once, at import.
    """

    def __init__(self) -> None:
        super().__init__()
        self._froze = False

    def begin(self, ev: event.Event) -> None:
        py_func = getattr(ev.data.get("dispatcher"), "py_func", None)
        if (gc.isenabled() and gc.get_freeze_count() == 0
                and getattr(py_func, "__module__", "").startswith("sege_cvx.")):
            gc.freeze()
            self._froze = True

    def finish(self, ev: event.Event) -> None:
        if self._froze:
            self._froze = False
            gc.unfreeze()


if not any(isinstance(listener, FrozenHeapWhileCompiling)
           for listener in getattr(event, "_registered", {}).get("numba:compile", ())):
    event.register("numba:compile", FrozenHeapWhileCompiling())


@contextlib.contextmanager
def compile_timer() -> Iterator[CompileTimer]:
    """A :class:`CompileTimer` installed for the block."""
    timer = CompileTimer()
    with event.install_listener("numba:compile", timer):
        yield timer


def has_disk_cache(kernel) -> bool:
    """Whether numba caches ``kernel`` on disk (not where no cache directory is writable)."""
    return not isinstance(getattr(kernel, "_cache", None), caching.NullCache | type(None))


def cached(kernel) -> bool:
    """Whether numba's disk cache holds ``kernel`` compiled from this package's source (for some
    argument types): a hint for planning work, never relied on for correctness."""
    try:
        return bool(kernel._cache._cache_file._load_index())
    except (AttributeError, OSError):  # no disk cache (numba's NullCache), or unreadable
        return False
