"""The TextEditReward row (seed 000's columns, in order; see schemas/TextEditReward.json).

Transcripts are stored in the table itself (input_text, output_texts). `write_asset` also
keeps each one as `<name>.txt` under the dataset's assets (so every modality's assets are files
the dataset builder can check) and returns that path; the row reads the transcripts back from
those files. The only file a row names is the conditioning image, an RGB render of frame A
shared by every modality of the key.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from maskscore_core import vocab
from maskscore_core.records import EditInstance

from .representation import TextError, check_text

CONDITIONING_DIR = "conditioning"


SUFFIX = ".txt"


def relative_to_root(path: Path, ctx) -> str:
    """A written file as the builder sees it: relative to the dataset root when inside it. The
    root is `ctx.config["dataset_root"]` when the dataset builder sets it, else ctx.workdir."""
    root = Path(ctx.config.get("dataset_root") or ctx.workdir).resolve()
    path = Path(path).resolve()
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def write_transcript(text: str, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(check_text(text) + "\n", encoding="utf-8")
    return path


def transcript_of(value, root, what: str) -> str:
    """A row value as a transcript: the content of the `.txt` file write_asset returned, or the
    value itself when it is already a transcript."""
    if isinstance(value, (str, os.PathLike)) and str(value).endswith(SUFFIX):
        path = Path(value) if Path(value).is_absolute() or root is None else Path(root) / value
        if not path.is_file():
            raise TextError(f"{what}: transcript file {path} does not exist")
        return check_text(path.read_text(encoding="utf-8").strip(), f"{what} ({path})")
    return check_text(value, what)


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


def text_row(instance: EditInstance, input_value, candidate_values, scores, dimension, root, ctx) -> dict:
    vocab.check_dimension(dimension)
    texts = [transcript_of(v, root, f"candidate transcript {i}") for i, v in enumerate(candidate_values)]
    scores = [float(s) for s in scores]
    if scores and len(scores) != len(texts):
        raise TextError(f"{len(scores)} scores for {len(texts)} candidate transcripts in row {instance.key!r}")
    if any(not math.isfinite(s) for s in scores):
        raise TextError(f"non-finite score among {scores} in row {instance.key!r}")
    return {
        "key": instance.key,
        "instruction": instance.instruction.text,
        "input_text": transcript_of(input_value, root, "input transcript"),
        "conditioning_image": conditioning_image(instance, root, ctx),
        "output_texts": texts,
        "scores": scores,
        "task_type": instance.instruction.task_type,
        "dimension": dimension,
    }
