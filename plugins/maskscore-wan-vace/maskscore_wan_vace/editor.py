"""The wan-vace edit: frame A's picture, the part's pixels masked, repainted by Wan-VACE.

The mask is the part's region (`mask_part` of the modality) as the modality's own camera sees
it: frame A's reference mesh rendered from the frontal camera the image modality draws with,
each pixel whose triangle lies in the region, grown by a few pixels to cover the seam. Frame B's
picture is the pipeline's reference image (the instruction asks to match it). Each candidate is a
seeded pass; outputs the modality cannot decode are recorded, not scored
(`maskscore_core.plugin.model_editors`).
"""

from __future__ import annotations

import hashlib

import attrs
import numpy as np

from maskscore_core.plugin import model_editors

from maskscore_core.body import parts

from maskscore_core.plugin import manager as plugins
from maskscore_core.plugin.model_editors import EditError
from maskscore_core.plugin.records import Candidate

from . import pipeline, weights

EDITOR = "wan-vace"
MODALITIES = ("image", "video")
# frames / size: how many of the clip's frames (4k+1, evenly spaced) are drawn and repainted, at what size (video)
DEFAULTS = {"candidates": 3, "steps": 25, "guidance": 5.0, "grow": 3, "reference": 1, "frames": 9, "size": 448}


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
    from maskscore_core.body.reference_mesh import get_reference_mesh
    from maskscore_core.metric.render import get_renderer
    from maskscore_face_landmarks.pixels import pixel_view

    part = instance.instruction.part
    region = plugins.call("mask_part", modality, modality=modality, part=part, ctx=ctx).region
    state = instance.a.state
    vertices = get_reference_mesh().vertices([state])[0]
    render = get_renderer(pixel_view(resolution)).render(vertices)
    mask = parts.pixel_mask(render, part, True, region)[0]
    if not mask.any():
        raise EditError(f"wan-vace: the {part} of {instance.key} covers no pixel of frame A's picture")
    return grow(mask, margin)


def video_frames(instance, options) -> tuple[list[np.ndarray], np.ndarray, float, list[str]]:
    """Frame A's clip drawn as the video modality draws pixel clips (the one camera of pictures,
    `pixel_view`), `frames` of its frames evenly spaced; the part's pixels of each; their rate."""
    from maskscore_core.metric.render import get_renderer
    from maskscore_face_landmarks.pixels import picture, pixel_view
    from maskscore_video.representation import frame_vertices, sample_indices

    states = instance.a.states
    count = pipeline.valid_frame_count(min(options["frames"], len(states)))
    indices = sample_indices(len(states), count)
    size = options["size"]
    renderer = get_renderer(pixel_view(size))
    part = instance.instruction.part
    region = plugins.call("mask_part", "video", modality="video", part=part, ctx=None).region
    pictures, masks = [], []
    for i in indices:
        vertices = frame_vertices([states[i]])[0]
        pictures.append(picture(states[i], size))
        masks.append(grow(parts.pixel_mask(renderer.render(vertices), part, True, region)[0], options["grow"]))
    span = (indices[-1] - indices[0]) / max(len(indices) - 1, 1)
    return pictures, np.stack(masks), float(instance.a.fps) / max(span, 1e-9), [f"frame {i}" for i in indices]


def edit(modality: str, instance, ctx) -> list[Candidate]:
    if modality not in MODALITIES:
        raise ValueError(f"wan-vace edits pictures; modality {modality!r} is not one of {', '.join(MODALITIES)}")
    options = settings(ctx)
    path = weights.weights_dir(ctx)
    pipe = ctx.shared(f"wan-vace:{path.resolve()}", lambda: pipeline.load(path))
    m = plugins.modality(modality)
    if modality == "video":
        from maskscore_video.pixels import PixelClip

        frames, mask, fps, names = video_frames(instance, options)
        reference = video_frames(attrs.evolve(instance, a=instance.b), {**options, "frames": 1})[0][0]  # frame B's first
    else:
        frames = [np.asarray(m.encode(instance.a, ctx).data)]
        mask = part_pixels(modality, instance, frames[0].shape[0], ctx, options["grow"])[None]
        reference = np.asarray(m.encode(instance.b, ctx).data)
    reference = reference if options["reference"] else None
    config = {**options, "model_class": pipeline.MODEL_CLASS, "weights": str(path), "masked_pixels": int(mask.sum()),
              "model_index_sha256": hashlib.sha256((path / "model_index.json").read_bytes()).hexdigest()}

    def outputs():
        for index in range(options["candidates"]):
            seed = model_editors.seed(ctx, instance.key, index)
            made = pipeline.repaint(pipe, frames, mask, instance.instruction.text, seed, options["steps"],
                                    options["guidance"], reference)
            data = made[0] if modality == "image" else PixelClip(frames=made, fps=fps, source=f"{EDITOR} seed {seed}", names=names)
            yield f"{EDITOR} seed {seed}", seed, data, {}

    return model_editors.keep_decodable(EDITOR, instance, ctx, outputs(), config)
