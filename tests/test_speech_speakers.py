"""Voiceprints and speaker identification (speech.voiceprint, speech.speakers), the time mix of
two phrases (ladder.mix_phrase), and trials that do not depend on the trials made before."""

from __future__ import annotations

import numpy as np
import pytest

from maskscore_core.speech import synthesize
from maskscore_core.speech.audio import load_speech_audio
from maskscore_core.speech.speakers import SpeakerError, identify, voice_distance
from maskscore_core.speech.voiceprint import VoiceprintError, voiceprint

COMMANDS = ("turn on the kitchen lights", "set a timer for ten minutes", "what is the weather in boston tomorrow")


@pytest.fixture(scope="module")
def prints(tmp_path_factory):
    """Voiceprints of three commands in a male (en-us) and two female (en-us+f3, en-us+f4) voices."""
    folder = tmp_path_factory.mktemp("voices")
    out = {}
    for voice in ("en-us", "en-us+f3", "en-us+f4"):
        for i, text in enumerate(COMMANDS):
            out[voice, i] = voiceprint(load_speech_audio(synthesize(text, voice, folder / f"{voice}-{i}.wav")))
    return out


def test_a_voice_matches_itself_across_sentences_and_not_the_other_sex(prints):
    for voice in ("en-us", "en-us+f3", "en-us+f4"):
        for i in range(1, len(COMMANDS)):
            assert voice_distance(prints[voice, 0], prints[voice, i]) <= 1.0, (voice, i)
    for i in range(len(COMMANDS)):
        for j in range(len(COMMANDS)):
            assert voice_distance(prints["en-us", i], prints["en-us+f3", j]) > 1.0
            assert voice_distance(prints["en-us", i], prints["en-us+f4", j]) > 1.0
    assert 2 ** prints["en-us", 0].log2_f0 < 130 < 160 < 2 ** prints["en-us+f4", 0].log2_f0  # male / female pitch


def test_built_in_voices_match_themselves_and_are_told_apart(tmp_path):
    """Every built-in voice matches itself across sentences, and the matcher tells every two of
    them apart on every pair of different sentences, except the pairs listed as told apart only
    part of the time."""
    from maskscore_core.speech.synthesis import PARTLY_TOLD_APART, VOICES

    prints = {
        (voice, i): voiceprint(load_speech_audio(synthesize(text, voice, tmp_path / f"{voice}-{i}.wav")))
        for voice in VOICES
        for i, text in enumerate(COMMANDS)
    }
    pairs = [(i, j) for i in range(len(COMMANDS)) for j in range(len(COMMANDS)) if i != j]
    for voice in VOICES:
        assert all(voice_distance(prints[voice, i], prints[voice, j]) <= 1.0 for i, j in pairs), voice
    for a in VOICES:
        for b in VOICES:
            if a < b and frozenset({a, b}) not in PARTLY_TOLD_APART:
                assert all(voice_distance(prints[a, i], prints[b, j]) > 1.0 for i, j in pairs), (a, b)


def test_identify_presumes_frame_a_unless_the_voice_rules_it_out(prints):
    enrolled = [("a", prints["en-us", 0]), ("other", prints["en-us+f3", 0])]
    assert identify(prints["en-us", 1], enrolled, presumed="a") == "a"  # A's voice, other words
    assert identify(prints["en-us+f3", 2], enrolled, presumed="a") == "other"
    # Voices too alike to tell apart stay on the presumed speaker, whichever sentence enrolled them.
    same = [("a", prints["en-us", 0]), ("other", prints["en-us", 1])]
    assert identify(prints["en-us", 1], same, presumed="a") == "a"
    # A voice nobody enrolled has.
    assert identify(prints["en-us+f3", 1], [("a", prints["en-us", 0])], presumed="a") is None


def test_identify_needs_enrolled_voices(prints):
    with pytest.raises(SpeakerError, match="no voice is enrolled"):
        identify(prints["en-us", 0], [], presumed="a")
    with pytest.raises(SpeakerError, match="'b' is not enrolled"):
        identify(prints["en-us", 0], [("a", prints["en-us", 0])], presumed="b")


def test_voiceprint_needs_voice():
    with pytest.raises(VoiceprintError, match="shorter than one"):
        voiceprint(np.zeros(100, dtype=np.int16))
    with pytest.raises(VoiceprintError, match="voiced frames"):
        voiceprint(np.random.default_rng(0).normal(0, 1000, 16000).astype(np.int16), "noise")
    with pytest.raises(VoiceprintError, match="1-D"):
        voiceprint(np.zeros((2, 16000)))


def test_voiceprint_is_deterministic(tmp_path):
    samples = load_speech_audio(synthesize("call mom", "en-us+f4", tmp_path / "a.wav"))
    first, second = voiceprint(samples), voiceprint(samples.copy())
    assert first.log2_f0 == second.log2_f0
    np.testing.assert_array_equal(first.cepstrum, second.cepstrum)


def test_phrase_mix_follows_time():
    from maskscore_core.edits.ladder import LadderError, mix_phrase
    from maskscore_core.speech.phonemes import word_boundaries_s

    a, b = "pay my phone bill", "turn off the bedroom lights"  # no word in common
    assert mix_phrase(a, b, 1.0) == b and mix_phrase(a, b, 0.0) == a
    mixes = [mix_phrase(a, b, t).split() for t in np.linspace(0.05, 0.95, 19)]
    b_words = [sum(word in b.split() for word in m) for m in mixes]
    a_words = [sum(word in a.split() for word in m) for m in mixes]
    assert b_words == sorted(b_words) and a_words == sorted(a_words, reverse=True)  # time order
    assert min(b_words) >= 1 and min(a_words) >= 1  # always some of each
    assert all(m[:k] == b.split()[:k] for m, k in zip(mixes, b_words))  # B's words first
    # The cut is the word boundary nearest to t of each phrase's spoken duration. At t = 0.5:
    # B's "turn off the" ends at 0.545 s of 1.36 s (0.40; the next boundary is at 0.74), A's
    # "pay my" at 0.405 s of 0.915 s (0.44; the next at 0.75).
    ends_a, ends_b = word_boundaries_s(a), word_boundaries_s(b)
    assert np.isclose(ends_b[2] / ends_b[-1], 0.40, atol=0.01) and np.isclose(ends_a[1] / ends_a[-1], 0.44, atol=0.01)
    assert mix_phrase(a, b, 0.5) == "turn off the phone bill"
    with pytest.raises(LadderError, match="0 <= t <= 1"):
        mix_phrase(a, b, 1.5)


def test_trials_do_not_depend_on_the_trials_made_before(tmp_path):
    """A trial made after others is identical to the same trial made first (trials.clips drops
    the cached decoder before each alignment; see the next test for why it still must)."""
    from maskscore_core.plugin.records import Subject
    from maskscore_core.speech import alignment
    from maskscore_core.trials.clips import make_trial

    subject = Subject("s", {"gender": 0.2}, voice="en-gb")

    def made(folder):
        trial = make_trial(subject, 0, "when does the sun rise tomorrow", 25.0, np.random.default_rng(3), folder)
        return trial.extras["phones"], np.stack([f.state.expression for f in trial.frames])

    alignment._decoder.cache_clear()
    first = made(tmp_path / "first")
    before = (
        ("turn on airplane mode", "en-gb+f2"),
        ("stop the music", "en-us+f4"),
        ("what is the air quality today", "en-us"),
        ("pay my phone bill", "en-us+f3"),
    )
    for i, (text, voice) in enumerate(before):
        make_trial(Subject("o", {}, voice=voice), i + 1, text, 25.0, np.random.default_rng(i), tmp_path / "o")
    later = made(tmp_path / "later")
    assert later[0] == first[0]
    np.testing.assert_array_equal(later[1], first[1])


def test_a_reused_decoder_still_remembers_the_previous_utterance(tmp_path):
    """Why trials.clips and the speech plugin still take a fresh pocketsphinx decoder per
    alignment: restoring the cepstral mean is not enough, this clip aligns differently after
    four others than first. When this fails, `alignment.forget_previous_utterances` can go."""
    from maskscore_core.speech import align, alignment

    before = [
        (synthesize(text, voice, tmp_path / f"{i}.wav"), text)
        for i, (text, voice) in enumerate(
            (
                ("turn on airplane mode", "en-gb+f2"),
                ("stop the music", "en-us+f4"),
                ("what is the air quality today", "en-us"),
                ("pay my phone bill", "en-us+f3"),
            )
        )
    ]
    clip = synthesize("when does the sun rise tomorrow", "en-gb", tmp_path / "clip.wav")
    alignment._decoder.cache_clear()
    first = [(p.phone, p.start_s, p.end_s) for p in align(clip, "when does the sun rise tomorrow")]
    alignment._decoder.cache_clear()
    for wav, text in before:
        align(wav, text)
    after = [(p.phone, p.start_s, p.end_s) for p in align(clip, "when does the sun rise tomorrow")]
    assert [p[0] for p in after] == [p[0] for p in first]
    assert after != first  # the same phones, other timings
