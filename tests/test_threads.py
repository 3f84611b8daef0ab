"""Thread counts: MASKSCORE_THREADS is read strictly, workers get their share of the cores."""

from __future__ import annotations

import os

import pytest

from maskscore_core import threads


def test_default_is_at_most_two(monkeypatch):
    monkeypatch.delenv(threads.ENV, raising=False)
    assert threads.wanted() == max(1, min(2, os.cpu_count() or 1))


def test_the_environment_sets_it_and_bad_values_are_named(monkeypatch):
    monkeypatch.setenv(threads.ENV, "1")
    assert threads.wanted() == 1
    for bad in ("zero", "0", "-2", "1.5"):
        monkeypatch.setenv(threads.ENV, bad)
        with pytest.raises(threads.ThreadsError, match=threads.ENV):
            threads.wanted()


def test_workers_share_the_cores():
    cores = os.cpu_count() or 1
    assert threads.share(1) == cores
    assert threads.share(cores) == 1
    assert threads.share(10 * cores) == 1  # never below one
