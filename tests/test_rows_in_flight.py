"""Rows scored a few at once: results in the rows' order, a failure named by its row, nothing
left running, and plugin hooks one at a time whatever the threads."""

import threading
import time

import pytest

from maskscore_core.dataset.rows_in_flight import RowsInFlight
from maskscore_core.plugin import manager as plugins


def _slow(value, seconds):
    def work():
        time.sleep(seconds)
        return value

    return work


@pytest.mark.parametrize("limit", [1, 2, 3])
def test_results_come_back_in_the_order_the_rows_were_put(limit):
    found = []
    with RowsInFlight(limit) as window:
        for i, seconds in enumerate([0.05, 0.0, 0.03, 0.0, 0.01]):  # later rows finish first
            found += window.put(i, _slow(i * 10, seconds))
            assert len(window._pending) < limit
        found += window.drain()
    assert found == [(i, i * 10) for i in range(5)]


def test_a_limit_of_one_runs_each_row_on_the_calling_thread_at_once():
    here = threading.get_ident()
    with RowsInFlight(1) as window:
        assert window.put("a", threading.get_ident) == [("a", here)]


def test_two_rows_run_at_once_and_no_more():
    now, most, lock = [0], [0], threading.Lock()

    def work():
        with lock:
            now[0] += 1
            most[0] = max(most[0], now[0])
        time.sleep(0.05)
        with lock:
            now[0] -= 1

    with RowsInFlight(2) as window:
        for i in range(6):
            window.put(i, work)
        window.drain()
    assert most[0] == 2


def test_a_failing_row_is_named_and_the_others_still_running_are_waited_for():
    started, finished = [], []

    def fails():
        raise RuntimeError("row 1 broke")

    def slow():
        started.append("row 2")
        time.sleep(0.1)
        finished.append("row 2")

    with pytest.raises(RuntimeError, match="row 1 broke"):
        with RowsInFlight(3) as window:
            window.put("row 0", _slow(0, 0.0))
            window.put("row 1", fails)
            window.put("row 2", slow)
            window.drain()  # row 1's turn: raises while row 2 still runs
    assert window.failed_label == "row 1"
    # leaving the block waited for row 2 if it had begun (or dropped it): nothing runs after the error
    assert started == finished


@pytest.mark.parametrize("limit", [0, -1, 1.5, "2"])
def test_a_bad_limit_is_refused(limit):
    with pytest.raises(ValueError, match="whole number"):
        RowsInFlight(limit)


def test_hooks_run_one_at_a_time_and_a_thread_knows_it_is_inside_one():
    assert not plugins.serialized_here()
    inside, order = threading.Event(), []

    def other():
        inside.wait(5)
        with plugins.serialized():  # waits for the main thread to leave
            order.append("other")

    thread = threading.Thread(target=other)
    thread.start()
    with plugins.serialized():
        with plugins.serialized():  # re-entrant
            assert plugins.serialized_here()
        inside.set()
        time.sleep(0.05)
        order.append("main")
    thread.join(5)
    assert order == ["main", "other"]
    assert not plugins.serialized_here()


def test_the_limit_is_the_scorers_at_most_one_a_thread_and_one_inside_a_hook(monkeypatch):
    from maskscore_core import threads
    from maskscore_core.dataset.rows_in_flight import limit_for

    monkeypatch.setenv(threads.ENV, "2")
    assert plugins.rows_in_flight("render-compare") == 2
    assert limit_for("render-compare") == 2
    assert limit_for("latent-l2") == 1  # a scorer that did not say it may
    assert limit_for("no-such-scorer") == 1  # its first row says it is unknown, naming the row
    with plugins.serialized():
        assert limit_for("render-compare") == 1
    monkeypatch.setenv(threads.ENV, "1")
    assert limit_for("render-compare") == 1
