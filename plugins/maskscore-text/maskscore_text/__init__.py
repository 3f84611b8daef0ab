"""MaskScore's text modality plugin: a transcript, scored through the mouth motion it implies
(see README.md). Hook implementations only; the work lives in the modules."""

from pathlib import Path

from maskscore_core import hookimpl
from maskscore_core.records import Asset, PluginInfo
from maskscore_core.speech.spoken_mesh import sampled_frame_count

from .representation import LADDER_LEVELS, MODALITY, check_text, decode_target, decode_text, part_actions
from .table import SUFFIX, relative_to_root, text_row, write_transcript


@hookimpl
def plugin_info():
    return PluginInfo(kind="modality", provides=(MODALITY,))


@hookimpl
def encode(modality, target, ctx):
    if modality == MODALITY:
        return Asset(modality=MODALITY, data=check_text(target.transcript, f"transcript of {target.label!r}"))


@hookimpl
def decode_to_mesh(asset, instance, ctx):
    if asset.modality == MODALITY:
        return decode_text(check_text(asset.data), instance, sampled_frame_count(ctx))


@hookimpl
def decode_reference(modality, instance, which, ctx):
    if modality == MODALITY:
        return decode_target(instance, which, sampled_frame_count(ctx))


@hookimpl
def ladder_levels(modality):
    if modality == MODALITY:
        return LADDER_LEVELS


@hookimpl
def mask_part(modality, part, ctx):
    if modality == MODALITY:
        return part_actions(part)


@hookimpl
def write_asset(asset, directory, name, ctx):
    # The .txt path; the row puts the transcript itself in the table (see table.py).
    if asset.modality == MODALITY:
        return relative_to_root(write_transcript(asset.data, Path(directory) / f"{name}{SUFFIX}"), ctx)


@hookimpl
def read_asset(modality, value, root, ctx):
    # `value` comes from the table: the transcript itself.
    if modality == MODALITY:
        return Asset(modality=MODALITY, data=check_text(value))


@hookimpl
def reward_row(modality, instance, input_value, candidate_values, scores, dimension, root, ctx):
    if modality == MODALITY:
        return text_row(instance, input_value, candidate_values, scores, dimension, root, ctx)
