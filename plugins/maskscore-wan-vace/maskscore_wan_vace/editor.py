"""The wan-vace edit: frame A's picture, the part's pixels masked, repainted by Wan-VACE.

The mask is the part's region (`mask_part` of the modality) as the modality's own camera sees
it: frame A's reference mesh rendered from the frontal camera the image modality draws with,
each pixel whose triangle lies in the region, grown by a few pixels to cover the seam. Frame B's
picture is the pipeline's reference image (the instruction asks to match it). Each candidate is a
seeded pass; outputs the modality cannot decode are recorded, not scored
(`maskscore_core.model_editors`).
"""

from __future__ import annotations

import hashlib

import numpy as np

from maskscore_core import model_editors, parts, plugins
from maskscore_core.model_editors import EditError
from maskscore_core.records import Candidate

from . import pipeline, weights

EDITOR = "wan-vace"
MODALITIES = ("image",)
DEFAULTS = {"candidates": 3, "steps": 25, "guidance": 5.0, "grow": 3, "reference": 1}


def settings(ctx) -> dict:
    """DEFAULTS overridden by the run's editor options (weights aside)."""
    out, _ = model_editors.options(EDITOR, ctx, DEFAULTS)
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
    config = {**options, "model_class": pipeline.MODEL_CLASS, "weights": str(path), "masked_pixels": int(mask.sum()),
              "model_index_sha256": hashlib.sha256((path / "model_index.json").read_bytes()).hexdigest()}

    def outputs():
        for index in range(options["candidates"]):
            seed = model_editors.seed(ctx, instance.key, index)
            frame = pipeline.repaint(pipe, [source], mask[None], instance.instruction.text, seed, options["steps"],
                                     options["guidance"], reference)[0]
            yield f"{EDITOR} seed {seed}", seed, frame, {}

    return model_editors.keep_decodable(EDITOR, instance, ctx, outputs(), config)
