"""The scorer's processes keep large freed buffers for reuse (`maskscore_core.allocator`)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from maskscore_core import allocator

# A thread allocates, fills and frees a 24 MB buffer four times and prints the page faults each
# round cost; with the thresholds raised (by `keep_freed_buffers` itself, by importing
# maskscore_core to make the scorer, or by a build worker's start-up), rounds after the first
# reuse the freed block.
# glibc's defaults give the first block back to the kernel (it was mmapped).
PROBE = """
import os, resource, sys, tempfile, threading
import numpy as np
if sys.argv[1] == "keep":  # (importing maskscore_core at all keeps them: not in "default")
    from maskscore_core import allocator
    assert allocator.keep_freed_buffers()
elif sys.argv[1] == "scorer":
    from maskscore_core.metric.render_compare import RenderCompare
    RenderCompare()
elif sys.argv[1] == "worker":
    from maskscore_core.dataset import workers
    workers.init_worker(1, os.getppid(), tempfile.mkdtemp())
faults = []
def rounds():
    for _ in range(4):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        block = np.ones(24 * 2**20 // 8)
        del block
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
worker = threading.Thread(target=rounds)
worker.start()
worker.join()
print(*faults)
"""


# The scorer's pool threads: each round on a thread of its own, holding three 24 MB blocks at
# once (more than one 64 MiB heap of a thread's own arena, which glibc unmaps once emptied,
# whatever the thresholds). numpy is imported after maskscore_core ("import") or before it
# ("late"), and starts its BLAS threads, which take arenas of their own.
THREADS_PROBE = """
import resource, sys, threading
if sys.argv[1] == "import":
    import maskscore_core
import numpy as np
if sys.argv[1] == "late":
    import maskscore_core
faults = []
def one_round():
    before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
    blocks = [np.ones(24 * 2**20 // 8) for _ in range(3)]
    del blocks
    faults.append(resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before)
for _ in range(4):
    thread = threading.Thread(target=one_round)
    thread.start()
    thread.join()
print(*faults)
"""


def _faults(mode: str, probe: str = PROBE) -> list[int]:
    out = subprocess.run([sys.executable, "-c", probe, mode], capture_output=True, text=True, check=True).stdout
    return [int(x) for x in out.split()]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_a_freed_large_buffer_is_reused_without_page_faults_once_kept():
    kept, default = _faults("keep"), _faults("default")
    # Counts are pages: 4 KiB ones, or 2 MiB ones where the kernel backs the block with huge pages.
    assert kept[0] >= 12 and default[0] >= 12  # the first block is fresh pages either way
    assert default[1] >= 12  # glibc gave the first block back: the second faults in again
    assert max(kept[1:]) <= 2  # kept: every later round reuses the same pages


def test_keeping_freed_buffers_is_set_once_and_reports_whether_it_took():
    assert allocator.keep_freed_buffers() is allocator.keep_freed_buffers()
    if sys.platform.startswith("linux"):
        assert allocator.keep_freed_buffers() is True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
@pytest.mark.parametrize("start", ["scorer", "worker"])
def test_the_scorer_and_a_build_worker_keep_freed_buffers(start):
    """Making the render-compare scorer (in any process) and a build worker's start-up both
    raise the thresholds."""
    assert max(_faults(start)[1:]) <= 2


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_importing_maskscore_first_lets_every_new_thread_reuse_freed_buffers():
    """One arena for the process: a fresh thread's blocks come from the main heap, which keeps
    what the thread before it freed. Without it (`default`), or once numpy's threads took arenas
    first, some rounds fault all their pages in again."""
    first, default = _faults("import", THREADS_PROBE), _faults("default", THREADS_PROBE)
    assert first[0] >= 12  # the first round's blocks are fresh pages
    assert max(first[1:]) <= 8  # every later thread reuses them
    assert max(default[1:]) >= 12  # the default: a thread's arena heap was given back
