"""The pose modality: bones in, FK + skinning on frame A's body out; rows, bad input, the ladder."""

from __future__ import annotations

import itertools

import attrs
import numpy as np
import pytest

from maskscore_core.testing import check_modality_plugin_alone
from maskscore_core import plugins
from maskscore_core.body import get_body_model
from maskscore_core.records import Asset, BodyState, EditInstance, EditInstruction, Subject, Target
from maskscore_core.reference_mesh import get_reference_mesh

MODALITY = "pose"
LADDER_INSTANCES = 4


def test_works_alone_and_not_without_it(ctx, monkeypatch):
    """Installed alone it provides pose and `maskscore list-plugins` shows it; not loaded, nothing answers."""
    check_modality_plugin_alone(MODALITY, "maskscore-pose", monkeypatch, target=_instance(_state()).a, ctx=ctx)


def _state(neck: float = 0.0, jaw_open: float = 0.0, **actions: float) -> BodyState:
    body = get_body_model()
    pose = np.zeros((78, 3))
    pose[body.bone_index("Neck1")] = [neck, 0.0, 0.0]
    expression = np.zeros(52)
    expression[body.action_index("jawOpen")] = jaw_open
    for name, value in actions.items():
        expression[body.action_index(name)] = value
    return BodyState(phenotype={"age": 0.4}, pose=pose, translation=[0.0, 0.01, 0.0], expression=expression)


def _instance(b: BodyState) -> EditInstance:
    subject = Subject("s1", {"age": 0.4})
    return EditInstance(
        key="unit-0001",
        instruction=EditInstruction("repose the mouth to frame B's expression", "mouth", "pose_change", MODALITY),
        a=Target("a", subject, (_state(),)),
        b=Target("b", subject, (b,)),
    )


def test_pose_vector_layout_and_round_trip(ctx, tmp_path):
    instance = _instance(_state(neck=0.3))
    asset = plugins.call("encode", MODALITY, modality=MODALITY, target=instance.b, ctx=ctx)
    value = plugins.call("write_asset", MODALITY, asset=asset, directory=tmp_path, name="b", ctx=ctx)
    assert len(value) == 78 * 3 + 3 and all(type(v) is float for v in value)
    np.testing.assert_allclose(value, instance.b.state.pose_vector(), atol=1e-12)  # no face action: bones as they are
    back = plugins.call("read_asset", MODALITY, modality=MODALITY, value=value, root=tmp_path, ctx=ctx)
    np.testing.assert_array_equal(back.data, np.asarray(value))


def test_face_bones_carry_jaw_and_gaze(ctx):
    body = get_body_model()
    state = _state(jaw_open=0.6, jawLeft=0.3, eyeLookUpLeft=0.4, eyeLookInRight=0.5, browInnerUp=0.8)
    asset = plugins.call("encode", MODALITY, modality=MODALITY, target=Target("b", Subject("s1", {}), (state,)), ctx=ctx)
    jaw = asset.data[3 * body.bone_index("Jaw") : 3 * body.bone_index("Jaw") + 3]
    assert np.linalg.norm(jaw) > 0.2  # jawOpen 0.6 pitches the jaw by 0.21 rad
    from maskscore_pose import face_bones

    pose, expression = face_bones.to_actions(asset.data[:-3].reshape(78, 3), np.zeros(52), body)
    np.testing.assert_array_equal(pose, state.pose)  # face bones back at rest
    for name in ("jawOpen", "jawLeft", "eyeLookUpLeft", "eyeLookInRight"):
        assert expression[body.action_index(name)] == pytest.approx(state.expression[body.action_index(name)], abs=1e-9)
    assert expression[body.action_index("browInnerUp")] == 0.0  # no bone carries the brows


def test_decode_is_fk_and_skinning_on_frame_a(ctx):
    body = get_body_model()
    instance = _instance(_state(neck=0.3, jaw_open=0.7, browInnerUp=0.9))
    asset = plugins.call("encode", MODALITY, modality=MODALITY, target=instance.b, ctx=ctx)
    decoded = plugins.call("decode_to_mesh", MODALITY, asset=asset, instance=instance, ctx=ctx)
    # Bones and jaw opening from B; the brows (no bone carries them) from A.
    expression = instance.a.state.expression.copy()
    expression[body.action_index("jawOpen")] = 0.7
    expected_state = attrs.evolve(instance.b.state, expression=expression)
    np.testing.assert_allclose(decoded.vertices, get_reference_mesh().vertices([expected_state])[0], atol=1e-9)
    ref_b = plugins.call("decode_reference", MODALITY, modality=MODALITY, instance=instance, which="b", ctx=ctx)
    np.testing.assert_array_equal(ref_b.vertices, decoded.vertices)
    ref_a = plugins.call("decode_reference", MODALITY, modality=MODALITY, instance=instance, which="a", ctx=ctx)
    moved = np.linalg.norm(ref_a.vertices - decoded.vertices, axis=1)
    assert moved.max() > 0.005  # the jaw bone moved the chin by millimetres at least


@pytest.mark.parametrize(
    "value, message",
    [
        ([0.0] * 10, "expected 237 floats"),
        ([0.0] * 236 + [float("nan")], "NaN or infinite"),
        (["x"] * 237, "not a list of numbers"),
    ],
)
def test_bad_pose_values_are_named(ctx, tmp_path, value, message):
    with pytest.raises(ValueError, match=message):
        plugins.call("read_asset", MODALITY, modality=MODALITY, value=value, root=tmp_path, ctx=ctx)
    instance = _instance(_state())
    with pytest.raises(ValueError, match=message):
        plugins.call("decode_to_mesh", MODALITY, asset=Asset(MODALITY, value), instance=instance, ctx=ctx)


def test_reward_row_has_seed_000_columns_and_validates(ctx, tmp_path):
    from maskscore_core import schemas

    instance = _instance(_state(neck=0.3))
    values = [
        plugins.call("write_asset", MODALITY, asset=plugins.call("encode", MODALITY, modality=MODALITY, target=t, ctx=ctx),
                     directory=tmp_path, name=t.label, ctx=ctx)
        for t in (instance.a, instance.b)
    ]  # fmt: skip
    row = plugins.call(
        "reward_row", MODALITY, modality=MODALITY, instance=instance, input_value=values[0],
        candidate_values=values[1:], scores=[0.7], dimension="instruction_following", root=tmp_path, ctx=ctx,
    )  # fmt: skip
    assert list(row) == schemas.arrow_schema("PoseEditReward").names
    table = schemas.to_table("PoseEditReward", [row])
    np.testing.assert_allclose(table.column("output_poses").to_pylist()[0][0], instance.b.state.pose_vector(), atol=1e-12)
    assert (tmp_path / row["conditioning_image"]).is_file()
    with pytest.raises(ValueError, match="expected 237 floats"):
        plugins.call(
            "reward_row", MODALITY, modality=MODALITY, instance=instance, input_value=values[0][:5],
            candidate_values=values[1:], scores=[0.7], dimension="overall", root=tmp_path, ctx=ctx,
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
    """Seed 000: rung 1 > 2 > 3 > 4 > 5 on overall, frame-pair candidates, render-compare scores.

    Only parts a pose can express (a SOMA bone or a face bone carries them; not the eyebrows)."""
    expressible = [
        i for i in built_in_instances
        if plugins.call("mask_part", MODALITY, modality=MODALITY, part=i.instruction.part, ctx=ctx)["bones"]
    ]  # fmt: skip
    assert expressible, "no built-in pose instance edits a part with bones"
    for instance in expressible:
        candidates = plugins.call("edit", "frame-pair", editor="frame-pair", modality=MODALITY, instance=instance, ctx=ctx)
        assert [c.rung for c in candidates] == [1, 2, 3, 4, 5]
        assert all(c.asset.modality == MODALITY for c in candidates)
        scores = plugins.call("score", "render-compare", scorer="render-compare", instance=instance, candidates=candidates, ctx=ctx)
        overall = [s.overall for s in scores]
        part = instance.instruction.part
        assert all(a > b for a, b in itertools.pairwise(overall)), f"{instance.key} ({part}): {overall}"


def test_part_masks_name_bones_and_actions(ctx):
    mouth = plugins.call("mask_part", MODALITY, modality=MODALITY, part="mouth", ctx=ctx)
    assert mouth["bones"] == ("Jaw",) and "jawOpen" in mouth["actions"]
    assert len(mouth["indices"]) == 3
    irides = plugins.call("mask_part", MODALITY, modality=MODALITY, part="irides", ctx=ctx)
    assert irides["bones"] == ("LeftEye", "RightEye")
    with pytest.raises(ValueError, match="tentacle"):
        plugins.call("mask_part", MODALITY, modality=MODALITY, part="tentacle", ctx=ctx)
