"""MaskScore's speech modality plugin: a waveform, scored through the face motion it drives
(see README.md). Hook implementations only; the work lives in the modules."""

from pathlib import Path

from maskscore_core import hookimpl
from maskscore_core.records import Asset, PluginInfo
from maskscore_core.speech.spoken_mesh import sampled_frame_count

from .representation import (
    LADDER_LEVELS,
    MODALITY,
    SUFFIX,
    SpeechAssetError,
    Waveform,
    decode_target,
    decode_waveform,
    part_actions,
    read_waveform,
    synthesize,
    write_waveform,
)
from .table import relative_to_root, resolve, speech_row


def _waveform(asset) -> Waveform:
    if not isinstance(asset.data, Waveform):
        raise SpeechAssetError(f"a speech asset holds a Waveform, got {type(asset.data).__name__}")
    return asset.data


@hookimpl
def plugin_info():
    return PluginInfo(kind="modality", provides=(MODALITY,))


@hookimpl
def encode(modality, target, ctx):
    if modality == MODALITY:
        return Asset(modality=MODALITY, data=synthesize(target))


@hookimpl
def decode_to_mesh(asset, instance, ctx):
    if asset.modality == MODALITY:
        return decode_waveform(_waveform(asset), instance, sampled_frame_count(ctx))


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
    if asset.modality == MODALITY:
        return relative_to_root(write_waveform(_waveform(asset), Path(directory) / f"{name}{SUFFIX}"), ctx)


@hookimpl
def read_asset(modality, value, root, ctx):
    if modality == MODALITY:
        return Asset(modality=MODALITY, data=read_waveform(resolve(value, root)), path=str(value))


@hookimpl
def reward_row(modality, instance, input_value, candidate_values, scores, dimension, root, ctx):
    if modality == MODALITY:
        return speech_row(instance, input_value, candidate_values, scores, dimension, root, ctx)
