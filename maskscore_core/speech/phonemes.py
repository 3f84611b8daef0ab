"""Words -> ARPAbet phones from pocketsphinx's own pronouncing dictionary, and default timing.

The dictionary is the one pocketsphinx aligns with (`model/en-us/cmudict-en-us.dict` inside the
pocketsphinx package), so the text path and the audio path agree on the phone set. A word gets
its first listed pronunciation. Without audio (the text modality) phones get default durations
from a simple rule per phone class (`CLASS_DURATIONS_S`), measured as the mean duration of each
class in pocketsphinx alignments of espeak-ng speech (voices en-us and en-gb+f2) of 30 of the
built-in commands (1,000 phones).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from maskscore_core.speech.errors import SpeechError, UnknownWordError
from maskscore_core.speech.phone import Phone

# The CMU phone set (39 phones) grouped by how long they are held.
PHONE_CLASSES: dict[str, tuple[str, ...]] = {
    "vowel": ("AA", "AE", "AH", "AO", "EH", "ER", "IH", "IY", "UH", "UW"),
    "diphthong": ("AW", "AY", "EY", "OW", "OY"),
    "stop": ("B", "D", "G", "K", "P", "T"),
    "affricate": ("CH", "JH"),
    "fricative": ("DH", "F", "HH", "S", "SH", "TH", "V", "Z", "ZH"),
    "nasal": ("M", "N", "NG"),
    "liquid": ("L", "R"),
    "glide": ("W", "Y"),
}
PHONES: tuple[str, ...] = tuple(sorted(p for group in PHONE_CLASSES.values() for p in group))

# Default durations (seconds) at rate 1.0: see the module docstring for where they come from.
CLASS_DURATIONS_S: dict[str, float] = {
    "vowel": 0.080,
    "diphthong": 0.130,
    "stop": 0.075,
    "affricate": 0.130,
    "fricative": 0.080,
    "nasal": 0.070,
    "liquid": 0.075,
    "glide": 0.090,
}
# Silence before the first and after the last phone of a text-timed utterance (measured the same
# way: pocketsphinx puts the first phone at the clip's start, and espeak-ng ends with ~0.29 s).
LEAD_SILENCE_S = 0.0
TAIL_SILENCE_S = 0.29

_WORD_EDGE_PUNCTUATION = ".,;:!?\"()[]{}"
_VARIANT = re.compile(r"\(\d+\)$")


def dictionary_path() -> Path:
    """Where pocketsphinx keeps its en-US pronouncing dictionary."""
    import pocketsphinx

    return Path(pocketsphinx.get_model_path("en-us/cmudict-en-us.dict"))


@functools.cache
def pronouncing_dictionary() -> dict[str, tuple[str, ...]]:
    """word -> phones of its first pronunciation (alternates like `word(2)` are skipped)."""
    path = dictionary_path()
    if not path.is_file():
        raise SpeechError(f"pocketsphinx pronouncing dictionary not found at {path}")
    entries: dict[str, tuple[str, ...]] = {}
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            fields = line.split()
            if len(fields) < 2 or _VARIANT.search(fields[0]):
                continue
            entries.setdefault(fields[0], tuple(fields[1:]))
    return entries


def base_word(name: str) -> str:
    """A dictionary entry name without its pronunciation variant suffix: 'on(2)' -> 'on'."""
    return _VARIANT.sub("", name)


def words_of(text: str) -> list[str]:
    """The lower-case words of a transcript, with punctuation around words removed."""
    if not isinstance(text, str):
        raise SpeechError(f"expected transcript text, got {type(text).__name__}")
    words = [w.strip(_WORD_EDGE_PUNCTUATION) for w in text.lower().split()]
    words = [w for w in words if w]
    if not words:
        raise SpeechError(f"transcript {text!r} holds no words")
    return words


def word_phones(word: str) -> tuple[str, ...]:
    """The phones of one (lower-case) word; UnknownWordError if the dictionary lacks it."""
    try:
        return pronouncing_dictionary()[word]
    except KeyError:
        raise UnknownWordError(f"word {word!r} is not in the pocketsphinx en-US dictionary ({dictionary_path().name})") from None


def check_words(text: str) -> list[str]:
    """The words of text, after checking each one is in the dictionary (naming the first that is not)."""
    words = words_of(text)
    for word in words:
        word_phones(word)
    return words


def text_phones(text: str) -> list[str]:
    """All phones of a transcript in order: 'turn on' -> ['T', 'ER', 'N', 'AA', 'N']."""
    return [p for word in words_of(text) for p in word_phones(word)]


def phone_class(phone: str) -> str:
    """The class (vowel, stop, ...) of an ARPAbet phone; SpeechError for anything else."""
    for name, members in PHONE_CLASSES.items():
        if phone in members:
            return name
    raise SpeechError(f"unknown phone {phone!r}; expected one of the CMU set: {' '.join(PHONES)}")


def phone_durations(phones: list[str], rate: float = 1.0) -> list[float]:
    """Default duration of each phone (seconds): its class's duration divided by the speaking rate."""
    if not rate > 0:
        raise SpeechError(f"speaking rate must be positive, got {rate}")
    return [CLASS_DURATIONS_S[phone_class(p)] / rate for p in phones]


def phone_timeline(text_or_phones: str | list[str], rate: float = 1.0) -> list[Phone]:
    """Timed phones for speech we have no audio of, using the default durations.

    Accepts a transcript (words are kept on each Phone) or a list of phones (word left empty).
    The first phone starts after LEAD_SILENCE_S; `timeline_duration_s` adds the tail silence.
    """
    if isinstance(text_or_phones, str):
        pairs = [(word, p) for word in words_of(text_or_phones) for p in word_phones(word)]
    else:
        pairs = [("", p) for p in text_or_phones]
        if not pairs:
            raise SpeechError("no phones given")
    durations = phone_durations([p for _, p in pairs], rate)
    timeline, t = [], LEAD_SILENCE_S / rate
    for (word, phone), duration in zip(pairs, durations):
        timeline.append(Phone(phone, round(t, 6), round(t + duration, 6), word))
        t += duration
    return timeline


def word_boundaries_s(text: str, rate: float = 1.0) -> list[float]:
    """When each word of `text` ends, spoken at the default phone durations (seconds from the
    first phone's start): the places a transcript can be cut without cutting a word."""
    ends, t = [], 0.0
    for word in words_of(text):
        t += sum(phone_durations(list(word_phones(word)), rate))
        ends.append(round(t, 6))
    return ends


def timeline_duration_s(timeline: list[Phone], rate: float = 1.0) -> float:
    """Length of a text-timed utterance: its last phone's end plus the tail silence."""
    if not timeline:
        raise SpeechError("empty phone timeline")
    return round(timeline[-1].end_s + TAIL_SILENCE_S / rate, 6)
