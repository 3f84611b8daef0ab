"""MaskScore's video modality plugin: a clip of ANNY frames, decoded per frame and as a face
activation sequence (see README.md). The Modality object and two hooks; the work lives in the modules."""

import attrs

from maskscore_core import Column, hookimpl

from maskscore_core.body import parts
from maskscore_core.edits import instances as edits
from maskscore_core.plugin.context import CoreOptions, setting
from maskscore_core.plugin.modality_kit import FileModality, part_mask
from maskscore_core.plugin.records import Asset, Decoded

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
    sample_indices,
    write_clip,
)
from .pixels import PixelClip, decode_states, is_pixel_clip, read_pixel_clip
from .table import video_row

MODALITY = "video"


@attrs.frozen
class VideoOptions:
    """The run config keys the video modality reads (`ctx.config.options`)."""

    video_frames: int = setting(DEFAULT_SAMPLED_FRAMES, lambda v: isinstance(v, int) and v >= 1, "a whole number of at least 1", int)
    frame_resolution: int = setting(DEFAULT_FRAME_RESOLUTION, lambda v: isinstance(v, int) and v >= 8,
                                    "a whole number of pixels of at least 8", int)  # fmt: skip


def _clip(asset) -> Clip:
    if not isinstance(asset.data, Clip):
        raise VideoError(f"a video asset holds a Clip, got {type(asset.data).__name__}")
    return asset.data


def _pixel_states(clip: PixelClip, instance) -> Clip:
    """A pixel clip read back to body states (`pixels.decode_states`). Pixels are read for the
    face's geometry only: the decoded clip carries no look."""
    states = [attrs.evolve(state, appearance=None) for state in decode_states(clip, instance)]
    return Clip(states=states, fps=clip.fps)


def decode_clip(clip: Clip, part: str, ctx) -> Decoded:
    """Per-frame meshes of a fixed number of sampled frames, the representative (middle) frame's
    mesh, the clip's activation sequence of the edited part's facial actions, and its look."""
    picked = sample_indices(len(clip.states), ctx.config.options(VideoOptions).video_frames)
    middle = len(clip.states) // 2
    vertices = frame_vertices([clip.states[i] for i in [*picked, middle]])
    return Decoded(
        vertices=vertices[-1], frames=tuple(vertices[:-1]), activations=part_activations(clip, part),
        appearance=clip_appearance(clip),
    )  # fmt: skip


class Video(FileModality):
    """A clip of body states, written as PNG frames shaded with their look, with its audio."""

    def encode(self, target, ctx):
        return Asset(modality=MODALITY, data=clip_from_target(target))

    def decode_reference(self, instance, which, ctx):
        """Frame A's or B's clip, exactly; or, where the candidates are pixel clips
        (`ctx.config["pixel_references"]`: their frame size), drawn as a pixel clip of that size
        and read back through the detector and fit as they are."""
        clip = clip_from_target(instance.frame(which))
        size = ctx.config.options(CoreOptions).pixel_references if ctx is not None else None
        if size:
            from .pixels import draw_clip

            drawn = draw_clip(clip.states, clip.fps, int(size), f"frame {which.upper()} of {instance.key}")
            clip = _pixel_states(drawn, instance)
        return decode_clip(clip, instance.instruction.part, ctx)

    def pixel_size(self, asset):
        """Pixel clips are read through the detector: their frame size; body-state clips: None."""
        return int(asset.data.frames[0].shape[0]) if isinstance(asset.data, PixelClip) else None

    def write_file(self, asset, folder, ctx):
        if isinstance(asset.data, PixelClip):  # an editor's frames: PNGs and their frame rate
            from .pixels import write_png_folder

            write_png_folder(asset.data, folder)
        else:
            write_clip(_clip(asset), folder, ctx.config.options(VideoOptions).frame_resolution)
        return folder

    def read_file(self, path, ctx):
        return read_pixel_clip(path) if is_pixel_clip(path) else read_clip(path)

    def row(self, instance, input_value, candidate_values, scores, dimension, root, ctx):
        return video_row(instance, input_value, candidate_values, scores, dimension, root)


@hookimpl
def register_modalities(register):
    register(Video(
        name=MODALITY, table="VideoEditReward", order=4, sequence=True, error=VideoError, options=VideoOptions,
        input_columns=(Column("input_video", "string", "path to input frame sequence"),
                       Column("aligned_audio", "string", "path to aligned audio (.wav)")),
        candidate_column=Column("output_videos", "list<string>", "paths to candidate frame sequences"),
        template="transition the {part} from frame A to frame B",
        # The motion parts, with the appearance task types on them: each frame carries its look.
        task_table=edits.with_appearance({part: "temporal_edit" for part in edits.MOTION_PARTS}),
        suffixes=("/frames.json",),  # a clip folder
    ))  # fmt: skip


@hookimpl
def decode_to_mesh(asset, instance, ctx):
    if isinstance(asset.data, PixelClip):
        return decode_clip(_pixel_states(asset.data, instance), instance.instruction.part, ctx)
    return decode_clip(_clip(asset), instance.instruction.part, ctx)


@hookimpl
def mask_part(modality, part, ctx):
    parts.check_active(part)
    return part_mask(part, {"vertex_ids": parts.part_vertex_ids(part), "actions": tuple(parts.part_actions(part))})
