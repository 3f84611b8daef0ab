"""espeak-ng synthesis into 16 kHz mono 16-bit wav files."""

from __future__ import annotations

import wave

import pytest

from maskscore_core.speech import SynthesisError, synthesize, voices
from maskscore_core.speech.audio import SAMPLE_RATE, duration_s


def test_kitchen_lights_is_a_16k_mono_wav_of_plausible_length(tmp_path):
    path = synthesize("turn on the kitchen lights", "en-us", tmp_path / "a.wav")
    with wave.open(str(path), "rb") as w:
        assert (w.getnchannels(), w.getsampwidth(), w.getframerate()) == (1, 2, SAMPLE_RATE)
    # five words at espeak's default 175 words per minute, plus its trailing pause
    assert 1.0 < duration_s(path) < 2.5


def test_same_text_and_voice_give_identical_bytes(tmp_path):
    a = synthesize("call mom", "en-gb+f2", tmp_path / "a.wav")
    b = synthesize("call mom", "en-gb+f2", tmp_path / "b.wav")
    assert a.read_bytes() == b.read_bytes()


def test_voice_speed_and_pitch_change_the_audio(tmp_path):
    base = synthesize("call mom", "en-us", tmp_path / "base.wav").read_bytes()
    assert synthesize("call mom", "en-us+f3", tmp_path / "f3.wav").read_bytes() != base
    assert synthesize("call mom", "en-us", tmp_path / "hi.wav", pitch=80).read_bytes() != base
    slow = synthesize("call mom", "en-us", tmp_path / "slow.wav", speed=100)
    assert duration_s(slow) > duration_s(tmp_path / "base.wav")


def test_voices_are_espeak_voices(tmp_path):
    listed = voices()
    assert len(listed) >= 4 and len(set(listed)) == len(listed)
    for voice in listed:
        assert duration_s(synthesize("stop", voice, tmp_path / "v.wav")) > 0.2


def test_every_voice_is_its_own_voice(tmp_path):
    """Each built-in voice's variant really applies (espeak-ng silently ignores an unknown variant
    and any variant after `en-gb`), and no two built-in voices sound the same."""
    from maskscore_core.speech.synthesis import FEMALE_VOICES, MALE_VOICES, PARTLY_TOLD_APART, VOICES

    assert VOICES == MALE_VOICES + FEMALE_VOICES and all(pair <= set(VOICES) for pair in PARTLY_TOLD_APART)
    text = "turn on the kitchen lights"
    spoken = {voice: synthesize(text, voice, tmp_path / f"{voice}.wav").read_bytes() for voice in VOICES}
    assert len(set(spoken.values())) == len(VOICES)
    for voice in VOICES:
        language, _, variant = voice.partition("+")
        if variant:
            assert spoken[voice] != synthesize(text, language, tmp_path / "plain.wav").read_bytes(), voice


def test_unknown_voice_is_named(tmp_path):
    with pytest.raises(SynthesisError, match="'xx-nowhere'"):
        synthesize("stop", "xx-nowhere", tmp_path / "a.wav")


def test_bad_arguments(tmp_path):
    with pytest.raises(SynthesisError, match="nothing to say"):
        synthesize("   ", "en-us", tmp_path / "a.wav")
    with pytest.raises(SynthesisError, match="speed"):
        synthesize("stop", "en-us", tmp_path / "a.wav", speed=5)
    with pytest.raises(SynthesisError, match="pitch"):
        synthesize("stop", "en-us", tmp_path / "a.wav", pitch=150)
    with pytest.raises(SynthesisError, match="voice"):
        synthesize("stop", "--help", tmp_path / "a.wav")


def test_missing_espeak_is_reported(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no espeak-ng on PATH
    with pytest.raises(SynthesisError, match="espeak-ng is not installed"):
        synthesize("stop", "en-us", tmp_path / "a.wav")
