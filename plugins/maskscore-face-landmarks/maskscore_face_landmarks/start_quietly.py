"""Start mediapipe's graphs without their start-up notices on the terminal.

mediapipe's C++ side writes notices to file descriptor 2 when a graph first runs ("Created
TensorFlow Lite XNNPACK delegate", absl's "log messages before InitializeLog", the feedback
manager's warning), where neither Python's warnings nor any environment variable of the 0.10.14
wheel reaches them, and protobuf warns of a deprecated call on every new result type. Left alone
they bury the one-line error a frame without a face gets. So each graph is built and run once on a
blank picture with descriptor 2 pointed at /dev/null, and that one protobuf warning is filtered.
While a graph starts (once per process and model) anything else written to descriptor 2 is lost
too; an exception raised meanwhile still reaches the caller.
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings

import numpy as np

warnings.filterwarnings("ignore", message=r"SymbolDatabase\.GetPrototype\(\) is deprecated", category=UserWarning)

WARM_UP = np.zeros((64, 64, 3), dtype=np.uint8)  # a blank picture: no face, no person


@contextlib.contextmanager
def _stderr_to_devnull():
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def started(build):
    """`build()`'s graph, already run once on a blank picture, its start-up notices silenced."""
    with _stderr_to_devnull():
        graph = build()
        graph.process(WARM_UP)
    return graph
