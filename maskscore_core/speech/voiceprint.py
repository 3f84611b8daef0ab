"""A voiceprint: text-independent statistics of a waveform that tell speakers apart.

Two measurements, both averaged over the voiced frames of the utterance so that what is said
matters little and who says it matters most:

- pitch: the median fundamental frequency (F0), in octaves (log2 Hz), from the normalised
  autocorrelation of 40 ms frames (60-400 Hz, a frame counts as voiced when its autocorrelation
  peak is at least VOICING_THRESHOLD and its energy within 35 dB of the loudest frame);
- timbre: the mean mel-frequency cepstrum (coefficients 1..N_CEPSTRA of 26 mel bands,
  50-7,600 Hz; C0, the loudness, is left out), the long-term shape of the vocal tract filter.

Everything is plain numpy/scipy on 16 kHz 16-bit samples: deterministic, no model, no network.
"""

from __future__ import annotations

import functools

import attrs
import numpy as np
from scipy.fft import dct

from maskscore_core.speech.audio import SAMPLE_RATE
from maskscore_core.speech.errors import SpeechError

FRAME_S = 0.040
HOP_S = 0.010
F0_RANGE_HZ = (60.0, 400.0)
VOICING_THRESHOLD = 0.6
ENERGY_FLOOR_DB = 35.0
MEL_BANDS = 26
MEL_RANGE_HZ = (50.0, 7600.0)
N_CEPSTRA = 12
MIN_VOICED_FRAMES = 10


class VoiceprintError(SpeechError):
    """A waveform too short or too quiet to measure a voice from."""


@attrs.frozen(eq=False)
class Voiceprint:
    """Median F0 in octaves (log2 Hz) and the mean cepstrum (N_CEPSTRA values) of voiced frames."""

    log2_f0: float
    cepstrum: np.ndarray
    voiced_frames: int


def _frames(samples: np.ndarray) -> np.ndarray:
    size, hop = int(FRAME_S * SAMPLE_RATE), int(HOP_S * SAMPLE_RATE)
    if samples.size < size:
        return np.zeros((0, size))
    count = 1 + (samples.size - size) // hop
    index = np.arange(size)[None, :] + hop * np.arange(count)[:, None]
    return samples[index]


@functools.cache
def _mel_filters(size: int) -> np.ndarray:
    """(MEL_BANDS, size // 2 + 1) triangular mel filters over the rfft bins."""

    def mel(hz):
        return 2595.0 * np.log10(1.0 + np.asarray(hz) / 700.0)

    edges_mel = np.linspace(mel(MEL_RANGE_HZ[0]), mel(MEL_RANGE_HZ[1]), MEL_BANDS + 2)
    edges_hz = 700.0 * (10.0 ** (edges_mel / 2595.0) - 1.0)
    bins = np.fft.rfftfreq(size, 1.0 / SAMPLE_RATE)
    filters = np.zeros((MEL_BANDS, bins.size))
    for k in range(MEL_BANDS):
        low, centre, high = edges_hz[k : k + 3]
        rising = (bins - low) / (centre - low)
        falling = (high - bins) / (high - centre)
        filters[k] = np.clip(np.minimum(rising, falling), 0.0, None)
    return filters


def _pitch(frames: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(F0 in Hz, autocorrelation peak) per frame."""
    centred = frames - frames.mean(axis=1, keepdims=True)
    size = centred.shape[1]
    spectrum = np.fft.rfft(centred, 2 * size, axis=1)
    acf = np.fft.irfft(np.abs(spectrum) ** 2, axis=1)[:, :size]
    acf /= np.maximum(acf[:, :1], 1e-12)
    lag_min = int(SAMPLE_RATE / F0_RANGE_HZ[1])
    lag_max = int(SAMPLE_RATE / F0_RANGE_HZ[0])
    window = acf[:, lag_min : lag_max + 1]
    best = window.argmax(axis=1)
    return SAMPLE_RATE / (best + lag_min), window[np.arange(len(window)), best]


def voiceprint(samples: np.ndarray, what: str = "waveform") -> Voiceprint:
    """The voiceprint of 16 kHz mono samples; VoiceprintError naming `what` when the waveform
    has fewer than MIN_VOICED_FRAMES voiced frames."""
    x = np.asarray(samples, dtype=np.float64)
    if x.ndim != 1:
        raise VoiceprintError(f"{what}: a voiceprint needs 1-D mono samples, got shape {x.shape}")
    frames = _frames(x)
    if len(frames) == 0:
        raise VoiceprintError(f"{what}: {x.size / SAMPLE_RATE:.3f} s of audio is shorter than one {FRAME_S} s frame")
    energy_db = 10.0 * np.log10(np.mean(frames**2, axis=1) + 1e-9)
    f0, peak = _pitch(frames)
    voiced = (peak >= VOICING_THRESHOLD) & (energy_db >= energy_db.max() - ENERGY_FLOOR_DB)
    if int(voiced.sum()) < MIN_VOICED_FRAMES:
        raise VoiceprintError(
            f"{what}: only {int(voiced.sum())} voiced frames (need {MIN_VOICED_FRAMES}); too short or no voice"
        )
    windowed = frames[voiced] * np.hamming(frames.shape[1])
    power = np.abs(np.fft.rfft(windowed, axis=1)) ** 2
    log_mel = np.log(power @ _mel_filters(frames.shape[1]).T + 1e-6)
    cepstra = dct(log_mel, type=2, norm="ortho", axis=1)[:, 1 : N_CEPSTRA + 1]
    return Voiceprint(
        log2_f0=float(np.median(np.log2(f0[voiced]))),
        cepstrum=cepstra.mean(axis=0),
        voiced_frames=int(voiced.sum()),
    )
