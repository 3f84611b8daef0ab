"""mediapipe Face Mesh on ANNY renders: 478 points of the one face, clear refusals, the slot's
default, and anchors that a fresh ray cast still agrees with."""

from __future__ import annotations

import numpy as np
import pytest

from maskscore_core.plugin.records import BodyState
from maskscore_core.trials import landmark_fit as lf
from maskscore_core.trials import speakingfaces as sf
from maskscore_face_landmarks import FaceMeshDetector, anchors
from maskscore_face_landmarks.pixels import picture


@pytest.fixture(scope="module")
def detector():
    return FaceMeshDetector()


@pytest.fixture(scope="module")
def face():
    return picture(BodyState(), 320)  # the one camera of pictures: the face about 72 px wide


def test_one_rendered_face_gives_478_points(detector, face):
    found = detector.detect(face)
    assert found.scheme == lf.MEDIAPIPE_SCHEME and found.points.shape == (478, 2) and found.image_size == (320, 320)
    width = np.ptp(found.points[:, 0])
    assert 60 < width < 320 and np.isfinite(found.points).all()
    # The subject's right eye (33, image left) is left of the left eye (263); the lips below both.
    assert found.points[33, 0] < found.points[263, 0] and found.points[13, 1] > found.points[33, 1]


def test_refusals_say_what_is_wrong(detector, face):
    with pytest.raises(lf.FaceDetectionError, match="^no face found$"):
        detector.detect(np.full_like(face, 40))
    twins = np.concatenate([face, face], axis=1)
    with pytest.raises(lf.FaceDetectionError, match="^2 faces found; one face is expected$"):
        detector.detect(twins)
    with pytest.raises(lf.FaceDetectionError, match=r"the face is \d+ px wide; at least 60 px are needed"):
        detector.detect(np.ascontiguousarray(face[::2, ::2]))
    with pytest.raises(lf.FaceDetectionError, match="uint8 RGB"):
        detector.detect(face.astype(np.float32))


def test_the_installed_detector_fills_the_speakingfaces_slot():
    assert "mediapipe-face-mesh" in sf._installed_detectors()
    assert isinstance(sf.landmark_detector(), FaceMeshDetector)


def test_committed_anchors_agree_with_a_fresh_ray_cast(detector):
    """The anchors are computed once and committed; computing them again (render, detect, cast)
    puts every point within 2 mm of the committed one on the neutral mesh (mean under 0.5 mm)."""
    from maskscore_core.body.reference_mesh import get_reference_mesh

    committed, fresh = anchors.load(), anchors.compute(detector)
    assert committed.names == fresh.names and np.array_equal(committed.landmark_index, fresh.landmark_index)
    vertices = get_reference_mesh().vertices([BodyState()])[0]

    def points(a):
        return np.einsum("kcd,kc->kd", vertices[a.vertex_ids], a.weights)

    distance = np.linalg.norm(points(committed) - points(fresh), axis=1)
    assert distance.max() < 0.002 and distance.mean() < 0.0005
    assert committed.response is not None and committed.response.shape == (len(committed.response_params), len(committed), 3)
    assert {"jawOpen", "eyeBlinkLeft", "Head.y"} <= set(committed.response_params)
