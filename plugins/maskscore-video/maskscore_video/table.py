"""The VideoEditReward row (seed 000's columns, in order; see schemas/VideoEditReward.json)."""

from __future__ import annotations

import math
from pathlib import PurePosixPath

from maskscore_core import vocab
from maskscore_core.records import EditInstance

from .representation import AUDIO_FILE, VideoError, resolve


def video_row(instance: EditInstance, input_value, candidate_values, scores, dimension, root) -> dict:
    """One row; aligned_audio is the input clip's own audio track (frame A's trial audio)."""
    vocab.check_dimension(dimension)
    scores = [float(s) for s in scores]
    if scores and len(scores) != len(candidate_values):
        raise VideoError(f"{len(scores)} scores for {len(candidate_values)} candidate videos")
    if any(not math.isfinite(s) for s in scores):
        raise VideoError(f"non-finite score among {scores}")
    audio = str(PurePosixPath(str(input_value)) / AUDIO_FILE)
    if root is not None and not resolve(audio, root).is_file():
        raise VideoError(f"the input video {input_value} has no aligned audio ({AUDIO_FILE}) under {root}")
    return {
        "key": instance.key,
        "instruction": instance.instruction.text,
        "input_video": str(input_value),
        "aligned_audio": audio,
        "output_videos": [str(v) for v in candidate_values],
        "scores": scores,
        "task_type": instance.instruction.task_type,
        "dimension": dimension,
    }
