"""The look read from a picture (`look.py`): the skin, light and backdrop that draw the picture
again, read on the shown body or on a body of another build, and a picture too small to read
refused by name."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from maskscore_core.trials.anny_source import AnnySourceConfig, generate_trials
from maskscore_face_landmarks.look import LookReadError, LookReading, read_look, shown_look
from maskscore_face_landmarks.pixels import picture

SIZE = 448


@pytest.fixture(scope="module")
def two_subjects(tmp_path_factory):
    """First frames of two built-in subjects, each in their own look (trials seed 0)."""
    trials = generate_trials(AnnySourceConfig(seed=0, subjects=2, trials_per_subject=1), tmp_path_factory.mktemp("trials"))
    return [trial.frames[0].state for trial in trials]


def _light_angle(a, b) -> float:
    a, b = np.asarray(a.direction) / np.linalg.norm(a.direction), np.asarray(b.direction) / np.linalg.norm(b.direction)
    return float(np.arccos(np.clip(a @ b, -1.0, 1.0)))


def test_the_look_read_from_a_picture_draws_it_again(two_subjects):
    """Read on the body it shows, the look is the drawn one: the picture drawn in it again lies
    a fraction of a colour step off, far nearer than in the other subject's look."""
    state, other = two_subjects
    reading = LookReading(picture(state, SIZE), state)
    look = reading.read()
    assert reading.distance(look) < 0.004
    assert reading.distance(other.appearance) > 0.05
    np.testing.assert_allclose(look.skin, state.appearance.skin, atol=0.01)
    np.testing.assert_allclose(look.background, state.appearance.background, atol=0.01)
    assert _light_angle(look.light, state.appearance.light) < 0.02
    assert abs(look.light.intensity - state.appearance.light.intensity) < 0.03
    assert abs(look.light.ambient - state.appearance.light.ambient) < 0.03


def test_a_look_read_on_a_body_of_another_build_still_draws_the_picture(two_subjects):
    """Read on the body with the other subject's build (a decoded build that is off), the look
    still draws the picture on its own body far nearer than the other subject's look does."""
    state, other = two_subjects
    image = picture(state, SIZE)
    look = read_look(image, attrs.evolve(state, phenotype=dict(other.phenotype)))
    on_its_body = LookReading(image, state)
    assert on_its_body.distance(look) < 0.02
    assert on_its_body.distance(look) < 0.1 * on_its_body.distance(other.appearance)
    assert np.abs(np.subtract(look.skin, state.appearance.skin)).max() < 0.05
    np.testing.assert_allclose(look.background, state.appearance.background, atol=0.02)


def test_the_shown_look_is_the_subjects_where_it_draws_the_picture(two_subjects):
    """On a body read with the wrong build, the subject's own look still counts as the
    picture's (its drawing is off only by the body's errors); another subject's look does not,
    and the look read from the pixels stands in for it."""
    state, other = two_subjects
    image = picture(state, SIZE)
    body = attrs.evolve(state, phenotype=dict(other.phenotype))
    assert shown_look(image, body, state.appearance) == state.appearance
    found = shown_look(image, body, other.appearance)
    assert found != other.appearance and found == read_look(image, body)
    assert shown_look(picture(attrs.evolve(state, appearance=None), SIZE), state, None) is None


def test_a_picture_too_small_to_read_is_refused_by_name(two_subjects):
    with pytest.raises(LookReadError, match="px of backdrop; the look needs"):
        read_look(picture(two_subjects[0], 16), two_subjects[0])
