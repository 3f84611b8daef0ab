"""Writing files so that a reader (or a restarted build) sees all of them or none.

Every file goes to a temporary name in the same directory first and is moved into place with
os.replace, which is atomic on POSIX file systems; a directory is renamed the same way.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

# The temporary name of a write in progress: `.NAME.tmp-PID`.
_TEMPORARY = re.compile(r"^\..+\.tmp-\d+$")


def write_bytes(path: Path, data: bytes) -> None:
    """Write `data` at `path` atomically (temp file + fsync + os.replace)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")  # matches _TEMPORARY
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


def remove_leftovers(root: Path, skip: tuple[str, ...] = ()) -> int:
    """Delete the temporary files of writes that a killed process left under `root` (not under
    its top-level entries named in `skip`); returns how many. Call it only while no other
    process writes there."""
    root = Path(root)
    removed = 0
    for path in root.rglob(".*.tmp-*"):
        if path.relative_to(root).parts[0] not in skip and _TEMPORARY.match(path.name) and path.is_file():
            path.unlink()
            removed += 1
    return removed
