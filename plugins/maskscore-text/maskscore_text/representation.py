"""The text representation: a transcript, and the mouth motion it implies.

Text reaches the mesh through speech: the transcript is spoken in frame A's subject's voice
(espeak-ng) and its phones timed by pocketsphinx, then visemes and ANNY facial activations
(T, 52) at the video frame rate (`maskscore_core.speech.face_drive.voiced_text_activations`):
the words fix the mouth shapes, the voice their pace. A transcript has no voice of its own, so
unlike speech it cannot say who speaks: every text candidate, the other subject's words (ladder
rung 5) included, is decoded onto frame A's body.
"""

from __future__ import annotations

import math

from maskscore_core.plugin.records import Decoded, EditInstance
from maskscore_core.speech.spoken_mesh import DEFAULT_SAMPLED_FRAMES, decode_activations, spoken_part_actions

MODALITY = "text"


# How this modality's rungs rank (`dataset.protocol`): a transcript moves only the mouth, so no
# other part can be edited and rung 4 is dropped (it would be frame A's own words: a candidate
# doing nothing). A transcript has no voice either, so every candidate speaks on frame A's body and
# rung 5 (another subject's words) is only other words, which can share more mouth shapes with
# B's than a third of B's words do: not known to rank below rung 3, so it is dropped too. Every
# candidate leaves the rest as it is (consistency: all level): 1 > 2 > 3.
LADDER_LEVELS = {
    "instruction_following": {1: 0, 2: 1, 3: 2},
    "consistency": {1: 0, 2: 0, 3: 0},
    "overall": {1: 0, 2: 1, 3: 2},
    "dropped": {4: "a transcript moves only the mouth: no other part can be edited (a 'wrong part'"
                   " candidate would be frame A's own words, a candidate that does nothing)",
                5: "a transcript has no voice: another subject's words are spoken on frame A's body, only other"
                   " words, which can share more mouth shapes with frame B's than a partial edit does"},
}


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


def decode_text(text: str, instance: EditInstance, frames: int = DEFAULT_SAMPLED_FRAMES) -> Decoded:
    """Text carries no timing: its words are spoken in frame A's subject's voice (espeak-ng) and
    timed by pocketsphinx (`speech.face_drive.voiced_text_activations`), so they move the mouth
    at the pace that voice gives them, on frame A's body."""
    from maskscore_core.speech.face_drive import voiced_text_activations

    voiced = voiced_text_activations(text, instance.a.subject.voice, instance.a.fps)
    return decode_activations(instance, voiced, frames)


def decode_target(instance: EditInstance, which: str, frames: int = DEFAULT_SAMPLED_FRAMES) -> Decoded:
    """Frame A's or B's reference: that target's transcript decoded as any text candidate is
    (`decode_text`: spoken in frame A's subject's voice), on frame A's body.

    The reference is what the ideal transcript drives, not the clip's video-derived activations:
    those also carry what no words move (a smile, a sneer) and the clip's own voice and
    alignment, so frame B's exact words scored well below 1 against them (issue 12)."""
    return decode_text(check_text(instance.frame(which).transcript, f"transcript of frame {which.upper()}"), instance, frames)


def part_actions(part: str) -> tuple[str, ...]:
    """Text's mask of a part: the part's mouth and jaw actions (`spoken_part_actions`)."""
    return spoken_part_actions(part, "text")
