"""The VideoEditReward row (docs/design.md's columns, in order; see schemas/VideoEditReward.json)."""

from __future__ import annotations

from pathlib import PurePosixPath

from maskscore_core.plugin.records import EditInstance
from maskscore_core.dataset.reward_tables import make_row

from .representation import AUDIO_FILE, VideoError, resolve


def video_row(instance: EditInstance, input_value, candidate_values, scores, dimension, root) -> dict:
    """One row; aligned_audio is the input clip's own audio track (frame A's trial audio)."""
    audio = str(PurePosixPath(str(input_value)) / AUDIO_FILE)
    if root is not None and not resolve(audio, root).is_file():
        raise VideoError(f"the input video {input_value} has no aligned audio ({AUDIO_FILE}) under {root}")
    columns = {"input_video": str(input_value), "aligned_audio": audio}
    return make_row("video", instance, columns, [str(v) for v in candidate_values], scores, dimension)
