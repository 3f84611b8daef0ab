"""The qwen3-omni edit: Qwen3-Omni rewrites frame A's transcript by following the instruction.

Each candidate is a seeded generation. The text modality decodes a candidate to the mouth motion
its words imply; one it cannot decode (no words, characters it cannot speak) is not scored but
recorded with its reason in `editor-outputs/<key>.json` beside the dataset's assets, as the other
model editors do.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from maskscore_core import plugins
from maskscore_core.records import Asset, Candidate

from . import model

EDITOR = "qwen3-omni"
MODALITIES = ("text",)
DEFAULTS = {"candidates": 3, "temperature": 0.7, "max_new_tokens": 32}
RECORDS = "editor-outputs"
SYSTEM = "You edit transcripts. Reply with the edited transcript only."


class EditError(RuntimeError):
    """An edit that gave nothing to score; the message has every candidate's reason."""


def settings(ctx) -> tuple[dict, str | None]:
    given = dict((ctx.config if ctx is not None else {}).get("editor_options", {}) or {})
    weights = given.pop("weights", None)
    out = dict(DEFAULTS)
    for name, value in given.items():
        if name not in DEFAULTS:
            raise ValueError(f"qwen3-omni: unknown editor option {name!r}; options: weights, {', '.join(DEFAULTS)}")
        try:
            out[name] = type(DEFAULTS[name])(value)
        except (TypeError, ValueError):
            raise ValueError(f"qwen3-omni: editor option {name}={value!r} is not a {type(DEFAULTS[name]).__name__}") from None
    if out["candidates"] < 1 or out["max_new_tokens"] < 1 or out["temperature"] < 0:
        raise ValueError(f"qwen3-omni: candidates and max_new_tokens must be >= 1 and temperature >= 0, got {out}")
    return out, weights


def prompt(instance) -> list:
    return [("text", f"Transcript: {instance.a.transcript}\nInstruction: {instance.instruction.text}")]


def _seed(ctx, key: str, index: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{ctx.seed}:{key}:{index}".encode()).digest()[:4], "little")


def _record(ctx, key: str, record: dict) -> None:
    root = ctx.config.get("dataset_root")
    folder = Path(root) / RECORDS if root else Path(ctx.workdir) / RECORDS
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{key}.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def edit(modality: str, instance, ctx) -> list[Candidate]:
    if modality not in MODALITIES:
        raise ValueError(f"qwen3-omni edits transcripts; modality {modality!r} is not one of {', '.join(MODALITIES)}")
    options, given = settings(ctx)
    path = model.weights_dir(given, EDITOR)
    omni = model.load(ctx, path)
    config = {**options, "model_class": model.MODEL_CLASS, "weights": str(path)}
    candidates, outcomes = [], []
    for index in range(options["candidates"]):
        seed = _seed(ctx, instance.key, index)
        text = omni.reply(prompt(instance), seed, options["temperature"], options["max_new_tokens"], SYSTEM).strip()
        label = f"{EDITOR} seed {seed}"
        asset = Asset(modality=modality, data=text, meta={"label": label, "editor": EDITOR, "seed": seed})
        try:
            plugins.call("decode_to_mesh", modality, asset=asset, instance=instance, ctx=ctx)
        except Exception as err:  # noqa: BLE001 - an undecodable output is recorded, never scored
            outcomes.append({"label": label, "seed": seed, "text": text, "decoded": False, "reason": plugins.describe_error(err)})
            continue
        outcomes.append({"label": label, "seed": seed, "text": text, "decoded": True})
        candidates.append(Candidate(label=label, asset=asset, rung=None))
    _record(ctx, instance.key, {"editor": EDITOR, "config": config, "instance": instance.key, "candidates": outcomes})
    if not candidates:
        reasons = "; ".join(o["reason"] for o in outcomes)
        raise EditError(f"qwen3-omni: none of the {len(outcomes)} outputs for {instance.key} decodes: {reasons}")
    return candidates
