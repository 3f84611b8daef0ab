"""Whose body a waveform speaks with: its voice, identified among the edit's enrolled subjects.

Enrolment: the subjects an edit instance knows, frame A's (the subject being edited) and the
other subject's (`instance.other`, the ladder's wrong subject), each with the voiceprint of its
own clip as this plugin encodes it (its transcript in its voice). `speech.speakers.identify`
then names the speaker: frame A's subject whenever the voice matches theirs, else the other
subject if it matches theirs, else nobody. The speech drives that speaker's clip: frame A's
clip, the other subject's clip, or for a voice nobody enrolled has, frame A's clip as a neutral
body (`spoken_mesh.neutral_body`: ANNY's default phenotype, no accessories).

A very short utterance can carry too little voice to measure (espeak-ng's male voices say "stop"
with under 10 voiced frames): a subject whose clip is such is enrolled with ENROLMENT_TEXT in
their voice instead, and such a waveform is spoken by frame A's subject, since it cannot rule
them out.
"""

from __future__ import annotations

import functools

from maskscore_core.plugin.records import EditInstance, Target
from maskscore_core.speech.speakers import identify
from maskscore_core.speech.spoken_mesh import neutral_body
from maskscore_core.speech.voiceprint import Voiceprint, VoiceprintError, voiceprint

UNKNOWN_SPEAKER = "unknown"
# Enrols a subject whose own clip is too short to measure a voice from: a built-in command.
ENROLMENT_TEXT = "what is the weather in boston tomorrow"


@functools.lru_cache(maxsize=256)
def _spoken_voiceprint(transcript: str, voice: str) -> Voiceprint:
    from maskscore_core.plugin.records import Subject

    from .representation import synthesize

    def spoken(text: str) -> Voiceprint:
        target = Target(label="enrolment", subject=Subject("enrolment", {}, voice=voice), states=(), transcript=text)
        return voiceprint(synthesize(target).samples, f"enrolment speech {text!r} in {voice!r}")

    try:
        return spoken(transcript)
    except VoiceprintError:
        return spoken(ENROLMENT_TEXT)


def enrolled(instance: EditInstance) -> list[tuple[str, Voiceprint, Target]]:
    """(subject id, voiceprint, clip) of frame A's subject, then of the other subject if any."""
    targets = [instance.a] + ([instance.other] if instance.other is not None else [])
    out, seen = [], set()
    for target in targets:
        if target.subject.subject_id not in seen:
            seen.add(target.subject.subject_id)
            out.append((target.subject.subject_id, _spoken_voiceprint(target.transcript, target.subject.voice), target))
    return out


def speaker_body(samples, instance: EditInstance, what: str = "speech candidate") -> tuple[str, tuple]:
    """(who speaks, the body states the speech drives): see the module docstring."""
    voices = enrolled(instance)
    try:
        print_of_samples = voiceprint(samples, what)
    except VoiceprintError:  # too little voice to rule frame A's subject out
        return instance.a.subject.subject_id, instance.a.states
    speaker = identify(print_of_samples, [(name, print_) for name, print_, _ in voices], instance.a.subject.subject_id)
    if speaker is None:
        return UNKNOWN_SPEAKER, neutral_body(instance.a.states)
    return speaker, next(target.states for name, _, target in voices if name == speaker)
