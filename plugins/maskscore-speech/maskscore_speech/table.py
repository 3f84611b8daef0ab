"""The SpeechEditReward row (docs/design.md's columns, in order; see schemas/SpeechEditReward.json),
and where the speech files go: paths relative to the dataset root. Row layout, checks and paths
are the core's (`maskscore_core.dataset.reward_tables`).
"""

from __future__ import annotations

from pathlib import Path

from maskscore_core.dataset import reward_tables
from maskscore_core.plugin.records import EditInstance
from maskscore_core.dataset.reward_tables import conditioning_image, make_row, relative_to_root

from .representation import SpeechAssetError

__all__ = ["relative_to_root", "resolve", "speech_row"]


def resolve(value, root) -> Path:
    """A table value back to a file path (relative values are under the dataset root)."""
    return reward_tables.resolve(value, root, "a speech table value", SpeechAssetError)


def speech_row(instance: EditInstance, input_value, candidate_values, scores, dimension, root, ctx) -> dict:
    columns = {"input_audio": str(input_value), "conditioning_image": conditioning_image(instance, root, ctx)}
    return make_row("speech", instance, columns, [str(v) for v in candidate_values], scores, dimension)
