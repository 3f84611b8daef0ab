"""The text representation: a transcript, and the mouth motion it implies.

Text reaches the mesh through speech without sound: the transcript's phones (pocketsphinx's
pronouncing dictionary), laid out with default durations, become visemes and then ANNY facial
activations (T, 52) at the video frame rate (`maskscore_core.speech`). The representative mesh is
frame A's body (phenotype, pose) wearing the text-derived expression at frame B's time. A
transcript has no voice, so unlike speech it cannot say who speaks: every text candidate, the
other subject's words (ladder rung 5) included, is decoded onto frame A's body.
"""

from __future__ import annotations

import math

import numpy as np

from maskscore_core.records import Decoded, EditInstance, Target
from maskscore_core.speech.spoken_mesh import DEFAULT_SAMPLED_FRAMES, decode_activations, spoken_part_actions

MODALITY = "text"


class TextError(ValueError):
    """A transcript that cannot be used (not a string, empty, NaN, unknown words)."""


def check_text(value, what: str = "transcript") -> str:
    """A usable transcript, or a TextError saying why not."""
    if isinstance(value, float) and math.isnan(value):
        raise TextError(f"{what} is NaN, not a string")
    if not isinstance(value, str):
        raise TextError(f"{what} must be a string, got {type(value).__name__}")
    if not value.strip():
        raise TextError(f"{what} is empty")
    return value


def text_activations(text: str, fps: float) -> np.ndarray:
    """(T, 52) facial activations implied by `text` spoken at the default phone durations."""
    from maskscore_core import speech

    return np.asarray(speech.text_activations(check_text(text), fps), dtype=np.float64)


def representative_frame(instance: EditInstance) -> int:
    """The frame whose expression the representative mesh shows: frame B's middle frame."""
    return len(instance.b.states) // 2


def video_activations(target: Target) -> np.ndarray:
    """The truth a text candidate is held to: the target clip's per-frame expressions."""
    return np.stack([state.expression for state in target.states])


def decode_text(text: str, instance: EditInstance, frames: int = DEFAULT_SAMPLED_FRAMES) -> Decoded:
    """Text carries no timing: its phones, in order with their default relative durations, are
    spread over frame B's clip (the clip the instruction's phrase is spoken in), so the
    comparison is about the sequence of mouth shapes, not a speaking rate text cannot know."""
    from maskscore_core.speech.agreement import time_normalise

    paced = time_normalise(text_activations(text, instance.a.fps), len(instance.b.states))
    return decode_activations(instance, paced, frames)


def decode_target(instance: EditInstance, which: str, frames: int = DEFAULT_SAMPLED_FRAMES) -> Decoded:
    """Frame A's or B's reference: that clip's video-derived activations (the truth), on frame
    A's body like every candidate."""
    return decode_activations(instance, video_activations(instance.frame(which)), frames)


def part_actions(part: str) -> tuple[str, ...]:
    """Text's mask of a part: the part's mouth and jaw actions (`spoken_part_actions`)."""
    return spoken_part_actions(part, "text")
