"""How many threads the numeric libraries (torch, Dr.Jit) use in this process.

Why one place: a build or a benchmark may run several worker processes on one machine, and each
library defaults to every core, so two workers on two cores would run four busy threads and
spend their time waiting on each other. `MASKSCORE_THREADS` (set by whoever starts the
workers) gives each process its share; without it torch uses up to two threads, the most that
paid off on the 2-core development machine, and Dr.Jit one per core.

Stored values must not depend on that count: float64 matrix products (MKL) and reductions can
differ in the last bit between thread counts, so code whose float64 results are stored (the
body model) runs inside `one_thread()`.

NumPy's and SciPy's BLAS (OpenBLAS) are pinned to one thread for the whole process the first
time MaskScore sets its threads (`pin_blas`). Their default is one thread per core, so a
gram matrix's last bits would follow the machine's core count; and their threads spin while
they wait, so beside the scorer's own busy threads (Mitsuba's renders, AlexNet on the pool) a
small product can take tens of times longer than on one thread (docs/metric.md, "Speed").
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import os
import threading

from threadpoolctl import ThreadpoolController

ENV = "MASKSCORE_THREADS"
DEFAULT_MAX = 2


class ThreadsError(ValueError):
    """A thread count that is not a positive integer."""


def wanted() -> int:
    """The thread count for this process: MASKSCORE_THREADS, else min(2, cores)."""
    value = os.environ.get(ENV)
    if value is None or value == "":
        return max(1, min(DEFAULT_MAX, os.cpu_count() or 1))
    try:
        count = int(value)
    except ValueError:
        raise ThreadsError(f"{ENV}={value!r} is not an integer") from None
    if count < 1:
        raise ThreadsError(f"{ENV}={value!r} must be at least 1")
    return count


def share(workers: int) -> int:
    """Threads per worker when `workers` processes share this machine's cores."""
    return max(1, (os.cpu_count() or 1) // max(1, workers))


@functools.cache
def pin_blas() -> None:
    """NumPy's and SciPy's BLAS libraries to one thread, for good (module docstring)."""
    import scipy.linalg  # noqa: F401 - loads SciPy's own OpenBLAS, so that it is pinned too

    ThreadpoolController().limit(limits=1, user_api="blas")


def apply() -> int:
    """Set torch's (and, once Mitsuba's variant is chosen, Dr.Jit's) thread count and pin the
    BLAS libraries to one thread; returns torch's count."""
    import torch

    pin_blas()
    count = wanted()
    torch.set_num_threads(count)
    return count


def apply_drjit() -> None:
    """Dr.Jit's thread pool (the LLVM backend's kernels and Embree builds) to MASKSCORE_THREADS
    when it is set; otherwise Dr.Jit keeps its default of one thread per core."""
    if os.environ.get(ENV):
        import drjit

        drjit.set_thread_count(wanted())


@contextlib.contextmanager
def one_thread():
    """Run the body on one torch thread, whatever this process's thread count is, then restore
    the calling thread's count (BLAS stays pinned to one thread, `pin_blas`).

    torch's count is the calling thread's own (OpenMP's), but setting it also sets the count that
    a thread which never set its own takes at its first torch call; that one follows whichever
    thread set it last. Work on other threads runs on one torch thread through `OneThreadPool`."""
    import torch

    pin_blas()
    count = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(count)


def _on_one_thread(work, /, *args, **kwargs):
    with one_thread():
        return work(*args, **kwargs)


class OneThreadPool(concurrent.futures.ThreadPoolExecutor):
    """A thread pool whose every task runs inside `one_thread`: a fresh pool thread would take
    the count some other thread set last (`one_thread`), which, with rows scored at once, is a
    matter of timing; its float sums, and so the scores, would follow it."""

    def submit(self, fn, /, *args, **kwargs):  # `map` submits through here too
        return super().submit(_on_one_thread, fn, *args, **kwargs)


_KEPT_POOLS: dict[tuple, OneThreadPool] = {}
_KEPT_POOLS_LOCK = threading.Lock()


def kept_pool(name: str) -> OneThreadPool:
    """The process's one `OneThreadPool` named `name`, of `wanted()` threads, made on first use and
    kept. Why kept: a pool made per call starts fresh threads every time, and each fresh thread
    sets up its own allocator state (a glibc arena, AlexNet's scratch buffers) whose pages the
    kernel faults in anew (docs/metric.md, "Page faults"). Keyed by process too: a forked child
    inherits the pool object but not its threads."""
    key = (os.getpid(), name, wanted())
    with _KEPT_POOLS_LOCK:
        pool = _KEPT_POOLS.get(key)
        if pool is None:
            pool = _KEPT_POOLS[key] = OneThreadPool(max_workers=key[2], thread_name_prefix=name)
        return pool
