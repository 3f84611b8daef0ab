"""MaskScore's depth modality plugin: Mitsuba depth maps of the reference mesh, as .exr."""

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
        return representation.encode(target, ctx)


@hookimpl
def decode_to_mesh(asset, instance, ctx):
    if asset.modality == MODALITY:
        return representation.decode(asset, ctx)


@hookimpl
def decode_reference(modality, instance, which, ctx):
    if modality == MODALITY:
        return representation.decode(representation.encode(instance.frame(which), ctx), ctx)


@hookimpl
def mask_part(modality, part, ctx):
    if modality == MODALITY:
        return representation.mask(part)


@hookimpl
def write_asset(asset, directory, name, ctx):
    if asset.modality == MODALITY:
        path = representation.write(asset.data, Path(directory) / f"{name}{representation.SUFFIX}", ctx)
        return table.relative_to_root(path, ctx)


@hookimpl
def read_asset(modality, value, root, ctx):
    if modality == MODALITY:
        path = table.resolve(value, root)
        return Asset(modality=MODALITY, data=representation.read(path, ctx), path=str(value))


@hookimpl
def reward_row(modality, instance, input_value, candidate_values, scores, dimension, root, ctx):
    if modality == MODALITY:
        return table.reward_row(instance, input_value, candidate_values, scores, dimension, root, ctx)
