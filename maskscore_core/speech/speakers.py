"""Who is speaking: a waveform's voice matched against the voices enrolled for an edit.

Audio says whose body speaks only through the voice. An edit knows its subjects (frame A's, the
one being edited, and for the ladder another one); each is enrolled with the voiceprint of its
own speech (`voiceprint.voiceprint`). A waveform *matches* an enrolled voice when its median F0
is within F0_TOLERANCE_OCT and its mean cepstrum within CEPSTRUM_TOLERANCE of it: both
tolerances sit just above the largest difference measured between two utterances of one voice,
and a voice still fails to match itself in a few sentence pairs, mostly pairs with a very short
command ("cancel", "stop"); docs/speech.md has the figures, per built-in voice.

`identify` then answers:
- the presumed speaker (frame A's subject) when the voice matches theirs: an edit keeps its
  subject unless the voice rules that subject out, so voices too alike to tell apart never move
  the speech onto someone else's body;
- otherwise the enrolled speaker whose voice it matches most closely;
- otherwise None: a voice that is none of the enrolled (the caller decodes it onto a neutral
  body, see `spoken_mesh.neutral_body`).
"""

from __future__ import annotations

from typing import Iterable

import numpy as np

from maskscore_core.speech.errors import SpeechError
from maskscore_core.speech.voiceprint import Voiceprint

F0_TOLERANCE_OCT = 0.25
CEPSTRUM_TOLERANCE = 12.0


class SpeakerError(SpeechError):
    """Enrolment that cannot identify anyone (nobody enrolled, the presumed speaker missing)."""


def voice_distance(a: Voiceprint, b: Voiceprint) -> float:
    """How far apart two voiceprints are in units of their tolerances: <= 1 means they match."""
    return max(
        abs(a.log2_f0 - b.log2_f0) / F0_TOLERANCE_OCT,
        float(np.linalg.norm(a.cepstrum - b.cepstrum)) / CEPSTRUM_TOLERANCE,
    )


def identify(voice: Voiceprint, enrolled: Iterable[tuple[str, Voiceprint]], presumed: str) -> str | None:
    """The enrolled speaker `voice` belongs to (see the module docstring), or None."""
    enrolled = list(enrolled)
    names = [name for name, _ in enrolled]
    if not enrolled:
        raise SpeakerError("no voice is enrolled; a speaker cannot be identified")
    if presumed not in names:
        raise SpeakerError(f"the presumed speaker {presumed!r} is not enrolled (enrolled: {', '.join(names)})")
    distances = {name: voice_distance(voice, print_) for name, print_ in enrolled}
    if distances[presumed] <= 1.0:
        return presumed
    name = min(names, key=lambda n: (distances[n], n))
    return name if distances[name] <= 1.0 else None
