"""MaskScore's speech modality plugin: a waveform, scored through the face motion it drives
(see README.md). The Modality object and two hooks; the work lives in the modules."""

from pathlib import Path

from maskscore_core import Column, Modality, hookimpl
from maskscore_core.plugin.records import Asset, PartMask
from maskscore_core.plugin.registration import CONDITIONING_IMAGE
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


class Speech(Modality):
    """What is said and by which voice, as a 16 kHz waveform (.wav)."""

    name = MODALITY
    table = "SpeechEditReward"
    input_columns = (Column("input_audio", "string", "path to frame A's audio (.wav)"), CONDITIONING_IMAGE)
    candidate_column = Column("output_audios", "list<string>", "paths to candidate audio (.wav)")
    template = "resynthesize the {part} to say {phrase}"
    task_table = {"mouth": "speech_edit"}  # audio moves only the mouth
    ladder_levels = LADDER_LEVELS
    sequence = True
    pairs_by = "words"
    suffixes = (SUFFIX,)
    order = 5

    def encode(self, target, ctx):
        return Asset(modality=MODALITY, data=synthesize(target))

    def decode_reference(self, instance, which, ctx):
        return decode_target(instance, which, sampled_frame_count(ctx))

    def write(self, asset, directory, name, ctx):
        return relative_to_root(write_waveform(_waveform(asset), Path(directory) / f"{name}{SUFFIX}"), ctx)

    def read(self, value, root, ctx):
        return Asset(modality=MODALITY, data=read_waveform(resolve(value, root)), path=str(value))

    def row(self, instance, input_value, candidate_values, scores, dimension, root, ctx):
        return speech_row(instance, input_value, candidate_values, scores, dimension, root, ctx)


@hookimpl
def register_modalities(register):
    register(Speech())


@hookimpl
def decode_to_mesh(asset, instance, ctx):
    return decode_waveform(_waveform(asset), instance, sampled_frame_count(ctx))


@hookimpl
def mask_part(modality, part, ctx):
    from maskscore_core.body import parts

    native = part_actions(part)  # audio moves only the mouth: other parts are refused
    return PartMask(region=parts.region_vertex_ids(part), native=native)
