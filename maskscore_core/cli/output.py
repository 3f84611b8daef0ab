"""Machine-readable output: stdout carries the JSON document and nothing else.

Libraries may print on stdout when they start (Warp's banner, were anny's Warp skinning loaded)
and Python code may `print`; either would break `maskscore score ... | jq .` and make
the output bytes differ between runs. While a command computes, `noise_to_stderr` points both
Python's `sys.stdout` and file descriptor 1 (what C libraries write to) at stderr; the document
is written afterwards with `write_json`.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys


@contextlib.contextmanager
def noise_to_stderr():
    """Inside the block, whatever is written to stdout (Python or C) goes to stderr."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no file descriptor 1 (a closed stdout): nothing at the C level to redirect
        saved = None
    if saved is not None:
        os.dup2(2, 1)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stderr.flush()
        _flush_c_stdio()  # C output buffered inside the block belongs to stderr too
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)


def _flush_c_stdio() -> None:
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):  # no C library to ask (not a POSIX process)
        pass


def write_json(document) -> None:
    """`document` as indented JSON with sorted keys (the same input gives the same bytes)."""
    sys.stdout.write(json.dumps(document, indent=2, sort_keys=True) + "\n")
    sys.stdout.flush()
