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

from maskscore_core.body import get_body_model
from maskscore_core.records import BodyState
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
    fast = lf._landmark_points(
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
