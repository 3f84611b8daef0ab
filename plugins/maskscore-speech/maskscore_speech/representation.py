"""The speech representation: a 16 kHz mono waveform, and the face motion it drives.

Audio reaches the mesh through the face: pocketsphinx aligns the waveform against the words it
is meant to say (the transcript the audio was made from, kept next to the wav as `<name>.txt`;
the instruction's phrase, frame B's transcript, when there is none), the timed phones become
visemes and then ANNY facial activations (T, 52) at the video frame rate
(`maskscore_core.speech`). The words fix which phones; their timing comes from the waveform. The score compares
those audio-derived activations with the video-derived ones (the target clip's expressions)
through SOMA face bone rotations, and renders sampled frames of the speaker's body wearing the
audio-derived mouth: the speaker is identified from the voice among the edit's enrolled subjects
(`speaker_body`), frame A's subject unless the voice rules them out. No lip-sync model, no
speech recogniser.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import attrs
import numpy as np

from maskscore_core.plugin.records import Decoded, EditInstance, Target
from maskscore_core.speech.spoken_mesh import DEFAULT_SAMPLED_FRAMES, decode_activations, spoken_part_actions

MODALITY = "speech"
SAMPLE_RATE = 16_000
SUFFIX = ".wav"


# How this modality's rungs rank (`dataset.protocol`): audio moves only the mouth, so no other
# part can be edited and rung 4 is dropped (it would be frame A's own words: a candidate doing
# nothing, not one editing the wrong part). Rung 5 speaks in another voice, so on another body.
LADDER_LEVELS = {
    "instruction_following": {1: 0, 2: 1, 3: 2, 5: 3},
    "consistency": {1: 0, 2: 0, 3: 0, 5: 1},
    "overall": {1: 0, 2: 1, 3: 2, 5: 3},
    "dropped": {4: "speech moves only the mouth: no other part can be edited (a 'wrong part' candidate"
                   " would be frame A's own words, a candidate that does nothing)"},
}


class SpeechAssetError(ValueError):
    """A waveform that cannot be used (empty, not 1-D, NaN, out of range, wrong rate)."""


def _samples(value) -> np.ndarray:
    arr = np.asarray(value)
    if arr.ndim != 1 or arr.size == 0:
        raise SpeechAssetError(f"a waveform must be a non-empty 1-D sample array, got shape {arr.shape}")
    if arr.dtype == np.int16:
        return arr
    if not np.issubdtype(arr.dtype, np.number):
        raise SpeechAssetError(f"waveform samples must be numbers, got dtype {arr.dtype}")
    if not np.all(np.isfinite(arr)):
        raise SpeechAssetError(f"waveform holds {int((~np.isfinite(arr)).sum())} NaN or infinite samples")
    if arr.min() < -32768 or arr.max() > 32767 or not np.array_equal(arr, np.round(arr)):
        raise SpeechAssetError("waveform samples must be 16-bit integers (-32768..32767)")
    return arr.astype(np.int16)


@attrs.frozen(eq=False)
class Waveform:
    """16-bit mono samples at 16 kHz (the rate pocketsphinx's acoustic model expects), and the
    words they are meant to say ("" when unknown)."""

    samples: np.ndarray = attrs.field(converter=_samples)
    sample_rate: int = SAMPLE_RATE
    transcript: str = ""

    def __attrs_post_init__(self):
        if self.sample_rate != SAMPLE_RATE:
            raise SpeechAssetError(f"waveforms are {SAMPLE_RATE} Hz, got {self.sample_rate} Hz (resample on read)")

    @property
    def duration_s(self) -> float:
        return self.samples.size / self.sample_rate


def synthesize(target: Target) -> Waveform:
    """The target's transcript spoken in its subject's voice (espeak-ng, deterministic)."""
    from maskscore_core.speech.audio import load_speech_audio
    from maskscore_core.speech.synthesis import synthesize as synthesize_wav

    if not target.transcript.strip():
        raise SpeechAssetError(f"target {target.label!r} has no transcript to speak")
    with tempfile.TemporaryDirectory(prefix="maskscore-speech-") as tmp:
        path = synthesize_wav(target.transcript, target.subject.voice, Path(tmp) / "speech.wav")
        return Waveform(load_speech_audio(path), transcript=target.transcript)


def write_waveform(waveform: Waveform, path: Path) -> Path:
    """The wav file, and its transcript next to it (`<name>.txt`) when known."""
    from maskscore_core.speech.audio import write_wav

    write_wav(path, waveform.samples, waveform.sample_rate)
    if waveform.transcript:
        path.with_suffix(".txt").write_text(waveform.transcript + "\n", encoding="utf-8")
    return path


def read_waveform(path: Path) -> Waveform:
    """A wav file as a 16 kHz waveform; missing, corrupt or empty files raise naming the file."""
    from maskscore_core.speech.audio import load_speech_audio

    sidecar = path.with_suffix(".txt")
    transcript = sidecar.read_text(encoding="utf-8").strip() if sidecar.is_file() else ""
    return Waveform(load_speech_audio(path), transcript=transcript)


def audio_activations(waveform: Waveform, phrase: str, fps: float) -> np.ndarray:
    """(T, 52) facial activations driven by the waveform: its phones, aligned by pocketsphinx
    against `phrase`, turned into visemes and actions at `fps`."""
    from maskscore_core.speech import activations_from_phones
    from maskscore_core.speech.alignment import align_samples, forget_previous_utterances

    forget_previous_utterances()  # scores must not depend on the candidates decoded before
    phones = align_samples(waveform.samples, phrase, source="speech candidate")
    return np.asarray(activations_from_phones(phones, fps, waveform.duration_s), dtype=np.float64)


def decode_waveform(waveform: Waveform, instance: EditInstance, frames: int = DEFAULT_SAMPLED_FRAMES) -> Decoded:
    """The face motion the waveform drives, on the body of the speaker its voice identifies
    (`speaker_body`: frame A's subject, the other enrolled subject, or a neutral body)."""
    from .speaker_body import speaker_body

    activations = audio_activations(waveform, waveform.transcript or instance.b.transcript, instance.a.fps)
    _speaker, body = speaker_body(waveform.samples, instance)
    return decode_activations(instance, activations, frames, body)


def decode_target(instance: EditInstance, which: str, frames: int = DEFAULT_SAMPLED_FRAMES) -> Decoded:
    """Frame A's or B's reference: that target's words spoken in its subject's voice, as
    `encode` speaks them, and decoded as any waveform is (`audio_activations`), on frame A's
    body like every candidate of frame A's voice.

    The reference is what the ideal audio drives, not the clip's video-derived activations: those
    also carry what no audio moves (a smile, a sneer) and the clip's own alignment of 22 kHz audio,
    so frame B's exact words in frame A's voice scored well below 1 against them (issue 12)."""
    target = instance.frame(which)
    waveform = synthesize(target)
    return decode_activations(instance, audio_activations(waveform, waveform.transcript, instance.a.fps), frames)


def part_actions(part: str) -> tuple[str, ...]:
    """Speech's mask of a part: the part's mouth and jaw actions (`spoken_part_actions`)."""
    return spoken_part_actions(part, "speech")
