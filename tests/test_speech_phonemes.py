"""Dictionary phones and default phone timing for text without audio."""

from __future__ import annotations

import pytest

from maskscore_core.speech import UnknownWordError, phone_durations, phone_timeline, text_phones
from maskscore_core.speech.errors import SpeechError
from maskscore_core.speech.phonemes import (
    CLASS_DURATIONS_S,
    PHONES,
    TAIL_SILENCE_S,
    dictionary_path,
    pronouncing_dictionary,
    timeline_duration_s,
)


def test_dictionary_is_pocketsphinx_own():
    assert dictionary_path().name == "cmudict-en-us.dict"
    assert "pocketsphinx" in dictionary_path().parts
    assert len(pronouncing_dictionary()) > 100_000


def test_kitchen_lights_phones_match_the_dictionary():
    # First listed pronunciations; pocketsphinx may align 'on' to its variant on(2) = AO N.
    expected = "T ER N  AA N  DH AH  K IH CH AH N  L AY T S".split()
    assert text_phones("turn on the kitchen lights") == expected
    assert text_phones("Turn on the kitchen lights.") == expected


def test_every_dictionary_phone_is_in_the_cmu_set():
    used = {p for phones in pronouncing_dictionary().values() for p in phones}
    assert used == set(PHONES)


def test_unknown_word_is_named():
    with pytest.raises(UnknownWordError, match="'blorptastic'"):
        text_phones("turn on the blorptastic lights")


def test_empty_text_is_refused():
    with pytest.raises(SpeechError, match="no words"):
        text_phones("  ... ")


def test_durations_follow_the_class_rule_and_rate():
    assert phone_durations(["AA", "AY", "T", "S"]) == [
        CLASS_DURATIONS_S["vowel"],
        CLASS_DURATIONS_S["diphthong"],
        CLASS_DURATIONS_S["stop"],
        CLASS_DURATIONS_S["fricative"],
    ]
    assert phone_durations(["AA"], rate=2.0) == [CLASS_DURATIONS_S["vowel"] / 2]
    with pytest.raises(SpeechError, match="rate"):
        phone_durations(["AA"], rate=0)
    with pytest.raises(SpeechError, match="unknown phone 'QX'"):
        phone_durations(["QX"])


def test_timeline_is_contiguous_and_keeps_words():
    timeline = phone_timeline("call mom")
    assert [p.phone for p in timeline] == "K AO L M AA M".split()
    assert [p.word for p in timeline] == ["call"] * 3 + ["mom"] * 3
    for before, after in zip(timeline, timeline[1:]):
        assert after.start_s == pytest.approx(before.end_s)
        assert after.end_s > after.start_s
    assert timeline_duration_s(timeline) == pytest.approx(timeline[-1].end_s + TAIL_SILENCE_S)
    faster = phone_timeline("call mom", rate=2.0)
    assert faster[-1].end_s == pytest.approx(timeline[-1].end_s / 2)


def test_timeline_from_bare_phones():
    timeline = phone_timeline(["M", "AA"])
    assert [(p.phone, p.word) for p in timeline] == [("M", ""), ("AA", "")]
    with pytest.raises(SpeechError, match="no phones"):
        phone_timeline([])
