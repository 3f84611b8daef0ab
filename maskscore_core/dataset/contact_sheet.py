"""`maskscore show`: one bench row drawn as a contact sheet.

Left to right: frame A, frame B, then each candidate in ladder order, every tile a shaded render
of the ANNY mesh from the front with the target part's pixel mask tinted over it, and under each
candidate its three scores as stored in the bench (instruction_following, consistency, overall).
Candidates are decoded with `decode_to_mesh` (a clip shows its middle frame; a depth candidate
its depth map), so the sheet shows what the metric compared.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from maskscore_core import vocab

from maskscore_core.plugin import manager as plugins
from maskscore_core.plugin.records import Decoded, EditInstance
from maskscore_core.dataset import reader
from maskscore_core.dataset.shard import make_context
from maskscore_core.body.parts import pixel_mask
from maskscore_core.metric.render import get_renderer
from maskscore_core.metric.views import ViewConfig
from maskscore_core.metric import foreign_mesh
from maskscore_core.metric.framing import Framing, row_framing
from maskscore_core.metric.render import BACKGROUND_RGB, LIGHT_DIRECTION, SKIN_RGB

MASK_TINT = np.array([255, 64, 64], dtype=np.float64)
MASK_ALPHA = 0.45
CAPTION_LINES = 4
LINE_HEIGHT = 12
MARGIN = 6


class ContactSheetError(RuntimeError):
    """A row that cannot be drawn (unknown key, candidate that decodes to nothing drawable)."""


class UnknownKeyError(ContactSheetError, LookupError):
    """A key that no row of the bench has."""


def _front_view(resolution: int):
    # One view at Hammersley u = 0.5 (pitch 0) and yaw 0: straight at the face.
    return ViewConfig(count=1, resolution=resolution, offset=(0.5, 0.0))


def _mesh_tile(vertices: np.ndarray, part: str, resolution: int, framing: Framing | None = None) -> np.ndarray:
    vertices = vertices if framing is None else framing.apply(vertices)
    renderer = get_renderer(_front_view(resolution))
    rgb = renderer.render_rgb(vertices, resolution, resolution, view_index=0).astype(np.float64)
    mask = pixel_mask(renderer.render(vertices), part)[0]
    rgb[mask] = (1.0 - MASK_ALPHA) * rgb[mask] + MASK_ALPHA * MASK_TINT
    return np.clip(np.rint(rgb), 0, 255).astype(np.uint8)


def _foreign_tile(decoded: Decoded, resolution: int, framing: Framing | None = None) -> np.ndarray:
    """A mesh of its own topology (an image-to-3D model's output): its own triangles (not the ANNY
    fit the metric compares, `foreign_mesh.shown`), shaded as `Renderer.render_rgb` shades,
    without a part tint or a dark inside of the mouth (it has no part labels)."""
    result = foreign_mesh.render(foreign_mesh.shown(decoded), _front_view(resolution), framing)
    shade = 0.15 + 0.85 * np.clip(np.abs(result.normals[0] @ LIGHT_DIRECTION), 0.0, 1.0)
    rgb = np.where(result.coverage[0][..., None], shade[..., None] * SKIN_RGB, BACKGROUND_RGB)
    return np.clip(np.rint(rgb), 0, 255).astype(np.uint8)


def _depth_tile(depth: np.ndarray, resolution: int) -> np.ndarray:
    view = np.asarray(depth[0] if depth.ndim == 3 else depth, dtype=np.float64)
    covered = view > 0
    grey = np.zeros_like(view)
    if covered.any():
        near, far = view[covered].min(), view[covered].max()
        grey[covered] = 255.0 * (1.0 - (view[covered] - near) / max(far - near, 1e-9)) * 0.8 + 40.0
    image = Image.fromarray(np.clip(np.rint(grey), 0, 255).astype(np.uint8)).resize((resolution, resolution), Image.NEAREST)
    return np.stack([np.asarray(image)] * 3, axis=-1)


def decoded_tile(decoded: Decoded, part: str, resolution: int, what: str, framing: Framing | None = None) -> np.ndarray:
    """The picture of one decoded candidate or reference, its mesh moved by `framing` (the row's:
    depth maps are drawn with it already)."""
    if decoded.faces is not None:
        return _foreign_tile(decoded, resolution, framing)
    if decoded.vertices is not None:
        return _mesh_tile(decoded.vertices, part, resolution, framing)
    if decoded.frames:
        return _mesh_tile(decoded.frames[len(decoded.frames) // 2], part, resolution, framing)
    if decoded.depth is not None:
        return _depth_tile(decoded.depth, resolution)
    raise ContactSheetError(f"{what} decodes to neither a mesh nor a depth map; nothing to draw")


def _target_tile(target, part: str, resolution: int, framing: Framing) -> np.ndarray:
    from maskscore_core.body.reference_mesh import get_reference_mesh

    return _mesh_tile(get_reference_mesh().vertices([target.state])[0], part, resolution, framing)


def _row_scores(root: Path, key: str) -> tuple[str, dict, dict[str, list[float]]]:
    """(modality, first row, {dimension: scores}) of the bench rows of `key`."""
    keys, found = [], []
    for m, row in reader.iter_rows(root):
        keys.append(row["key"])
        if row["key"] == key:
            found.append((m, row))
    if not found:
        examples = ", ".join(repr(k) for k in sorted(set(keys))[:3]) or "none: the bench has no rows"
        raise UnknownKeyError(f"no row with key {key!r} in {root}; its keys are the shards' `key` column, e.g. {examples}")
    modality, first = found[0]
    return modality, first, {row["dimension"]: list(row["scores"]) for _, row in found}


def draw_sheet(root: Path, key: str, out: Path, resolution: int = 192) -> Path:
    """Draw the contact sheet of bench row `key` into `out` (PNG); `resolution` is the tile size."""
    root = Path(root)
    settings = reader.render_settings(root)  # a corrupt card fails here, before anything is drawn
    modality, row, scores = _row_scores(root, key)
    instance: EditInstance = reader.load_instance(root, key)
    part = instance.instruction.part
    framing = row_framing(instance)  # every tile as the row is scored
    with tempfile.TemporaryDirectory(prefix="maskscore-show-") as workdir:
        # Assets are read back with the bench's own render settings (depth maps have that shape),
        # and before anything is drawn: a row that cannot be read fails at once.
        ctx = make_context(Path(workdir), 0, {**settings, "dataset_root": str(root)})
        candidates = reader.load_candidates(root, modality, row, ctx)
        tiles = [("frame A (input)", _target_tile(instance.a, part, resolution, framing), None),
                 ("frame B (target)", _target_tile(instance.b, part, resolution, framing), None)]
        for n, candidate in enumerate(candidates):
            decoded = plugins.call("decode_to_mesh", modality, asset=candidate.asset, instance=instance, ctx=ctx)
            tile = decoded_tile(decoded, part, resolution, f"candidate {n + 1}", framing)
            tile_scores = {d: scores[d][n] for d in vocab.DIMENSIONS if scores.get(d)}
            tiles.append((f"rung {candidate.rung}", tile, tile_scores))
    title = f"{key} | {modality} | {instance.instruction.task_type} | \"{instance.instruction.text}\""
    return _compose(tiles, title, out, resolution)


def _compose(tiles, title: str, out: Path, resolution: int) -> Path:
    font = ImageFont.load_default()
    width = MARGIN + len(tiles) * (resolution + MARGIN)
    height = 2 * LINE_HEIGHT + MARGIN + resolution + CAPTION_LINES * LINE_HEIGHT + MARGIN
    sheet = Image.new("RGB", (width, height), (255, 255, 255))
    draw = ImageDraw.Draw(sheet)
    draw.text((MARGIN, MARGIN // 2), title[: width // 6], fill=(0, 0, 0), font=font)
    top = 2 * LINE_HEIGHT
    for i, (label, tile, tile_scores) in enumerate(tiles):
        left = MARGIN + i * (resolution + MARGIN)
        sheet.paste(Image.fromarray(tile), (left, top))
        lines = [label]
        if tile_scores:
            short = {"instruction_following": "IF", "consistency": "cons", "overall": "overall"}
            lines += [f"{short[d]}: {v:.3f}" for d, v in tile_scores.items()]
        for j, line in enumerate(lines):
            draw.text((left, top + resolution + 2 + j * LINE_HEIGHT), line, fill=(0, 0, 0), font=font)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(out, format="PNG", optimize=False)
    return out
