"""Thread counts: MASKSCORE_THREADS is read strictly, workers get their share of the cores."""

from __future__ import annotations

import json
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


def test_one_thread_pins_numpys_and_scipys_blas_to_one_thread():
    """BLAS libraries default to one thread per core: a float64 product's last bits would follow
    the machine, and their spinning threads stall beside the scorer's own (threads docstring)."""
    import subprocess
    import sys

    script = (
        "import numpy, scipy.linalg\n"
        "from threadpoolctl import threadpool_info\n"
        "from maskscore_core import threads\n"
        "with threads.one_thread():\n"
        "    inside = [i['num_threads'] for i in threadpool_info() if i['user_api'] == 'blas']\n"
        "after = [i['num_threads'] for i in threadpool_info() if i['user_api'] == 'blas']\n"
        "import json\n"
        "print(json.dumps([inside, after]))\n"
    )
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "2"}  # as on a machine with two cores or more
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True)
    inside, after = json.loads(done.stdout)
    assert inside and set(inside) == {1} and set(after) == {1}


def test_a_one_thread_pools_tasks_run_on_one_torch_thread_whatever_was_set_last():
    """A fresh thread takes the torch count that some thread set last: with two rows scored at
    once that is a matter of timing (a row leaving `one_thread` sets it back to two), and a pool
    task's float sums would follow it. `OneThreadPool` tasks run on one thread regardless."""
    import concurrent.futures

    import torch

    previous = torch.get_num_threads()
    try:
        torch.set_num_threads(2)  # as a row leaving `one_thread` on a two-thread worker does
        with concurrent.futures.ThreadPoolExecutor(2) as plain:
            assert set(plain.map(lambda _: torch.get_num_threads(), range(4))) == {2}  # the hazard
        with threads.OneThreadPool(2) as pool:
            assert set(pool.map(lambda _: torch.get_num_threads(), range(4))) == {1}
            assert pool.submit(sum, [1, 2], start=3).result() == 6  # arguments pass through
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(previous)


def test_the_kept_pool_is_one_per_process_name_and_count_and_keeps_its_threads(monkeypatch):
    """Rows after rows run on the same few threads (fresh threads fault their allocator state
    in anew); another thread count or name is another pool."""
    import threading

    monkeypatch.setenv(threads.ENV, "2")
    pool = threads.kept_pool("test-kept")
    assert threads.kept_pool("test-kept") is pool
    assert threads.kept_pool("test-other") is not pool
    seen = set()
    for _ in range(5):  # five "rows", each a burst of tasks
        seen |= set(pool.map(lambda _: threading.get_ident(), range(8)))
    assert 1 <= len(seen) <= 2
    monkeypatch.setenv(threads.ENV, "1")
    assert threads.kept_pool("test-kept") is not pool


def test_a_forked_child_gets_a_pool_of_its_own():
    """The parent's pool object is inherited by a fork, its threads are not: the child's tasks run."""
    import multiprocessing

    threads.kept_pool("test-fork").submit(int).result()  # the parent's pool exists and ran
    context = multiprocessing.get_context("fork")
    with context.Pool(1) as children:
        result = children.apply_async(_sum_on_kept_pool).get(timeout=60)
    assert result == 45


def _sum_on_kept_pool() -> int:
    return sum(threads.kept_pool("test-fork").map(int, range(10)))


def test_the_scorer_shares_one_pool_across_rows():
    from maskscore_core.metric import render_compare

    assert render_compare._comparison_pool() is render_compare._comparison_pool()
