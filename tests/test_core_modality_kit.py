"""The modality kit (maskscore_core.plugin.modality_kit): a modality declared by keywords where it
is registered, files named and read back by the base class, the standard row, the part mask."""

from __future__ import annotations

import sys
import textwrap

import numpy as np
import pytest

from maskscore_core.body import parts
from maskscore_core.dataset import reward_tables, schemas
from maskscore_core.dataset.shard import register_plugin_modules
from maskscore_core.plugin import manager as plugins
from maskscore_core.plugin.modality_kit import FileModality, part_mask
from maskscore_core.plugin.registration import RegistrationError
from maskscore_core.plugin.testing import face_state, small_context, unit_instance

# A third-party modality written with the kit: notes kept as .note files.
TOY = '''
import numpy

from maskscore_core import Column, hookimpl
from maskscore_core.plugin.modality_kit import FileModality, part_mask
from maskscore_core.plugin.records import Asset, Decoded
from maskscore_core.plugin.registration import CONDITIONING_IMAGE


class NoteError(ValueError):
    pass


class Note(FileModality):
    def encode(self, target, ctx):
        return Asset(modality=self.name, data=target.label)

    def write_file(self, asset, path, ctx):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(asset.data)
        return path

    def read_file(self, path, ctx):
        if not path.is_file():
            raise NoteError(f"note {path} does not exist")
        return path.read_text()

    def read_meta(self, path, data, ctx):
        return {"size": path.stat().st_size}


@hookimpl
def register_modalities(register):
    register(Note(
        name="note", table="NoteEditReward", suffixes=(".note",), error=NoteError, task_table={"mouth": "expression_change"},
        input_columns=(Column("input_note", "string", "path to frame A's note"), CONDITIONING_IMAGE),
        candidate_column=Column("output_notes", "list<string>", "paths to candidate notes"),
        template="note the {part}",
    ))


@hookimpl
def decode_to_mesh(asset, instance, ctx):
    return Decoded(depth=numpy.zeros((1, 2, 2), dtype=numpy.float32))


@hookimpl
def mask_part(modality, part, ctx):
    return part_mask(part, native=("note", part))
'''


@pytest.fixture
def note(tmp_path, monkeypatch):
    (tmp_path / "toy_note_modality.py").write_text(textwrap.dedent(TOY))
    monkeypatch.syspath_prepend(str(tmp_path))
    plugins.reset()
    register_plugin_modules(["toy_note_modality"])
    yield plugins.modality("note")
    plugins.reset()
    sys.modules.pop("toy_note_modality", None)


def test_declared_keywords_become_the_modality_s_attributes(note):
    assert (note.name, note.table, note.candidate_column.name) == ("note", "NoteEditReward", "output_notes")
    assert schemas.arrow_schema("NoteEditReward").names[2:4] == ["input_note", "conditioning_image"]
    assert note.task_types() == ("expression_change",)


def test_an_unknown_keyword_is_refused_naming_it():
    class Bare(FileModality):
        encode = write_file = read_file = None

    with pytest.raises(RegistrationError, match=r"unknown attributes \['tabel'\]"):
        Bare(name="x", tabel="XEditReward")


def test_files_are_named_by_the_suffix_and_read_back_with_the_plugin_s_error(note, tmp_path):
    ctx = small_context(tmp_path)
    instance = unit_instance("note", "note the mouth", "expression_change", face_state(), face_state(jawOpen=0.5))
    asset = plugins.call("encode", modality="note", target=instance.b, ctx=ctx)
    value = plugins.call("write_asset", asset=asset, directory=tmp_path / "assets", name="b", ctx=ctx)
    assert value == "assets/b.note" and (tmp_path / value).read_text() == instance.b.label
    back = plugins.call("read_asset", modality="note", value=value, root=tmp_path, ctx=ctx)
    assert (back.data, back.path, back.meta) == (instance.b.label, value, {"size": len(instance.b.label)})
    with pytest.raises(ValueError, match="does not exist") as err:
        plugins.call("read_asset", modality="note", value="assets/none.note", root=tmp_path, ctx=ctx)
    assert type(err.value).__name__ == "NoteError"
    with pytest.raises(ValueError, match="note table value .*outside the dataset directory"):
        plugins.call("read_asset", modality="note", value="../b.note", root=tmp_path, ctx=ctx)


def test_the_standard_row_holds_the_written_values_and_frame_a_s_picture(note, tmp_path):
    ctx = small_context(tmp_path)
    instance = unit_instance("note", "note the mouth", "expression_change", face_state(), face_state(jawOpen=0.5))
    with pytest.raises(reward_tables.RewardRowError, match="not rendered"):  # a row never renders
        plugins.call("reward_row", modality="note", instance=instance, input_value="assets/a.note",
                     candidate_values=["assets/b.note"], scores=[0.5], dimension="overall", root=tmp_path, ctx=ctx)  # fmt: skip
    (tmp_path / "conditioning").mkdir()
    (tmp_path / "conditioning" / f"{instance.key}.png").write_bytes(b"")
    row = plugins.call("reward_row", modality="note", instance=instance, input_value="assets/a.note",
                       candidate_values=["assets/b.note"], scores=[0.5], dimension="overall", root=tmp_path, ctx=ctx)  # fmt: skip
    assert row["input_note"] == "assets/a.note" and row["output_notes"] == ["assets/b.note"]
    assert row["conditioning_image"] == f"conditioning/{instance.key}.png"
    assert list(row) == schemas.arrow_schema("NoteEditReward").names


def test_part_mask_is_the_region_with_the_modality_s_own_mask():
    mask = part_mask("mouth", native=("note", "mouth"))
    np.testing.assert_array_equal(mask.region, parts.region_vertex_ids("mouth"))
    assert mask.native == ("note", "mouth")
    np.testing.assert_array_equal(part_mask("mouth").native, parts.part_vertex_ids("mouth"))
