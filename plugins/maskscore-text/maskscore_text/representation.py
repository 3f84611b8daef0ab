"""The text representation: a transcript, and the mouth motion it implies.

Text reaches the mesh through speech without sound: the transcript's phones (pocketsphinx's
pronouncing dictionary), laid out with default durations, become visemes and then ANNY facial
activations (T, 52) at the video frame rate (`maskscore_core.speech`). The representative mesh is
frame A's body (phenotype, pose) wearing the text-derived expression at frame B's time.
"""

from __future__ import annotations

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


def mesh_with_activations(instance: EditInstance, activations: np.ndarray) -> np.ndarray:
    """Frame A's body (phenotype, pose, accessories) with the activation row at frame B's time."""
    from maskscore_core.reference_mesh import get_reference_mesh

    row = min(representative_frame(instance), len(activations) - 1)
    state = attrs.evolve(instance.a.state, expression=np.clip(activations[row], 0.0, 1.0))
    return get_reference_mesh().vertices([state])[0]


def video_activations(target: Target) -> np.ndarray:
    """The truth a text candidate is held to: the target clip's per-frame expressions."""
    return np.stack([state.expression for state in target.states])


def decode_text(text: str, instance: EditInstance) -> Decoded:
    activations = text_activations(text, instance.a.fps)
    return Decoded(vertices=mesh_with_activations(instance, activations), activations=activations)


def decode_target(target: Target) -> Decoded:
    """A reference: the target's own representative mesh and its video-derived activations."""
    from maskscore_core.reference_mesh import get_reference_mesh

    return Decoded(vertices=get_reference_mesh().vertices([target.state])[0], activations=video_activations(target))


def part_actions(part: str) -> tuple[str, ...]:
    """Text's mask of a part: the facial actions of that part that speech can drive."""
    from maskscore_core import parts

    parts.check_active(part)
    actions = tuple(parts.part_actions(part))
    if not actions:
        raise parts.PartError(f"part {part!r} has no facial actions; text drives only face actions")
    return actions


