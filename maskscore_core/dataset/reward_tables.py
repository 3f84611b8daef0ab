"""What every modality plugin needs to write its reward-table rows, in one place.

A row's shared columns (key, instruction, scores, task_type, dimension), its column order (the
schema's), the checks on its scores, the paths it stores (relative to the dataset root) and the
conditioning image of frame A are the same for all eight tables; a plugin supplies only its own
input columns and its candidate values.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import attrs

from maskscore_core import vocab

from maskscore_core.dataset import schemas
from maskscore_core.paths import contained
from maskscore_core.plugin.records import EditInstance
from maskscore_core.metric import appearance
from maskscore_core.metric.framing import row_framing
from maskscore_core.metric.render import get_renderer
from maskscore_core.metric.views import ViewConfig
from maskscore_core.plugin.context import RunConfig

CONDITIONING_DIR = "conditioning"


class RewardRowError(ValueError):
    """A reward row that cannot be made (score count, non-finite score, missing column)."""


def dataset_root(ctx) -> Path:
    """Where a dataset's files go: `ctx.config.dataset_root`, else the run's work directory."""
    return Path(ctx.config.dataset_root or ctx.workdir)


def relative_to_root(path: Path, ctx) -> str:
    """`path` as a table stores it: relative to the dataset root when inside it, else absolute."""
    path = Path(path).resolve()
    try:
        return path.relative_to(dataset_root(ctx).resolve()).as_posix()
    except ValueError:
        return str(path)


def resolve(value, root, what: str = "a table value", error: type[Exception] = ValueError) -> Path:
    """The file a table value names, inside the dataset `root` (`paths.contained`: absolute
    values and values that climb out are refused); `error` is the caller's error class. With no
    root (a value not read from a dataset) the value is the path itself."""
    if root is None:
        if not isinstance(value, (str, os.PathLike)) or not str(value):
            raise error(f"{what} must be a non-empty path, got {value!r}")
        return Path(value)
    return contained(root, value, what, error)


def view_config(ctx):
    """The run's cameras: `ctx.config.views` views of `ctx.config.resolution` pixels (the
    RunConfig defaults without a context)."""
    config = ctx.config if ctx is not None else RunConfig()
    return ViewConfig(count=config.views, resolution=config.resolution)


def render_conditioning_image(instance: EditInstance, root, ctx) -> str:
    """Render the source frame, an RGB picture of frame A from the first view, as
    `conditioning/<key>.png` under root (once per key: every modality of the key reuses it), and
    return its path relative to root. The dataset stage calls it before it makes the rows."""
    import imageio.v3 as iio

    relative = f"{CONDITIONING_DIR}/{instance.key}.png"
    path = Path(root) / relative
    if not path.exists():
        picture = frame_a_picture(instance, view_config(ctx))
        path.parent.mkdir(parents=True, exist_ok=True)
        iio.imwrite(path, picture)
    return relative


def conditioning_image(instance: EditInstance, root, ctx) -> str:
    """The conditioning_image column of a row: the path of the picture `render_conditioning_image`
    rendered. Making a row never renders; RewardRowError when it was not rendered first."""
    relative = f"{CONDITIONING_DIR}/{instance.key}.png"
    if not (Path(root) / relative).is_file():
        raise RewardRowError(
            f"row {instance.key!r}: frame A's conditioning image {relative} is not rendered under {root};"
            " render it first (reward_tables.render_conditioning_image; the dataset stage does)"
        )
    return relative


def frame_a_picture(instance: EditInstance, config) -> np.ndarray:
    """(H, W, 3) uint8 picture of frame A from view 0 of `config`, framed as the row is scored
    (`framing.row_framing`: on the subject's head, zoomed for the edited part, so a short or
    tall subject's face is in the picture), shaded with frame A's look (`appearance.picture`: its
    skin, light and backdrop) when it has one, so that a lighting_change, skin_tone or
    background_change row shows the input as it looks; else the renderer's plain picture
    (`Renderer.render_rgb`).

    The look needs the face-id and normal passes, which a one-camera renderer gives for view 0
    alone: view 0 of the Hammersley sequence depends on the count only through the u offset
    (u = offset_u / count), so count 1 with offset_u / count is the same camera.
    """
    from maskscore_core.body.reference_mesh import get_reference_mesh

    state = instance.a.state
    vertices = row_framing(instance).apply(get_reference_mesh().vertices([state])[0])
    size = config.resolution
    if state.appearance is None:
        return get_renderer(config).render_rgb(vertices, size, size, view_index=0)
    first_view = attrs.evolve(config, count=1, offset=(config.offset[0] / config.count, config.offset[1]))
    return appearance.picture(get_renderer(first_view).render(vertices), state.appearance)


def make_row(modality: str, instance: EditInstance, columns: dict, candidates: list, scores, dimension: str) -> dict:
    """One row of `modality`'s reward table, in the schema's column order.

    columns: the table's own input columns (e.g. {"input_mesh": ..., "conditioning_image": ...});
    candidates: the candidate column's values; scores: aligned with candidates, or empty (RL data).
    """
    table = schemas.table_for_modality(modality)
    vocab.check_dimension(dimension)
    scores = [float(s) for s in scores]
    if scores and len(scores) != len(candidates):
        raise RewardRowError(f"{table} row {instance.key!r}: {len(scores)} scores for {len(candidates)} candidates")
    if any(not math.isfinite(s) for s in scores):
        raise RewardRowError(f"{table} row {instance.key!r}: non-finite score among {scores}")
    row = {
        "key": instance.key,
        "instruction": instance.instruction.text,
        **columns,
        schemas.CANDIDATE_COLUMN[table]: list(candidates),
        "scores": scores,
        "task_type": instance.instruction.task_type,
        "dimension": dimension,
    }
    names = schemas.arrow_schema(table).names
    if set(row) != set(names):
        raise RewardRowError(
            f"{table} row {instance.key!r}: columns {sorted(row)} differ from the schema's {sorted(names)}"
        )
    return {name: row[name] for name in names}
