"""The qwen3-omni edit: Qwen3-Omni rewrites frame A's transcript by following the instruction.

Each candidate is a seeded generation. The text modality decodes a candidate to the mouth motion
its words imply; outputs it cannot decode (no words, words it cannot pronounce) are recorded, not
scored (`maskscore_core.plugin.model_editors`).
"""

from __future__ import annotations

from maskscore_core.plugin import model_editors
from maskscore_core.plugin.model_editors import EditError
from maskscore_core.plugin.records import Candidate

from . import model

EDITOR = "qwen3-omni"
MODALITIES = ("text",)
DEFAULTS = {"candidates": 3, "temperature": 0.7, "max_new_tokens": 32}
SYSTEM = "You edit transcripts. Reply with the edited transcript only."


def settings(ctx) -> tuple[dict, str | None]:
    out, weights = model_editors.options(EDITOR, ctx, DEFAULTS)
    if out["candidates"] < 1 or out["max_new_tokens"] < 1 or out["temperature"] < 0:
        raise ValueError(f"qwen3-omni: candidates and max_new_tokens must be >= 1 and temperature >= 0, got {out}")
    return out, weights


def prompt(instance) -> list:
    return [("text", f"Transcript: {instance.a.transcript}\nInstruction: {instance.instruction.text}")]


def edit(modality: str, instance, ctx) -> list[Candidate]:
    if modality not in MODALITIES:
        raise ValueError(f"qwen3-omni edits transcripts; modality {modality!r} is not one of {', '.join(MODALITIES)}")
    options, given = settings(ctx)
    path = model.weights_dir(given, EDITOR)
    omni = model.load(ctx, path)
    config = {**options, "model_class": model.MODEL_CLASS, "weights": str(path)}

    def outputs():
        for index in range(options["candidates"]):
            seed = model_editors.seed(ctx, instance.key, index)
            text = omni.reply(prompt(instance), seed, options["temperature"], options["max_new_tokens"], SYSTEM).strip()
            yield f"{EDITOR} seed {seed}", seed, text, {"text": text}

    return model_editors.keep_decodable(EDITOR, instance, ctx, outputs(), config)


__all__ = ["EDITOR", "EditError", "edit", "prompt"]
