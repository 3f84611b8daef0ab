"""The talker edit: frame A's audio with the part's span resynthesized by Qwen2.5-Omni's talker
to say frame B's words there (`span`), spliced back so every sample outside the span is frame A's.

Each candidate is a seeded pass. Before the speech modality decodes a candidate, `said.check`
asks whether the talker's stretch says the phrase at all (not silent, voiced, the phrase aligned
inside it); outputs that fail it or do not decode are recorded, not scored
(`maskscore_core.plugin.model_editors`).
"""

from __future__ import annotations

import numpy as np

from maskscore_core.plugin import manager as plugins
from maskscore_core.plugin import model_editors
from maskscore_core.plugin.model_editors import EditError
from maskscore_core.plugin.records import Candidate
from maskscore_core.speech.audio import SAMPLE_RATE, resample

from . import model, said, span

EDITOR = "talker"
MODALITIES = ("speech",)
# speaker: a voice of spk_dict.pt, or "auto" (upstream's Ethan for a male voice of frame A's
# subject, Chelsie otherwise, when present); max_seconds: the talker's code budget per phrase
# word (plus one word's worth); steps / guidance: Token2Wav's ODE steps and guidance scale (upstream 10, 0.5).
DEFAULTS = {"candidates": 3, "speaker": "auto", "temperature": 0.9, "steps": 10, "guidance": 0.5, "max_seconds": 0.8}
AUTO_SPEAKERS = {"male": "Ethan", "female": "Chelsie"}


def settings(ctx) -> tuple[dict, str | None]:
    out, weights = model_editors.options(EDITOR, ctx, DEFAULTS)
    if out["candidates"] < 1 or out["steps"] < 1 or out["temperature"] < 0 or out["max_seconds"] <= 0:
        raise ValueError(f"talker: candidates and steps must be >= 1, temperature >= 0 and max_seconds > 0, got {out}")
    return out, weights


def speaker_for(instance, talker: model.Talker, wanted: str) -> str:
    """The voice to speak with: `wanted`, or for "auto" the upstream voice of frame A's subject's sex."""
    if wanted != "auto":
        return wanted
    from maskscore_core.speech.synthesis import MALE_VOICES

    name = AUTO_SPEAKERS["male" if instance.a.subject.voice in MALE_VOICES else "female"]
    return name if name in talker.speakers else talker.speakers[0]


def candidate(source: np.ndarray, where: span.Span, audio: np.ndarray, rate: int):
    """The talker's float audio at `rate`, brought to 16 kHz int16 and spliced into frame A's
    samples; (samples, how many of them the talker made)."""
    made = resample(span.to_int16(audio, rate), rate, SAMPLE_RATE)
    return span.splice(source, where, made), int(made.size)


def edit(modality: str, instance, ctx) -> list[Candidate]:
    if modality not in MODALITIES:
        raise ValueError(f"talker resynthesizes speech; modality {modality!r} is not one of {', '.join(MODALITIES)}")
    from maskscore_speech.representation import Waveform

    plugins.call("mask_part", modality, modality=modality, part=instance.instruction.part, ctx=ctx)  # refuses parts speech cannot move
    options, given = settings(ctx)
    path = model.weights_dir(given)
    talker = model.load(ctx, path)
    source = plugins.modality(modality).encode(instance.a, ctx).data
    where = span.find(source.samples, instance.a.transcript, instance.b.transcript)
    speaker = speaker_for(instance, talker, options["speaker"])
    config = {**options, "speaker": speaker, "model_class": model.MODEL_CLASS, "weights": str(path),
              "span_s": [where.start / SAMPLE_RATE, where.end / SAMPLE_RATE], "replaced": where.replaced, "phrase": where.phrase}
    kept = source.samples.size - (where.end - where.start)  # frame A's samples around the span

    def outputs():
        for index in range(options["candidates"]):
            seed = model_editors.seed(ctx, instance.key, index)
            audio = talker.say(where.phrase, speaker, seed, options["max_seconds"] * (1 + len(where.phrase.split())),
                               options["temperature"], options["steps"], options["guidance"])
            samples, made = candidate(source.samples, where, audio, model.OUTPUT_RATE)
            yield f"{EDITOR} seed {seed}", seed, Waveform(samples, transcript=where.words), {"made_s": made / SAMPLE_RATE}

    def verify(data) -> None:
        said.check(data.samples, where, data.samples.size - kept)

    return model_editors.keep_decodable(EDITOR, instance, ctx, outputs(), config, verify=verify)


__all__ = ["EDITOR", "EditError", "candidate", "edit"]
