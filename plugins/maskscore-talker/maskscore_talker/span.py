"""The part's audio span in frame A's waveform, the phrase the talker says there, and the splice.

Speech's `mask_part` of the mouth is the mouth's actions: in audio, the mouth is the words. The
span is the stretch of frame A's audio holding the words that differ from frame B's: the words
frame A and B share at the start and end stay frame A's own samples; the words between are
resynthesized to say frame B's words between the same shared ends (the instruction's phrase, so
the result says frame B's transcript). Word times come from pocketsphinx aligning frame A's
audio against its transcript, the alignment the speech modality decodes with. A span boundary
between two words lies in the middle of the pause between them; at either end of the clip it is
the clip's end, so leading and trailing silence go with the span.
"""

from __future__ import annotations

import attrs
import numpy as np

from maskscore_core.speech.alignment import align_samples, forget_previous_utterances
from maskscore_core.speech.audio import SAMPLE_RATE
from maskscore_core.speech.phonemes import words_of

FADE_S = 0.005  # the talker's samples fade in and out over this much, so the seams do not click


class SpanError(ValueError):
    """Frame A's audio, or the two transcripts, give no span to resynthesize."""


@attrs.frozen
class Span:
    """Samples [start, end) of frame A's audio are replaced by speech of `phrase`; `words` is
    what the spliced result says in full, the phrase from its word number `first` on."""

    start: int
    end: int
    replaced: str
    phrase: str
    words: str
    first: int


def word_times(samples: np.ndarray, transcript: str, source: str = "frame A's audio") -> list[tuple[str, float, float]]:
    """(word, start s, end s) of each word of `transcript` in the 16 kHz samples."""
    forget_previous_utterances()  # an alignment must not depend on what was aligned before it
    phones = align_samples(samples, transcript, source=source)
    groups: list[list] = []
    for phone in phones:
        if groups and groups[-1][0] == phone.word:
            groups[-1][2] = phone.end_s
        else:
            groups.append([phone.word, phone.start_s, phone.end_s])
    words = words_of(transcript)
    if [g[0] for g in groups] != words:
        raise SpanError(f"the alignment of {source} gave words {[g[0] for g in groups]}, not {words}")
    return [(w, float(s), float(e)) for w, s, e in groups]


def find(samples: np.ndarray, transcript_a: str, phrase_b: str) -> Span:
    """The span of frame A's audio whose words differ from frame B's, and the words to say there."""
    a, b = words_of(transcript_a), words_of(phrase_b)
    if a == b:
        raise SpanError(f"frame A already says {phrase_b!r}: there is no span to resynthesize")
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    # A pure insertion or deletion leaves one side empty: take in a shared neighbour word.
    if head + tail >= min(len(a), len(b)):
        if head:
            head -= 1
        else:
            tail -= 1
    times = word_times(samples, transcript_a)
    start_s = 0.0 if head == 0 else (times[head - 1][2] + times[head][1]) / 2
    last = len(a) - tail - 1
    end_s = samples.size / SAMPLE_RATE if tail == 0 else (times[last][2] + times[last + 1][1]) / 2
    start, end = int(round(start_s * SAMPLE_RATE)), int(round(end_s * SAMPLE_RATE))
    return Span(start, end, " ".join(a[head:len(a) - tail]), " ".join(b[head:len(b) - tail]),
                " ".join(a[:head] + b[head:len(b) - tail] + a[len(a) - tail:]), head)


def to_int16(audio: np.ndarray, rate: int) -> np.ndarray:
    """Float samples in [-1, 1] at `rate` as 16-bit integers (clipped), faded in and out at the edges."""
    audio = np.asarray(audio, dtype=np.float64).reshape(-1)
    if audio.size == 0 or not np.all(np.isfinite(audio)):
        raise SpanError(f"the talker returned {'no samples' if audio.size == 0 else 'NaN or infinite samples'}")
    fade = min(int(FADE_S * rate), audio.size // 2)
    if fade:
        ramp = np.linspace(0.0, 1.0, fade, endpoint=False)
        audio = audio.copy()
        audio[:fade] *= ramp
        audio[audio.size - fade:] *= ramp[::-1]
    return np.clip(np.round(audio * 32767.0), -32768, 32767).astype(np.int16)


def splice(samples: np.ndarray, span: Span, inserted: np.ndarray) -> np.ndarray:
    """Frame A's samples with [start, end) replaced by `inserted` (int16 at 16 kHz); every sample
    outside the span is frame A's, bit for bit."""
    return np.concatenate([samples[:span.start], np.asarray(inserted, dtype=np.int16), samples[span.end:]])
