"""The shared reward-row mechanism: schema order, score checks, relative paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from maskscore_core.plugin import records

from maskscore_core.dataset import reward_tables

from maskscore_core.dataset import schemas
from maskscore_core.plugin.context import Context


def _instance() -> records.EditInstance:
    subject = records.Subject("s", {})
    target = records.Target("a", subject, (records.BodyState(),))
    instruction = records.EditInstruction("edit the mouth to match frame B", "mouth", "expression_change", "mesh")
    return records.EditInstance("k1", instruction, target, target)


def test_rows_come_in_the_schemas_column_order_and_validate():
    columns = {"conditioning_image": "conditioning/k1.png", "input_mesh": "a.glb"}
    row = reward_tables.make_row("mesh", _instance(), columns, ["c1.glb", "c2.glb"], [0.9, 0.1], "overall")
    assert list(row) == schemas.arrow_schema("MeshEditReward").names
    assert row["task_type"] == "expression_change" and row["key"] == "k1"
    assert schemas.to_table("MeshEditReward", [row]).num_rows == 1


@pytest.mark.parametrize(
    "scores, message",
    [([0.5], "1 scores for 2 candidates"), ([0.5, float("inf")], "non-finite score")],
)
def test_bad_scores_are_refused(scores, message):
    columns = {"conditioning_image": "c.png", "input_mesh": "a.glb"}
    with pytest.raises(reward_tables.RewardRowError, match=message):
        reward_tables.make_row("mesh", _instance(), columns, ["c1.glb", "c2.glb"], scores, "overall")


def test_a_missing_or_foreign_column_is_named():
    with pytest.raises(reward_tables.RewardRowError, match="differ from the schema"):
        reward_tables.make_row("mesh", _instance(), {"input_audio": "a.wav"}, [], [], "overall")


def test_paths_are_stored_relative_to_the_dataset_root(tmp_path):
    ctx = Context(workdir=tmp_path / "work", config={"dataset_root": str(tmp_path / "data")})
    assert reward_tables.relative_to_root(tmp_path / "data" / "assets" / "x.glb", ctx) == "assets/x.glb"
    assert reward_tables.resolve("assets/x.glb", tmp_path / "data") == tmp_path / "data" / "assets" / "x.glb"
    with pytest.raises(KeyError, match="not a path"):
        reward_tables.resolve("", None, "a test value", lambda message: KeyError("not a path: " + message))
    # read from a dataset, a value stays inside it (maskscore_core.paths): absolute or climbing out is refused
    for value, reason in ((str(Path("/abs/x.glb")), "is absolute"), ("../x.glb", "outside the dataset directory"),
                          ("assets/../../x.glb", "outside the dataset directory")):
        with pytest.raises(ValueError, match=reason):
            reward_tables.resolve(value, tmp_path / "data")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "link").symlink_to(tmp_path)
    with pytest.raises(ValueError, match="outside the dataset directory"):
        reward_tables.resolve("link/x.glb", tmp_path / "data")


def test_making_a_row_never_renders(tmp_path):
    """The conditioning picture is rendered by the dataset stage; a row only names it."""
    from maskscore_core.plugin import manager as plugins

    ctx = Context(workdir=tmp_path, config={"views": 2, "resolution": 32, "dataset_root": str(tmp_path)})
    instance = _instance()
    mesh = plugins.modality("mesh")
    value = mesh.write(mesh.encode(instance.a, ctx), tmp_path / "assets", "input", ctx)
    with pytest.raises(reward_tables.RewardRowError, match="conditioning image conditioning/k1.png is not rendered"):
        mesh.row(instance, value, [value], [], "overall", tmp_path, ctx)
    assert not (tmp_path / "conditioning").exists()
    assert reward_tables.render_conditioning_image(instance, tmp_path, ctx) == "conditioning/k1.png"
    assert mesh.row(instance, value, [value], [], "overall", tmp_path, ctx)["conditioning_image"] == "conditioning/k1.png"
