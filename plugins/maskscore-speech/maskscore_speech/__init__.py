"""MaskScore's speech modality plugin: a waveform, scored through the face motion it drives
(see README.md). The Modality object and two hooks; the work lives in the modules."""

from maskscore_core import Column, hookimpl
from maskscore_core.plugin.modality_kit import FileModality, part_mask
from maskscore_core.plugin.records import Asset
from maskscore_core.plugin.registration import CONDITIONING_IMAGE
from maskscore_core.speech.spoken_mesh import SPOKEN, sampled_frame_count

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


def _waveform(asset) -> Waveform:
    if not isinstance(asset.data, Waveform):
        raise SpeechAssetError(f"a speech asset holds a Waveform, got {type(asset.data).__name__}")
    return asset.data


class Speech(FileModality):
    """What is said and by which voice, as a 16 kHz waveform (.wav)."""

    def encode(self, target, ctx):
        return Asset(modality=MODALITY, data=synthesize(target))

    def decode_reference(self, instance, which, ctx):
        return decode_target(instance, which, sampled_frame_count(ctx))

    def write_file(self, asset, path, ctx):
        return write_waveform(_waveform(asset), path)

    def read_file(self, path, ctx):
        return read_waveform(path)


@hookimpl
def register_modalities(register):
    register(Speech(
        name=MODALITY, table="SpeechEditReward", order=5, suffixes=(SUFFIX,), error=SpeechAssetError,
        input_columns=(Column("input_audio", "string", "path to frame A's audio (.wav)"), CONDITIONING_IMAGE),
        candidate_column=Column("output_audios", "list<string>", "paths to candidate audio (.wav)"),
        template="resynthesize the {part} to say {phrase}", ladder_levels=LADDER_LEVELS, **SPOKEN,
    ))  # fmt: skip


@hookimpl
def decode_to_mesh(asset, instance, ctx):
    return decode_waveform(_waveform(asset), instance, sampled_frame_count(ctx))


@hookimpl
def mask_part(modality, part, ctx):
    return part_mask(part, part_actions(part))  # audio moves only the mouth: other parts are refused
