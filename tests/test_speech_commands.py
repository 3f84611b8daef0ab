"""The built-in command set: enough distinct commands, every word pronounceable by the aligner."""

from __future__ import annotations

from maskscore_core.speech import load_commands
from maskscore_core.speech.phonemes import pronouncing_dictionary, words_of


def test_command_set_is_large_distinct_and_in_the_dictionary():
    commands = load_commands()
    assert len(commands) >= 300
    assert len(set(commands)) == len(commands)
    dictionary = pronouncing_dictionary()
    for command in commands:
        assert command == command.strip().lower()
        assert all(word in dictionary for word in words_of(command)), command


def test_commands_are_short_spoken_phrases():
    lengths = [len(c.split()) for c in load_commands()]
    assert max(lengths) <= 10
    assert sum(lengths) / len(lengths) < 7


def test_load_commands_returns_a_fresh_list():
    first = load_commands()
    first.clear()
    assert load_commands()
