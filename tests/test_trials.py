"""The built-in `anny` source: determinism, distinct subjects, clip content, files, the plugin."""

from __future__ import annotations

import wave

import numpy as np
import pytest

from maskscore_core.body.anny_model import get_body_model
from maskscore_core.trials import anny_source, clips, subjects

SMALL = {"seed": 7, "subjects": 2, "trials_per_subject": 1, "max_words": 4}


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("anny")
    config = anny_source.AnnySourceConfig(**SMALL)
    return workdir, anny_source.generate_trials(config, workdir)


def _files(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_same_seed_gives_byte_identical_files(generated, tmp_path):
    workdir, trials = generated
    again = anny_source.generate_trials(anny_source.AnnySourceConfig(**SMALL), tmp_path)
    assert _files(workdir) == _files(tmp_path)
    assert sorted(_files(workdir)) == [
        "audio/anny-s000-t000.wav",
        "audio/anny-s001-t000.wav",
        "trials/anny-s000-t000.json",
        "trials/anny-s001-t000.json",
    ]
    assert [t.frames for t in again] == [t.frames for t in trials]


def test_another_seed_gives_other_subjects():
    a = subjects.draw_subjects(np.random.default_rng(1), 3)
    b = subjects.draw_subjects(np.random.default_rng(2), 3)
    assert [s.phenotype for s in a] != [s.phenotype for s in b]


def test_subjects_are_told_apart_and_prefix_stable():
    many = subjects.draw_subjects(np.random.default_rng(3), 8, min_distance=0.3)
    for i, first in enumerate(many):
        for second in many[i + 1 :]:
            assert subjects.phenotype_distance(first, second) >= 0.3
    assert len({s.subject_id for s in many}) == 8
    fewer = subjects.draw_subjects(np.random.default_rng(3), 3, min_distance=0.3)
    assert fewer == many[:3]
    for subject in many:
        for label, (low, high) in subjects.PHENOTYPE_RANGES.items():
            assert low <= subject.phenotype[label] <= high


def _sex_voices(subject):
    return subjects.FEMALE_VOICES if subject.phenotype["gender"] > 0.5 else subjects.MALE_VOICES


def test_voices_are_dealt_without_replacement_preferring_voices_told_apart_then_by_sex():
    count = len(subjects.VOICES)
    for seed in range(6):
        drawn = subjects.draw_subjects(np.random.default_rng(seed), 2 * count + 2, min_distance=0.1)
        for start in (0, count):  # each full round of subjects speaks every voice once
            assert sorted(s.voice for s in drawn[start : start + count]) == sorted(subjects.VOICES), seed
        assert len({s.voice for s in drawn[2 * count :]}) == 2  # the third round has begun, again distinct
        for i, subject in enumerate(drawn):
            in_round = {s.voice for s in drawn[i - i % count : i]}
            own = subjects.FEMALE_VOICES if subject.phenotype["gender"] > 0.5 else subjects.MALE_VOICES
            apart = [
                v
                for v in subjects.VOICES
                if v not in in_round and all(frozenset({v, t}) not in subjects.CONFUSABLE_VOICES for t in in_round)
            ]
            if apart:
                assert subject.voice in apart, (seed, i)
                assert (subject.voice in own) == any(v in own for v in apart), (seed, i)


def test_a_voice_the_matcher_confuses_with_a_taken_one_comes_last():
    assert subjects.CONFUSABLE_VOICES
    for pair in subjects.CONFUSABLE_VOICES:
        for kept, taken_first in (sorted(pair), sorted(pair)[::-1]):
            female = kept in subjects.FEMALE_VOICES
            own = subjects.FEMALE_VOICES if female else subjects.MALE_VOICES
            for seed in range(8):
                rng = np.random.default_rng(seed)
                # The only voice of the subject's sex left is confused with a taken one: one of the
                # other sex is dealt instead ...
                taken = [taken_first, *(v for v in own if v not in pair)]
                assert subjects.next_voice(rng, female, taken) not in own
                # ... and once every other voice is taken, the confused one (sharing would be worse).
                taken = [v for v in subjects.VOICES if v != kept]
                assert subjects.next_voice(rng, female, taken) == kept


def test_impossible_subject_spacing_is_a_clear_error():
    with pytest.raises(subjects.SubjectError, match="at least 2.0 away"):
        subjects.draw_subjects(np.random.default_rng(0), 3, min_distance=2.0)


def test_clip_content(generated):
    _workdir, trials = generated
    body = get_body_model()
    for trial in trials:
        with wave.open(trial.audio_path, "rb") as w:
            assert w.getframerate() == 16000 and w.getnchannels() == 1
            duration = w.getnframes() / 16000
        assert abs(len(trial.frames) - duration * trial.fps) <= 2
        assert [f.index for f in trial.frames] == list(range(len(trial.frames)))
        expression = np.stack([f.state.expression for f in trial.frames])
        assert expression.min() >= 0 and expression.max() <= 1
        jaw = expression[:, body.action_index("jawOpen")]
        assert jaw.max() - jaw.min() > 0.2, "the mouth moves with speech"
        blink = expression[:, body.action_index("eyeBlinkLeft")]
        assert blink.max() > 0.5, "at least one blink"
        pose = np.stack([f.state.pose for f in trial.frames])
        assert np.allclose(pose[:, body.bone_index("LeftArm")], [0, 0, -clips.ARM_DROP_RAD])
        assert np.allclose(pose[:, body.bone_index("RightArm")], [0, 0, clips.ARM_DROP_RAD])
        neck = pose[:, body.bone_index("Neck1")]
        assert 0 < np.abs(neck).max() < 0.1
        assert all(f.state.phenotype == trial.subject.phenotype for f in trial.frames)
        assert all(f.state.accessories == trial.subject.accessories for f in trial.frames)  # first trial


def test_lowered_arms_keep_hands_below_the_shoulders(generated):
    _, trials = generated
    body = get_body_model()
    bones = body.forward([trials[0].frames[0].state])["bone_poses"][0]
    shoulder_y = bones[body.bone_index("LeftArm")][1, 3]
    for hand in ("LeftHand", "RightHand"):
        assert bones[body.bone_index(hand)][1, 3] < shoulder_y - 0.3


def test_trial_files_round_trip(generated):
    workdir, trials = generated
    assert anny_source.load_trials(workdir) == trials


def test_corrupt_trial_file_names_the_file(tmp_path):
    bad = tmp_path / "trials" / "broken.json"
    bad.parent.mkdir()
    bad.write_text('{"trial_id": 3}')
    with pytest.raises(ValueError, match="broken.json is not a valid trial record"):
        anny_source.read_trial(bad)
    with pytest.raises(FileNotFoundError, match="missing.json"):
        anny_source.read_trial(tmp_path / "trials" / "missing.json")


def test_later_trials_change_one_thing():
    from maskscore_core.body import accessories

    assert [anny_source.trial_look(0, t) for t in range(4)] == ["usual", "accessories", "regions", "accessories"]
    assert [anny_source.trial_look(1, t) for t in range(3)] == ["usual", "regions", "accessories"]
    for seed in range(10):
        subject = subjects.draw_subjects(np.random.default_rng(seed), 1)[0]
        worn = subjects.changed_accessories(subject, np.random.default_rng(seed))
        changed = [
            slot
            for slot in accessories.VARIANTS
            if accessories.worn(worn, slot) != accessories.worn(subject.accessories, slot)
        ]
        assert 1 <= len(changed) <= 2
        scales = clips.changed_regions(np.random.default_rng(seed))
        assert 1 <= len(scales) and set(scales) <= set(clips.REGION_PARTS)
        assert all(0.1 <= abs(v - 1) <= 0.25 + 1e-9 for v in scales.values())


def test_config_from_dict():
    config = anny_source.AnnySourceConfig.from_dict({"count": 3, "seed": 2, "path": "ignored"})
    assert (config.subjects, config.seed) == (3, 2)
    with pytest.raises(anny_source.SourceConfigError, match="unknown anny source options \\['colour'\\]"):
        anny_source.AnnySourceConfig.from_dict({"colour": "red"})
    with pytest.raises(anny_source.SourceConfigError, match="fps must be positive"):
        anny_source.AnnySourceConfig(fps=0)


def test_extract_hook_answers_for_anny(tmp_path):
    from maskscore_core.plugin import manager as plugins
    from maskscore_core.plugin.context import Context

    ctx = Context(workdir=tmp_path, seed=7)
    trials = plugins.call(
        "extract", "anny", source="anny", config={k: v for k, v in SMALL.items() if k != "seed"}, ctx=ctx
    )
    assert [t.trial_id for t in trials] == ["anny-s000-t000", "anny-s001-t000"]
    assert (tmp_path / "sources" / "anny" / "trials" / "anny-s000-t000.json").is_file()
    assert plugins.plugin_info("anny_source").provides == ("anny",)


def test_render_video_writes_one_png_per_frame(tmp_path):
    import imageio.v3 as iio

    config = anny_source.AnnySourceConfig(
        seed=1, subjects=1, max_words=3, trials_per_subject=1, render_video=True, video_size=48
    )
    (trial,) = anny_source.generate_trials(config, tmp_path)
    folder = tmp_path / trial.extras["video_frames"]
    frames = sorted(folder.glob("frame_*.png"))
    assert len(frames) == len(trial.frames)
    first, last = iio.imread(frames[0]), iio.imread(frames[-1])
    assert first.shape == (48, 48, 3)
    assert not np.array_equal(first, last), "the face moves between the first and last frame"
    assert trial.image_path == str(frames[len(frames) // 2])
    assert anny_source.load_trials(tmp_path) == [trial]
