"""MaskScore's pose modality plugin: SOMA bones [78x3] + t[3], decoded by FK + skinning."""

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
        return representation.decode(asset, instance)


@hookimpl
def decode_reference(modality, instance, which, ctx):
    if modality == MODALITY:
        return representation.decode(representation.encode(instance.frame(which)), instance)


@hookimpl
def mask_part(modality, part, ctx):
    if modality == MODALITY:
        return representation.mask(part)


@hookimpl
def write_asset(asset, directory, name, ctx):
    if asset.modality == MODALITY:
        return representation.to_column(asset.data)


@hookimpl
def read_asset(modality, value, root, ctx):
    if modality == MODALITY:
        return Asset(modality=MODALITY, data=representation.check(value, what="pose column value"))


@hookimpl
def reward_row(modality, instance, input_value, candidate_values, scores, dimension, root, ctx):
    if modality == MODALITY:
        return table.reward_row(instance, input_value, candidate_values, scores, dimension, root, ctx)
