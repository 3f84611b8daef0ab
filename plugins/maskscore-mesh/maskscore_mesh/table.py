"""The mesh reward table (docs/design.md's MeshEditReward columns): file paths relative to the dataset root.

Row layout, checks and paths are the core's (`maskscore_core.dataset.reward_tables`); this module only
names the mesh table's own input column.
"""

from __future__ import annotations

from maskscore_core.plugin.records import EditInstance
from maskscore_core.dataset.reward_tables import conditioning_image, make_row, relative_to_root, resolve

__all__ = ["relative_to_root", "resolve", "reward_row"]


def reward_row(instance: EditInstance, input_value, candidate_values, scores, dimension, root, ctx) -> dict:
    """One MeshEditReward row."""
    columns = {"input_mesh": str(input_value), "conditioning_image": conditioning_image(instance, root, ctx)}
    return make_row("mesh", instance, columns, [str(v) for v in candidate_values], scores, dimension)
