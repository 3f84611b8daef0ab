"""The keypoint reward table (seed 000's KeypointEditReward columns).

Keypoints are stored in the table itself (lists of floats); the conditioning image is a file whose
path is relative to the dataset root.
"""

from __future__ import annotations

from pathlib import Path

from maskscore_core import vocab
from maskscore_core.records import EditInstance

from .representation import to_column

INPUT_COLUMN = "input_keypoints"
OUTPUT_COLUMN = "output_keypoints"
CONDITIONING_DIR = "conditioning"


def view_config(ctx):
    """The run's views: `ctx.config["views"]` cameras of `ctx.config["resolution"]` pixels."""
    from maskscore_core.views import ViewConfig

    return ViewConfig(count=int(ctx.config.get("views", 8)), resolution=int(ctx.config.get("resolution", 256)))


def conditioning_image(instance: EditInstance, root, ctx) -> str:
    """Path (relative to root) of the source frame: an RGB render of frame A from the first view.

    Written once per key as `conditioning/<key>.png`; later modalities of the same key reuse it.
    """
    import imageio.v3 as iio

    from maskscore_core.reference_mesh import get_reference_mesh
    from maskscore_core.render import get_renderer

    relative = f"{CONDITIONING_DIR}/{instance.key}.png"
    path = Path(root) / relative
    if not path.exists():
        config = view_config(ctx)
        vertices = get_reference_mesh().vertices([instance.a.state])[0]
        rgb = get_renderer(config).render_rgb(vertices, config.resolution, config.resolution, view_index=0)
        path.parent.mkdir(parents=True, exist_ok=True)
        iio.imwrite(path, rgb)
    return relative


def reward_row(instance: EditInstance, input_value, candidate_values, scores, dimension, root, ctx) -> dict:
    """One KeypointEditReward row, columns in seed 000's order."""
    candidates = [to_column(v) for v in candidate_values]
    scores = [float(s) for s in scores]
    if scores and len(scores) != len(candidates):
        raise ValueError(f"{len(scores)} scores for {len(candidates)} candidates in row {instance.key!r}")
    return {
        "key": instance.key,
        "instruction": instance.instruction.text,
        INPUT_COLUMN: to_column(input_value),
        "conditioning_image": conditioning_image(instance, root, ctx),
        OUTPUT_COLUMN: candidates,
        "scores": scores,
        "task_type": instance.instruction.task_type,
        "dimension": vocab.check_dimension(dimension),
    }
