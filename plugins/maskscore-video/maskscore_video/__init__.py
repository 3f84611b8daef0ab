"""MaskScore's video modality plugin: a clip of ANNY frames, decoded per frame and as a face
activation sequence (see README.md). Hook implementations only; the work lives in the modules."""

from pathlib import Path

from maskscore_core import hookimpl
from maskscore_core.records import Asset, Decoded, PluginInfo

from .representation import (
    DEFAULT_FRAME_RESOLUTION,
    DEFAULT_SAMPLED_FRAMES,
    Clip,
    VideoError,
    clip_appearance,
    clip_from_target,
    frame_vertices,
    part_activations,
    read_clip,
    relative_to_root,
    resolve,
    sample_indices,
    write_clip,
)
from .table import video_row

MODALITY = "video"


@hookimpl
def plugin_info():
    return PluginInfo(kind="modality", provides=(MODALITY,))


@hookimpl
def encode(modality, target, ctx):
    if modality != MODALITY:
        return None
    return Asset(modality=MODALITY, data=clip_from_target(target))


def _clip(asset) -> Clip:
    if not isinstance(asset.data, Clip):
        raise VideoError(f"a video asset holds a Clip, got {type(asset.data).__name__}")
    return asset.data


def decode_clip(clip: Clip, part: str, ctx) -> Decoded:
    """Per-frame meshes of a fixed number of sampled frames, the representative (middle) frame's
    mesh, the clip's activation sequence of the edited part's facial actions, and its look."""
    picked = sample_indices(len(clip.states), int(ctx.config.get("video_frames", DEFAULT_SAMPLED_FRAMES)))
    middle = len(clip.states) // 2
    vertices = frame_vertices([clip.states[i] for i in [*picked, middle]])
    return Decoded(
        vertices=vertices[-1], frames=tuple(vertices[:-1]), activations=part_activations(clip, part),
        appearance=clip_appearance(clip),
    )  # fmt: skip


@hookimpl
def decode_to_mesh(asset, instance, ctx):
    if asset.modality != MODALITY:
        return None
    return decode_clip(_clip(asset), instance.instruction.part, ctx)


@hookimpl
def decode_reference(modality, instance, which, ctx):
    if modality != MODALITY:
        return None
    return decode_clip(clip_from_target(instance.frame(which)), instance.instruction.part, ctx)


@hookimpl
def mask_part(modality, part, ctx):
    if modality != MODALITY:
        return None
    from maskscore_core import parts

    parts.check_active(part)
    return {"vertex_ids": parts.part_vertex_ids(part), "actions": tuple(parts.part_actions(part))}


@hookimpl
def write_asset(asset, directory, name, ctx):
    if asset.modality != MODALITY:
        return None
    folder = Path(directory) / name
    write_clip(_clip(asset), folder, int(ctx.config.get("frame_resolution", DEFAULT_FRAME_RESOLUTION)))
    return relative_to_root(folder, ctx)


@hookimpl
def read_asset(modality, value, root, ctx):
    if modality != MODALITY:
        return None
    return Asset(modality=MODALITY, data=read_clip(resolve(value, root)), path=str(value))


@hookimpl
def reward_row(modality, instance, input_value, candidate_values, scores, dimension, root, ctx):
    if modality != MODALITY:
        return None
    return video_row(instance, input_value, candidate_values, scores, dimension, root)
