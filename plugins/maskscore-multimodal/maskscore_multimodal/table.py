"""The MultimodalEditReward row (docs/design.md's columns, in order; schemas/MultimodalEditReward.json).

input_data and output_candidates are the asset folders; before the row is written each folder
gets its content realised in the row's modality (frame A in the input modality, candidates in
the output modality), so the files a row names are exactly what was scored.
"""

from __future__ import annotations

from maskscore_core.plugin.records import EditInstance
from maskscore_core.dataset.reward_tables import make_row

from .pairs import choose_pair
from .representation import realise_folder, resolve


def multimodal_row(instance: EditInstance, input_value, candidate_values, scores, dimension, root, ctx) -> dict:
    pair = choose_pair(instance, ctx)
    realise_folder(resolve(input_value, root), pair.input, root, ctx)
    for value in candidate_values:
        realise_folder(resolve(value, root), pair.output, root, ctx)
    columns = {"input_modality": pair.input, "output_modality": pair.output, "input_data": str(input_value)}
    return make_row("multimodal", instance, columns, [str(v) for v in candidate_values], scores, dimension)
