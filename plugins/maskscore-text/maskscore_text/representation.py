"""The text representation: a transcript, and the mouth motion it implies.

Text reaches the mesh through speech without sound: the transcript's phones (pocketsphinx's
pronouncing dictionary), laid out with default durations, become visemes and then ANNY facial
activations (T, 52) at the video frame rate (`maskscore_core.speech`). The representative mesh is
frame A's body (phenotype, pose) wearing the text-derived expression at frame B's time.
"""

from __future__ import annotations

import functools
import math

import attrs
import numpy as np

from maskscore_core.records import Decoded, EditInstance, Target

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


@functools.cache
def spoken_columns() -> np.ndarray:
    """The facial actions speech moves (mouth and jaw): every action some viseme sets."""
    from maskscore_core.speech.visemes import viseme_vectors

    return np.flatnonzero(np.any(np.stack(list(viseme_vectors().values())) != 0, axis=0))


def spoken_only(activations: np.ndarray) -> np.ndarray:
    """The activations of the actions speech moves, the others zero: speech cannot move brows,
    eyes or lids, so both sides are compared on what it can move."""
    out = np.zeros_like(np.asarray(activations, dtype=np.float64))
    out[:, spoken_columns()] = np.asarray(activations)[:, spoken_columns()]
    return out


DEFAULT_SAMPLED_FRAMES = 4


def sampled_rows(length: int, count: int) -> np.ndarray:
    """Rows at the relative times (k + 0.5) / count of the timeline: the frames
    render-and-compare looks at."""
    if count <= 0:
        raise ValueError(f"the number of sampled frames must be positive, got {count}")
    rows = np.minimum(((np.arange(count) + 0.5) / count * length).astype(int), length - 1)
    return np.unique(rows)  # a clip shorter than `count` frames gives each frame once


def _mesh(state) -> np.ndarray:
    from maskscore_core.reference_mesh import get_reference_mesh

    return get_reference_mesh().vertices([state])[0]  # one state per call: bit-identical per frame


def _speaking(state, row: np.ndarray):
    """`state` with its mouth and jaw actions replaced by an activation row."""
    expression = state.expression.copy()
    expression[spoken_columns()] = np.clip(row[spoken_columns()], 0.0, 1.0)
    return attrs.evolve(state, expression=expression)


def timeline_length(instance: EditInstance) -> int:
    """Frames of the comparison timeline: the longer of the two clips (at the clips' frame rate)."""
    return max(len(instance.a.states), len(instance.b.states))


def on_timeline(activations: np.ndarray, length: int) -> np.ndarray:
    """The activations at absolute times 0 .. length-1 frames: cut, or padded with the rest pose."""
    out = np.zeros((length, activations.shape[1]))
    count = min(length, len(activations))
    out[:count] = activations[:count]
    return out


def decode_activations(instance: EditInstance, activations: np.ndarray, count: int) -> Decoded:
    """Face activations on frame A's body: how candidates and references alike reach the mesh.

    References use the same body as candidates (frame A's clip, resampled onto the timeline by
    relative time as the ladder does) and differ only in where the activations come from (the
    video: the truth), so render-and-compare sees the mouth and jaw, not the head motion that
    differs between two clips. Everything lives on one timeline of absolute time from the start
    (`timeline_length` frames), so a candidate that starts with frame B's words agrees with B for
    as long as it says them, whatever it says afterwards.
    """
    length = timeline_length(instance)
    acts = on_timeline(np.asarray(activations, dtype=np.float64), length)
    body = np.round(np.linspace(0, len(instance.a.states) - 1, length)).astype(int)
    picked = sampled_rows(length, count)
    return Decoded(
        vertices=_mesh(_speaking(instance.a.states[body[length // 2]], acts[length // 2])),
        frames=tuple(_mesh(_speaking(instance.a.states[body[r]], acts[r])) for r in picked),
        activations=spoken_only(acts),
    )


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
    if which not in ("a", "b"):
        raise TextError(f"reference must be 'a' or 'b', got {which!r}")
    return decode_activations(instance, video_activations(instance.a if which == "a" else instance.b), frames)


def part_actions(part: str) -> tuple[str, ...]:
    """Text's mask of a part: the part's facial actions that speech moves (mouth and jaw).
    Parts speech cannot move (eyes, brows, hair, ...) raise PartError."""
    from maskscore_core import parts
    from maskscore_core.body import get_body_model

    parts.check_active(part)
    spoken = {get_body_model().action_names[i] for i in spoken_columns()}
    actions = tuple(name for name in parts.part_actions(part) if name in spoken)
    if not actions:
        raise parts.PartError(f"text moves only the mouth and jaw; the part {part!r} has none of those actions")
    return actions
