"""The face fit recovers a known ANNY face from its own projected landmarks.

Stated tolerance (noise-free landmarks from a known state, SpeakingFaces camera at 45 cm):
mean reprojection error < 0.25 px, the three set actions within 0.05, every other action
below 0.1, head rotation within 0.01 rad per component, camera within 2 mm. With 0.5 px
Gaussian landmark noise: jawOpen within 0.1 and head rotation within 0.03 rad.
"""

from __future__ import annotations

import attrs
import numpy as np
import pytest
import torch

from maskscore_core.body import differentiable
from maskscore_core.body.anny_model import get_body_model
from maskscore_core.plugin.records import SOMA_BONES, BodyState
from maskscore_core.trials import landmark_fit as lf

SET_ACTIONS = {"jawOpen": 0.6, "browInnerUp": 0.5, "mouthSmileLeft": 0.3}
HEAD_ROTATION = np.array([0.08, -0.12, 0.03])
CAMERA_POSITION = np.array([0.01, 0.57, 0.45])


def known_state() -> BodyState:
    body = get_body_model()
    expression = np.zeros(52)
    for name, value in SET_ACTIONS.items():
        expression[body.action_index(name)] = value
    pose = np.zeros((78, 3))
    pose[body.bone_index("Head")] = HEAD_ROTATION
    return BodyState(expression=expression, pose=pose)


def test_landmark_set_is_68_distinct_face_vertices():
    marks = lf.face_landmarks()
    assert len(marks) == 68 and len(set(marks.vertex_ids.tolist())) == 68
    body = get_body_model()
    vertices = body.vertices([BodyState()])[0][marks.vertex_ids]
    # On the front of the head: above the chin's underside, in front of the ears.
    assert vertices[:, 1].min() > 0.45 and vertices[:, 2].min() > 0.05
    # Left/right structure: the jaw runs from the subject's right (-x) to left (+x).
    assert vertices[0, 0] < -0.04 and vertices[16, 0] > 0.04


def test_landmark_forward_equals_anny_full_forward():
    body = get_body_model()
    state = known_state()
    marks = lf.face_landmarks()
    full = body.vertices([state])[0][marks.vertex_ids]
    fast = differentiable.posed_points(
        body,
        torch.as_tensor(state.pose[None]),
        torch.as_tensor(state.translation[None]),
        lf._phenotype_tensors(body, {}),
        torch.as_tensor(state.expression[None]),
        torch.as_tensor(marks.vertex_ids),
    )[0].numpy()
    np.testing.assert_allclose(fast, full, atol=1e-12)


def test_fit_recovers_known_expression_and_head_pose():
    body = get_body_model()
    state = known_state()
    pixels = lf.project_landmarks(state, lf.SPEAKINGFACES_CAMERA, CAMERA_POSITION)
    result = lf.fit_landmarks(pixels, lf.SPEAKINGFACES_CAMERA)
    assert result.mean_error_px < 0.25
    for name, value in SET_ACTIONS.items():
        assert abs(result.state.expression[body.action_index(name)] - value) < 0.05, name
    others = [i for i, n in enumerate(body.action_names) if n not in SET_ACTIONS]
    assert result.state.expression[others].max() < 0.1
    np.testing.assert_allclose(result.state.pose[body.bone_index("Head")], HEAD_ROTATION, atol=0.01)
    np.testing.assert_allclose(result.camera_position, CAMERA_POSITION, atol=0.002)
    assert np.all((result.state.expression >= 0) & (result.state.expression <= 1))


def test_fit_tolerates_half_pixel_noise():
    body = get_body_model()
    pixels = lf.project_landmarks(known_state(), lf.SPEAKINGFACES_CAMERA, CAMERA_POSITION)
    noisy = pixels + np.random.default_rng(4).normal(0.0, 0.5, pixels.shape)
    result = lf.fit_landmarks(noisy, lf.SPEAKINGFACES_CAMERA)
    assert abs(result.state.expression[body.action_index("jawOpen")] - 0.6) < 0.1
    np.testing.assert_allclose(result.state.pose[body.bone_index("Head")], HEAD_ROTATION, atol=0.03)


def test_fit_is_deterministic():
    pixels = lf.project_landmarks(known_state(), lf.SPEAKINGFACES_CAMERA, CAMERA_POSITION)
    quick = lf.FitConfig(adam_steps=8, lbfgs_steps=5)
    a = lf.fit_landmarks(pixels, config=quick)
    b = lf.fit_landmarks(pixels, config=quick)
    assert a.state == b.state and np.array_equal(a.camera_position, b.camera_position)


@pytest.mark.parametrize(
    "landmarks, message",
    [
        (np.zeros((5, 2)), "expected \\(68, 2\\)"),
        (np.full((68, 2), np.nan), "NaN"),
        (np.full((68, 2), 100.0), "one pixel"),
    ],
)
def test_bad_landmarks_are_rejected(landmarks, message):
    with pytest.raises(lf.LandmarkFitError, match=message):
        lf.fit_landmarks(landmarks)


def test_bad_camera_and_phenotype_are_rejected():
    with pytest.raises(lf.LandmarkFitError, match="invalid camera"):
        lf.PinholeCamera(0, 512, 500.0)
    pixels = lf.project_landmarks(BodyState(), lf.SPEAKINGFACES_CAMERA, CAMERA_POSITION)
    with pytest.raises(lf.LandmarkFitError, match="unknown phenotype"):
        lf.fit_landmarks(pixels, phenotype={"wingspan": 0.3})


def test_fit_with_phenotype_reaches_another_subjects_landmarks():
    """Phenotype is optional in the fit; with it on, a non-average subject's landmarks are met
    (the phenotype itself is not asserted: face landmarks alone barely constrain body shape,
    and head size trades off against camera distance)."""
    body = get_body_model()
    state = attrs.evolve(known_state(), phenotype={"gender": 0.2, "age": 0.7, "weight": 0.8})
    pixels = lf.project_landmarks(state, lf.SPEAKINGFACES_CAMERA, CAMERA_POSITION)
    result = lf.fit_landmarks(pixels, config=lf.FitConfig(fit_phenotype=True, adam_steps=300, lbfgs_steps=300))
    assert result.mean_error_px < 0.5
    assert abs(result.state.expression[body.action_index("jawOpen")] - 0.6) < 0.1
    assert set(result.state.phenotype) == set(body.phenotype_names)


# ---------------------------------------------------------------------------------------------
# The pixel path's pieces: linear face, several views, detector bias, a known camera


PIXEL_TEST_FIT = lf.FitConfig(actions=("jawOpen", "mouthSmileLeft", "browInnerUp", "eyeBlinkLeft"), linear=True,
                              adam_steps=30, lbfgs_steps=150)  # fmt: skip


def _moved_state(neck_shares: bool = False) -> BodyState:
    body = get_body_model()
    expression = np.zeros(52)
    for name, value in {"jawOpen": 0.5, "mouthSmileLeft": 0.3, "eyeBlinkLeft": 0.4}.items():
        expression[body.action_index(name)] = value
    pose = np.zeros((78, 3))
    turn = np.array([0.06, -0.1, 0.02])
    if neck_shares:
        for name, share in zip(lf.LINEAR_BONES, (0.4, 0.3, 0.3)):
            pose[body.bone_index(name)] = share * turn
    else:
        pose[body.bone_index("Head")] = turn
    return BodyState(expression=expression, pose=pose)


def test_linear_face_is_the_reference_mesh_to_a_fraction_of_a_millimetre():
    anchors = lf.anny68_anchors()
    state = _moved_state(neck_shares=True)
    face = lf.linear_face({}, anchors)
    body = get_body_model()
    chain = np.stack([state.pose[body.bone_index(n)] for n in lf.LINEAR_BONES])
    linear = face.points(torch.as_tensor(state.expression), torch.as_tensor(chain)).numpy()
    from maskscore_core.body.reference_mesh import get_reference_mesh

    exact = get_reference_mesh().anny_posed([state])["vertices"][0][anchors.vertex_ids[:, 0]]
    assert np.abs(linear - exact).max() < 5e-4


def _views():
    from maskscore_core.metric.views import ViewConfig, camera_poses

    config = ViewConfig(count=2, resolution=256, offset=(0.5, 0.0))
    poses = camera_poses(config)  # yaw 0 and 180 degrees: use the first and a turned copy of it
    turned = camera_poses(ViewConfig(count=1, resolution=256, offset=(0.5, 25.0 / 360.0)))[0]
    origin = np.asarray(poses[0].origin)
    return [lf.ViewCamera.from_pose(p, config.fov_deg, 256, 256, origin) for p in (poses[0], turned)], origin


def test_two_views_share_one_rig_and_recover_the_face():
    """Landmarks of a known state seen by a frontal camera and one turned 25 degrees (known
    relative poses): the fit of both recovers the actions, the head turn and the rig origin."""
    body = get_body_model()
    anchors, state = lf.anny68_anchors(), _moved_state()
    views, origin = _views()
    observed = [lf.ViewLandmarks(lf.project_anchors(state, v, origin, anchors, reference=True), v) for v in views]
    fit = lf.fit_views(observed, {}, PIXEL_TEST_FIT, None, anchors, origin + [0.01, -0.01, 0.02])
    for name in ("jawOpen", "mouthSmileLeft", "eyeBlinkLeft"):
        assert abs(fit.state.expression[body.action_index(name)] - state.expression[body.action_index(name)]) < 0.05, name
    np.testing.assert_allclose(fit.state.pose[body.bone_index("Head")], state.pose[body.bone_index("Head")], atol=0.01)
    np.testing.assert_allclose(fit.camera_position, origin, atol=0.003)
    assert fit.predicted_px.shape == (2 * len(anchors), 2) and fit.mean_error_px < 0.5


def test_the_detector_bias_of_a_neutral_view_is_taken_off():
    """A detector that puts every point a fixed few pixels off its anchor: measured on the
    neutral state and taken off, the moved state is recovered as if there were no offset."""
    body = get_body_model()
    anchors, state = lf.anny68_anchors(), _moved_state()
    views, origin = _views()
    offset = np.random.default_rng(3).normal(0.0, 3.0, (len(anchors), 2))
    neutral = lf.project_anchors(BodyState(), views[0], origin, anchors, reference=True) + offset
    bias = lf.landmark_bias(neutral, BodyState(), views[0], origin, anchors)
    np.testing.assert_allclose(bias, offset, atol=1e-9)
    moved = lf.project_anchors(state, views[0], origin, anchors, reference=True) + offset
    fit = lf.fit_views([lf.ViewLandmarks(moved, views[0], bias)], {}, PIXEL_TEST_FIT, None, anchors, origin)
    assert abs(fit.state.expression[body.action_index("jawOpen")] - 0.5) < 0.05
    unbiased = lf.fit_views([lf.ViewLandmarks(moved, views[0])], {}, PIXEL_TEST_FIT, None, anchors, origin)
    assert unbiased.mean_error_px > 5 * fit.mean_error_px  # the offset is real: without the bias it does not fit


def test_a_known_camera_fits_one_head_turn_shared_over_the_neck():
    body = get_body_model()
    anchors, state = lf.anny68_anchors(), _moved_state(neck_shares=True)
    views, origin = _views()
    pixels = lf.project_anchors(state, views[0], origin, anchors, reference=True)
    config = attrs.evolve(PIXEL_TEST_FIT, bones=lf.LINEAR_BONES, chain_shares=(0.4, 0.3, 0.3), fix_camera=True)
    fit = lf.fit_views([lf.ViewLandmarks(pixels, views[0])], {}, config, None, anchors, origin)
    for name in lf.LINEAR_BONES:
        np.testing.assert_allclose(fit.state.pose[body.bone_index(name)], state.pose[body.bone_index(name)], atol=0.005)
    np.testing.assert_array_equal(fit.camera_position, origin)
    with pytest.raises(lf.LandmarkFitError, match="chain_shares needs the linear face"):
        lf.fit_views([lf.ViewLandmarks(pixels, views[0])], {}, attrs.evolve(config, linear=False), None, anchors, origin)


def test_anchors_from_render_land_on_the_rendered_triangle():
    """A ray cast through the pixel where a vertex projects meets a triangle holding that vertex
    (the tie of detected points to the mesh); a vertex the camera cannot see (a nostril behind
    the nose tip) ties to what it sees there instead."""
    from maskscore_core.body.reference_mesh import get_reference_mesh
    from maskscore_core.metric.render import get_renderer
    from maskscore_core.metric.views import ViewConfig

    config = ViewConfig(count=1, resolution=256, offset=(0.5, 0.0))
    renderer = get_renderer(config)
    reference = get_reference_mesh()
    vertices = reference.vertices([BodyState()])[0]
    result = renderer.render(vertices)
    marks = lf.face_landmarks()
    pose = renderer.poses[0]
    view = lf.ViewCamera.from_pose(pose, config.fov_deg, 256, 256)
    pixels = lf.project_anchors(BodyState(), view, pose.origin, lf.anny68_anchors(), reference=True)
    nose = [i for i, n in enumerate(marks.names) if n.startswith(("nose", "lip_outer", "eye_"))]
    anchors = lf.anchors_from_render("test", [marks.names[i] for i in nose], nose, pixels, result.face_id[0], pose,
                                     config.fov_deg, vertices, reference.faces)  # fmt: skip
    points = np.einsum("kcd,kc->kd", vertices[anchors.vertex_ids], anchors.weights)
    distance = np.linalg.norm(points - vertices[marks.vertex_ids[nose]], axis=1)
    assert (distance < 1e-6).mean() >= 0.9 and distance.max() < 0.02
    with pytest.raises(lf.LandmarkFitError, match="lies off the rendered face"):
        lf.anchors_from_render("test", ["corner"], [0], np.array([[1.0, 1.0]]), result.face_id[0], pose,
                               config.fov_deg, vertices, reference.faces)  # fmt: skip


RIGID_68 = ("nose_bridge", "eye_right_0", "eye_right_3", "eye_left_0", "eye_left_3")  # nose ridge, eye corners


def _turn_case():
    """A turned head's exact anny-68 landmarks, the same with the lips read 3 px too high, the
    joint fit's config (one turn shared over the neck), and turn_error(points, config) -> (largest
    error of the head's whole turn, the fit)."""
    body = get_body_model()
    anchors, state = lf.anny68_anchors(), _moved_state(neck_shares=True)
    views, origin = _views()
    chain = [body.bone_index(name) for name in lf.LINEAR_BONES]
    pixels = lf.project_anchors(state, views[0], origin, anchors, reference=True)
    misread = pixels.copy()
    misread[[name.startswith("lip_") for name in anchors.names], 1] -= 3.0
    free = attrs.evolve(PIXEL_TEST_FIT, bones=lf.LINEAR_BONES, chain_shares=(0.4, 0.3, 0.3), fix_camera=True)

    def turn_error(points, config):
        fit = lf.fit_views([lf.ViewLandmarks(points, views[0])], {}, config, None, anchors, origin)
        return float(np.abs(fit.state.pose[chain].sum(0) - state.pose[chain].sum(0)).max()), fit

    return pixels, misread, free, turn_error


def test_pose_landmarks_keep_a_misread_mouth_out_of_the_head_turn():
    """With rigid pose landmarks (nose ridge, eye corners) the head turn is fitted on them alone and
    the actions with the turn held: exact landmarks still give the state back, and lip points the
    detector puts 3 px too high move the fitted turn far less than when every point sets it."""
    pixels, misread, free, turn_error = _turn_case()
    rigid = attrs.evolve(free, pose_landmarks=RIGID_68)
    error, fit = turn_error(pixels, rigid)
    assert error < 0.005 and abs(fit.state.expression[get_body_model().action_index("jawOpen")] - 0.5) < 0.05, error
    free_error, rigid_error = turn_error(misread, free)[0], turn_error(misread, rigid)[0]
    assert rigid_error < 0.5 * free_error, (rigid_error, free_error)
    with pytest.raises(lf.LandmarkFitError, match="none of the pose landmarks"):
        turn_error(pixels, attrs.evolve(rigid, pose_landmarks=("forehead",)))


def _result(state, error_px: float) -> lf.FitResult:
    return lf.FitResult(state=state, camera_position=np.zeros(3), predicted_px=np.zeros((2, 2)),
                        mean_error_px=error_px, max_error_px=2 * error_px)  # fmt: skip


def test_the_rigid_fit_weighs_by_how_much_worse_it_explains_every_landmark():
    """1 where the rigid fit explains the landmarks as well (or better), falling smoothly with its
    excess error in units of the scale (no threshold), and the mixed state in between."""
    joint = _result(BodyState(), 1.0)
    turned = BodyState(pose=np.full((SOMA_BONES, 3), 0.1), expression=np.full(52, 0.2))
    weights = [lf.rigid_weight(joint, _result(turned, error), 1.0) for error in (0.5, 1.0, 1.2, 1.5, 2.0, 4.0)]
    assert weights[0] == weights[1] == 1.0
    assert all(a > b for a, b in zip(weights[1:], weights[2:]))
    assert weights[-1] < 1e-3 and abs(weights[3] - np.exp(-0.25)) < 1e-12
    # continuous at no excess: a hair worse weighs a hair less than 1
    assert 1.0 - lf.rigid_weight(joint, _result(turned, 1.0 + 1e-6), 1.0) < 1e-9
    mixed = lf.weighed_fit(joint, _result(turned, 1.5), 1.0)
    w = np.exp(-0.25)
    assert mixed.rigid_weight == pytest.approx(w)
    np.testing.assert_allclose(mixed.state.pose, w * turned.pose)
    np.testing.assert_allclose(mixed.state.expression, w * turned.expression)
    assert mixed.mean_error_px == pytest.approx((1 - w) * 1.0 + w * 1.5)


def test_a_weighed_fit_keeps_a_misread_mouth_out_of_the_turn_and_the_exact_state_back():
    """Fitted jointly and from rigid points, weighed: exact landmarks give the state back (both
    fits agree), and lips read 3 px too high move the turn less than the joint fit alone does."""
    pixels, misread, free, turn_error = _turn_case()
    weighed = attrs.evolve(free, rigid_weighed=RIGID_68)
    error, fit = turn_error(pixels, weighed)
    assert error < 0.005 and fit.rigid_weight > 0.95, (error, fit.rigid_weight)
    (free_error, _), (weighed_error, fit) = turn_error(misread, free), turn_error(misread, weighed)
    assert 0.0 < fit.rigid_weight <= 1.0 and weighed_error < free_error, (weighed_error, free_error, fit.rigid_weight)
