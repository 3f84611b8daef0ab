"""MaskScore's text modality plugin: a transcript, scored through the mouth motion it implies
(see README.md). The Modality object and two hooks; the work lives in the modules."""

from pathlib import Path

from maskscore_core import Column, Modality, hookimpl
from maskscore_core.plugin.records import Asset, PartMask
from maskscore_core.plugin.registration import CONDITIONING_IMAGE
from maskscore_core.speech.spoken_mesh import sampled_frame_count

from .representation import LADDER_LEVELS, MODALITY, check_text, decode_target, decode_text, part_actions
from .table import SUFFIX, relative_to_root, text_row, transcript_of, write_transcript


class Text(Modality):
    """What is said, as a transcript; the table holds the transcripts themselves."""

    name = MODALITY
    table = "TextEditReward"
    input_columns = (Column("input_text", "string", "frame A's transcript"), CONDITIONING_IMAGE)
    candidate_column = Column("output_texts", "list<string>", "candidate transcripts")
    template = "change the command to {phrase}"
    task_table = {"mouth": "speech_edit"}  # words move only the mouth
    ladder_levels = LADDER_LEVELS
    sequence = True
    pairs_by = "words"
    suffixes = (SUFFIX,)
    order = 6

    def encode(self, target, ctx):
        return Asset(modality=MODALITY, data=check_text(target.transcript, f"transcript of {target.label!r}"))

    def decode_reference(self, instance, which, ctx):
        return decode_target(instance, which, sampled_frame_count(ctx))

    def write(self, asset, directory, name, ctx):
        # The .txt path; the row puts the transcript itself in the table (see table.py).
        return relative_to_root(write_transcript(asset.data, Path(directory) / f"{name}{SUFFIX}"), ctx)

    def read(self, value, root, ctx):
        # `value` comes from the table (the transcript itself) or names a .txt file.
        return Asset(modality=MODALITY, data=transcript_of(value, root, "transcript"))

    def row(self, instance, input_value, candidate_values, scores, dimension, root, ctx):
        return text_row(instance, input_value, candidate_values, scores, dimension, root, ctx)


@hookimpl
def register_modalities(register):
    register(Text())


@hookimpl
def decode_to_mesh(asset, instance, ctx):
    return decode_text(check_text(asset.data), instance, sampled_frame_count(ctx))


@hookimpl
def mask_part(modality, part, ctx):
    from maskscore_core.body import parts

    native = part_actions(part)  # a transcript moves only the mouth: other parts are refused
    return PartMask(region=parts.region_vertex_ids(part), native=native)
