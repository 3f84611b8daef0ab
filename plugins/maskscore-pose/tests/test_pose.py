"""The pose modality: bones in, FK + skinning on frame A's body out; rows, bad input, the ladder."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from maskscore_core.plugin import manager as plugins
from maskscore_core.body.anny_model import get_body_model
from maskscore_core.plugin.contract import ModalityContract
from maskscore_core.plugin.records import Asset, BodyState, EditInstance, EditInstruction, Subject, Target
from maskscore_core.body.reference_mesh import get_reference_mesh

MODALITY = "pose"


class TestPoseContract(ModalityContract):
    """The ladder covers only parts a pose can express (a SOMA bone or a face bone carries them;
    not the eyebrows)."""

    modality = MODALITY
    bad_files = (
        ([0.0] * 10, {}, "expected 237 floats"),
        ([0.0] * 236 + [float("nan")], {}, "NaN or infinite"),
        (["x"] * 237, {}, "not a list of numbers"),
    )

    def unit_instance(self):
        return _instance(_state(neck=0.3))

    def ladder_filter(self, instance, ctx):
        return bool(plugins.call("mask_part", MODALITY, modality=MODALITY, part=instance.instruction.part, ctx=ctx).native["bones"])

    def check_rows(self, table, values, instance, ctx):
        np.testing.assert_allclose(table.column("output_poses").to_pylist()[0][0], instance.b.state.pose_vector(), atol=1e-12)
        np.testing.assert_allclose(table.column("input_pose").to_pylist()[0], instance.a.state.pose_vector(), atol=1e-12)


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


def test_a_short_input_pose_row_is_refused(ctx, tmp_path):
    instance = _instance(_state(neck=0.3))
    with pytest.raises(ValueError, match="expected 237 floats"):
        plugins.call(
            "reward_row", MODALITY, modality=MODALITY, instance=instance, input_value=[0.0] * 5,
            candidate_values=[[0.0] * 237], scores=[0.7], dimension="overall", root=tmp_path, ctx=ctx,
        )  # fmt: skip


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


@pytest.mark.parametrize("value, message", [case[::2] for case in TestPoseContract.bad_files])
def test_bad_pose_values_do_not_decode(ctx, value, message):
    instance = _instance(_state())
    with pytest.raises(ValueError, match=message):
        plugins.call("decode_to_mesh", MODALITY, asset=Asset(MODALITY, value), instance=instance, ctx=ctx)


def test_part_masks_name_bones_and_actions(ctx):
    mouth = plugins.call("mask_part", MODALITY, modality=MODALITY, part="mouth", ctx=ctx).native
    assert mouth["bones"] == ("Jaw",) and "jawOpen" in mouth["actions"]
    assert len(mouth["indices"]) == 3
    irides = plugins.call("mask_part", MODALITY, modality=MODALITY, part="irides", ctx=ctx).native
    assert irides["bones"] == ("LeftEye", "RightEye")
    with pytest.raises(ValueError, match="tentacle"):
        plugins.call("mask_part", MODALITY, modality=MODALITY, part="tentacle", ctx=ctx)
