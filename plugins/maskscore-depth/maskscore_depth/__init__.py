"""MaskScore's depth modality plugin: Mitsuba depth maps of the reference mesh, as .exr."""

from maskscore_core import Column, hookimpl

from maskscore_core.edits import instances as edits
from maskscore_core.plugin.modality_kit import FileModality, part_mask
from maskscore_core.plugin.registration import CONDITIONING_IMAGE

from . import representation


class Depth(FileModality):
    """Per-view depth maps of the reference mesh (render space: compared as maps, not vertices)."""

    def encode(self, target, ctx):
        return representation.encode(target, ctx)

    def write_file(self, asset, path, ctx):
        return representation.write(asset.data, path, ctx, asset.meta.get(representation.FRAMED_PART))

    def read_file(self, path, ctx):
        return representation.read(path, ctx)

    def read_meta(self, path, data, ctx):
        return representation.read_meta(path)


@hookimpl
def decode_to_mesh(asset, instance, ctx):
    return representation.decode(asset, ctx, instance.instruction.part)


@hookimpl
def register_modalities(register):
    register(Depth(
        name=representation.MODALITY, table="DepthEditReward", order=3, suffixes=(representation.SUFFIX,),
        input_columns=(Column("input_depth", "string", "path to frame A's depth map (.exr)"), CONDITIONING_IMAGE),
        candidate_column=Column("output_depths", "list<string>", "paths to candidate depth maps (.exr)"),
        template="reconstruct the {part} depth to match frame B", error=representation.DepthError,
        task_table=dict(edits.WITHOUT_GAZE),  # ANNY's eyes are sockets: a gaze edit leaves depth unchanged
    ))  # fmt: skip


@hookimpl
def mask_part(modality, part, ctx):
    return part_mask(part, representation.mask(part))
