"""The text modality: transcripts, the mouth motion they imply, rows, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from maskscore_core.plugin import manager as plugins

from maskscore_core.dataset import reward_tables
from maskscore_core.plugin.contract import SpokenModalityContract
from maskscore_core.plugin.records import Asset
from maskscore_core.plugin.testing import misordered_pairs, speaking_instance

MODALITY = "text"


def _instance():
    return speaking_instance(MODALITY, "change the command to play some music", key="unit-text-0001")


class TestTextContract(SpokenModalityContract):
    modality = MODALITY
    stores_written_values = False  # the table holds the transcripts themselves (check_rows)
    bad_files = ((float("nan"), {}, "NaN"), ("   ", {}, "empty"), (3, {}, "must be a string"))
    ladder_instances = 3
    ladder_seed = 0
    stores_written_values = False  # the table keeps the transcripts themselves (check_rows)

    def unit_instance(self):
        return _instance()

    def check_rows(self, table, values, instance, ctx):
        assert values == ["assets/input.txt", "assets/rung1.txt"]
        assert table.column("input_text").to_pylist() == ["turn on the lights"] * 3
        assert table.column("output_texts").to_pylist() == [["play some music"]] * 3

    def check_ladders(self, ladders):
        """Text's ladder (`LADDER_LEVELS`): rungs 1-3 (a transcript moves only the mouth: no rung
        4; it has no voice: no rung 5), 1 > 2 > 3 on instruction_following and overall on every
        instance, and nothing but the mouth changes."""
        for instance, _, scores in ladders:
            assert misordered_pairs(MODALITY, scores) == [], instance.key
            # The exact edit decodes as frame B's reference does (`decode_reference`): it scores 1.
            assert scores[0].instruction_following == 1.0, instance.key
            assert all(s.consistency > 0.95 for s in scores), instance.key  # text leaves the rest alone


def test_the_transcript_is_the_asset_and_other_words_move_the_mouth_otherwise(ctx):
    instance = _instance()
    asset = plugins.call("encode", MODALITY, modality=MODALITY, target=instance.b, ctx=ctx)
    assert asset.data == "play some music"
    decoded = plugins.call("decode_to_mesh", MODALITY, asset=asset, instance=instance, ctx=ctx)
    other = plugins.call("decode_to_mesh", MODALITY, asset=Asset(MODALITY, "turn on the lights"), instance=instance, ctx=ctx)
    assert not np.allclose(other.activations, decoded.activations)


def test_transcripts_are_kept_as_files_and_stored_in_the_table(ctx, tmp_path):
    asset = Asset(MODALITY, "play some music")
    value = plugins.call("write_asset", MODALITY, asset=asset, directory=tmp_path / "assets", name="b", ctx=ctx)
    assert value == "assets/b.txt" and (tmp_path / value).read_text() == "play some music\n"
    back = plugins.call("read_asset", MODALITY, modality=MODALITY, value="play some music", root=tmp_path, ctx=ctx)
    assert back.data == "play some music"


def test_unknown_words_are_named(ctx):
    with pytest.raises(ValueError, match="qzxv"):
        plugins.call("decode_to_mesh", MODALITY, asset=Asset(MODALITY, "play qzxv"), instance=_instance(), ctx=ctx)


def test_rows_store_transcripts_and_name_missing_files(ctx, tmp_path):
    """Two candidates: the table holds their transcripts, read back from the written files."""

    def write(text, name):
        return plugins.call("write_asset", MODALITY, asset=Asset(MODALITY, text), directory=tmp_path / "assets", name=name, ctx=ctx)

    def row(input_value, scores):
        return plugins.call("reward_row", MODALITY, modality=MODALITY, instance=_instance(), input_value=input_value,
                            candidate_values=candidates, scores=scores, dimension="overall", root=tmp_path, ctx=ctx)  # fmt: skip

    candidates = [write("play some music", "r1"), write("turn on the lights", "r2")]
    reward_tables.render_conditioning_image(_instance(), tmp_path, ctx)  # the dataset stage's part
    assert row(write("turn on the lights", "a"), [0.9, 0.2])["output_texts"] == ["play some music", "turn on the lights"]
    with pytest.raises(ValueError, match="does not exist"):
        row("assets/gone.txt", [0.5, 0.4])
