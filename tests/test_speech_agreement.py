"""Face bone rotation agreement: documented angles, a true distance on identical input, and the
property the speech modality relies on: the same sentence from two voices agrees better than
two different sentences."""

from __future__ import annotations

import numpy as np
import pytest

from maskscore_core.speech import agreement, audio_activations, synthesize, text_activations
from maskscore_core.speech.errors import SpeechError
from maskscore_core.speech.visemes import action_names

FPS = 25.0
SENTENCES = ("turn on the kitchen lights", "set a timer for ten minutes")


def acts_with(**values) -> np.ndarray:
    row = np.zeros((1, len(action_names())))
    for name, value in values.items():
        row[0, action_names().index(name)] = value
    return row


def test_jaw_open_is_a_documented_pitch_that_drops_the_chin():
    rot = agreement.face_bone_rotations(acts_with(jawOpen=1.0))
    assert rot.shape == (1, 3, 3, 3)
    jaw = rot[0, agreement.FACE_BONES.index("Jaw")]
    assert np.allclose(jaw @ jaw.T, np.eye(3))
    assert np.arccos((np.trace(jaw) - 1) / 2) == pytest.approx(agreement.JAW_OPEN_RAD)
    chin = jaw @ np.array([0.0, 0.0, 1.0])  # the body faces +Z, Y up
    assert chin[1] < -0.3
    assert np.allclose(rot[0, 1:], np.eye(3))  # the eyes do not move


def test_eyes_look_outwards_to_opposite_sides():
    rot = agreement.face_bone_rotations(acts_with(eyeLookOutLeft=1.0, eyeLookOutRight=1.0))
    left_gaze = rot[0, 1] @ np.array([0.0, 0.0, 1.0])
    right_gaze = rot[0, 2] @ np.array([0.0, 0.0, 1.0])
    assert left_gaze[0] > 0.4 and right_gaze[0] < -0.4  # the body's left is +X


def test_distance_is_zero_on_identical_and_symmetric():
    rng = np.random.default_rng(3)
    a = rng.uniform(0, 1, (30, 52))
    b = rng.uniform(0, 1, (45, 52))
    assert agreement.distance(a, a) == 0.0
    assert agreement.distance(a, b) == pytest.approx(agreement.distance(b, a), abs=1e-12)
    assert agreement.distance(a, b) > 0.05
    # time normalisation: the same motion at half the frame rate is (nearly) the same motion
    slow = agreement.time_normalise(a, 59)
    assert agreement.distance(a, slow) < 0.02 * agreement.distance(a, b)


def test_bad_shapes_and_values_are_named():
    good = np.zeros((5, 52))
    with pytest.raises(SpeechError, match=r"second activations must have shape \(T, 52\).*\(5, 51\)"):
        agreement.distance(good, np.zeros((5, 51)))
    bad = good.copy()
    bad[2, 3] = np.nan
    with pytest.raises(SpeechError, match="first activations hold NaN"):
        agreement.distance(bad, good)
    with pytest.raises(SpeechError, match="shape"):
        agreement.face_bone_rotations(np.zeros((0, 52)))


@pytest.fixture(scope="module")
def spoken(tmp_path_factory):
    folder = tmp_path_factory.mktemp("agreement")
    acts = {}
    for i, text in enumerate(SENTENCES):
        for voice in ("en-us", "en-gb+f2"):
            wav = synthesize(text, voice, folder / f"{i}-{voice}.wav")
            acts[text, voice] = audio_activations(wav, text, FPS)
    return acts


def test_same_sentence_from_two_voices_agrees_better_than_two_sentences(spoken):
    a, b = SENTENCES
    same = [agreement.distance(spoken[t, "en-us"], spoken[t, "en-gb+f2"]) for t in SENTENCES]
    different = [
        agreement.distance(spoken[a, "en-us"], spoken[b, "en-us"]),
        agreement.distance(spoken[a, "en-us"], spoken[b, "en-gb+f2"]),
        agreement.distance(spoken[a, "en-gb+f2"], spoken[b, "en-us"]),
    ]
    print(f"same sentence, two voices: {same}; different sentences: {different}")
    assert max(same) < min(different)
    assert max(same) < 0.5 * min(different)


def test_text_timing_agrees_with_its_own_audio_better_than_with_other_audio(spoken):
    for i, text in enumerate(SENTENCES):
        other = SENTENCES[1 - i]
        from_text = text_activations(text, FPS)
        own = agreement.distance(from_text, spoken[text, "en-us"])
        wrong = agreement.distance(from_text, spoken[other, "en-us"])
        print(f"text {text!r}: own audio {own:.4f}, other audio {wrong:.4f}")
        assert own < wrong
