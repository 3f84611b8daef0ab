"""Stage 1: train the denoiser by masked-part reconstruction (`maskscore train editor`)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import torch
from tqdm import tqdm

from maskscore_core import checkpoints, threads

from . import data, flow, params
from .model import Denoiser, save

DEFAULTS = {
    "seed": 0, "source": "anny", "subjects": 12, "steps": 2000, "batch": 256, "width": 512, "depth": 3,
    "lr": 1e-3, "drop": 0.1, "save_every": 200, "log_every": 50,
}


def run(options: dict, ctx) -> dict:
    """Train (or resume training) into options["out"]; returns a summary."""
    out = Path(options["out"])
    opts = {**DEFAULTS, **{k: v for k, v in options.items() if v is not None and k in DEFAULTS}}
    checkpoints.check_run_config(out, {"trainer": "native-flow", **opts})
    trials = data.train_trials(opts["source"], opts["seed"], opts["subjects"], ctx)
    bank = data.StateBank.from_trials(trials)
    parts = params.editable_parts()  # loads the body model, which sets torch's threads
    with threads.one_thread():
        return _train(out, opts, bank, parts, progress=options.get("progress", True))


def _train(out: Path, opts: dict, bank, parts, progress: bool) -> dict:
    torch.manual_seed(opts["seed"])
    model = Denoiser(opts["width"], opts["depth"])
    mean, scale = data.normaliser(bank)
    model.mean.copy_(torch.as_tensor(mean)), model.scale.copy_(torch.as_tensor(scale))
    optimizer = torch.optim.Adam(model.parameters(), lr=opts["lr"])
    resumed = checkpoints.resume_state(out, model, optimizer)
    start, history, window = resumed if resumed else (0, [], [])
    extra = {"train": opts, "parts": list(parts), "frames": int(len(bank.vectors)), "subjects": len(bank.by_subject)}
    started = time.perf_counter()
    bar = tqdm(total=opts["steps"], initial=start, desc="train editor", unit="step", file=sys.stderr, disable=not progress)
    for step in range(start, opts["steps"]):
        rows = data.batch(bank, parts, opts["seed"], step, opts["batch"], opts["drop"])
        generator = torch.Generator().manual_seed(rows["noise_seed"])
        a, mask, target, given = model.inputs(rows["a"], rows["mask"], rows["target"], rows["given"])
        t = torch.rand(len(a), generator=generator)
        eps = torch.randn(a.shape, generator=generator)
        loss = flow.loss(model, model.normalise(rows["x0"]), a, mask, target, given, t, eps)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        window.append(float(loss.detach()))
        bar.update(1)
        done = step + 1
        if done % opts["log_every"] == 0 or done == opts["steps"]:
            history.append({"step": done, "loss": sum(window) / len(window)})
            window = []
            bar.set_postfix(loss=f"{history[-1]['loss']:.4f}")
        if done % opts["save_every"] == 0 and done < opts["steps"]:
            save(model, out, {**extra, "steps_done": done})
            checkpoints.save_state(out, done, model, optimizer, history, window)
            checkpoints.write_curves(out, history, "native-flow editor: masked-part reconstruction")
    bar.close()
    save(model, out, {**extra, "steps_done": opts["steps"]})
    checkpoints.write_curves(out, history, "native-flow editor: masked-part reconstruction")
    checkpoints.clear_state(out)
    return {
        "checkpoint": str(out), "steps": opts["steps"], "resumed_from": start, "final_loss": history[-1]["loss"] if history else None,
        "frames": int(len(bank.vectors)), "subjects": len(bank.by_subject), "seconds": round(time.perf_counter() - started, 1),
    }
