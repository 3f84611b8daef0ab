"""OmniScore: Qwen3-Omni grades each candidate from what it sees and hears.

The prompt holds the instruction, frame A and the candidate as the model can take them: the text
itself (text), the waveform (speech), or shaded renders of the decoded ANNY mesh from the
scorer's views (every geometric modality: mesh, depth, keypoints, pose, image, video,
multimodal; depth maps as grey pictures). The reply must be strict JSON, one number per
dimension in 0..10; Avg@N averages N seeded passes. A candidate whose pass does not parse makes
the row a failure that carries the raw replies: no random, default or zero score is ever put in
its place (EditScore substitutes one; we do not).
"""

from __future__ import annotations

import json
import math

import attrs
import numpy as np

from maskscore_core import vocab

from maskscore_core.plugin import manager as plugins
from maskscore_core.plugin.context import setting
from maskscore_core.plugin.records import CandidateScore

from . import model

SCORER = "omniscore"
SCALE = 10.0
MAX_NEW_TOKENS = 96
SYSTEM = "You grade edits of a human body. Reply with one JSON object and nothing else."
ASK = ("Grade the edited result against the instruction and the source. Reply with JSON only: "
       '{"instruction_following": N, "consistency": N, "overall": N}, each N a number from 0 to 10.')


class OmniScoreError(RuntimeError):
    """Replies that do not parse as the strict JSON grade; the message carries them."""


def parse(reply: str) -> dict[str, float]:
    """The grade in `reply` as scores in [0, 1]; ValueError saying what is wrong otherwise.
    Strict: one JSON object (surrounding white space only), exactly the three dimensions, each
    a finite number in [0, SCALE]."""
    try:
        value = json.loads(reply.strip())
    except json.JSONDecodeError as err:
        raise ValueError(f"not JSON ({err.msg})") from None
    if not isinstance(value, dict) or set(value) != set(vocab.DIMENSIONS):
        raise ValueError(f"expected an object with keys {', '.join(vocab.DIMENSIONS)}")
    out = {}
    for name in vocab.DIMENSIONS:
        number = value[name]
        if isinstance(number, bool) or not isinstance(number, (int, float)) or not math.isfinite(number):
            raise ValueError(f"{name} is not a number: {number!r}")
        if not 0.0 <= number <= SCALE:
            raise ValueError(f"{name} {number} is outside 0..{SCALE:g}")
        out[name] = float(number) / SCALE
    return out


def _shaded(result) -> list[np.ndarray]:
    """Lambert-shaded grey pictures of every view of a render (the model sees the shape)."""
    light = np.array([0.3, 0.5, 0.8]) / np.linalg.norm([0.3, 0.5, 0.8])
    pictures = []
    for normals, coverage in zip(np.asarray(result.normals), np.asarray(result.coverage, dtype=bool)):
        shade = 0.15 + 0.85 * np.clip(np.abs(normals @ light), 0.0, 1.0)
        pictures.append(np.where(coverage, shade * 230.0, 40.0).astype(np.uint8)[..., None].repeat(3, axis=2))
    return pictures


def _depth_pictures(depth: np.ndarray) -> list[np.ndarray]:
    out = []
    for view in np.asarray(depth, dtype=np.float64):
        hit = view > 0
        near, far = (view[hit].min(), view[hit].max()) if hit.any() else (0.0, 1.0)
        grey = np.where(hit, 235.0 - 195.0 * (view - near) / max(far - near, 1e-9), 0.0)
        out.append(grey.astype(np.uint8)[..., None].repeat(3, axis=2))
    return out


def content_of(asset, instance, ctx, which: str) -> list:
    """What the model is given of one asset: its text, its audio, or renders of its decoded mesh."""
    data = asset.data
    if isinstance(data, str):
        return [("text", f"{which}: {data}")]
    if hasattr(data, "samples") and hasattr(data, "sample_rate"):
        from maskscore_core.speech.audio import resample

        samples = resample(np.asarray(data.samples), int(data.sample_rate), model.AUDIO_RATE)
        return [("text", f"{which} (audio):"), ("audio", samples.astype(np.float32) / 32768.0)]
    decoded = plugins.call("decode_to_mesh", asset.modality, asset=asset, instance=instance, ctx=ctx)
    if decoded.depth is not None and decoded.vertices is None:
        pictures = _depth_pictures(decoded.depth)
    else:
        from maskscore_core.metric.framing import row_framing
        from maskscore_core.metric.render import get_renderer
        from maskscore_core.metric.views import ViewConfig

        vertices = decoded.vertices if decoded.vertices is not None else decoded.frames[len(decoded.frames) // 2]
        config = ViewConfig(count=ctx.config.views, resolution=ctx.config.resolution)
        # framed as the row is scored (and as depth maps are drawn): frame A's head, zoomed for the part
        framing = row_framing(instance)
        if decoded.faces is not None:  # a mesh of its own topology (pixal3d): drawn with its own triangles
            from maskscore_core.metric import foreign_mesh

            pictures = _shaded(foreign_mesh.render(foreign_mesh.shown(decoded, which), config, framing))
        else:
            pictures = _shaded(get_renderer(config).render(framing.apply(np.asarray(vertices))))
    return [("text", f"{which} ({len(pictures)} views):"), *(("image", p) for p in pictures)]


@attrs.frozen
class OmniScoreOptions:
    """The run config keys OmniScore reads (`ctx.config.options`)."""

    omniscore_passes: int = setting(1, lambda v: isinstance(v, int) and v >= 1, "a whole number of at least 1", int)  # Avg@N


def passes(ctx) -> int:
    return ctx.config.options(OmniScoreOptions).omniscore_passes


def score(instance, candidates, ctx) -> list[CandidateScore]:
    weights = ctx.config.weights
    omni = model.load(ctx, model.weights_dir(None if weights == "default" else weights, SCORER))
    modality = instance.instruction.modality
    source = plugins.modality(modality).encode(instance.a, ctx)
    head = [("text", f"Instruction: {instance.instruction.text}"), *content_of(source, instance, ctx, "Source")]
    temperature = float(ctx.config.temperature)
    scores, failures = [], []
    for candidate in candidates:
        prompt = [*head, *content_of(candidate.asset, instance, ctx, "Edited result"), ("text", ASK)]
        grades = []
        for n in range(passes(ctx)):
            reply = omni.reply(prompt, ctx.seed + n, temperature, MAX_NEW_TOKENS, SYSTEM)
            try:
                grades.append(parse(reply))
            except ValueError as err:
                failures.append(f"{candidate.label} pass {n}: {err}; reply {json.dumps(reply)}")
        if len(grades) == passes(ctx):
            mean = {d: float(np.mean([g[d] for g in grades])) for d in vocab.DIMENSIONS}
            scores.append(CandidateScore(**mean, distances={"passes": float(len(grades))}))
    if failures:
        raise OmniScoreError(f"omniscore: {len(failures)} replies for {instance.key} do not parse: " + " | ".join(failures))
    return scores
