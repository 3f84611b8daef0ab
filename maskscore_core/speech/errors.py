"""The errors the speech package raises, so callers can catch speech problems as one family.

All derive from ValueError: each one means "this input cannot be turned into speech or face
motion", and the message names the word, file or voice at fault.
"""

from __future__ import annotations


class SpeechError(ValueError):
    """Base class for every speech-related input problem."""


class UnknownWordError(SpeechError):
    """A word that is not in pocketsphinx's en-US pronouncing dictionary."""


class AudioFileError(SpeechError):
    """A wav file that is missing, unreadable, empty or in an unsupported sample format."""


class SynthesisError(SpeechError):
    """espeak-ng is missing, rejected the voice, or produced no audio."""


class AlignmentError(SpeechError):
    """pocketsphinx could not force-align the transcript to the audio."""
