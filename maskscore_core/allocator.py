"""Keep large freed buffers inside the process for the next row instead of giving them back.

Why: scoring a row allocates and frees buffers of one to tens of megabytes many times over
(AlexNet features and their differences, SSIM's planes, picked pixels). By default glibc gives a
freed block back to the kernel when it was above its mmap threshold, or when it leaves more
than the trim threshold free at the top of a heap, and both thresholds start small (128 KiB).
The next buffer is then fresh pages, which the kernel zeroes one page fault at a time, in the
process's own CPU time. With rows scored two at a time on pool threads the thresholds never settle,
and the faults cost the scorer more than its comparisons' largest kernel (docs/metric.md, "Page
faults"). Raising both thresholds once, for the whole process, keeps those blocks for reuse.

Only glibc (Linux) has these settings; elsewhere `keep_freed_buffers` does nothing. Scores do not
depend on it: it changes where a buffer comes from, not what is computed in it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

# mallopt's parameters (glibc's malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3

MMAP_THRESHOLD_BYTES = 32 * 2**20  # glibc's largest allowed value on 64-bit (half a thread heap)
TRIM_THRESHOLD_BYTES = 256 * 2**20  # free memory a heap keeps at its top before trimming


@functools.cache
def keep_freed_buffers() -> bool:
    """Raise glibc's mmap and trim thresholds for this process (once); True where that took
    effect, False where the C library has no `mallopt` (not glibc)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt, _glibc = libc.mallopt, libc.gnu_get_libc_version
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    # mallopt returns 1 on success; a refusal leaves glibc's own behaviour, which is correct too.
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))
