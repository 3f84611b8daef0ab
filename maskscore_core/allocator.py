"""Keep large freed buffers inside the process for the next row instead of giving them back.

Why: scoring a row allocates and frees buffers of one to tens of megabytes many times over
(AlexNet features and their differences, SSIM's planes, picked pixels). By default glibc gives a
freed block back to the kernel when it was above its mmap threshold, or when it leaves more
than the trim threshold free at the top of a heap, and both thresholds start small (128 KiB).
The next buffer is then fresh pages, which the kernel zeroes one page fault at a time, in the
process's own CPU time. With rows scored two at a time on pool threads the thresholds never settle,
and the faults cost the scorer more than its comparisons' largest kernel (docs/metric.md, "Page
faults"). Raising both thresholds once, for the whole process, keeps those blocks for reuse.

The thresholds govern the main heap only as far as it goes: every other thread that allocates gets
an arena of its own, made of 64 MiB heaps, and glibc unmaps such a heap, whatever the thresholds,
as soon as everything in it is freed. A row's buffers freed on the scorer's pool threads went that
way, and came back as fresh pages on the next row. One arena for the process (`M_ARENA_MAX`)
puts every thread's large blocks on the main heap, where the thresholds keep them; small blocks
go through each thread's own cache first, so the shared arena's lock is rarely taken.

An arena, once a thread has one, stays with it, and arenas are made as soon as threads allocate
(a BLAS library's, at import): `import maskscore_core` makes these settings before anything else,
and the scorer and a build's workers make them again where something imported first.

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
M_ARENA_MAX = -8

MMAP_THRESHOLD_BYTES = 32 * 2**20  # glibc's largest allowed value on 64-bit (half a thread heap)
TRIM_THRESHOLD_BYTES = 256 * 2**20  # free memory a heap keeps at its top before trimming
ARENAS = 1  # every thread allocates from the main heap (module docstring)


@functools.cache
def keep_freed_buffers() -> bool:
    """Raise glibc's mmap and trim thresholds and keep to one arena, for this process (once); True
    where that took effect, False where the C library has no `mallopt` (not glibc). Threads that
    already have an arena keep it: call this before the scorer's threads start."""
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
    settings = ((M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES), (M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES), (M_ARENA_MAX, ARENAS))
    return all([bool(mallopt(parameter, value)) for parameter, value in settings])
