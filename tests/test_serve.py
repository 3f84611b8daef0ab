"""The reward server on loopback: concurrent clients get what direct scoring gives, none is lost,
an unreadable candidate is an error in its own place (never a score), a malformed request is a
one-line 400, and a full queue answers 503 at once. Real scorer (render-compare, 2 views of
32 px), real uvicorn server on 127.0.0.1, real HTTP clients (httpx)."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import pytest
import uvicorn

from maskscore_core.edits import instances as edits

from maskscore_core.plugin import manager as plugins
from maskscore_core.cli.serve_command import make_app
from maskscore_core.plugin.context import Context
from maskscore_core.dataset.scorer_config import hook_config
from maskscore_core.plugin.records import converter

pytestmark = pytest.mark.maskscore_plugins("maskscore-pose")
SCORER = "render-compare"
CONFIG = hook_config(2, 32)


class Server:
    """uvicorn serving `app` on an ephemeral loopback port, in a thread."""

    def __init__(self, app):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self):
        self.thread.start()
        for _ in range(200):
            if self.server.started:
                return self
            time.sleep(0.05)
        raise RuntimeError("server did not start")

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()


@pytest.fixture
def instances(built_in_trials):
    return edits.make_instances(built_in_trials, "pose", np.random.default_rng(3), 3)


def pose_values(instance, ctx, count: int) -> list[list[float]]:
    """Frame A, frame B and poses between them, as the pose column holds them."""
    a = plugins.call("encode", "pose", modality="pose", target=instance.a, ctx=ctx).data
    b = plugins.call("encode", "pose", modality="pose", target=instance.b, ctx=ctx).data
    return [list(map(float, a + (b - a) * t)) for t in np.linspace(1.0, 0.0, count)]


def request_body(instance, values) -> dict:
    return {"instance": converter.unstructure(instance),
            "candidates": [{"label": f"c{i}", "modality": "pose", "value": v} for i, v in enumerate(values)]}


def direct(instance, body, tmp_path) -> list[dict]:
    ctx = Context(workdir=tmp_path, seed=0, config=dict(CONFIG))
    cands = [plugins.call("read_asset", "pose", modality="pose", value=c["value"], root=tmp_path, ctx=ctx) for c in body["candidates"]]
    from maskscore_core.plugin.records import Candidate

    scored = plugins.call("score", SCORER, scorer=SCORER, instance=instance,
                          candidates=[Candidate(c["label"], a) for c, a in zip(body["candidates"], cands)], ctx=ctx)
    return [{"label": c["label"], "instruction_following": s.instruction_following, "consistency": s.consistency,
             "overall": s.overall} for c, s in zip(body["candidates"], scored)]


def test_concurrent_clients_get_direct_scores_and_errors_in_place(instances, tmp_path):
    ctx = Context(workdir=tmp_path, seed=0, config=dict(CONFIG))
    bodies = [request_body(inst, pose_values(inst, ctx, 3)) for inst in instances]
    bodies.append(request_body(instances[0], pose_values(instances[0], ctx, 2) + [[0.0] * 5]))  # one unreadable
    expected = [direct(inst, body, tmp_path) for inst, body in zip(instances, bodies)]
    replies: dict[int, httpx.Response] = {}
    with Server(make_app(SCORER, CONFIG, Path(tmp_path), max_queue=len(bodies))) as server:
        barrier = threading.Barrier(len(bodies))

        def client(i):
            barrier.wait()
            replies[i] = httpx.post(f"{server.url}/score", json=bodies[i], timeout=120)

        threads = [threading.Thread(target=client, args=(i,)) for i in range(len(bodies))]
        [t.start() for t in threads]
        [t.join() for t in threads]
        malformed = httpx.post(f"{server.url}/score", json={"instance": {"key": 1}, "candidates": []}, timeout=30)
    assert sorted(replies) == list(range(len(bodies)))  # none lost
    for i, want in enumerate(expected):
        assert replies[i].status_code == 200, replies[i].text
        assert replies[i].json()["results"] == want  # exactly what scoring in-process gives
    last = replies[len(bodies) - 1].json()["results"]
    assert [r["label"] for r in last] == ["c0", "c1", "c2"]
    assert "overall" in last[0] and "overall" in last[1]
    assert set(last[2]) == {"label", "error"} and "237" in last[2]["error"]  # an error, not a score
    assert malformed.status_code == 400 and malformed.json()["error"].startswith("bad request:")
    assert "\n" not in malformed.json()["error"]


def test_full_queue_answers_503_and_loses_nothing(instances, tmp_path):
    ctx = Context(workdir=tmp_path, seed=0, config=dict(CONFIG))
    body = request_body(instances[0], pose_values(instances[0], ctx, 6))
    want = direct(instances[0], body, tmp_path)
    clients = 6
    replies: dict[int, httpx.Response] = {}
    with Server(make_app(SCORER, CONFIG, Path(tmp_path), max_queue=1)) as server:
        barrier = threading.Barrier(clients)

        def client(i):
            barrier.wait()
            replies[i] = httpx.post(f"{server.url}/score", json=body, timeout=120)

        threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        health = httpx.get(f"{server.url}/health", timeout=10).json()
    assert sorted(replies) == list(range(clients))
    codes = sorted(r.status_code for r in replies.values())
    assert set(codes) <= {200, 503} and 200 in codes and 503 in codes, codes
    for reply in replies.values():
        if reply.status_code == 200:
            assert reply.json()["results"] == want
        else:
            assert reply.headers["retry-after"] == "1" and "server busy" in reply.json()["error"]
    assert health == {"scorer": SCORER, "queued": 0, "max_queue": 1}
