"""The pose reward table (docs/design.md's PoseEditReward columns).

Poses are stored in the table itself (lists of floats); the conditioning image is a file under the
dataset root. Row layout and checks are the core's (`maskscore_core.dataset.reward_tables`).
"""

from __future__ import annotations

from maskscore_core.plugin.records import EditInstance
from maskscore_core.dataset.reward_tables import conditioning_image, make_row

from .representation import to_column


def reward_row(instance: EditInstance, input_value, candidate_values, scores, dimension, root, ctx) -> dict:
    """One PoseEditReward row."""
    candidates = [to_column(v) for v in candidate_values]
    columns = {"input_pose": to_column(input_value), "conditioning_image": conditioning_image(instance, root, ctx)}
    return make_row("pose", instance, columns, candidates, scores, dimension)
