"""The mesh modality: encode/decode, .glb files, reward rows, bad input, the ladder."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from maskscore_core.testing import check_modality_plugin_alone
from maskscore_core import plugins, schemas
from maskscore_core.records import Asset, BodyState, EditInstance, EditInstruction, Subject, Target
from maskscore_core.reference_mesh import get_reference_mesh

MODALITY = "mesh"
LADDER_INSTANCES = 4


def test_works_alone_and_not_without_it(ctx, monkeypatch):
    """Installed alone it provides mesh and `maskscore list-plugins` shows it; not loaded, nothing answers."""
    check_modality_plugin_alone(MODALITY, "maskscore-mesh", monkeypatch, target=_instance().a, ctx=ctx)


def _state(**actions) -> BodyState:
    from maskscore_core.body import get_body_model

    expression = np.zeros(52)
    for name, value in actions.items():
        expression[get_body_model().action_index(name)] = value
    return BodyState(phenotype={"age": 0.4}, expression=expression)


def _instance() -> EditInstance:
    subject = Subject("s1", {"age": 0.4})
    return EditInstance(
        key="unit-0001",
        instruction=EditInstruction("edit the mouth to match frame B", "mouth", "expression_change", MODALITY),
        a=Target("a", subject, (_state(),)),
        b=Target("b", subject, (_state(jawOpen=0.8),)),
    )


def test_encode_decode_is_the_reference_mesh(ctx):
    instance = _instance()
    asset = plugins.call("encode", MODALITY, modality=MODALITY, target=instance.b, ctx=ctx)
    decoded = plugins.call("decode_to_mesh", MODALITY, asset=asset, instance=instance, ctx=ctx)
    expected = get_reference_mesh().vertices([instance.b.state])[0]
    np.testing.assert_array_equal(decoded.vertices, expected)
    ref_a = plugins.call("decode_reference", MODALITY, modality=MODALITY, instance=instance, which="a", ctx=ctx)
    assert not np.allclose(ref_a.vertices, decoded.vertices)  # the jaw opened


def test_glb_round_trip_is_deterministic(ctx, tmp_path):
    instance = _instance()
    asset = plugins.call("encode", MODALITY, modality=MODALITY, target=instance.b, ctx=ctx)
    value = plugins.call("write_asset", MODALITY, asset=asset, directory=tmp_path / "assets", name="b", ctx=ctx)
    assert value == "assets/b.glb"
    first = (tmp_path / value).read_bytes()
    plugins.call("write_asset", MODALITY, asset=asset, directory=tmp_path / "assets", name="b2", ctx=ctx)
    assert (tmp_path / "assets/b2.glb").read_bytes() == first
    back = plugins.call("read_asset", MODALITY, modality=MODALITY, value=value, root=tmp_path, ctx=ctx)
    np.testing.assert_allclose(back.data, asset.data, atol=1e-6)  # glTF stores float32


def test_missing_and_corrupt_files_are_named(ctx, tmp_path):
    with pytest.raises(ValueError, match="not found"):
        plugins.call("read_asset", MODALITY, modality=MODALITY, value="nope.glb", root=tmp_path, ctx=ctx)
    (tmp_path / "bad.glb").write_bytes(b"glTF not really")
    with pytest.raises(ValueError, match="cannot read .glb"):
        plugins.call("read_asset", MODALITY, modality=MODALITY, value="bad.glb", root=tmp_path, ctx=ctx)


def test_wrong_topology_file_is_rejected(ctx, tmp_path):
    import trimesh

    trimesh.creation.box().export(tmp_path / "box.glb")
    with pytest.raises(ValueError, match="8 vertices"):
        plugins.call("read_asset", MODALITY, modality=MODALITY, value="box.glb", root=tmp_path, ctx=ctx)


def test_nan_and_wrong_size_vertices_are_rejected(ctx):
    instance = _instance()
    good = get_reference_mesh().vertices([instance.a.state])[0]
    bad = good.copy()
    bad[7] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        plugins.call("decode_to_mesh", MODALITY, asset=Asset(MODALITY, bad), instance=instance, ctx=ctx)
    with pytest.raises(ValueError, match="vertices"):
        plugins.call("decode_to_mesh", MODALITY, asset=Asset(MODALITY, good[:100]), instance=instance, ctx=ctx)
    with pytest.raises(ValueError, match="'a' or 'b'"):
        plugins.call("decode_reference", MODALITY, modality=MODALITY, instance=instance, which="c", ctx=ctx)


def test_other_modalities_are_not_answered(ctx):
    assert plugins.get_plugin_manager().hook.encode(modality="speech", target=_instance().a, ctx=ctx) is None


def test_reward_row_has_seed_000_columns_and_validates(ctx, tmp_path):
    instance = _instance()
    assets = [plugins.call("encode", MODALITY, modality=MODALITY, target=t, ctx=ctx) for t in (instance.a, instance.b)]
    values = [
        plugins.call("write_asset", MODALITY, asset=a, directory=tmp_path / "assets", name=n, ctx=ctx)
        for a, n in zip(assets, ("input", "rung1"))
    ]
    row = plugins.call(
        "reward_row", MODALITY, modality=MODALITY, instance=instance, input_value=values[0],
        candidate_values=values[1:], scores=[0.9], dimension="overall", root=tmp_path, ctx=ctx,
    )  # fmt: skip
    assert list(row) == schemas.arrow_schema("MeshEditReward").names
    table = schemas.to_table("MeshEditReward", [row])
    assert table.column("output_meshes").to_pylist() == [["assets/rung1.glb"]]
    image = tmp_path / row["conditioning_image"]
    import imageio.v3 as iio

    assert iio.imread(image).shape == (96, 96, 3)
    with pytest.raises(ValueError, match="2 scores for 1 candidates"):
        plugins.call(
            "reward_row", MODALITY, modality=MODALITY, instance=instance, input_value=values[0],
            candidate_values=values[1:], scores=[0.9, 0.1], dimension="overall", root=tmp_path, ctx=ctx,
        )  # fmt: skip
    with pytest.raises(ValueError, match="unknown dimension"):
        plugins.call(
            "reward_row", MODALITY, modality=MODALITY, instance=instance, input_value=values[0],
            candidate_values=values[1:], scores=[0.9], dimension="beauty", root=tmp_path, ctx=ctx,
        )  # fmt: skip


@pytest.fixture(scope="module")
def built_in_instances(tmp_path_factory):
    """Edit instances of this modality from the built-in ANNY source (3 subjects, 2 clips each)."""
    from maskscore_core.edits import make_instances
    from maskscore_core.trials.anny_source import AnnySourceConfig, generate_trials

    trials = generate_trials(AnnySourceConfig(seed=0, subjects=3, trials_per_subject=2), tmp_path_factory.mktemp("trials"))
    return make_instances(trials, MODALITY, np.random.default_rng(5), count=LADDER_INSTANCES)


@pytest.mark.slow
def test_ladder_is_recovered_on_built_in_trials(ctx, built_in_instances):
    """Seed 000: rung 1 > 2 > 3 > 4 > 5 on overall, frame-pair candidates, render-compare scores."""
    for instance in built_in_instances:
        candidates = plugins.call("edit", "frame-pair", editor="frame-pair", modality=MODALITY, instance=instance, ctx=ctx)
        assert [c.rung for c in candidates] == [1, 2, 3, 4, 5]
        assert all(c.asset.modality == MODALITY for c in candidates)
        scores = plugins.call("score", "render-compare", scorer="render-compare", instance=instance, candidates=candidates, ctx=ctx)
        overall = [s.overall for s in scores]
        part = instance.instruction.part
        assert all(a > b for a, b in itertools.pairwise(overall)), f"{instance.key} ({part}): {overall}"
