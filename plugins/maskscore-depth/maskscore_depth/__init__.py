"""MaskScore's depth modality plugin: Mitsuba depth maps of the reference mesh, as .exr."""

from pathlib import Path

from maskscore_core import Column, Modality, hookimpl

from maskscore_core.edits import instances as edits
from maskscore_core.plugin.records import Asset, PartMask
from maskscore_core.plugin.registration import CONDITIONING_IMAGE

from . import representation, table

MODALITY = representation.MODALITY


class Depth(Modality):
    """Per-view depth maps of the reference mesh (render space: compared as maps, not vertices)."""

    name = MODALITY
    table = "DepthEditReward"
    input_columns = (Column("input_depth", "string", "path to frame A's depth map (.exr)"), CONDITIONING_IMAGE)
    candidate_column = Column("output_depths", "list<string>", "paths to candidate depth maps (.exr)")
    template = "reconstruct the {part} depth to match frame B"
    # ANNY's eyes are sockets: a gaze (irides) edit leaves the depth map unchanged.
    task_table = dict(edits.WITHOUT_GAZE)
    suffixes = (representation.SUFFIX,)
    order = 3

    def encode(self, target, ctx):
        return representation.encode(target, ctx)

    def decode_reference(self, instance, which, ctx):
        return representation.decode(representation.encode(instance.frame(which), ctx), ctx)

    def write(self, asset, directory, name, ctx):
        path = representation.write(asset.data, Path(directory) / f"{name}{representation.SUFFIX}", ctx)
        return table.relative_to_root(path, ctx)

    def read(self, value, root, ctx):
        path = table.resolve(value, root)
        return Asset(modality=MODALITY, data=representation.read(path, ctx), path=str(value))

    def row(self, instance, input_value, candidate_values, scores, dimension, root, ctx):
        return table.reward_row(instance, input_value, candidate_values, scores, dimension, root, ctx)


@hookimpl
def register_modalities(register):
    register(Depth())


@hookimpl
def decode_to_mesh(asset, instance, ctx):
    return representation.decode(asset, ctx)


@hookimpl
def mask_part(modality, part, ctx):
    from maskscore_core.body import parts

    return PartMask(region=parts.region_vertex_ids(part), native=representation.mask(part))
