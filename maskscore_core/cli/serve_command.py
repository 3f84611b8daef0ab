"""`maskscore serve --scorer NAME`: a reward server, batched scoring over HTTP (FastAPI + uvicorn).

RL trainers on other machines send one edit and a group of candidates, and get one result per
candidate back (EditScore runs such a reward proxy). POST /score with JSON

    {"instance": <records.EditInstance as records.converter unstructures it>,
     "candidates": [{"label": "...", "modality": "pose", "value": <the reward-table column value>}, ...]}

answers {"scorer": NAME, "results": [{"label", "instruction_following", "consistency", "overall"}
or {"label", "error"}, ...]} in the candidates' order. A candidate that cannot be read or
scored is an error in its place, never a score (EditScore's proxy fills 0.0; this one does not);
the others are still scored. Values are read with the registered modality's `read`, files
relative to --root. An instance that does not parse is HTTP 400 with one line.

Scoring runs on one worker thread, one request at a time (scorers share renderers and models);
at most --max-queue requests wait or run. Beyond that the server answers HTTP 503 at once with
Retry-After, so an overloaded server says so instead of stalling its clients. GET /health tells
the scorer and the queue. It listens on 127.0.0.1 unless --host says otherwise.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import tempfile
import threading
from pathlib import Path

import click

from maskscore_core.plugin import manager as plugins
from maskscore_core.plugin.context import Context
from maskscore_core.plugin.records import Candidate, EditInstance, converter
from maskscore_core.cli import options
from maskscore_core.dataset.scorer_config import hook_config


class Admission:
    """A bounded count of requests waiting or running."""

    def __init__(self, limit: int):
        self.limit, self.count, self._lock = limit, 0, threading.Lock()

    def enter(self) -> bool:
        with self._lock:
            if self.count >= self.limit:
                return False
            self.count += 1
            return True

    def leave(self) -> None:
        with self._lock:
            self.count -= 1


def _error_line(err: BaseException) -> str:
    return "; ".join(line.strip() for line in f"{type(err).__name__}: {err}".splitlines() if line.strip())


def score_group(scorer: str, instance: EditInstance, items: list[dict], ctx: Context, root: Path) -> list[dict]:
    """One result per item: read each candidate, score the readable ones together; when the
    group fails, each candidate alone, so one bad candidate takes only its own place."""
    results: list[dict | None] = [None] * len(items)
    readable: list[tuple[int, Candidate]] = []
    for i, item in enumerate(items):
        label = str(item.get("label", f"candidate-{i}")) if isinstance(item, dict) else f"candidate-{i}"
        try:
            if not isinstance(item, dict) or "modality" not in item or "value" not in item:
                raise ValueError("a candidate needs 'modality' and 'value'")
            asset = plugins.call("read_asset", item["modality"], modality=item["modality"], value=item["value"], root=root, ctx=ctx)
            readable.append((i, Candidate(label, asset)))
        except Exception as err:  # noqa: BLE001 - an unreadable candidate is its own error
            results[i] = {"label": label, "error": _error_line(err)}

    def answer(group):
        scored = plugins.call("score", scorer, scorer=scorer, instance=instance, candidates=[c for _, c in group], ctx=ctx)
        if len(scored) != len(group):
            raise RuntimeError(f"{scorer} returned {len(scored)} scores for {len(group)} candidates")
        for (i, cand), s in zip(group, scored):
            results[i] = {"label": cand.label, "instruction_following": float(s.instruction_following),
                          "consistency": float(s.consistency), "overall": float(s.overall)}

    if readable:
        try:
            answer(readable)
        except Exception:  # noqa: BLE001 - find which candidates fail, one by one
            for pair in readable:
                try:
                    answer([pair])
                except Exception as err:  # noqa: BLE001
                    results[pair[0]] = {"label": pair[1].label, "error": _error_line(err)}
    return results  # type: ignore[return-value]


def make_app(scorer: str, config: dict, root: Path, max_queue: int, seed: int = 0):
    """The FastAPI application of a reward server for `scorer`."""
    from fastapi import Body, FastAPI
    from fastapi.responses import JSONResponse

    app = FastAPI(title=f"MaskScore reward server ({scorer})")
    admission = Admission(max_queue)
    worker = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="maskscore-score")
    workdir = tempfile.mkdtemp(prefix="maskscore-serve-")
    ctx = Context(workdir=Path(workdir), seed=seed, config=plugins.check_run_config(dict(config)))

    @app.get("/health")
    def health():
        return {"scorer": scorer, "queued": admission.count, "max_queue": max_queue}

    @app.post("/score")
    async def score(body: dict = Body(...)):
        if not admission.enter():
            return JSONResponse(status_code=503, headers={"Retry-After": "1"}, content={
                "error": f"server busy: {max_queue} requests already queued or running; retry later"})
        try:
            try:
                instance = converter.structure(body["instance"], EditInstance)
                items = body["candidates"]
                if not isinstance(items, list):
                    raise TypeError("'candidates' must be a list")
            except Exception as err:  # noqa: BLE001 - a malformed request is the client's, said in one line
                return JSONResponse(status_code=400, content={"error": f"bad request: {_error_line(err)}"})
            loop = asyncio.get_running_loop()
            results = await loop.run_in_executor(worker, score_group, scorer, instance, items, ctx, root)
            return {"scorer": scorer, "results": results}
        finally:
            admission.leave()

    app.state.worker = worker
    return app


@click.command("serve")
@click.option("--scorer", required=True, help="Scorer plugin to serve (e.g. reward-model, render-compare).")
@click.option("--weights", default="default", show_default=True, help="Weights handed to the scorer (a reward-model checkpoint).")
@click.option("--views", type=options.VIEWS, default=8, show_default=True)
@click.option("--resolution", type=options.RESOLUTION, default=256, show_default=True)
@click.option("--root", type=click.Path(exists=True, file_okay=False, path_type=Path), default=Path("."),
              show_default=True, help="Directory that relative asset paths in requests are read from.")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=8765, show_default=True)
@click.option("--max-queue", type=click.IntRange(min=1), default=8, show_default=True,
              help="Requests waiting or running; more are answered 503.")
def serve_command(scorer, weights, views, resolution, root, host, port, max_queue):
    """Serve SCORER over HTTP: POST /score with an edit and its candidates, get their scores."""
    import uvicorn

    options.check_render_size(views, resolution)
    plugins.lookup("scorer", scorer)  # an unknown scorer is a one-line error before listening
    app = make_app(scorer, hook_config(views, resolution, weights=weights), root, max_queue)
    uvicorn.run(app, host=host, port=port, log_level="warning")
