"""pocketsphinx forced alignment of espeak-ng speech: words in order, phones from the dictionary,
10 ms timings inside the clip, deterministic, and clear errors for bad audio or text."""

from __future__ import annotations

import time
import wave

import numpy as np
import pytest

from maskscore_core.speech import AlignmentError, AudioFileError, UnknownWordError, align, synthesize
from maskscore_core.speech.audio import duration_s, read_wav, write_wav
from maskscore_core.speech.phonemes import pronouncing_dictionary

TEXT = "turn on the kitchen lights"
OTHER = "set a timer for ten minutes"


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    folder = tmp_path_factory.mktemp("speech")
    return {
        "us": synthesize(TEXT, "en-us", folder / "us.wav"),
        "gb": synthesize(TEXT, "en-gb+f2", folder / "gb.wav"),
        "other": synthesize(OTHER, "en-us+m3", folder / "other.wav"),
    }


def _pronunciations(word: str) -> set[tuple[str, ...]]:
    """Every pronunciation the dictionary file lists for a word, variants included."""
    from maskscore_core.speech.phonemes import dictionary_path

    found = set()
    with dictionary_path().open(encoding="utf-8") as handle:
        for line in handle:
            name, *phones = line.split()
            if name == word or name.startswith(word + "("):
                found.add(tuple(phones))
    return found


@pytest.mark.parametrize("clip", ["us", "gb"])
def test_words_in_order_with_monotone_times_inside_the_clip(clips, clip):
    start = time.perf_counter()
    phones = align(clips[clip], TEXT)
    print(f"align {clip}: {time.perf_counter() - start:.3f} s for {duration_s(clips[clip]):.2f} s of audio")
    words = [p.word for i, p in enumerate(phones) if i == 0 or phones[i - 1].word != p.word]
    assert words == TEXT.split()
    for before, after in zip(phones, phones[1:]):
        assert after.start_s >= before.end_s - 1e-9
    assert all(p.end_s > p.start_s for p in phones)
    assert phones[0].start_s >= 0 and phones[-1].end_s <= duration_s(clips[clip]) + 1e-9
    for phone in phones:  # pocketsphinx's 10 ms frames
        assert round(phone.start_s * 100, 6) == round(phone.start_s * 100)
    for word in TEXT.split():
        assert tuple(p.phone for p in phones if p.word == word) in _pronunciations(word)


def test_kitchen_lights_phones(clips):
    assert " ".join(p.phone for p in align(clips["us"], TEXT)) == "T ER N AO N DH AH K IH CH AH N L AY T S"
    assert pronouncing_dictionary()["on"] == ("AA", "N")  # the aligner picked the variant on(2)


def test_alignment_is_deterministic_whatever_came_before(clips):
    first = align(clips["us"], TEXT)
    align(clips["other"], OTHER)
    assert align(clips["us"], TEXT) == first


def test_other_sample_rates_and_stereo_are_resampled(clips, tmp_path):
    samples, rate = read_wav(clips["us"])
    from maskscore_core.speech.audio import resample

    high = resample(samples, rate, 44_100)
    path = tmp_path / "stereo44k.wav"
    with wave.open(str(path), "wb") as w:
        w.setnchannels(2)
        w.setsampwidth(2)
        w.setframerate(44_100)
        w.writeframes(np.repeat(high[:, None], 2, axis=1).astype("<i2").tobytes())
    original = align(clips["us"], TEXT)
    again = align(path, TEXT)
    assert [p.phone for p in again] == [p.phone for p in original]
    assert max(abs(a.start_s - b.start_s) for a, b in zip(again, original)) <= 0.03


def test_wrong_transcript_fails_clearly(clips):
    with pytest.raises(AlignmentError, match="could not align 'set a timer for ten minutes'"):
        align(clips["us"], OTHER)


def test_unknown_word_is_named_before_aligning(clips):
    with pytest.raises(UnknownWordError, match="'kitchenator'"):
        align(clips["us"], "turn on the kitchenator lights")


def test_missing_file(tmp_path):
    with pytest.raises(AudioFileError, match="not found.*nothing.wav"):
        align(tmp_path / "nothing.wav", TEXT)


def test_corrupt_file(tmp_path):
    path = tmp_path / "corrupt.wav"
    path.write_bytes(b"RIFF\x00\x00\x00\x00WAVEjunkjunkjunk")
    with pytest.raises(AudioFileError, match="corrupt.wav is not a readable wav file"):
        align(path, TEXT)


def test_eight_bit_and_empty_files(tmp_path):
    path = tmp_path / "eight.wav"
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(1)
        w.setframerate(16_000)
        w.writeframes(bytes(1600))
    with pytest.raises(AudioFileError, match="8-bit"):
        align(path, TEXT)
    empty = tmp_path / "empty.wav"
    with wave.open(str(empty), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16_000)
    with pytest.raises(AudioFileError, match="no audio samples"):
        align(empty, TEXT)


def test_too_short_audio(tmp_path):
    path = write_wav(tmp_path / "click.wav", np.full(400, 1000, dtype=np.int16))
    with pytest.raises(AlignmentError, match="too short"):
        align(path, TEXT)


def test_fallback_attempts_align_a_clip_the_first_attempt_misses(tmp_path):
    # Measured: espeak-ng en-us+f3 saying this command fails pocketsphinx's first attempt
    # (noise floor 32, no padding, best-path rescoring) and aligns on a later one.
    from maskscore_core.speech import alignment
    from maskscore_core.speech.audio import load_speech_audio

    wav = synthesize(OTHER, "en-us+f3", tmp_path / "f3.wav")
    samples = load_speech_audio(wav)
    first_bestpath, _pad, first_level = alignment.ATTEMPTS[0]
    with pytest.raises((RuntimeError, AlignmentError)):
        alignment._align_words(alignment.with_noise_floor(samples, first_level), OTHER.split(), first_bestpath)
    phones = align(wav, OTHER)
    assert [p.word for i, p in enumerate(phones) if i == 0 or phones[i - 1].word != p.word] == OTHER.split()
    assert 0.0 <= phones[0].start_s and phones[-1].end_s <= duration_s(wav)


def test_alignment_does_not_depend_on_what_was_aligned_before(tmp_path):
    """Trials must not depend on the order they are made in: aligning clips forwards and
    backwards (with a fresh decoder in between) gives the same phones for each clip."""
    from maskscore_core import speech
    from maskscore_core.speech import alignment

    commands = speech.load_commands()[:4]
    voices = speech.voices()
    clips = [(speech.synthesize(c, voices[i % len(voices)], tmp_path / f"{i}.wav"), c) for i, c in enumerate(commands)]
    forwards = [speech.align(wav, text) for wav, text in clips]
    alignment._decoder.cache_clear()
    backwards = [speech.align(wav, text) for wav, text in reversed(clips)][::-1]
    assert forwards == backwards
