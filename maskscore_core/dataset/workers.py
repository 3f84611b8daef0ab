"""Start-up of a local build worker process: its share of the cores, and death with its parent.

Why: a worker outliving a killed build keeps committing shards into a directory that a second
build may already be writing. On Linux the kernel sends the worker SIGKILL when its parent exits
(PR_SET_PDEATHSIG); elsewhere, and as a second guard, a watchdog thread notices that the parent
changed and kills the worker. A worker also holds the directory's workers' lock (`lock.py`) for
as long as it lives, so a new build can tell that none is left.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time
from pathlib import Path

from maskscore_core import allocator, threads
from maskscore_core.dataset import lock

PR_SET_PDEATHSIG = 1
WATCH_INTERVAL_S = 0.2

_held: list[int] = []  # the workers' lock fd, kept open for the process's life


def _kill_self() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _watch(parent_pid: int) -> None:
    while True:
        if os.getppid() != parent_pid:
            _kill_self()
        time.sleep(WATCH_INTERVAL_S)


def die_with_parent(parent_pid: int) -> None:
    """Make this process die as soon as `parent_pid` is no longer its parent."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent_pid:  # the parent died before the line above took effect
        _kill_self()
    threading.Thread(target=_watch, args=(parent_pid,), name="maskscore-parent-watch", daemon=True).start()


def init_worker(workers: int, parent_pid: int, root: str) -> None:
    """ProcessPoolExecutor initializer of a build's workers."""
    die_with_parent(parent_pid)
    _held.append(lock.hold_as_worker(Path(root)))
    # each worker's torch and Dr.Jit get its share of the cores, unless MASKSCORE_THREADS is set
    os.environ.setdefault(threads.ENV, str(threads.share(workers)))
    allocator.keep_freed_buffers()  # rows' large buffers reused rather than faulted in again
