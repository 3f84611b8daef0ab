"""The MultimodalEditReward row (seed 000's columns, in order; schemas/MultimodalEditReward.json).

input_data and output_candidates are the asset folders; before the row is written each folder
gets its content realised in the row's modality (frame A in the input modality, candidates in
the output modality), so the files a row names are exactly what was scored.
"""

from __future__ import annotations

import math

from maskscore_core import vocab
from maskscore_core.records import EditInstance

from .pairs import choose_pair
from .representation import MultimodalError, realise_folder, resolve


def multimodal_row(instance: EditInstance, input_value, candidate_values, scores, dimension, root, ctx) -> dict:
    vocab.check_dimension(dimension)
    scores = [float(s) for s in scores]
    if scores and len(scores) != len(candidate_values):
        raise MultimodalError(f"{len(scores)} scores for {len(candidate_values)} candidates in row {instance.key!r}")
    if any(not math.isfinite(s) for s in scores):
        raise MultimodalError(f"non-finite score among {scores} in row {instance.key!r}")
    pair = choose_pair(instance, ctx)
    realise_folder(resolve(input_value, root), pair.input, root, ctx)
    for value in candidate_values:
        realise_folder(resolve(value, root), pair.output, root, ctx)
    return {
        "key": instance.key,
        "instruction": instance.instruction.text,
        "input_modality": pair.input,
        "output_modality": pair.output,
        "input_data": str(input_value),
        "output_candidates": [str(v) for v in candidate_values],
        "scores": scores,
        "task_type": instance.instruction.task_type,
        "dimension": dimension,
    }
