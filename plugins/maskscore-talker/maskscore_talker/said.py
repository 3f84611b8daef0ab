"""Whether a spliced candidate says the phrase in the talker's stretch: the check that keeps a
talker's output that is not speech of the phrase from being decoded as if it were.

The speech modality decodes a waveform by forcing pocketsphinx to align it with the words it is
meant to say, and forced alignment can fit words to audio that does not say them when the rest
of the clip is real speech (frame A's own words around the span hold it in place;
docs/editors.md). So before decoding, the talker's stretch must (1) not be silent, (2) be voiced
somewhere (every phrase has a vowel; noise has no pitch), (3) have a pitch that moves (speech
has intonation; a random vocoder's buzz sits at its frame rate, 100 Hz for Token2Wav), and (4)
hold the phrase: aligned against the words the candidate should say, each phrase word must fall
mostly inside the stretch the talker made. A random model's output (silence, noise or buzz)
fails; so does speech that puts the phrase elsewhere.
Wrong words the aligner still fits inside the stretch are not caught: forced alignment is no
transcript verifier (maskscore_core.speech.alignment).
"""

from __future__ import annotations

import numpy as np

from maskscore_core.speech.audio import SAMPLE_RATE

from .span import Span, word_times

SILENT_DBFS = -50.0  # below this RMS level (re full scale) the talker's stretch holds no speech
INSIDE = 0.5  # the least share of each phrase word's aligned time that must lie in the stretch
FRAME, HOP = 480, 160  # 30 ms analysis frames every 10 ms
PITCH_HZ = (60.0, 400.0)  # the voice pitch range searched
VOICED_PEAK = 0.5  # normalised autocorrelation peak that makes a frame voiced
VOICED_LEAST_S = 0.05  # the least voiced time a phrase holds
PITCH_SPREAD = 1.03  # the least ratio of the 90th to the 10th percentile of the voiced frames' pitch


class NotSaidError(ValueError):
    """The talker's stretch of a candidate does not say the phrase."""


def level_dbfs(samples: np.ndarray) -> float:
    rms = float(np.sqrt(np.mean(np.asarray(samples, dtype=np.float64) ** 2))) if samples.size else 0.0
    return 20.0 * np.log10(max(rms, 1e-9) / 32768.0)


def pitches(samples: np.ndarray) -> np.ndarray:
    """The pitch (Hz) of each voiced frame: frames loud enough whose autocorrelation peaks at a
    voice pitch (a periodic sound)."""
    x = np.asarray(samples, dtype=np.float64)
    lags = np.arange(int(SAMPLE_RATE / PITCH_HZ[1]), int(SAMPLE_RATE / PITCH_HZ[0]) + 1)
    found = []
    for start in range(0, x.size - FRAME - lags[-1], HOP):
        frame = x[start:start + FRAME] - x[start:start + FRAME].mean()
        if level_dbfs(frame) < SILENT_DBFS + 10:
            continue
        ahead = np.array([x[start + lag:start + lag + FRAME] - x[start + lag:start + lag + FRAME].mean() for lag in lags])
        peaks = ahead @ frame / np.sqrt(float(frame @ frame) * np.einsum("ij,ij->i", ahead, ahead) + 1e-9)
        if peaks.max() >= VOICED_PEAK:
            found.append(SAMPLE_RATE / lags[int(np.argmax(peaks))])
    return np.asarray(found)


def check(candidate: np.ndarray, span: Span, made: int) -> None:
    """Raise NotSaidError when the `made` samples from span.start of `candidate` do not say the phrase."""
    stretch = candidate[span.start:span.start + made]
    level = level_dbfs(stretch)
    if level < SILENT_DBFS:
        raise NotSaidError(f"the talker's audio for {span.phrase!r} is silent ({level:.0f} dBFS < {SILENT_DBFS:.0f} dBFS)")
    pitch = pitches(stretch)
    voiced = pitch.size * HOP / SAMPLE_RATE
    if voiced < VOICED_LEAST_S:
        raise NotSaidError(f"the talker's audio for {span.phrase!r} is not voiced ({voiced:.2f} s of voice pitch < {VOICED_LEAST_S} s)")
    low, high = np.percentile(pitch, [10, 90])
    if high / low < PITCH_SPREAD:
        raise NotSaidError(f"the talker's audio for {span.phrase!r} is a monotone buzz at {np.median(pitch):.0f} Hz, not speech"
                           f" (pitch spread {high / low:.3f} < {PITCH_SPREAD})")
    try:
        times = word_times(candidate, span.words, "the candidate")
    except ValueError as err:
        raise NotSaidError(f"the candidate does not align with {span.words!r}: {err}") from None
    lo, hi = span.start / SAMPLE_RATE, (span.start + made) / SAMPLE_RATE
    for word, start, end in times[span.first:span.first + len(span.phrase.split())]:
        inside = max(0.0, min(end, hi) - max(start, lo)) / max(end - start, 1e-9)
        if inside < INSIDE:
            raise NotSaidError(f"pocketsphinx places {word!r} at {start:.2f}-{end:.2f} s, {inside:.0%} inside the talker's"
                               f" audio at {lo:.2f}-{hi:.2f} s: it does not say {span.phrase!r}")
