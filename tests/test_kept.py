"""`kept.Kept`, the process's least-recently-used store behind the surface fit's heads and fits and
the foreign meshes' Mitsuba scenes."""

from __future__ import annotations

import threading

import pytest

from maskscore_core.kept import Kept


def test_the_least_recently_used_goes_first():
    kept = Kept(2)
    assert kept.put("a", 1) == 1 and kept.put("b", 2) == 2
    assert kept.get("a") == 1  # a is now the most recently used
    kept.put("c", 3)
    assert kept.get("b") is None and kept.get("a") == 1 and kept.get("c") == 3
    assert len(kept) == 2


def test_putting_a_kept_key_again_replaces_it_and_refreshes_it():
    kept = Kept(2)
    kept.put("a", 1)
    kept.put("b", 2)
    kept.put("a", 10)
    kept.put("c", 3)
    assert kept.get("a") == 10 and kept.get("b") is None


def test_a_limit_below_one_is_refused():
    with pytest.raises(ValueError, match="at least 1"):
        Kept(0)


def test_threads_putting_at_once_keep_the_limit():
    kept = Kept(8)
    workers = [threading.Thread(target=lambda n=n: [kept.put((n, i), i) for i in range(200)]) for n in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert len(kept) == 8
