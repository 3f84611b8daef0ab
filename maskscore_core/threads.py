"""How many threads the numeric libraries (torch, Dr.Jit) use in this process.

Why one place: a build or a benchmark may run several worker processes on one machine, and each
library defaults to every core, so two workers on two cores would run four busy threads and
spend their time waiting on each other. `MASKSCORE_THREADS` (set by whoever starts the
workers) gives each process its share; without it torch uses up to two threads, the most that
paid off on the 2-core development machine, and Dr.Jit one per core.

Stored values must not depend on that count: float64 matrix products (MKL) and reductions can
differ in the last bit between thread counts, so code whose float64 results are stored (the
body model) runs inside `one_thread()`.
"""

from __future__ import annotations

import contextlib
import os

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


def apply() -> int:
    """Set torch's (and, once Mitsuba's variant is chosen, Dr.Jit's) thread count; returns it."""
    import torch

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
    """Run the body on one torch thread (the calling thread's setting: torch's OpenMP and MKL
    thread counts are per thread), whatever this process's thread count is, then restore it."""
    import torch

    count = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(count)
