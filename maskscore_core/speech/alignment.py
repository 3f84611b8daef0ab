"""Forced alignment of a transcript to speech audio with pocketsphinx 5 (offline, en-US model).

Two passes, as pocketsphinx documents: `set_align_text` + decode gives the word segmentation,
then `set_alignment` + a second decode of the same audio gives phone segments. pocketsphinx
works in 10 ms frames, so phone times are multiples of 0.01 s. Audio is processed as one whole
utterance (`full_utt=True`), which normalises cepstra over that utterance alone, so a result does
not depend on what was aligned before it in the same process.

Synthetic speech (espeak-ng) has stretches of exact digital zero, whose log-energy features
derail the aligner (docs/speech.md, "Measured", has the counts). So a fixed, seeded Gaussian noise floor (`NOISE_FLOORS`, in 16-bit units; 32 is about
-60 dBFS) is added before alignment. When an attempt fails, the next one in `ATTEMPTS` is
tried: other noise levels, then 0.2 s of silence padded at both ends, then a decoder without
pocketsphinx's lattice best-path rescoring. Over the whole command set in all eight voices this
aligns every clip (docs/speech.md, "Measured"). Everything is seeded and fixed, so the
result is deterministic.

Forced alignment is not a transcript verifier: pocketsphinx sometimes fits a wrong transcript
too (docs/speech.md, "Measured"). Scores must
therefore come from comparing the resulting face motion, not from whether alignment succeeded.
"""

from __future__ import annotations

import functools
import threading
from pathlib import Path

import numpy as np

from maskscore_core.speech.audio import load_speech_audio
from maskscore_core.speech.errors import AlignmentError
from maskscore_core.speech.phone import Phone
from maskscore_core.speech.phonemes import base_word, check_words, dictionary_path

FRAME_S = 0.01  # pocketsphinx's frame shift
NOISE_FLOORS = (32.0, 16.0, 64.0)
NOISE_SEED = 0
PAD_S = 0.2
# (best-path rescoring on?, seconds of silence padded at each end, noise floor), in order.
ATTEMPTS: tuple[tuple[bool, float, float], ...] = tuple(
    (bestpath, pad, level) for bestpath in (True, False) for pad in (0.0, PAD_S) for level in NOISE_FLOORS
)
_lock = threading.Lock()


@functools.cache
def _decoder(bestpath: bool = True):
    """One pocketsphinx decoder per process and setting (loading the acoustic model is the slow part)."""
    import pocketsphinx

    config = pocketsphinx.Config(
        hmm=pocketsphinx.get_model_path("en-us/en-us"),
        dict=str(dictionary_path()),
        lm=None,
        loglevel="FATAL",
        bestpath=bestpath,
    )
    decoder = pocketsphinx.Decoder(config)
    return decoder, decoder.get_cmn()


def _is_filler(word: str) -> bool:
    """Silence and noise tokens pocketsphinx may insert between words (<sil>, ++NOISE++, ...)."""
    return word.startswith(("<", "[", "+"))


def _decode(decoder, audio: bytes) -> None:
    decoder.start_utt()
    decoder.process_raw(audio, full_utt=True)
    decoder.end_utt()


def with_noise_floor(samples: np.ndarray, level: float) -> bytes:
    """int16 samples plus seeded Gaussian noise of standard deviation `level`, as raw bytes."""
    noise = np.random.default_rng(NOISE_SEED).normal(0.0, level, samples.size)
    noisy = np.clip(np.round(samples.astype(np.float64) + noise), -32768, 32767)
    return noisy.astype("<i2").tobytes()


def _align_words(audio: bytes, words: list[str], bestpath: bool = True) -> list[tuple[str, list[tuple[str, int, int]]]]:
    """pocketsphinx's two passes: (word, [(phone, start frame, frame count)]) per spoken word.

    Raises RuntimeError (from pocketsphinx) or AlignmentError when the words do not come back.
    """
    decoder, initial_cmn = _decoder(bestpath)
    # pocketsphinx adapts its cepstral mean from utterance to utterance; restoring the initial
    # mean makes every alignment independent of what this process aligned before.
    decoder.set_cmn(initial_cmn)
    decoder.set_align_text(" ".join(words))
    _decode(decoder, audio)
    decoder.set_alignment()
    _decode(decoder, audio)
    aligned = [(base_word(w.name), [(p.name, p.start, p.duration) for p in w]) for w in decoder.get_alignment()]
    spoken = [(word, segments) for word, segments in aligned if not _is_filler(word)]
    if [word for word, _ in spoken] != words:
        raise AlignmentError(f"pocketsphinx aligned only {[w for w, _ in spoken]}")
    return spoken


def forget_previous_utterances() -> None:
    """Drop the cached decoder, so that the next alignment starts from pocketsphinx's initial
    state. Workaround: restoring the decoder's cepstral mean per utterance is not enough to make
    it forget the previous one (docs/speech.md, "Measured": some
    other decoder state carries over), so
    without it an alignment would depend on what was aligned before it. Callers whose results
    must not depend on order (trials, candidates) call it before each alignment;
    tests/test_speech_speakers.py fails once pocketsphinx stops remembering, the signal to drop
    this workaround."""
    _decoder.cache_clear()


def align_samples(samples: np.ndarray, text: str, *, source: str = "audio") -> list[Phone]:
    """Phones of `text` timed against 16 kHz mono int16 samples (silences left out)."""
    words = check_words(text)
    samples = np.asarray(samples, dtype=np.int16)
    if samples.ndim != 1 or samples.size < int(0.1 / FRAME_S) * 160:
        raise AlignmentError(f"{source} is too short to align ({samples.size} samples at 16 kHz; need at least 0.1 s)")
    failures = []
    with _lock:
        for bestpath, pad_s, level in ATTEMPTS:
            pad = np.zeros(int(round(pad_s / FRAME_S)) * 160, dtype=np.int16)
            try:
                spoken = _align_words(with_noise_floor(np.concatenate([pad, samples, pad]), level), words, bestpath)
                break
            except (RuntimeError, AlignmentError) as exc:
                failures.append(f"bestpath={bestpath} pad={pad_s:g}s noise={level:g}: {exc}")
        else:
            raise AlignmentError(f"pocketsphinx could not align {text!r} to {source} ({len(failures)} attempts; first: {failures[0]})")
    offset, end = pad.size // 160, samples.size / 16_000
    phones = [
        Phone(name, round(_clip((start - offset) * FRAME_S, end), 6), round(_clip((start + duration - offset) * FRAME_S, end), 6), word)
        for word, segments in spoken
        for name, start, duration in segments
        if name != "SIL"
    ]
    phones = [p for p in phones if p.end_s > p.start_s]
    if not phones:
        raise AlignmentError(f"pocketsphinx returned no phones for {text!r} in {source}")
    return phones


def _clip(time_s: float, end_s: float) -> float:
    """A time moved back inside the clip [0, end_s] (padding can put edges outside it)."""
    return min(max(time_s, 0.0), end_s)


def align(wav_path: str | Path, text: str) -> list[Phone]:
    """Word and phone timings of `text` spoken in the wav file (any rate; resampled to 16 kHz)."""
    return align_samples(load_speech_audio(wav_path), text, source=str(wav_path))
