"""The wan-vace edit: frame A's picture, the part's pixels masked, repainted by Wan-VACE.

The mask is the part's region (`mask_part` of the modality) as the modality's own camera sees
it: frame A's reference mesh rendered from the frontal camera the image modality draws with,
each pixel whose triangle lies in the region, grown by a few pixels to cover the seam. Frame B's
picture is the pipeline's reference image (the instruction asks to match it). Each candidate is a
seeded pass; a candidate that the modality cannot decode (no face left in it) is not scored but
recorded, with its reason, in `editor-outputs/<key>.json` beside the dataset's assets.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from maskscore_core import parts, plugins
from maskscore_core.records import Asset, Candidate

from . import pipeline, weights

EDITOR = "wan-vace"
MODALITIES = ("image",)
DEFAULTS = {"candidates": 3, "steps": 25, "guidance": 5.0, "grow": 3, "reference": 1}
RECORDS = "editor-outputs"


class EditError(RuntimeError):
    """An edit that gave nothing to score; the message has every candidate's reason."""


def settings(ctx) -> dict:
    """DEFAULTS overridden by the run's editor options (weights aside)."""
    given = weights.options(ctx)
    out = dict(DEFAULTS)
    for name, value in given.items():
        if name == "weights":
            continue
        if name not in DEFAULTS:
            raise ValueError(f"wan-vace: unknown editor option {name!r}; options: weights, {', '.join(DEFAULTS)}")
        try:
            out[name] = type(DEFAULTS[name])(value)
        except (TypeError, ValueError):
            raise ValueError(f"wan-vace: editor option {name}={value!r} is not a {type(DEFAULTS[name]).__name__}") from None
    if out["candidates"] < 1 or out["steps"] < 1 or out["grow"] < 0:
        raise ValueError(f"wan-vace: candidates and steps must be >= 1 and grow >= 0, got {out}")
    return out


def grow(mask: np.ndarray, pixels: int) -> np.ndarray:
    """`mask` dilated by `pixels` (a square neighbourhood)."""
    out = mask.copy()
    for _ in range(pixels):
        step = out.copy()
        step[1:] |= out[:-1]
        step[:-1] |= out[1:]
        step[:, 1:] |= out[:, :-1]
        step[:, :-1] |= out[:, 1:]
        out = step
    return out


def part_pixels(modality: str, instance, resolution: int, ctx, margin: int) -> np.ndarray:
    """(H, W) bool: frame A's pixels of the part's region, as the image modality's camera sees them."""
    from maskscore_core.reference_mesh import get_reference_mesh
    from maskscore_core.render import get_renderer
    from maskscore_face_landmarks.anchors import frontal_view
    from maskscore_face_landmarks.pixels import camera_target

    part = instance.instruction.part
    region = plugins.call("mask_part", modality, modality=modality, part=part, ctx=ctx).region
    state = instance.a.state
    vertices = get_reference_mesh().vertices([state])[0]
    render = get_renderer(frontal_view(resolution, camera_target(state))).render(vertices)
    mask = parts.pixel_mask(render, part, True, region)[0]
    if not mask.any():
        raise EditError(f"wan-vace: the {part} of {instance.key} covers no pixel of frame A's picture")
    return grow(mask, margin)


def _seed(ctx, key: str, index: int) -> int:
    digest = hashlib.sha256(f"{ctx.seed}:{key}:{index}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


def _record(ctx, key: str, record: dict) -> Path:
    root = ctx.config.get("dataset_root")
    folder = Path(root) / RECORDS if root else Path(ctx.workdir) / RECORDS
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{key}.json"
    path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


def edit(modality: str, instance, ctx) -> list[Candidate]:
    if modality not in MODALITIES:
        raise ValueError(f"wan-vace edits pictures; modality {modality!r} is not one of {', '.join(MODALITIES)}")
    options = settings(ctx)
    path = weights.weights_dir(ctx)
    pipe = ctx.shared(f"wan-vace:{path.resolve()}", lambda: pipeline.load(path))
    m = plugins.modality(modality)
    source = np.asarray(m.encode(instance.a, ctx).data)
    reference = np.asarray(m.encode(instance.b, ctx).data) if options["reference"] else None
    mask = part_pixels(modality, instance, source.shape[0], ctx, options["grow"])
    config = {**options, "model_class": pipeline.MODEL_CLASS, "weights": str(path),
              "model_index_sha256": hashlib.sha256((path / "model_index.json").read_bytes()).hexdigest()}
    candidates, outcomes = [], []
    for index in range(options["candidates"]):
        seed = _seed(ctx, instance.key, index)
        label = f"{EDITOR} seed {seed}"
        frame = pipeline.repaint(pipe, [source], mask[None], instance.instruction.text, seed, options["steps"],
                                 options["guidance"], reference)[0]
        asset = Asset(modality=modality, data=frame, meta={"label": label, "editor": EDITOR, "seed": seed})
        try:
            plugins.call("decode_to_mesh", modality, asset=asset, instance=instance, ctx=ctx)
        except Exception as err:  # noqa: BLE001 - an undecodable output is recorded, never scored
            outcomes.append({"label": label, "seed": seed, "decoded": False, "reason": plugins.describe_error(err)})
            continue
        outcomes.append({"label": label, "seed": seed, "decoded": True})
        candidates.append(Candidate(label=label, asset=asset, rung=None))
    _record(ctx, instance.key, {"editor": EDITOR, "config": config, "instance": instance.key,
                                "masked_pixels": int(mask.sum()), "candidates": outcomes})
    if not candidates:
        reasons = "; ".join(o["reason"] for o in outcomes)
        raise EditError(f"wan-vace: none of the {len(outcomes)} outputs for {instance.key} decodes: {reasons}")
    return candidates
