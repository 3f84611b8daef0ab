"""The head's own motion is told apart from what facial actions and jaw/eye bones do to the head."""

from __future__ import annotations

import numpy as np
import pytest

from maskscore_core.metric import head_motion
from maskscore_core.plugin.records import BodyState
from maskscore_core.body.reference_mesh import get_reference_mesh

OTHER = {"gender": 0.9, "weight": 0.8, "age": 0.3}


def state(actions=None, head_yaw=0.0, neck_pitch=0.0, phenotype=None, bones=None) -> BodyState:
    body = get_reference_mesh().body
    expression = np.zeros(len(body.action_names))
    for name, value in (actions or {}).items():
        expression[body.action_index(name)] = value
    pose = np.zeros((78, 3))
    pose[body.bone_index("Head"), 1] = head_yaw
    pose[body.bone_index("Neck1"), 0] = neck_pitch
    for name, rotvec in (bones or {}).items():
        pose[body.bone_index(name)] = rotvec
    return BodyState(expression=expression, pose=pose, phenotype=phenotype or {})


def motion_degrees(rotation: np.ndarray) -> float:
    return float(np.degrees(np.arccos(np.clip((np.trace(rotation) - 1) / 2, -1, 1))))


def vertices(*states):
    return get_reference_mesh().vertices(list(states))


@pytest.mark.parametrize(
    "a, b, part",
    [
        (state(), state({"jawOpen": 0.8}), "mouth"),
        (state(), state({"jawOpen": 0.8, "browInnerUp": 0.6}), "face"),
        (state(), state({"jawOpen": 0.8, "mouthSmileLeft": 0.6, "cheekPuff": 0.5}), "mouth"),
        (state(), state({"browDownLeft": 1.0, "browDownRight": 1.0}), "eyebrow"),
        (state(), state({"eyeLookInLeft": 1.0, "eyeLookOutRight": 1.0}), "irides"),
        (state(), state(bones={"Jaw": [0.15, 0.0, 0.0], "LeftEye": [0.3, 0.2, 0.0]}), "mouth"),
        (state(head_yaw=0.09, neck_pitch=0.05), state({"jawOpen": 0.8}, head_yaw=0.09, neck_pitch=0.05), "mouth"),
        (state(phenotype=OTHER), state({"jawOpen": 0.8}, phenotype=OTHER), "mouth"),
    ],
    ids=["jaw", "face", "mouth-mix", "brows", "gaze", "jaw-bone", "turned-subject", "other-subject"],
)
def test_a_face_edit_is_not_a_head_motion(a, b, part):
    """The rigid fit on hair and ears alone reads these as 0.1-1.3 mm head motions."""
    va, vb = vertices(a, b)
    frame = head_motion.head_frame(va, part)
    rotation, translation = head_motion.head_motion(frame, vb)
    assert motion_degrees(rotation) < 0.05  # (an 8.6-degree jaw bone turn leaves 0.03: linearised)
    assert np.linalg.norm(translation) < 1e-4
    aligned = head_motion.align_to_a(frame, vb)
    assert np.abs(aligned - vb)[frame.ids].max() < 2.5e-4  # a fifth of a pixel at the default framing


@pytest.mark.parametrize("yaw_degrees", [0.5, 1.0, 3.0])
def test_a_real_head_turn_is_recovered_with_or_without_a_face_edit(yaw_degrees):
    a = state()
    for actions in ({}, {"jawOpen": 0.8, "browInnerUp": 0.7}):
        va, vb = vertices(a, state(actions, head_yaw=np.radians(yaw_degrees)))
        frame = head_motion.head_frame(va, "mouth")
        rotation, _translation = head_motion.head_motion(frame, vb)
        assert motion_degrees(rotation) == pytest.approx(yaw_degrees, rel=0.03)
        assert np.abs(head_motion.align_to_a(frame, vb) - vb)[frame.ids].max() > 1e-3


def test_a_rigid_copy_of_frame_a_is_aligned_back_exactly():
    va = vertices(state({"jawOpen": 0.3}))[0]
    frame = head_motion.head_frame(va, "eyebrow")
    rotation = head_motion.rotation_matrix(np.radians([1.0, -2.0, 0.5]))
    moved = (va - frame.centre) @ rotation.T + frame.centre + np.array([0.003, -0.001, 0.002])
    assert np.abs(head_motion.align_to_a(frame, moved) - va).max() < 1e-8


def test_frame_a_aligned_onto_itself_is_frame_a_bit_for_bit():
    """Alignment is applied to every candidate (no threshold): doing nothing must stay exactly
    frame A, so that it scores consistency 1."""
    va = vertices(state({"jawOpen": 0.3}))[0]
    frame = head_motion.head_frame(va, "mouth")
    assert np.array_equal(head_motion.align_to_a(frame, va), va)


def test_bad_inputs_are_named():
    with pytest.raises(head_motion.HeadMotionError, match="shape"):
        head_motion.head_frame(np.zeros((10, 3)), "mouth")


def test_a_noisy_decoded_mesh_keeps_the_fit_bounded():
    """A decoded mesh is only near the model (keypoint decodes miss by millimetres): the fit must
    stay near the truth rather than run off (it once turned such a face by 150 degrees)."""
    va, vb = vertices(state(), state({"jawOpen": 0.6, "browInnerUp": 0.5, "eyeBlinkLeft": 1.0}))
    frame = head_motion.head_frame(va, "face")
    noise = np.random.default_rng(0).normal(0.0, 0.002, size=vb.shape)  # 2 mm per coordinate
    rotation, translation = head_motion.head_motion(frame, vb + noise)
    assert motion_degrees(rotation) < 0.5
    assert np.linalg.norm(translation) < 1e-3


def test_a_head_move_is_charged_by_how_far_it_lies_off_the_way_to_frame_b():
    """`beyond`: doing nothing, frame B's own move and part of it cost 0; the same move overshot
    costs the overshoot; a move another way costs what it moved, even where it is the smaller
    (the size comparison it replaced let a wrong part's turn pass under a misread frame B);
    without a move of frame B's, the candidate's own size. Continuous as frame B's move
    shrinks to nothing."""
    frame = head_motion.head_frame(vertices(state())[0], "mouth")

    def move(yaw=0.0, pitch=0.0):
        turn = head_motion.rotation_matrix(np.array([pitch, yaw, 0.0]))
        return head_motion.HeadMove(shift=head_motion.rigid_shift(frame.points, frame.centre, turn, np.zeros(3)))

    b = move(yaw=0.06)
    assert head_motion.beyond(move(), b) == 0.0
    assert head_motion.beyond(b, b) == 0.0
    assert head_motion.beyond(move(yaw=0.03), b) < 1e-4  # half the turn: off the straight way by its curvature only
    assert head_motion.beyond(move(yaw=0.09), b) == pytest.approx(move(yaw=0.03).size, rel=0.02)
    other = move(pitch=0.04)  # smaller than frame B's move, but another way
    assert other.size < b.size
    assert head_motion.beyond(other, b) == pytest.approx(other.size, rel=0.05)
    assert head_motion.beyond(other, None) == other.size
    fading = [head_motion.beyond(other, move(yaw=y)) for y in (1e-3, 1e-6, 1e-9, 0.0)]
    assert fading == pytest.approx([other.size] * 4, rel=0.02)
    with pytest.raises(head_motion.HeadMotionError, match="points"):
        head_motion.beyond(other, head_motion.HeadMove(shift=np.zeros((3, 3))))


def test_aligning_measures_the_move_it_takes_back():
    """`align_and_measure` gives `align_to_a`'s vertices and the head's move on frame A's points:
    a head turned by 2 degrees moved its points by about 2 degrees times their distance from the
    centre; an unmoved mesh moved nothing."""
    a = vertices(state())[0]
    frame = head_motion.head_frame(a, "mouth")
    same, still = head_motion.align_and_measure(frame, a)
    np.testing.assert_array_equal(same, a)
    assert still.size == 0.0
    turned = vertices(state(head_yaw=np.radians(2.0)))[0]
    aligned, moved = head_motion.align_and_measure(frame, turned)
    np.testing.assert_array_equal(aligned, head_motion.align_to_a(frame, turned))
    radius = float(np.sqrt(((frame.points - frame.centre) ** 2).sum(axis=1).mean()))
    assert moved.size == pytest.approx(np.radians(2.0) * radius, rel=0.35)


def test_a_reading_error_is_measured_on_the_references_and_charged_past():
    """`reading_error`: references read exactly err by 0; a frame B read with its head turned by
    a degree its exact mesh does not have errs by that turn's RMS shift, whatever the exact
    frame B's own turn. `past_reading_error`: the distance itself at error 0; continuous and
    increasing in the distance; about d^2 / 2e well below the error and d - e well above it."""
    a, b, b_turned, b_more = vertices(state(), state({"jawOpen": 0.6}), state({"jawOpen": 0.6}, head_yaw=np.radians(1.0)),
                                      state({"jawOpen": 0.6}, head_yaw=np.radians(3.0)))  # fmt: skip
    frame = head_motion.head_frame(a, "mouth")

    def read(vertices_read):  # its move as `prepare` measures it, against the read frame A
        return head_motion.align_and_measure(frame, vertices_read)[1]

    assert head_motion.reading_error(a, "mouth", [(read(b), b)]) == 0.0
    one_degree = read(b_turned).size
    assert head_motion.reading_error(a, "mouth", [(read(b_turned), b)]) == pytest.approx(one_degree, rel=0.05)
    # read with 3 degrees where it holds 2: the same one-degree error, the larger of two references
    b_two = vertices(state({"jawOpen": 0.6}, head_yaw=np.radians(2.0)))[0]
    assert head_motion.reading_error(a, "mouth", [(read(b), b), (read(b_more), b_two)]) == pytest.approx(one_degree, rel=0.1)

    past = head_motion.past_reading_error
    for distance in (0.0, 1e-4, 3e-3):
        assert past(distance, 0.0) == distance
    error = 2e-3
    distances = np.linspace(0.0, 2e-2, 201)
    costs = np.array([past(float(d), error) for d in distances])
    assert costs[0] == 0.0 and (np.diff(costs) > 0).all() and np.abs(np.diff(costs)).max() < 1e-4
    assert past(2e-4, error) == pytest.approx(2e-4**2 / (2 * error), rel=0.01)
    assert past(0.2, error) == pytest.approx(0.2 - error, rel=1e-3)
