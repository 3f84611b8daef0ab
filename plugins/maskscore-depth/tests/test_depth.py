"""The depth modality: Mitsuba depth of the reference mesh, .exr files, rows, bad input, the ladder."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from maskscore_core.testing import check_modality_plugin_alone
from maskscore_core import plugins, schemas
from maskscore_core.body import get_body_model
from maskscore_core.records import Asset, BodyState, EditInstance, EditInstruction, Subject, Target

MODALITY = "depth"
LADDER_INSTANCES = 4


def test_works_alone_and_not_without_it(ctx, monkeypatch):
    """Installed alone it provides depth and `maskscore list-plugins` shows it; not loaded, nothing answers."""
    check_modality_plugin_alone(MODALITY, "maskscore-depth", monkeypatch, target=_instance().a, ctx=ctx)


def _state(jaw_open: float = 0.0) -> BodyState:
    expression = np.zeros(52)
    expression[get_body_model().action_index("jawOpen")] = jaw_open
    return BodyState(phenotype={"age": 0.4}, expression=expression)


def _instance() -> EditInstance:
    subject = Subject("s1", {"age": 0.4})
    return EditInstance(
        key="unit-0001",
        instruction=EditInstruction("reconstruct the mouth depth to match frame B", "mouth", "depth_edit", MODALITY),
        a=Target("a", subject, (_state(),)),
        b=Target("b", subject, (_state(jaw_open=0.9),)),
    )


def test_encode_is_the_render_depth_channel(ctx):
    instance = _instance()
    asset = plugins.call("encode", MODALITY, modality=MODALITY, target=instance.b, ctx=ctx)
    assert asset.data.shape == (4, 96, 96) and asset.data.dtype == np.float32
    covered = asset.data > 0
    assert 0.05 < covered.mean() < 0.95  # the head fills part of every view
    assert np.all((asset.data[covered] > 0.3) & (asset.data[covered] < 2.0))  # camera 0.6 m from the head
    ref_a = plugins.call("decode_reference", MODALITY, modality=MODALITY, instance=instance, which="a", ctx=ctx)
    decoded = plugins.call("decode_to_mesh", MODALITY, asset=asset, instance=instance, ctx=ctx)
    assert decoded.vertices is None
    assert np.abs(ref_a.depth - decoded.depth).max() > 0.005  # the open jaw shows in depth


def test_exr_round_trip_is_lossless_and_deterministic(ctx, tmp_path):
    asset = plugins.call("encode", MODALITY, modality=MODALITY, target=_instance().b, ctx=ctx)
    value = plugins.call("write_asset", MODALITY, asset=asset, directory=tmp_path / "assets", name="b", ctx=ctx)
    assert value == "assets/b.exr"
    plugins.call("write_asset", MODALITY, asset=asset, directory=tmp_path / "assets", name="b2", ctx=ctx)
    assert (tmp_path / "assets/b2.exr").read_bytes() == (tmp_path / value).read_bytes()
    back = plugins.call("read_asset", MODALITY, modality=MODALITY, value=value, root=tmp_path, ctx=ctx)
    np.testing.assert_array_equal(back.data, asset.data)


def test_missing_corrupt_and_wrong_size_files_are_named(ctx, tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        plugins.call("read_asset", MODALITY, modality=MODALITY, value="nope.exr", root=tmp_path, ctx=ctx)
    (tmp_path / "bad.exr").write_bytes(b"not an exr")
    with pytest.raises(ValueError, match="cannot be read as OpenEXR"):
        plugins.call("read_asset", MODALITY, modality=MODALITY, value="bad.exr", root=tmp_path, ctx=ctx)
    asset = plugins.call("encode", MODALITY, modality=MODALITY, target=_instance().a, ctx=ctx)
    plugins.call("write_asset", MODALITY, asset=asset, directory=tmp_path, name="a", ctx=ctx)
    ctx.config["resolution"] = 64  # a run at another resolution must not read these maps
    with pytest.raises(ValueError, match=r"4 views of 64x64 pixels"):
        plugins.call("read_asset", MODALITY, modality=MODALITY, value="a.exr", root=tmp_path, ctx=ctx)


@pytest.mark.parametrize(
    "depth, message",
    [
        (np.zeros((3, 96, 96)), "renders 4 views"),
        (np.full((4, 96, 96), np.nan), "NaN or infinite"),
        (np.full((4, 96, 96), -1.0), "negative"),
    ],
)
def test_bad_depth_maps_are_named(ctx, depth, message):
    with pytest.raises(ValueError, match=message):
        plugins.call("decode_to_mesh", MODALITY, asset=Asset(MODALITY, depth), instance=_instance(), ctx=ctx)


def test_reward_row_has_seed_000_columns_and_validates(ctx, tmp_path):
    instance = _instance()
    assets = [plugins.call("encode", MODALITY, modality=MODALITY, target=t, ctx=ctx) for t in (instance.a, instance.b)]
    values = [
        plugins.call("write_asset", MODALITY, asset=a, directory=tmp_path / "assets", name=n, ctx=ctx)
        for a, n in zip(assets, ("input", "rung1"))
    ]
    row = plugins.call(
        "reward_row", MODALITY, modality=MODALITY, instance=instance, input_value=values[0],
        candidate_values=values[1:], scores=[], dimension="consistency", root=tmp_path, ctx=ctx,
    )  # fmt: skip
    assert list(row) == schemas.arrow_schema("DepthEditReward").names
    table = schemas.to_table("DepthEditReward", [row])
    assert table.column("input_depth").to_pylist() == ["assets/input.exr"]
    assert (tmp_path / row["conditioning_image"]).is_file()


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
