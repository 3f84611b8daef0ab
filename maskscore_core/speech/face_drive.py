"""The two ways speech drives the face: from a waveform (aligned phones) or from text alone
(dictionary phones with default durations). Both end in a (T, 52) activation array at `fps`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .alignment import align
from .audio import duration_s
from .phonemes import phone_timeline, timeline_duration_s
from .visemes import activations_from_phones


def audio_activations(wav_path: str | Path, text: str, fps: float) -> np.ndarray:
    """Facial actions for the whole wav clip, from pocketsphinx phone timings of `text` in it."""
    return activations_from_phones(align(wav_path, text), fps, duration_s(wav_path))


def text_activations(text: str, fps: float, rate: float = 1.0) -> np.ndarray:
    """Facial actions for `text` spoken at the default phone durations (no audio needed)."""
    timeline = phone_timeline(text, rate)
    return activations_from_phones(timeline, fps, timeline_duration_s(timeline, rate))
