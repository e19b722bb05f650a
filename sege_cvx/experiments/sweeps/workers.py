"""Where a sweep's shards run: in this process, on local worker processes, or on a Dask cluster.

Shards go to a ``concurrent.futures`` executor (:func:`shard_executor`): none (this process), a pool
of local worker processes started by ``spawn`` that report the shards they start and exit with
the sweep's process (:class:`_LocalPool`, :func:`follow_parent`), or a ``dask.distributed``
client's executor, whose workers are first sent the modules they cannot import
(:func:`ship_modules`); the scheduling is theirs.  :func:`finished_shards` yields the shards as they
finish: a shard that fails, a worker that dies or Ctrl-C ends the sweep in one line.
"""

from __future__ import annotations

import ast
import concurrent.futures as cf
import contextlib
import gc
import importlib
import importlib.util
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator

import numpy as np
from tqdm.auto import tqdm

from ..spec import SpecError, StudySpec
from .errors import SavedShards, SweepError
from .shards import ShardTask, run_shard


class SchedulerError(ConnectionError):
    """The Dask scheduler given by address cannot be reached; nothing was written."""


def worker_count(workers) -> int:
    if workers is None:
        return os.cpu_count() or 1
    if isinstance(workers, bool) or not isinstance(workers, int | np.integer) or workers < 1:
        raise ValueError(f"workers must be a positive int, got {workers!r}")
    return int(workers)


#: In a local worker process: the pipe on which it reports the shards it starts (set by
#: _init_worker).
_STARTED = None


def _init_worker(started, parent: int) -> None:
    """Set up a local worker process: report started shards on ``started``, and
    :func:`follow_parent`."""
    global _STARTED
    _STARTED = started
    follow_parent(parent)


def follow_parent(parent: int) -> None:
    """Make this helper process one its parent (pid ``parent``) ends: leave Ctrl-C to the parent
    (which ends its helpers itself, without their tracebacks), and exit when the parent dies,
    even by SIGKILL, rather than live on as an orphan."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # A thread lock for tqdm (the simulation's disabled progress bar): its default is a
    # multiprocessing lock, a semaphore that a helper ended by its parent would leave behind.
    tqdm.set_lock(threading.RLock())
    threading.Thread(target=_exit_with_parent, args=(parent,), name="sege-cvx-parent-watch",
                     daemon=True).start()


def _exit_with_parent(parent: int) -> None:
    # Polling the parent pid works on every POSIX platform (prctl's death signal is Linux's
    # alone, and fires when the forking *thread* ends).  The check runs whenever the worker's
    # main thread leaves compiled code, at least every few stages.
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


def _run_in_worker(task: ShardTask):
    """:func:`run_shard` in a local worker process, having said which shard it starts."""
    # One short message: a single write to the pipe, whole even with other workers writing.
    _STARTED.send_bytes(f"{os.getpid()} {task.name}".encode())
    try:
        return run_shard(task)
    except KeyboardInterrupt:  # workers ignore Ctrl-C: this one came from the shard's own code
        raise RuntimeError("KeyboardInterrupt raised by the shard's code (a factory?)") from None


def finished_shards(executor, tasks: list[ShardTask], saved: SavedShards):
    """Each task with its shard table, as they finish (in order, in this process, without an
    executor); pending tasks are cancelled if the caller stops early or fails.

    A shard that raises, or a local worker process that dies, ends the sweep with a one-line
    :class:`SweepError` naming the shard (``KeyboardInterrupt`` is left to the caller).
    """
    if executor is None:
        for task in tasks:
            try:
                table = run_shard(task)
            except Exception as exc:
                raise _shard_failed(task.name, exc, saved) from exc
            yield task, table
        return
    local = isinstance(executor, _LocalPool)
    submit = executor.submit
    futures = {submit(_run_in_worker if local else run_shard, task): task for task in tasks}
    pending = set(futures)
    try:
        with _deferred_interrupt() as interrupted:
            while pending:
                done, pending = cf.wait(pending, timeout=0.2, return_when=cf.FIRST_COMPLETED)
                for future in sorted(done, key=lambda f: futures[f].name):
                    task = futures[future]
                    try:
                        table = future.result()
                    except cf.process.BrokenProcessPool:
                        raise SweepError(executor.death_report(futures),
                                         f"{saved}: rerun the same command to resume") from None
                    except Exception as exc:
                        raise _shard_failed(task.name, exc, saved) from exc
                    yield task, table
                if interrupted():
                    raise KeyboardInterrupt
    finally:
        for future in futures:
            future.cancel()


@contextlib.contextmanager
def _deferred_interrupt():
    """Ctrl-C while shards run elsewhere, noted by a signal handler and raised by the caller
    (``if interrupted(): raise KeyboardInterrupt``) between waits: a ``KeyboardInterrupt``
    raised at any instruction could leave a future's lock held, and the executor's thread,
    which needs it, would then hang the sweep's shutdown.  Outside the main thread (where no
    handler can be set) Ctrl-C is left as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda: False
        return
    seen = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: seen.append(signum))
    try:
        yield lambda: bool(seen)
    finally:
        signal.signal(signal.SIGINT, previous)


def _shard_failed(name: str, exc: BaseException, saved: SavedShards) -> SweepError:
    what = str(exc) if isinstance(exc, SpecError) else f"{type(exc).__name__}: {exc}"
    return SweepError(f"shard {name} failed: {' '.join(what.split())}",
                      f"{saved}: fix the cause and rerun the same command to resume")


class _LocalPool(cf.ProcessPoolExecutor):
    """Local worker processes (``spawn``) that report the shards they start and exit with the
    sweep's process, so that a dead worker is named with its shard."""

    def __init__(self, workers: int):
        context = multiprocessing.get_context("spawn")
        # A pipe, not a queue: nothing (no semaphore) is left to clean up if the sweep is cut.
        self.started, writer = context.Pipe(duplex=False)
        super().__init__(workers, mp_context=context, initializer=_init_worker,
                         initargs=(writer, os.getpid()))
        self.seen: dict[int, multiprocessing.Process] = {}

    def submit(self, fn, /, *args, **kwargs):
        future = super().submit(fn, *args, **kwargs)
        # The pool's processes, kept to read their exit codes once the pool is broken (it
        # forgets them); spawned pools start all of them at the first submit.
        self.seen.update(getattr(self, "_processes", None) or {})
        return future

    def end_workers(self) -> None:
        """Terminate the worker processes (SIGTERM: no traceback), e.g. on Ctrl-C."""
        for process in self.seen.values():
            if process.is_alive():
                process.terminate()

    def death_report(self, futures: dict) -> str:
        """``"worker process 123 was killed by SIGKILL while computing shard NAME"``."""
        last = {}
        while self.started.poll():
            pid, name = self.started.recv_bytes().decode().split(" ", 1)
            last[int(pid)] = name
        done = {task.name for future, task in futures.items()
                if future.done() and not future.cancelled() and future.exception() is None}
        deadline = time.monotonic() + 5.0
        for process in self.seen.values():
            process.join(timeout=max(0.0, deadline - time.monotonic()))
            # The pool's own thread may be reaping this process at the same moment: then our
            # wait finds no child (ECHILD) and exitcode stays None until that thread stores it.
            while process.exitcode is None and time.monotonic() < deadline:
                time.sleep(0.01)
        # The pool ends the other workers by SIGTERM once one died: a worker that ended
        # otherwise is the one; failing that, one that was computing a shard.
        ended = [(pid, p.exitcode) for pid, p in self.seen.items() if p.exitcode is not None]
        died = ([(pid, code) for pid, code in ended if code != -signal.SIGTERM]
                or [(pid, code) for pid, code in ended if last.get(pid) not in (None, *done)])
        if not died:
            return "a worker process died"
        pid, code = died[0]
        how = (f"was killed by {_signal_name(-code)}" if code < 0 else
               f"exited with status {code}")
        shard = last.get(pid)
        where = (f" while computing shard {shard}" if shard and shard not in done
                 else " between shards")
        return f"worker process {pid} {how}{where}"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


@contextlib.contextmanager
def shard_executor(workers: int, client, scheduler: str | None) -> Iterator[tuple]:
    """The executor for the shards (None: this process), the numba threads per shard, and the
    Dask client (None for local work)."""
    if client is not None or scheduler is not None:
        owned = None
        if client is None:
            from distributed import Client

            failure = None
            try:
                client = owned = Client(scheduler)
            except (OSError, ValueError, TypeError) as exc:  # unreachable, or not an address
                failure = f"cannot connect to the Dask scheduler {scheduler!r}: {exc}"
            if failure is not None:
                # The half-built Client lives on in the exception's frames until the garbage
                # collector finalizes it, at any later moment: its __del__ then closes its event
                # loop, which deadlocks if that moment is inside another Client's start (seen
                # when a sweep was retried). Finalize it here, and keep no traceback to it.
                gc.collect()
                raise SchedulerError(failure)
        try:
            yield client.get_executor(), None, client
        finally:
            if owned is not None:
                owned.close()
        return
    if workers == 1:
        yield None, None, None
        return
    threads = max(1, (os.cpu_count() or 1) // workers)
    # spawn, not fork: the parent's OpenMP and noise-drawing threads do not survive a fork.
    # Each shard sets its numba threads itself (ShardTask.threads).
    pool = _LocalPool(workers)
    try:
        yield pool, threads, None
    except BaseException:
        pool.end_workers()  # their shards are lost anyway: do not wait for them
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def check_spawnable(spec: StudySpec, algorithms: dict[str, dict], workers: int) -> None:
    """Refuse a policy or problem factory that local worker processes cannot import, or a
    program they cannot start from.

    They are started by ``spawn``: each first runs the program's ``__main__`` again, from its
    file (or imports it by name, ``python -m``), then imports the classes and factories it
    runs by name.  A ``__main__`` without a file (``python -c``, an interactive session, a
    notebook) they skip, so its classes are missing: every shard failed with "module
    '__main__' has no attribute", after the sweep's directory was written.  One read from
    standard input (``python - < script.py``) they try to run from ``'<stdin>'``, and die.

    Parameters
    ----------
    spec : StudySpec
        The sweep's spec (its problems' factories).
    algorithms : dict
        :func:`~.plan.describe_algorithms` of ``spec`` (each policy's class, ``"module:Class"``).
    workers : int
        The local worker processes (named by the message).

    Raises
    ------
    SpecError
        Naming the first such class or factory, or the program's source, and the fix: define
        it in a module file (save the program in a file), or run with ``workers=1``.
    """
    main = sys.modules.get("__main__")
    # What multiprocessing's spawn gives its workers of __main__ (spawn.get_preparation_data).
    if getattr(getattr(main, "__spec__", None), "name", None):
        return  # python -m: imported by name
    source = getattr(main, "__file__", None)
    if source is not None and not os.path.isfile(source):
        raise SpecError(f"this program's __main__ was read from {source!r}, not a file, and the "
                        f"{workers} worker processes start by running it again: save the "
                        "program in a file and run that, or run with workers=1")
    found = [(f"policy {name!r} is class", described["class"])
             for name, described in algorithms.items()]
    found += [(f"problem factory {p.factory!r} is", p.factory) for p in spec.problems
              if p.factory]
    bound = None if source is None else _main_guard_names(source)
    for what, path in found:
        module, attribute = path.split(":")
        if module not in ("__main__", "__mp_main__"):
            continue
        if source is None:
            raise SpecError(f"{what} {attribute} of __main__, which has no file (python -c, an "
                            f"interactive session or a notebook): the {workers} worker "
                            "processes cannot import it; define it in a module file and "
                            "import it from there, or run with workers=1")
        top = attribute.split(".")[0]
        # Refused only on evidence: bound in the block and nowhere else at the top (a name
        # bound by exec() or a star import, which no syntax tree shows, is left alone).
        if bound is not None and top in bound[1] and top not in bound[0]:
            name = os.path.basename(source)
            raise SpecError(f"{what} {attribute} of {name}, defined under "
                            f"'if __name__ == \"__main__\":', which the {workers} worker "
                            f"processes skip when they run {name} again: define it above that "
                            "block (or in a module file), or run with workers=1")


def _is_main_guard(node: ast.stmt) -> bool:
    """Whether ``node`` is ``if __name__ == "__main__":`` (either way round)."""
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return False
    test = node.test
    if len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return False
    sides = [test.left, test.comparators[0]]
    return (any(isinstance(n, ast.Name) and n.id == "__name__" for n in sides)
            and any(isinstance(n, ast.Constant) and n.value == "__main__" for n in sides))


def _bound_names(node: ast.AST) -> set[str]:
    """The names a statement binds (definitions, imports, assignment targets), nested blocks
    included."""
    names: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in n.names)
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            names.add(n.id)
    return names


def _main_guard_names(source: str) -> tuple[set[str], set[str]] | None:
    """``(outside, inside)``: the names a script binds at its top level outside its ``if
    __name__ == "__main__":`` blocks (what a spawned worker, which runs it as ``__mp_main__``,
    has) and inside them; None where it cannot be read or parsed (then nothing is refused)."""
    try:
        with open(source, encoding="utf-8") as handle:
            tree = ast.parse(handle.read(), filename=source)
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    outside: set[str] = set()
    inside: set[str] = set()
    pending = list(tree.body)
    while pending:
        node = pending.pop()
        if _is_main_guard(node):
            for statement in node.body:
                inside |= _bound_names(statement)
            pending += node.orelse
        elif isinstance(node, (ast.If, ast.Try)):  # a guard may sit inside either
            for field in ("body", "orelse", "finalbody"):
                pending += getattr(node, field, [])
            for handler in node.handlers if isinstance(node, ast.Try) else []:
                pending += handler.body
                if handler.name:
                    outside.add(handler.name)
        else:
            outside |= _bound_names(node)
    return outside, inside


def ship_modules(client, spec: StudySpec, algorithms: dict[str, dict]) -> None:
    """Make sure the Dask workers can import each problem factory's module and the module of
    each policy outside sege_cvx (``algorithms``: :func:`~.plan.describe_algorithms`; registered or
    named by import path), before any shard runs: a module they cannot import is uploaded to
    them (``Client.upload_file``) if it is a single file this process imports it from;
    otherwise a :class:`SpecError` says how.  A policy defined in the running script
    (``__main__``) cannot be sent: a one-line SpecError says to move it into a module."""
    modules = {p.factory.split(":")[0] for p in spec.problems if p.factory}
    for name, described in algorithms.items():
        if described["code"] is None:  # sege_cvx's own
            continue
        module = described["class"].split(":")[0]
        if module == "__main__":
            raise SpecError(f"policy {name!r} is defined in the running script (__main__), which "
                            "Dask workers cannot import: put it in a module beside the script "
                            "and register or name it from there")
        modules.add(module)
    for module in sorted(modules):
        failures = _import_failures(client, module)
        origin = getattr(importlib.util.find_spec(module), "origin", None)
        single_file = origin is not None and origin.endswith(".py") and not origin.endswith(
            "__init__.py")
        if failures and single_file:
            try:
                client.upload_file(origin)
            except Exception as exc:  # e.g. a worker's directory it cannot write
                failures = {"upload": f"sending {origin} failed: {type(exc).__name__}: {exc}"}
            else:
                failures = _import_failures(client, module)
        if failures:
            worker, error = next(iter(sorted(failures.items())))
            hint = ("" if single_file else "; it is a package, which cannot be uploaded: ")
            raise SpecError(f"the Dask workers cannot import {module!r}, the module of a problem "
                            f"factory or policy ({worker}: {error}){hint or '; '}install it where the "
                            "workers run, or put it on their PYTHONPATH")


def _import_failures(client, module: str) -> dict[str, str]:
    """Per Dask worker that cannot import ``module``: why."""
    try:
        results = client.run(_try_import, module)
    except Exception as exc:  # e.g. workers that cannot import sege_cvx itself
        return {"workers": f"{type(exc).__name__}: {exc}"}
    return {worker: error for worker, error in results.items() if error is not None}


def _try_import(module: str) -> str | None:
    """On a worker: None if ``module`` imports, else the error."""
    try:
        importlib.import_module(module)
    except BaseException as exc:  # noqa: BLE001 - reported, whatever it is
        return f"{type(exc).__name__}: {exc}"
    return None
