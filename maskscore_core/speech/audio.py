"""16 kHz mono 16-bit PCM wav files: the one audio format the speech package reads and writes.

pocketsphinx's en-US acoustic model is trained on 16 kHz audio, so every wav is brought to that
rate on the way in (resampled with a polyphase filter, which is deterministic) and written at that
rate on the way out. Files are read and written with the standard `wave` module.
"""

from __future__ import annotations

import math
import wave
from pathlib import Path

import numpy as np
from scipy.signal import resample_poly

from maskscore_core.speech.errors import AudioFileError

SAMPLE_RATE = 16_000


def resample(samples: np.ndarray, from_rate: int, to_rate: int = SAMPLE_RATE) -> np.ndarray:
    """int16 samples at from_rate -> int16 samples at to_rate (polyphase, deterministic)."""
    if from_rate <= 0 or to_rate <= 0:
        raise AudioFileError(f"sample rates must be positive, got {from_rate} -> {to_rate}")
    if from_rate == to_rate:
        return np.asarray(samples, dtype=np.int16)
    g = math.gcd(from_rate, to_rate)
    out = resample_poly(np.asarray(samples, dtype=np.float64), to_rate // g, from_rate // g)
    return np.clip(np.round(out), -32768, 32767).astype(np.int16)


def read_wav(path: str | Path) -> tuple[np.ndarray, int]:
    """The samples (mono int16, channels averaged) and sample rate of a 16-bit PCM wav file."""
    path = Path(path)
    if not path.is_file():
        raise AudioFileError(f"audio file not found: {path}")
    try:
        with wave.open(str(path), "rb") as w:
            channels, width, rate, count = w.getnchannels(), w.getsampwidth(), w.getframerate(), w.getnframes()
            raw = w.readframes(count)
    except (wave.Error, EOFError, OSError) as exc:
        raise AudioFileError(f"{path} is not a readable wav file: {exc}") from exc
    if width != 2:
        raise AudioFileError(f"{path} holds {8 * width}-bit samples; only 16-bit PCM wav is supported")
    if count == 0 or not raw:
        raise AudioFileError(f"{path} holds no audio samples")
    samples = np.frombuffer(raw, dtype="<i2")
    if samples.size % channels:
        raise AudioFileError(f"{path} is truncated: {samples.size} samples for {channels} channels")
    if channels > 1:
        samples = np.round(samples.reshape(-1, channels).astype(np.float64).mean(axis=1)).astype(np.int16)
    return samples.astype(np.int16), rate


def load_speech_audio(path: str | Path) -> np.ndarray:
    """A wav file's samples as mono int16 at 16 kHz, resampled if the file has another rate."""
    samples, rate = read_wav(path)
    return resample(samples, rate, SAMPLE_RATE)


def write_wav(path: str | Path, samples: np.ndarray, rate: int = SAMPLE_RATE) -> Path:
    """Write mono int16 samples as a PCM wav file (no timestamps, so the bytes are reproducible)."""
    path = Path(path)
    samples = np.asarray(samples)
    if samples.ndim != 1 or samples.size == 0:
        raise AudioFileError(f"cannot write {path}: expected a non-empty 1-D sample array, got shape {samples.shape}")
    path.parent.mkdir(parents=True, exist_ok=True)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(samples.astype("<i2").tobytes())
    return path


def duration_s(path: str | Path) -> float:
    """Length of a wav file in seconds."""
    samples, rate = read_wav(path)
    return samples.size / rate
