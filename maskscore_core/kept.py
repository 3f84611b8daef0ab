"""A few costly results kept by key, for the process: `Kept`.

Why one place: the surface fit keeps linear heads and whole fits, foreign meshes keep their
Mitsuba scenes, and each used to carry its own locked, least-recently-used dictionary.
"""

from __future__ import annotations

import collections
import threading


class Kept:
    """The last `limit` values put, by key; a hit moves its key to the back, and the least
    recently used goes first. Safe from several threads (a value may be computed twice when
    two threads miss at once; the last put wins)."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"Kept needs a limit of at least 1, got {limit}")
        self.limit = limit
        self._values: collections.OrderedDict = collections.OrderedDict()
        self._lock = threading.Lock()

    def get(self, key):
        """The value kept under `key`, or None."""
        with self._lock:
            if key not in self._values:
                return None
            self._values.move_to_end(key)
            return self._values[key]

    def put(self, key, value):
        """Keep `value` under `key` (dropping the least recently used beyond the limit); returns it."""
        with self._lock:
            self._values[key] = value
            self._values.move_to_end(key)
            while len(self._values) > self.limit:
                self._values.popitem(last=False)
        return value

    def __len__(self) -> int:
        with self._lock:
            return len(self._values)
