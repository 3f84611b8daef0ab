"""Rows scored a few at once on threads, their results handed back in the rows' order.

Why: one row of the render-compare scorer leaves a core idle at its two ends (its first render has
nothing to overlap with, its last AlexNet forward nothing after it); a second row in flight fills
them (docs/metric.md, "Speed"). Each row's work is its own, so its result does not depend on
what ran beside it; the order of the results is the order the rows were put in.
"""

from __future__ import annotations

import collections
import concurrent.futures
from typing import Any, Callable

from maskscore_core import threads
from maskscore_core.plugin import manager as plugins


def limit_for(scorer: str) -> int:
    """Rows of `scorer` scored at once in this process: what the scorer allows
    (`Scorer.rows_in_flight`), at most one per thread this process has (`threads.wanted`), and 1
    inside a hook call (a row's thread would wait on that call for its own plugin calls) or for a
    name no plugin registered (the first row's `score` call says so, naming the row)."""
    if plugins.serialized_here():
        return 1
    try:
        allowed = plugins.rows_in_flight(scorer)
    except plugins.NoPluginError:
        return 1
    return max(1, min(allowed, threads.wanted()))


class RowsInFlight:
    """`put(label, work)` starts `work()`; once `limit` rows are in flight it waits for the
    oldest. Returns, and `drain` returns, the finished rows as (label, result), oldest first; a
    row's exception is raised when its turn comes, with its label in `failed_label`. With a limit
    of 1 every row runs at once on the calling thread, as a plain loop would. Leaving the `with`
    block waits for the rows still running (none is abandoned half way) and drops those not begun."""

    def __init__(self, limit: int, name: str = "maskscore-row") -> None:
        if not isinstance(limit, int) or limit < 1:
            raise ValueError(f"rows in flight must be a whole number >= 1, got {limit!r}")
        self.limit = limit
        self.failed_label: Any = None
        self._pending: collections.deque = collections.deque()
        self._pool = concurrent.futures.ThreadPoolExecutor(limit, thread_name_prefix=name) if limit > 1 else None

    def __enter__(self) -> RowsInFlight:
        return self

    def __exit__(self, *exc) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def put(self, label: Any, work: Callable[[], Any]) -> list[tuple[Any, Any]]:
        if self._pool is None:
            return [(label, self._run(label, work))]
        self._pending.append((label, self._pool.submit(work)))
        finished = []
        while len(self._pending) >= self.limit:
            finished.append(self._oldest())
        return finished

    def drain(self) -> list[tuple[Any, Any]]:
        return [self._oldest() for _ in range(len(self._pending))]

    def _oldest(self) -> tuple[Any, Any]:
        label, future = self._pending.popleft()
        return label, self._run(label, future.result)

    def _run(self, label: Any, work: Callable[[], Any]) -> Any:
        try:
            return work()
        except BaseException:
            self.failed_label = label
            raise
