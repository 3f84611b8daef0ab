"""The ways speech drives the face: from a waveform (aligned phones), from text spoken in a voice
(synthesized, then aligned like any waveform), or from text alone (dictionary phones with default
durations). All end in a (T, 52) activation array at `fps`.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from maskscore_core.speech.alignment import align, forget_previous_utterances
from maskscore_core.speech.audio import duration_s
from maskscore_core.speech.phonemes import phone_timeline, timeline_duration_s
from maskscore_core.speech.visemes import activations_from_phones


def audio_activations(wav_path: str | Path, text: str, fps: float) -> np.ndarray:
    """Facial actions for the whole wav clip, from pocketsphinx phone timings of `text` in it."""
    return activations_from_phones(align(wav_path, text), fps, duration_s(wav_path))


def text_activations(text: str, fps: float, rate: float = 1.0) -> np.ndarray:
    """Facial actions for `text` spoken at the default phone durations (no audio needed)."""
    timeline = phone_timeline(text, rate)
    return activations_from_phones(timeline, fps, timeline_duration_s(timeline, rate))


def voiced_text_activations(text: str, voice: str, fps: float) -> np.ndarray:
    """Facial actions for `text` as `voice` would say it: spoken by espeak-ng in that voice and
    aligned by pocketsphinx, like any waveform. Text alone has no timing; this gives its words
    the pace, pauses and phone lengths of a real (synthetic) speaker, where default phone
    durations drift against any clip. Deterministic; raises AlignmentError when pocketsphinx
    cannot align the words."""
    from maskscore_core.speech.synthesis import synthesize

    with tempfile.TemporaryDirectory(prefix="maskscore-voiced-") as tmp:
        wav_path = synthesize(text, voice, Path(tmp) / "text.wav")
        forget_previous_utterances()  # the result must not depend on what was aligned before
        return activations_from_phones(align(wav_path, text), fps, duration_s(wav_path))
