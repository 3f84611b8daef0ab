"""The SpeechEditReward row (seed 000's columns, in order; see schemas/SpeechEditReward.json),
and where the speech files go: paths relative to the dataset root."""

from __future__ import annotations

import math
import os
from pathlib import Path

from maskscore_core import vocab
from maskscore_core.records import EditInstance

from .representation import SpeechAssetError

CONDITIONING_DIR = "conditioning"


def relative_to_root(path: Path, ctx) -> str:
    """A written file as the table names it: relative to the dataset root when inside it. The
    root is `ctx.config["dataset_root"]` when the dataset builder sets it, else ctx.workdir."""
    root = Path(ctx.config.get("dataset_root") or ctx.workdir).resolve()
    path = Path(path).resolve()
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def resolve(value, root) -> Path:
    """A table value back to a file path (relative values are under the dataset root)."""
    if not isinstance(value, (str, os.PathLike)) or not str(value):
        raise SpeechAssetError(f"a speech table value must be a non-empty path, got {value!r}")
    path = Path(value)
    return path if path.is_absolute() or root is None else Path(root) / path


def view_config(ctx):
    """The run's views: `ctx.config["views"]` cameras of `ctx.config["resolution"]` pixels."""
    from maskscore_core.views import ViewConfig

    return ViewConfig(count=int(ctx.config.get("views", 8)), resolution=int(ctx.config.get("resolution", 256)))


def conditioning_image(instance: EditInstance, root, ctx) -> str:
    """`conditioning/<key>.png` under root: frame A rendered from the first view, written once
    per key (the same picture every modality plugin writes for that key)."""
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
        iio.imwrite(path, rgb, extension=".png")
    return relative


def speech_row(instance: EditInstance, input_value, candidate_values, scores, dimension, root, ctx) -> dict:
    vocab.check_dimension(dimension)
    scores = [float(s) for s in scores]
    if scores and len(scores) != len(candidate_values):
        raise SpeechAssetError(f"{len(scores)} scores for {len(candidate_values)} candidate audios in row {instance.key!r}")
    if any(not math.isfinite(s) for s in scores):
        raise SpeechAssetError(f"non-finite score among {scores} in row {instance.key!r}")
    return {
        "key": instance.key,
        "instruction": instance.instruction.text,
        "input_audio": str(input_value),
        "conditioning_image": conditioning_image(instance, root, ctx),
        "output_audios": [str(v) for v in candidate_values],
        "scores": scores,
        "task_type": instance.instruction.task_type,
        "dimension": dimension,
    }
