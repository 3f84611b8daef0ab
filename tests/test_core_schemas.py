"""The eight reward-table schemas hold the design's columns exactly and validate with clear errors;
schemas/ is generated from the registered modalities and kept current."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pyarrow as pa
import pytest

from maskscore_core.plugin import manager as plugins

from maskscore_core.dataset import schemas

ROOT = Path(__file__).resolve().parent.parent

# The design's tables (docs/design.md, "Datasets and tables"): the columns each lists, in order.
DESIGN_COLUMNS = {
    "TextEditReward": ["key", "instruction", "input_text", "conditioning_image", "output_texts"],
    "MeshEditReward": ["key", "instruction", "input_mesh", "conditioning_image", "output_meshes"],
    "SpeechEditReward": ["key", "instruction", "input_audio", "conditioning_image", "output_audios"],
    "MultimodalEditReward": ["key", "instruction", "input_modality", "output_modality", "input_data", "output_candidates"],
    "KeypointEditReward": ["key", "instruction", "input_keypoints", "conditioning_image", "output_keypoints"],
    "DepthEditReward": ["key", "instruction", "input_depth", "conditioning_image", "output_depths"],
    "VideoEditReward": ["key", "instruction", "input_video", "aligned_audio", "output_videos"],
    "PoseEditReward": ["key", "instruction", "input_pose", "conditioning_image", "output_poses"],
}
TAIL = ["scores", "task_type", "dimension"]


@pytest.mark.parametrize("table", sorted(DESIGN_COLUMNS))
def test_schema_columns_are_the_designs(table):
    assert schemas.arrow_schema(table).names == DESIGN_COLUMNS[table] + TAIL


def test_every_modality_has_one_table():
    assert sorted(schemas.table_specs()) == sorted(DESIGN_COLUMNS)
    assert {schemas.table_for_modality(m) for m in plugins.modality_names()} == set(DESIGN_COLUMNS)


def test_types_follow_the_design():
    pose = schemas.arrow_schema("PoseEditReward")
    assert pose.field("input_pose").type == pa.list_(pa.float64())
    assert pose.field("output_poses").type == pa.list_(pa.list_(pa.float64()))
    assert schemas.arrow_schema("MeshEditReward").field("output_meshes").type == pa.list_(pa.string())


def _mesh_row(**changes):
    row = {
        "key": "k0",
        "instruction": "edit the mouth to match frame B",
        "input_mesh": "assets/mesh/k0/input.glb",
        "conditioning_image": "assets/mesh/k0/frame_a.png",
        "output_meshes": ["c1.glb", "c2.glb"],
        "scores": [0.9, 0.4],
        "task_type": "expression_change",
        "dimension": "overall",
    }
    row.update(changes)
    return row


def test_valid_rows_build_a_table():
    table = schemas.to_table("MeshEditReward", [_mesh_row(), _mesh_row(key="k1", scores=[])])
    assert table.num_rows == 2


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"task_type": "subject-add"}, "column 'task_type' row 1"),
        ({"dimension": "quality"}, "column 'dimension' row 1"),
        ({"scores": [0.5]}, "column 'scores' row 1: 1 scores for 2 candidates"),
        ({"scores": [0.5, float("nan")]}, "column 'scores' row 1: non-finite"),
    ],
)
def test_bad_values_name_column_and_row(changes, message):
    with pytest.raises(schemas.SchemaError, match=message):
        schemas.to_table("MeshEditReward", [_mesh_row(), _mesh_row(**changes)])


def test_missing_and_extra_columns_are_named():
    row = _mesh_row()
    del row["input_mesh"]
    row["rank"] = 1
    with pytest.raises(schemas.SchemaError, match=r"row 0: missing columns \['input_mesh'\], unexpected columns \['rank'\]"):
        schemas.to_table("MeshEditReward", [row])


def test_wrong_type_is_named():
    arrow = schemas.to_table("MeshEditReward", [_mesh_row()])
    broken = arrow.set_column(0, "key", pa.array([1], pa.int64()))
    with pytest.raises(schemas.SchemaError, match="column 'key': type int64"):
        schemas.validate("MeshEditReward", broken)


def test_unknown_table():
    with pytest.raises(schemas.SchemaError, match="unknown reward table 'SmellEditReward'"):
        schemas.arrow_schema("SmellEditReward")


def _project_distributions() -> list[str]:
    return sorted(tomllib.loads(p.read_text())["project"]["name"] for p in ROOT.glob("plugins/*/pyproject.toml"))


def test_committed_schema_files_are_the_registered_modalities(monkeypatch):
    """schemas/*.json is what `python -m maskscore_core.dataset.schemas schemas` writes from the modalities
    the project's plugins register: run it after changing a modality's columns."""
    monkeypatch.setenv("MASKSCORE_LOAD_PLUGINS", ",".join(_project_distributions()))
    plugins.reset()
    assert not plugins.load_errors()
    committed = {p.name: p.read_text() for p in sorted((ROOT / "schemas").glob("*.json"))}
    assert committed == schemas.spec_files(), "schemas/ is stale: run `python -m maskscore_core.dataset.schemas schemas`"


def test_the_generator_writes_and_prunes(tmp_path):
    (tmp_path / "GoneEditReward.json").write_text("{}")
    assert schemas.main([str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.glob("*.json")) == sorted(schemas.spec_files())
    assert (tmp_path / "MeshEditReward.json").read_text() == schemas.spec_files()["MeshEditReward.json"]
