"""A picture's landmark fit refined against its pixels (`photometric.refine`): where the subject's
look explains the picture it reads the head's turn and the jaw closer than the landmarks do;
where it does not, the landmark fit stands untouched."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from maskscore_core.body.anny_model import get_body_model
from maskscore_core.plugin.records import Appearance, BodyState, Light
from maskscore_core.plugin.testing import face_state
from maskscore_core.trials import landmark_fit as lf
from maskscore_face_landmarks.photometric import PhotometricFit, face_window
from maskscore_face_landmarks.pixels import PixelFitter, drawn, picture

SIZE = 448
LOOK = Appearance(skin=(0.62, 0.46, 0.38), light=Light(direction=(0.45, 0.6, 0.65), intensity=0.7, ambient=0.25),
                  background=(0.5, 0.3, 0.27))  # fmt: skip


@pytest.fixture(scope="module")
def fitters():
    plain = PixelFitter()
    return plain, PixelFitter(detector=plain.detector, photometric=PhotometricFit())


def _turned(state: BodyState, pitch: float, yaw: float):
    body = get_body_model()
    pose = np.array(state.pose, copy=True)
    for name, share in zip(lf.LINEAR_BONES, (0.4, 0.3, 0.3)):
        pose[body.bone_index(name)] = (share * pitch, share * yaw, 0.0)
    return attrs.evolve(state, pose=pose)


def _errors(fit, truth):
    body = get_body_model()
    chain = [body.bone_index(name) for name in lf.LINEAR_BONES]
    turn = np.abs(fit.state.pose[chain].sum(axis=0) - truth.pose[chain].sum(axis=0)).max()
    jaw = body.action_index("jawOpen")
    return float(turn), abs(float(fit.state.expression[jaw] - truth.expression[jaw]))


SUBJECT = attrs.evolve(face_state(), appearance=LOOK, accessories=("glasses_round",))
SHOWN = _turned(attrs.evolve(face_state(jawOpen=0.3, mouthSmileLeft=0.3, mouthSmileRight=0.3), appearance=LOOK,
                             accessories=("glasses_round",)), 0.06, -0.03)  # fmt: skip


def test_a_picture_in_its_own_look_is_read_closer_than_by_its_landmarks(fitters):
    """The subject in its own look and glasses, head turned and jaw open: the drawing of the
    refined fit comes within a few thousandths of the picture, and the turn and jaw it reads are
    closer to the truth than the landmark fit's."""
    plain, refining = fitters
    image = picture(SHOWN, SIZE)
    landmarks = plain.fit(image, SUBJECT, "test picture")
    refined = refining.fit(image, SUBJECT, "test picture")
    found = refined.photometric
    assert found.kept and found.rms_after < 0.005 < found.rms_before
    turn, jaw = _errors(refined, SHOWN)
    landmark_turn, landmark_jaw = _errors(landmarks, SHOWN)
    assert turn < 0.003 and jaw < 0.05
    assert turn < landmark_turn and jaw <= landmark_jaw + 0.01
    assert refined.state.phenotype == landmarks.state.phenotype and refined.state.accessories == landmarks.state.accessories


def test_a_picture_the_look_does_not_explain_keeps_its_landmark_fit(fitters):
    """The same picture drawn in another light and skin: no state of the subject's look draws it,
    so the refinement is not kept and the fit is the landmark fit, bit for bit."""
    plain, refining = fitters
    other = attrs.evolve(SHOWN, appearance=Appearance(skin=(0.35, 0.25, 0.2), light=Light(direction=(-0.5, 0.4, 0.7))))
    image = picture(other, SIZE)
    refined = refining.fit(image, SUBJECT, "test picture")
    assert not refined.photometric.kept and refined.photometric.rms_after > PhotometricFit().explained_rms
    assert refined.state == plain.fit(image, SUBJECT, "test picture").state


def test_a_window_is_drawn_as_the_whole_picture_draws_it():
    """`drawn` of a window matches the whole picture's pixels there (float32 rounding of the
    rays aside, which may flip a rare edge pixel)."""
    state = SHOWN
    (whole,) = drawn([state], SIZE)
    assert np.array_equal(np.clip(np.rint(whole * 255.0), 0, 255).astype(np.uint8), picture(state, SIZE))
    x, y, w, h = 150, 120, 140, 170
    (part,) = drawn([state], SIZE, (x, y, w, h))
    difference = np.abs(part - whole[y : y + h, x : x + w]).max(axis=-1)
    assert part.shape == (h, w, 3)
    assert (difference > 1e-4).mean() < 0.005


def test_the_window_is_the_fitted_face_with_its_margin():
    points = np.array([[100.0, 120.0], [200.0, 260.0]])
    assert face_window(points, SIZE, 0.1) == (90, 106, 120, 168)
    assert face_window(points, 220, 0.5) == (50, 50, 170, 170)


def test_a_clip_is_read_frame_by_frame_with_the_slopes_carried(fitters):
    """Three frames of the subject in its own look, the head turning and the jaw opening: every
    frame's refinement is kept and reads the turn closer than its landmark fit; the frames after
    the first draw only the turn's slopes and their steps (the actions' are carried), a small
    part of the first frame's drawings."""
    from maskscore_face_landmarks.photometric import refine_clip
    from maskscore_face_landmarks.pixels import PIXEL_PICTURE_FIT, drawn_as

    plain, _ = fitters
    shown = [_turned(attrs.evolve(face_state(jawOpen=jaw), appearance=LOOK, accessories=("glasses_round",)), pitch, 0.02)
             for jaw, pitch in ((0.1, 0.02), (0.2, 0.035), (0.3, 0.05))]  # fmt: skip
    images = [picture(state, SIZE) for state in shown]
    fits = [plain.fit(image, SUBJECT, f"frame {k}") for k, image in enumerate(images)]
    looks = [drawn_as(fit.state, SUBJECT, PIXEL_PICTURE_FIT) for fit in fits]
    found = refine_clip(images, fits, looks, PIXEL_PICTURE_FIT)
    for fit, refined, truth in zip(fits, found, shown):
        turn, _ = _errors(refined, truth)
        assert refined.kept and turn < 0.003 and turn < _errors(fit, truth)[0]
    assert all(refined.drawings < found[0].drawings / 3 for refined in found[1:]), [r.drawings for r in found]
