"""The build read from the person's outline: a picture of someone else in the subject's place
decodes to someone else's build, and a picture of the subject keeps the subject's."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from maskscore_core.body.anny_model import get_body_model
from maskscore_core.body.reference_mesh import get_reference_mesh
from maskscore_core.trials import landmark_fit as lf
from maskscore_core.trials.anny_source import AnnySourceConfig, generate_trials
from maskscore_face_landmarks.pixels import PixelFitter, decode_sequence, default_segmenter, picture
from maskscore_face_landmarks.silhouette import SilhouetteFit, fit_phenotype, outline, outline_distance, outline_state

SIZE = 448


@pytest.fixture(scope="module")
def two_subjects(tmp_path_factory):
    """First frames of the two built-in subjects (trials seed 0) whose builds differ most."""
    trials = generate_trials(AnnySourceConfig(seed=0, subjects=3, trials_per_subject=1), tmp_path_factory.mktemp("trials"))
    states = [trial.frames[0].state for trial in trials]
    pairs = [(a, b) for i, a in enumerate(states) for b in states[i + 1:]]
    return max(pairs, key=lambda p: sum(abs(p[0].phenotype[k] - p[1].phenotype[k]) for k in p[0].phenotype))


def _body_distance(state, phenotype, other_phenotype):
    """How much closer (metres, mean over vertices) `state`'s mesh is to its pose with
    `phenotype` than with `other_phenotype`: positive when it reads as `phenotype`'s build."""
    mesh = get_reference_mesh()
    found = mesh.vertices([state])[0]
    a = mesh.vertices([attrs.evolve(state, phenotype=dict(phenotype))])[0]
    b = mesh.vertices([attrs.evolve(state, phenotype=dict(other_phenotype))])[0]
    count = mesh.anny_vertex_count
    return float(np.linalg.norm(found[:count] - b[:count], axis=1).mean() - np.linalg.norm(found[:count] - a[:count], axis=1).mean())


def test_someone_else_in_the_subjects_place_reads_as_someone_else(two_subjects):
    """The picture of subject B decoded as an edit of subject A: its mesh is closer to B's build
    than to A's, and nearer B's than landmarks alone (their prior holds A's build) put it."""
    subject, other = two_subjects
    pixels = picture(other, SIZE)
    landmarks_only = PixelFitter().fit(pixels, subject, "B's picture").state
    with_outline = PixelFitter(silhouette=SilhouetteFit()).fit(pixels, subject, "B's picture").state
    assert _body_distance(with_outline, other.phenotype, subject.phenotype) > 0.0
    assert _body_distance(with_outline, other.phenotype, subject.phenotype) > _body_distance(landmarks_only, other.phenotype, subject.phenotype) + 0.002


def test_the_fitted_build_explains_the_outline_better_than_where_it_started(tmp_path):
    """Each round of `fit_phenotype` moves the build as far as the outline's linearisation says;
    a round whose step makes the outline worse is taken back and halved. Unchecked, the rounds ran
    away on the image ladder's wrong-subject picture of trials seed 0, instance 4 (the neck): from
    5.4 px (the subject's build) to 12.9 px, where the shown person's own build lies 2.0 px off."""
    trials = generate_trials(AnnySourceConfig(seed=0, subjects=3, trials_per_subject=2), tmp_path / "trials")
    # That ladder's frame A (anny-s001's second trial, frame 1) and rung 5 (anny-s002's, frame 1).
    subject, other = trials[3].frames[1].state, trials[5].frames[1].state
    assert other.phenotype != subject.phenotype
    pixels = picture(other, SIZE)
    person = default_segmenter().mask(pixels)
    posed = attrs.evolve(outline_state(PixelFitter().fit(pixels, subject, "rung 5").state, subject, lf.LINEAR_BONES), accessories=())
    build = fit_phenotype(person, posed)
    start = outline_distance(person, posed, slots=())
    fitted = outline_distance(person, attrs.evolve(posed, phenotype=build), slots=())
    shown = outline_distance(person, attrs.evolve(posed, phenotype=dict(other.phenotype)), slots=())
    assert fitted < min(start, shown)


def test_the_subjects_own_picture_keeps_the_landmark_reading(two_subjects):
    """The subject's own picture, mouth open, is explained by the subject's outline (within
    `same_build`), so its reading is the landmark fit's, untouched; the other subject's outline
    is not."""
    subject, other = two_subjects
    expression = np.zeros_like(np.asarray(subject.expression))
    expression[get_body_model().action_index("jawOpen")] = 0.5
    pixels = picture(attrs.evolve(subject, expression=expression), SIZE)
    landmarks_only = PixelFitter().fit(pixels, subject, "A's picture")
    with_outline = PixelFitter(silhouette=SilhouetteFit()).fit(pixels, subject, "A's picture")
    assert with_outline.state.phenotype == landmarks_only.state.phenotype
    assert np.array_equal(with_outline.state.expression, landmarks_only.state.expression)
    assert np.array_equal(with_outline.state.pose, landmarks_only.state.pose)
    person = default_segmenter().mask(pixels)
    own = outline_distance(person, outline_state(landmarks_only.state, subject, lf.LINEAR_BONES))
    other_fit = PixelFitter().fit(pixels, other, "A's picture as B's")
    theirs = outline_distance(person, outline_state(other_fit.state, other, lf.LINEAR_BONES))
    assert own < SilhouetteFit().same_build * SIZE < theirs


def test_a_hat_the_segmenter_cuts_does_not_make_the_subject_someone_else(tmp_path):
    """A built-in subject in a tall dark hat (trials seed 3): in some of its pictures the segmenter
    cuts the hat in half, so counted with the hat its own outline lies beyond `same_build` and its
    build was read again from the outline (the build moved by up to 0.46). The test leaves the hat
    out (`UNCOUNTED_SLOTS`): the picture the segmenter cuts most keeps the landmark reading."""
    trials = generate_trials(AnnySourceConfig(seed=3, trials_per_subject=1), tmp_path / "trials")
    trial = next(t for t in trials if "hat_tall" in t.frames[0].state.accessories)
    subject = trial.frames[0].state
    limit = SilhouetteFit().same_build * SIZE
    every_slot = tuple(get_reference_mesh().slot_ranges)
    readings = []
    for k in (len(trial.frames) // 3, 2 * len(trial.frames) // 3):
        pixels = picture(trial.frames[k].state, SIZE)
        landmarks_only = PixelFitter().fit(pixels, subject, f"frame {k}")
        person = default_segmenter().mask(pixels)
        posed = outline_state(landmarks_only.state, subject, lf.LINEAR_BONES)
        readings.append((outline_distance(person, posed, every_slot), outline_distance(person, posed), pixels, landmarks_only))
    with_hat, without, pixels, landmarks_only = max(readings, key=lambda r: r[0])
    assert with_hat > limit > without
    with_outline = PixelFitter(silhouette=SilhouetteFit()).fit(pixels, subject, "the cut picture")
    assert with_outline.state.phenotype == landmarks_only.state.phenotype


def test_the_outline_leaves_out_the_frames_border():
    """Where the body runs out of the picture there is no outline to fit."""
    mask = np.zeros((8, 8), bool)
    mask[4:, :] = True  # shoulders running out at the bottom and both sides
    edge = outline(mask)
    assert edge[4, 1:-1].all() and edge.sum() == 6


def test_an_empty_outline_is_refused():
    from maskscore_core.plugin.testing import face_state

    with pytest.raises(lf.FaceDetectionError, match="outline is empty"):
        fit_phenotype(np.zeros((64, 64), bool), face_state())


def test_a_clip_reads_whom_it_shows_once_from_its_first_frame(two_subjects):
    """A pixel clip of subject B decoded as an edit of subject A: its build is read from the first
    frame's outline and every frame is fitted with it, nearer B's build than the landmarks alone
    put it. A clip of A itself decodes exactly as without the outline."""
    subject, other = two_subjects
    jaw = get_body_model().action_index("jawOpen")

    def clip(state):
        frames = []
        for value in (0.0, 0.4):
            expression = np.zeros_like(np.asarray(state.expression))
            expression[jaw] = value
            frames.append(picture(attrs.evolve(state, expression=expression), SIZE))
        return frames

    names = ["frame 0", "frame 1"]
    theirs = decode_sequence(clip(other), subject, names, 5.0, PixelFitter(silhouette=SilhouetteFit()))
    plain = decode_sequence(clip(other), subject, names, 5.0, PixelFitter())
    assert _body_distance(theirs[0], other.phenotype, subject.phenotype) > _body_distance(plain[0], other.phenotype, subject.phenotype) + 0.002
    assert _body_distance(theirs[1], other.phenotype, subject.phenotype) > 0.0
    own = decode_sequence(clip(subject), subject, names, 5.0, PixelFitter(silhouette=SilhouetteFit()))
    own_plain = decode_sequence(clip(subject), subject, names, 5.0, PixelFitter())
    for a, b in zip(own, own_plain):
        assert a.phenotype == b.phenotype and np.array_equal(a.expression, b.expression) and np.array_equal(a.pose, b.pose)
