"""`Phone`: one timed phone of an utterance, the unit that alignment and text timing produce.

Both the audio path (pocketsphinx alignment) and the text path (dictionary phones with default
durations) produce lists of Phones, so everything downstream (visemes, activations) is shared.
"""

from __future__ import annotations

import math

import attrs


def _check_times(instance: "Phone", _attribute, _value) -> None:
    if not (math.isfinite(instance.start_s) and math.isfinite(instance.end_s)):
        raise ValueError(f"phone {instance.phone!r} has non-finite times {instance.start_s}..{instance.end_s}")
    if instance.start_s < 0 or instance.end_s < instance.start_s:
        raise ValueError(f"phone {instance.phone!r} has bad times {instance.start_s}..{instance.end_s} s")


@attrs.frozen
class Phone:
    """An ARPAbet phone (CMU set, no stress marks) spoken from start_s to end_s, within `word`."""

    phone: str
    start_s: float = attrs.field(converter=float)
    end_s: float = attrs.field(converter=float, validator=_check_times)
    word: str = ""

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s
