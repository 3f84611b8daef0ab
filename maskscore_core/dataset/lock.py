"""One build at a time per dataset directory.

Why: two builds writing one directory (a second command, or the workers of a killed build) race
on the same shards. The building process holds an exclusive `flock` on DIR/.build.lock for the
whole build; its worker processes hold DIR/.build-workers.lock shared. The kernel drops a flock
when its holder dies, however it dies, so a crashed build never leaves a stale lock, and a new
build waits out the workers of a killed one (they die with their parent, `workers.py`) before
it touches anything. A build that ends removes the lock files.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path

LOCK_FILE = ".build.lock"
WORKERS_LOCK_FILE = ".build-workers.lock"
# How long a new build waits for the workers of a killed build to exit (they exit within a
# fraction of a second of their parent; see workers.py).
ORPHAN_WAIT_S = 10.0


class DirectoryBusy(RuntimeError):
    """The dataset directory is being built by another process."""


def _open_locked(path: Path, mode: int) -> int | None:
    """An fd holding `mode` (LOCK_EX / LOCK_SH) on `path`, or None when another holder conflicts.
    Retries when the file was replaced between open and lock, so two holders never lock two
    different files of one name."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        try:
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)


def _holder(path: Path) -> str:
    try:
        pid = path.read_text().strip()
    except OSError:
        pid = ""
    return f"pid {pid}" if pid.isdigit() else "another process"


def _wait_for_workers(root: Path) -> None:
    """Return once no worker of an earlier build of `root` holds the workers' lock."""
    path = root / WORKERS_LOCK_FILE
    deadline = time.monotonic() + ORPHAN_WAIT_S
    while True:
        fd = _open_locked(path, fcntl.LOCK_EX)
        if fd is not None:
            os.close(fd)
            return
        if time.monotonic() > deadline:
            raise DirectoryBusy(f"{root}: worker processes of an earlier build are still running; stop them or use another --out")
        time.sleep(0.05)


@contextlib.contextmanager
def build_lock(root: Path):
    """Hold `root`'s build lock for the body of the `with`; refuse at once if another build holds it."""
    root = Path(root)
    path = root / LOCK_FILE
    fd = _open_locked(path, fcntl.LOCK_EX)
    if fd is None:
        raise DirectoryBusy(f"{root} is being built by {_holder(path)}; wait for that build to finish or use another --out")
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        _wait_for_workers(root)
        yield
    finally:
        _remove_lock_files(root)
        os.close(fd)


def _remove_lock_files(root: Path) -> None:
    """A finished build leaves no lock file behind (a process that opened one meanwhile sees it
    was replaced and opens the new one, `_open_locked`). The workers' lock goes only when no
    worker holds it."""
    workers = _open_locked(root / WORKERS_LOCK_FILE, fcntl.LOCK_EX) if (root / WORKERS_LOCK_FILE).exists() else None
    if workers is not None:
        (root / WORKERS_LOCK_FILE).unlink(missing_ok=True)
        os.close(workers)
    (root / LOCK_FILE).unlink(missing_ok=True)


def hold_as_worker(root: Path) -> int:
    """In a worker process: hold the workers' lock shared until the process exits (returns the fd)."""
    fd = os.open(Path(root) / WORKERS_LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_SH)
    return fd
