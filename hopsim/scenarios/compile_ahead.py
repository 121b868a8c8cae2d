"""Compile a scenario's numerical kernels ahead of its first run, on every core.

numba compiles a kernel at its first call, one after another in one process: a new machine's
first run of the SPHERES scenarios spends half a minute compiling. The kernels a scenario calls
from Python, and the argument types they are called with, are listed in the package's kernel
manifest (``kernel_manifest.json``, written by ``python -m hopsim.scenarios.compile_ahead --record``). Before
a scenario's first run, :func:`compile_ahead` compiles them in a pool of processes, the longest
first, into numba's disk cache; the run then loads them from the cache. A kernel the manifest
misses (new argument types, a new kernel) still compiles at its first call, as before.

numba compiles a kernel together with the functions it calls that are not compiled yet (in
this process, or in the disk cache), and two processes that need one function at once both
compile it. The manifest therefore says, for each kernel, the seconds it takes to compile in a
process of its own and the package's functions it calls (directly or not); a free process takes
the longest kernel that calls none of the functions the other processes are compiling (the
longest of all if each one does): a function is compiled once, and the kernels that call it
later load it from the cache.

A stamp beside numba's cache remembers that a scenario's kernels were compiled ahead for these
sources (hash of the package's Python files), this numba and this CPU, those that could be; a
later run checks the stamp only.

Ctrl-C while compiling ahead is the parent's alone: the pool's processes ignore SIGINT from their
start (no traceback from them), and the parent stops them and raises KeyboardInterrupt. An
interrupt that lands where Python cannot raise it (in a C callback of numba's or llvmlite's, which
reports "Exception ignored" and goes on) is kept and raised at the next safe point
(:class:`_Interrupts`): it is never lost.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import platform
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from importlib import resources
from multiprocessing import active_children, get_context
from pathlib import Path
from typing import NamedTuple

MANIFEST = "kernel_manifest.json"


class Kernel(NamedTuple):
    """A kernel of the manifest."""

    module: str
    name: str
    signature: str  # the argument types, as :func:`_parse_signature` reads them
    seconds: float  # compiling it, with the functions it calls, in a process of its own
    calls: tuple[str, ...] = ()  # the package's functions it calls, directly or not ("module.qualname")


def load_manifest() -> dict[str, list[Kernel]]:
    """Scenario name -> the kernels its run compiles (as recorded)."""
    text = resources.files("hopsim.scenarios").joinpath(MANIFEST).read_text()
    return {
        name: [Kernel(*k[:4], tuple(k[4].split()) if len(k) > 4 else ()) for k in kernels]
        for name, kernels in json.loads(text)["scenarios"].items()
    }


def _sources_digest() -> str:
    """SHA-256 of hopsim's Python sources, numba's version and this CPU: what a cache is valid for."""
    import numba
    from numba.core.config import CPU_NAME

    h = hashlib.sha256(f"{numba.__version__}|{CPU_NAME or ''}|{platform.machine()}".encode())
    package = Path(__file__).parents[1]  # the whole hopsim package
    for path in sorted(package.rglob("*.py")):
        h.update(str(path.relative_to(package)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def _stamp_dir() -> Path:
    """Where numba keeps this package's cache: ``NUMBA_CACHE_DIR`` if set, else ``__pycache__`` here."""
    from numba.core.config import CACHE_DIR

    return Path(CACHE_DIR) if CACHE_DIR else Path(__file__).parent / "__pycache__"


def _stamp(scenario: str) -> Path:
    return _stamp_dir() / f"hopsim-compiled-{scenario}.stamp"


def is_compiled(scenario: str) -> bool:
    """Whether ``scenario``'s kernels were compiled ahead for the present sources."""
    try:
        return _stamp(scenario).read_text() == _sources_digest()
    except OSError:
        return False


def _parse_signature(text: str):
    from numba.core import types

    return tuple(eval(text, {"__builtins__": {}}, vars(types)))  # the package's own manifest


def _dispatcher(module: str, name: str):
    """The numba dispatcher of ``module.name`` (a function compiled for one signature at its first call
    gets a dispatcher of its own here: both write the same cache entries)."""
    from numba import njit

    from hopsim.dynamics._jit import COMPILE_OPTIONS

    fn = getattr(importlib.import_module(module), name)
    return fn if hasattr(fn, "compile") else njit(**COMPILE_OPTIONS)(fn.__wrapped__)


def _compile_one(module: str, name: str, signature: str) -> float:
    """In a pool process: compile (or load) one kernel into the disk cache; the seconds it took."""
    t0 = time.perf_counter()
    _dispatcher(module, name).compile(_parse_signature(signature))
    return time.perf_counter() - t0


def _ignore_interrupts() -> None:
    """A pool process's initializer: Ctrl-C is the parent's to handle (it stops the pool)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextmanager
def _deaf_children() -> Iterator[None]:
    """Within: the processes started here ignore SIGINT from their first instruction (an ignored
    signal stays ignored across exec, and Python then leaves it so), so that a Ctrl-C while one
    is still importing gives no traceback from it. For the few milliseconds this takes, this
    process ignores SIGINT too, with it blocked: a Ctrl-C meanwhile stays pending, and is
    delivered to the handler there was when the block ends."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    blocks = hasattr(signal, "pthread_sigmask")
    if blocks:
        # started now, not within: it unblocks SIGINT when it has started
        from multiprocessing import resource_tracker

        resource_tracker.ensure_running()
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if blocks:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)


class _Interrupts:
    """Ctrl-C during compiling ahead: a KeyboardInterrupt where it lands, and remembered, so that
    one swallowed by a C callback (numba's, llvmlite's) is raised again by :meth:`check`."""

    def __init__(self):
        self.seen = False

    def handler(self, signum, frame) -> None:
        self.seen = True
        raise KeyboardInterrupt

    def check(self) -> None:
        """A safe point: raise the interrupt that came, if one did."""
        if self.seen:
            raise KeyboardInterrupt


@contextmanager
def _interrupts_kept() -> Iterator[_Interrupts]:
    """Within: Ctrl-C goes through :class:`_Interrupts` (in the main thread, over Python's own
    handler of SIGINT; elsewhere nothing changes and :meth:`_Interrupts.check` never raises)."""
    interrupts = _Interrupts()
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield interrupts
        return
    previous = signal.signal(signal.SIGINT, interrupts.handler)
    try:
        yield interrupts
        interrupts.check()
    finally:
        signal.signal(signal.SIGINT, previous)


def _stop(pool: ProcessPoolExecutor, workers: set) -> None:
    """Stop compiling now: the kernels not started are cancelled, the processes compiling are
    ended (numba writes a cache entry whole or not at all)."""
    pool.shutdown(wait=False, cancel_futures=True)
    for process in workers:
        process.terminate()
    for process in workers:
        process.join(5)


def _functions(kernel: Kernel) -> frozenset[str]:
    """What compiling ``kernel`` may compile: itself and the package's functions it calls."""
    return frozenset((f"{kernel.module}.{kernel.name}", *kernel.calls))


def _next_kernel(pending: list[Kernel], compiling: list[Kernel]) -> Kernel:
    """Of ``pending`` (longest first), the longest that calls none of the functions of the kernels
    ``compiling`` in the other processes (those would be compiled twice), else the longest."""
    busy = frozenset().union(*map(_functions, compiling))
    return next((k for k in pending if not _functions(k) & busy), pending[0])


def compile_ahead(scenario: str, workers: int | None = None, report: Callable[[str], None] = lambda line: None) -> int:
    """Compile the kernels of ``scenario``'s manifest into numba's cache with ``workers`` processes
    (default: one per core), unless the stamp says they are; the number compiled. ``report``
    receives one progress line per kernel and a closing line."""
    if is_compiled(scenario):
        return 0
    kernels = sorted(load_manifest().get(scenario, []), key=lambda k: -k.seconds)
    if not kernels:
        return 0
    workers = max(1, min(workers or os.cpu_count() or 1, len(kernels)))
    report(
        f"compiling {len(kernels)} numerical kernels of {scenario} ahead of its first run "
        f"({workers} processes; later runs load them from the cache)..."
    )
    t0 = time.perf_counter()
    failed = []
    ours = set(active_children())  # the processes started before: not the pool's
    pool = None
    pending, running, done = list(kernels), {}, 0

    def start() -> None:  # one more kernel for a free process
        kernel = _next_kernel(pending, list(running.values()))
        pending.remove(kernel)
        try:
            future = pool.submit(_compile_one, kernel.module, kernel.name, kernel.signature)
        except BrokenProcessPool as exc:  # a process died: this kernel too is left to its first call
            future = Future()
            future.set_exception(exc)
        running[future] = kernel

    with _interrupts_kept() as interrupts:
        try:
            with _deaf_children():  # the pool's processes start (one per kernel submitted) and stay deaf to Ctrl-C
                pool = ProcessPoolExecutor(workers, mp_context=get_context("spawn"), initializer=_ignore_interrupts)
                for _ in range(workers):
                    start()
            while running:
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                interrupts.check()
                for future in finished:
                    kernel, done = running.pop(future), done + 1
                    label = f"{kernel.module.rsplit('.', 1)[-1]}.{kernel.name}"
                    try:
                        future.result()
                    except Exception as exc:  # compiled at first call instead
                        failed.append(f"{label} ({type(exc).__name__})")
                    report(f"  {done}/{len(kernels)} {label}, {time.perf_counter() - t0:.0f} s")
                while pending and len(running) < workers:
                    start()
            interrupts.check()
        except BaseException:
            if pool is not None:
                _stop(pool, set(active_children()) - ours)
            raise
        pool.shutdown()
    report(
        f"compiled {len(kernels) - len(failed)} kernels ahead in {time.perf_counter() - t0:.1f} s"
        + (f"; left to their first call: {', '.join(failed)}" if failed else "")
    )
    _stamp_dir().mkdir(parents=True, exist_ok=True)  # the same sources would fail again: not retried
    _stamp(scenario).write_text(_sources_digest())
    return len(kernels) - len(failed)


# ---------------------------------------------------------------------------------- recording


def _signature_text(args) -> str | None:
    """The text of a signature that :func:`_parse_signature` gives back exactly, or None."""
    text = "(" + "".join(f"{a!r}, " for a in args) + ")"
    try:
        return text if _parse_signature(text) == tuple(args) else None
    except Exception:
        return None


def record(scenarios: list[str]) -> dict[str, list[Kernel]]:
    """Run each scenario for its default duration, recorded, in a fresh process with an empty numba
    cache and list the kernels it compiles from Python (top-level compilations only): the
    scenario's and the recorder's, each with the seconds it takes to compile alone and the
    package's functions it calls (:func:`_record_one`)."""
    import subprocess
    import sys

    found = {}
    for name in scenarios:
        with tempfile.TemporaryDirectory(prefix="hopsim-record-") as cache:
            out = subprocess.run(
                [sys.executable, "-m", "hopsim.scenarios.compile_ahead", "--record-one", name],
                env={**os.environ, "NUMBA_CACHE_DIR": cache},
                capture_output=True,
                text=True,
                check=True,
            )
        found[name] = [Kernel(*k[:4], tuple(k[4].split())) for k in json.loads(out.stdout.splitlines()[-1])]
    return found


def _linked(library) -> list:
    """The code libraries numba linked into ``library``'s (compiled functions it calls, directly
    or not), ``library`` first."""
    seen, order = {id(library)}, [library]
    for lib in order:
        for linked in getattr(lib, "_linking_libraries", ()):
            if id(linked) not in seen:
                seen.add(id(linked))
                order.append(linked)
    return order


def _record_one(name: str) -> list[list]:
    """The kernels ``name``'s run compiles from Python, as manifest entries: module, function,
    signature, the seconds compiling it alone takes (the sum of the compile times, less those of
    the functions compiled within, of every function linked into it; each function compiles once
    in this run, whichever kernel needs it first) and the package's functions it calls."""
    from numba.core import event

    from hopsim.scenarios.runner import run_scenario

    stack, kernels, functions = [], {}, {}  # functions: id(library) -> (library, "module.qualname", own seconds)

    class _Listener(event.Listener):
        def on_start(self, ev):
            stack.append([time.perf_counter(), 0.0])

        def on_end(self, ev):
            t0, inner = stack.pop()
            took = time.perf_counter() - t0
            if stack:
                stack[-1][1] += took
            dispatcher, args = ev.data["dispatcher"], tuple(ev.data["args"])
            fn = dispatcher.py_func
            library = getattr(dispatcher.overloads.get(args), "library", None)
            if library is None:
                return
            functions[id(library)] = (library, f"{fn.__module__}.{fn.__qualname__}", took - inner)
            text = _signature_text(args)
            if stack or text is None or "<locals>" in fn.__qualname__ or not fn.__module__.startswith("hopsim."):
                return
            kernels[(fn.__module__, fn.__qualname__, text)] = library

    event.register("numba:compile", _Listener())
    with tempfile.TemporaryDirectory(prefix="hopsim-record-") as out:
        run_scenario(name, out=Path(out) / "run.mcap")  # recorded, as `make run` flies it
    found = []
    for (module, qualname, text), library in sorted(kernels.items()):
        linked = [functions[id(lib)] for lib in _linked(library) if id(lib) in functions]
        calls = sorted(
            {f for _, f, _ in linked[1:] if f.startswith("hopsim.") and "<locals>" not in f} - {f"{module}.{qualname}"}
        )
        found.append([module, qualname, text, round(sum(s for _, _, s in linked), 2), " ".join(calls)])
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description="compile a scenario's kernels ahead, or record the manifest")
    ap.add_argument("scenario", nargs="?", help="compile this scenario's kernels ahead")
    ap.add_argument("--record", action="store_true", help="rewrite the manifest from runs of every scenario")
    ap.add_argument("--record-one", help=argparse.SUPPRESS)
    opts = ap.parse_args()
    if opts.record_one:
        print(json.dumps(_record_one(opts.record_one)))
    elif opts.record:
        from hopsim.scenarios.catalog import all_scenarios

        manifest = {
            "written_by": "python -m hopsim.scenarios.compile_ahead --record",
            "scenarios": {
                name: [[*k[:4], " ".join(k.calls)] for k in kernels]
                for name, kernels in record([spec.name for spec in all_scenarios()]).items()
            },
        }
        Path(__file__).with_name(MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    elif opts.scenario:
        compile_ahead(opts.scenario, report=print)
    else:
        ap.error("give a scenario, or --record")


if __name__ == "__main__":
    main()
