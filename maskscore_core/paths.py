"""Paths read from a dataset stay inside the dataset.

A dataset's tables and sidecars name files relative to the dataset root (asset paths, row keys).
A row is data from whoever built or copied the dataset, so a value that is absolute, climbs out
with `..`, or reaches out through a symbolic link would make a reader open files anywhere on the
machine. Every reader resolves such values here and refuses those that leave the root.
"""

from __future__ import annotations

import os
from pathlib import Path


class PathEscapeError(ValueError):
    """A path read from a dataset that is absolute or resolves outside the dataset's directory."""


def contained(root, value, what: str = "a path", error: type[Exception] = PathEscapeError) -> Path:
    """`root / value`, resolved, when it lies inside `root`; `error` (the caller's error class)
    naming `what` otherwise. `value` must be a non-empty relative path."""
    if not isinstance(value, (str, os.PathLike)) or not str(value):
        raise error(f"{what} must be a non-empty path, got {value!r}")
    text = os.fspath(value)
    if "\0" in text:
        raise error(f"{what} {text!r} holds a NUL byte")
    if Path(text).is_absolute():
        raise error(f"{what} {text!r} is absolute; a dataset names its files relative to its directory {root}")
    base = Path(root).resolve()
    path = (base / text).resolve()
    if path != base and base not in path.parents:
        raise error(f"{what} {text!r} resolves to {path}, outside the dataset directory {base}")
    return path


def check_key(key, what: str = "row key", error: type[Exception] = PathEscapeError) -> str:
    """`key` when it can name a file (`instances/<key>.json`) inside a dataset: a non-empty name
    without path separators that is not '.' or '..'."""
    if not isinstance(key, str) or not key or key in (".", "..") or "/" in key or "\\" in key or "\0" in key:
        raise error(f"{what} {key!r} is not a plain name: it must not be empty, '.', '..' or hold '/', '\\\\' or NUL")
    return key
