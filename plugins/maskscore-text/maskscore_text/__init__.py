"""MaskScore's text modality plugin: a transcript, scored through the mouth motion it implies
(see README.md). The Modality object and two hooks; the work lives in the modules."""

from maskscore_core import Column, hookimpl
from maskscore_core.plugin.modality_kit import FileModality, part_mask
from maskscore_core.plugin.records import Asset
from maskscore_core.plugin.registration import CONDITIONING_IMAGE
from maskscore_core.speech.spoken_mesh import SPOKEN, sampled_frame_count

from .representation import LADDER_LEVELS, MODALITY, TextError, check_text, decode_target, decode_text, part_actions
from .table import SUFFIX, transcript_of, write_transcript


class Text(FileModality):
    """What is said, as a transcript. `write` keeps it as a .txt file under the assets and returns
    that path; the table holds the transcripts themselves (`to_column`, table.py)."""

    def encode(self, target, ctx):
        return Asset(modality=MODALITY, data=check_text(target.transcript, f"transcript of {target.label!r}"))

    def decode_reference(self, instance, which, ctx):
        return decode_target(instance, which, sampled_frame_count(ctx))

    def write_file(self, asset, path, ctx):
        return write_transcript(asset.data, path)

    def read_file(self, path, ctx):
        return transcript_of(path, None, "transcript")

    def read(self, value, root, ctx):
        # `value` comes from the table (the transcript itself) or names a .txt file.
        return Asset(modality=MODALITY, data=transcript_of(value, root, "transcript"))

    def to_column(self, value, root, what):
        return transcript_of(value, root, f"{what} transcript")


@hookimpl
def register_modalities(register):
    register(Text(
        name=MODALITY, table="TextEditReward", order=6, suffixes=(SUFFIX,), error=TextError,
        input_columns=(Column("input_text", "string", "frame A's transcript"), CONDITIONING_IMAGE),
        candidate_column=Column("output_texts", "list<string>", "candidate transcripts"),
        template="change the command to {phrase}", ladder_levels=LADDER_LEVELS, **SPOKEN,
    ))  # fmt: skip


@hookimpl
def decode_to_mesh(asset, instance, ctx):
    return decode_text(check_text(asset.data), instance, sampled_frame_count(ctx))


@hookimpl
def mask_part(modality, part, ctx):
    return part_mask(part, part_actions(part))  # a transcript moves only the mouth: other parts are refused
