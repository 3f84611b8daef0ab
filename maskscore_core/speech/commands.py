"""The built-in spoken command set (maskscore_core/data/commands.txt).

Short English assistant commands written for this project in the spirit of the Stanford
digital-assistant and Siri command sets. They are the transcripts of built-in trials, so every
word must be in pocketsphinx's dictionary (alignment needs it) and no line may repeat.
"""

from __future__ import annotations

import functools
from importlib import resources

from maskscore_core.speech.errors import SpeechError
from maskscore_core.speech.phonemes import check_words


@functools.cache
def _commands() -> tuple[str, ...]:
    text = resources.files("maskscore_core").joinpath("data/commands.txt").read_text(encoding="utf-8")
    commands = [line.strip() for line in text.splitlines() if line.strip()]
    seen: set[str] = set()
    for number, command in enumerate(commands, start=1):
        if command in seen:
            raise SpeechError(f"commands.txt line {number}: duplicate command {command!r}")
        seen.add(command)
        try:
            check_words(command)
        except SpeechError as exc:
            raise SpeechError(f"commands.txt line {number} ({command!r}): {exc}") from None
    return tuple(commands)


def load_commands() -> list[str]:
    """All built-in commands, in file order, each checked against the pronouncing dictionary."""
    return list(_commands())
