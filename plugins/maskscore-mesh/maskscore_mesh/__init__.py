"""MaskScore's mesh modality plugin: the root representation, reference-mesh vertices as .glb."""

from pathlib import Path

from maskscore_core import hookimpl
from maskscore_core.records import Asset, PluginInfo

from . import representation, table

MODALITY = representation.MODALITY


@hookimpl
def plugin_info():
    return PluginInfo(kind="modality", provides=(MODALITY,))


@hookimpl
def encode(modality, target, ctx):
    if modality == MODALITY:
        return representation.encode(target)


@hookimpl
def decode_to_mesh(asset, instance, ctx):
    if asset.modality == MODALITY:
        return representation.decode(asset)


@hookimpl
def decode_reference(modality, instance, which, ctx):
    if modality == MODALITY:
        return representation.decode(representation.encode(instance.frame(which)))


@hookimpl
def mask_part(modality, part, ctx):
    if modality == MODALITY:
        from maskscore_core import parts

        return parts.part_vertex_ids(part)


@hookimpl
def write_asset(asset, directory, name, ctx):
    if asset.modality == MODALITY:
        path = representation.write(
            asset.data, Path(directory) / f"{name}{representation.SUFFIX}", asset.meta.get("appearance")
        )
        return table.relative_to_root(path, ctx)


@hookimpl
def read_asset(modality, value, root, ctx):
    if modality == MODALITY:
        path = table.resolve(value, root)
        vertices = representation.read(path)  # names a missing, corrupt or wrong file first
        look = representation.read_appearance(path)
        return Asset(modality=MODALITY, data=vertices, path=str(value), meta={"appearance": look})


@hookimpl
def reward_row(modality, instance, input_value, candidate_values, scores, dimension, root, ctx):
    if modality == MODALITY:
        return table.reward_row(instance, input_value, candidate_values, scores, dimension, root, ctx)
