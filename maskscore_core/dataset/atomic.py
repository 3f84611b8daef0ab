"""Writing files so that a reader (or a restarted build) sees all of them or none.

Every file goes to a temporary name in the same directory first and is moved into place with
os.replace, which is atomic on POSIX file systems; a directory is renamed the same way.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def write_bytes(path: Path, data: bytes) -> None:
    """Write `data` at `path` atomically (temp file + fsync + os.replace)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(temporary, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def write_text(path: Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def move_file(source: Path, destination: Path) -> None:
    """Move a finished file into place, replacing what is there."""
    Path(destination).parent.mkdir(parents=True, exist_ok=True)
    os.replace(source, destination)


def move_dir(source: Path, destination: Path) -> None:
    """Move a finished directory into place; a leftover from a killed build is removed first."""
    destination = Path(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    if destination.exists():
        shutil.rmtree(destination)
    os.replace(source, destination)
