"""Phones -> visemes -> ARKit activations: open vowels open the jaw, bilabials close the lips."""

from __future__ import annotations

import numpy as np
import pytest

from maskscore_core.body.anny_model import get_body_model
from maskscore_core.speech import Phone, activations_from_phones, phone_timeline
from maskscore_core.speech.errors import SpeechError
from maskscore_core.speech.phonemes import PHONES
from maskscore_core.speech.visemes import VISEME_ACTIONS, action_names, phone_visemes

FPS = 100.0  # one frame per pocketsphinx frame, so short closures are sampled


def col(name: str) -> int:
    return action_names().index(name)


def test_columns_follow_the_body_model_and_tables_use_real_actions():
    assert action_names() == get_body_model().action_names
    for values in VISEME_ACTIONS.values():
        assert set(values) <= set(action_names())
        assert all(0.0 <= v <= 1.0 for v in values.values())
    for phone in PHONES:
        assert all(v in VISEME_ACTIONS for v in phone_visemes(phone))


def _one(phone: str, acts: np.ndarray, timeline: list[Phone]) -> np.ndarray:
    """Activation rows at the middle of each occurrence of `phone`."""
    rows = [int(round((p.start_s + p.end_s) / 2 * FPS)) for p in timeline if p.phone == phone]
    return acts[rows]


def test_jaw_opens_on_aa_and_lips_close_on_m_b_p():
    timeline = phone_timeline("call mom and bob at the top")
    duration = timeline[-1].end_s + 0.2
    acts = activations_from_phones(timeline, FPS, duration)
    jaw = acts[:, col("jawOpen")]
    aa = _one("AA", acts, timeline)
    assert aa[:, col("jawOpen")].min() > 0.5
    peak_s = jaw.argmax() / FPS
    assert any(p.start_s - 0.03 <= peak_s <= p.end_s + 0.03 for p in timeline if p.phone == "AA")
    for closure in ("M", "B", "P"):
        rows = _one(closure, acts, timeline)
        assert rows[:, col("jawOpen")].max() < 0.3, closure
        press = np.maximum(rows[:, col("mouthClose")], rows[:, col("mouthPressLeft")])
        assert press.min() > 0.3, closure
        assert press.min() > aa[:, col("mouthPressLeft")].max() + 0.25
    # silence before and after is the rest pose
    assert np.abs(acts[-1]).max() < 0.02


def test_shape_range_and_smoothness():
    timeline = phone_timeline("what is the weather in boston tomorrow")
    acts = activations_from_phones(timeline, 25.0, 2.0)
    assert acts.shape == (50, 52)
    assert acts.min() >= 0.0 and acts.max() <= 1.0
    fine = activations_from_phones(timeline, FPS, 2.0)
    # coarticulation: no jump bigger than a fraction of the largest target between 10 ms frames
    assert np.abs(np.diff(fine, axis=0)).max() < 0.35
    assert np.array_equal(acts, activations_from_phones(timeline, 25.0, 2.0))


def test_diphthong_glides_between_two_shapes():
    timeline = [Phone("AY", 0.1, 0.5, "i")]
    acts = activations_from_phones(timeline, FPS, 0.7)
    early, late = acts[18], acts[42]
    assert early[col("jawOpen")] > late[col("jawOpen")] + 0.3  # aa then ih
    assert late[col("mouthSmileLeft")] > early[col("mouthSmileLeft")] + 0.2


def test_bad_input():
    with pytest.raises(SpeechError, match="unknown phone 'XX'"):
        activations_from_phones([Phone("XX", 0.0, 0.1)], 25.0, 1.0)
    with pytest.raises(SpeechError, match="fps"):
        activations_from_phones([], 0.0, 1.0)
    with pytest.raises(SpeechError, match="duration"):
        activations_from_phones([], 25.0, float("nan"))
    with pytest.raises(SpeechError, match="Phone records"):
        activations_from_phones([("AA", 0.0, 0.1)], 25.0, 1.0)
    with pytest.raises(ValueError, match="bad times"):
        Phone("AA", 0.5, 0.1)
