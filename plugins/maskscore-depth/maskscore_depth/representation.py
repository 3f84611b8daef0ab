"""The depth modality's representation: per-view depth maps (N, H, W) float32, one .exr file.

Depth is the mesh rendered to a depth buffer (docs/design.md): encoding a target renders its reference
mesh with Mitsuba on the run's sphere_hammersley_sequence views, and a depth candidate is
compared with the depth channel of the reference render directly, so decoding only checks that
the maps fit the run's views. Values are metres along each camera ray, 0 off the mesh.

On disk: one OpenEXR file, one float32 channel per view (`view000`, `view001`, ...), ZIP
compression (lossless, byte-identical for identical maps).

Framing: a row is scored zoomed for its edited part (`framing.subject_framing`), so the maps are
drawn for the target's part (`Target.framed_part`). The part is kept with the maps (the asset's
meta, the file's `maskscore_framed_part` attribute; "" for the head alone), and a row that edits
another part refuses them: compared as they are, they would be drawn at another zoom than frame
A and B. Maps that do not say (a file from elsewhere) are taken to be drawn as the row is scored.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from maskscore_core.dataset.reward_tables import view_config
from maskscore_core.plugin.records import Asset, Decoded, Target
from maskscore_core.body.reference_mesh import get_reference_mesh

MODALITY = "depth"
SUFFIX = ".exr"
VIEW_ATTRIBUTE = "maskscore_views"
PART_ATTRIBUTE = "maskscore_framed_part"
FRAMED_PART = "framed_part"  # the asset meta's key


class DepthError(ValueError):
    """Depth maps that do not fit the run's views, hold NaN/negative values, or a bad file."""


def check(depth, ctx, what: str = "depth") -> np.ndarray:
    """float32 (views, resolution, resolution) depth maps, or an error naming what is wrong."""
    config = view_config(ctx)
    expected = (config.count, config.resolution, config.resolution)
    try:
        maps = np.asarray(depth, dtype=np.float32)
    except (TypeError, ValueError) as err:
        raise DepthError(f"{what}: not an array of numbers ({err})") from err
    if maps.shape != expected:
        raise DepthError(
            f"{what}: depth maps of shape {maps.shape}, but this run renders {config.count} views of"
            f" {config.resolution}x{config.resolution} pixels, i.e. {expected}"
        )
    bad = ~np.isfinite(maps)
    if bad.any():
        raise DepthError(f"{what}: {int(bad.sum())} depth values are NaN or infinite")
    if (maps < 0).any():
        raise DepthError(f"{what}: {int((maps < 0).sum())} depth values are negative (0 marks background)")
    return maps


def render_depth(target: Target, ctx) -> np.ndarray:
    """The depth channel of the Mitsuba render of the target's reference mesh, every view, framed
    on the head at rest of the subject it is seen as (`Target.framing_phenotype`: its own, or the
    edited subject's for the ladder's wrong subject), zoomed for its edited part
    (`Target.framed_part`), as render-and-compare frames a row."""
    from maskscore_core.metric.render import get_renderer
    from maskscore_core.metric.framing import subject_framing

    state = target.state
    framing = subject_framing(target.framing_phenotype, target.framed_part)
    vertices = framing.apply(get_reference_mesh().vertices([state])[0])
    return get_renderer(view_config(ctx)).render(vertices, what=f"mesh of {target.label}").depth


def encode(target: Target, ctx) -> Asset:
    meta = {"label": target.label, FRAMED_PART: target.framed_part}
    return Asset(modality=MODALITY, data=render_depth(target, ctx), meta=meta)


def decode(asset: Asset, ctx, part: str | None = None) -> Decoded:
    """Depth candidates live in render space already: checked, then compared as they are, if
    they were drawn for the row's edited `part` (or do not say for which)."""
    what = f"depth {asset.path or asset.meta.get('label', '')}".strip()
    if part is not None and FRAMED_PART in asset.meta and asset.meta[FRAMED_PART] != part:
        drawn = asset.meta[FRAMED_PART]
        raise DepthError(
            f"{what}: maps drawn for {'the ' + repr(drawn) + ' part' if drawn else 'the head alone'}, but this row"
            f" edits the {part!r} part and is framed for it; encode the target with framed_part={part!r}"
        )
    return Decoded(depth=check(asset.data, ctx, what=what))


def write(depth: np.ndarray, path: Path, ctx, framed_part: str | None = None) -> Path:
    """The maps as one .exr; `framed_part` ("" or None: the head alone) in its header."""
    import OpenEXR

    maps = check(depth, ctx, what=f"depth for {path.name}")
    channels = {f"view{i:03d}": np.ascontiguousarray(m) for i, m in enumerate(maps)}
    header = {"compression": OpenEXR.ZIP_COMPRESSION, "type": OpenEXR.scanlineimage, VIEW_ATTRIBUTE: len(maps),
              PART_ATTRIBUTE: framed_part or ""}  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    with OpenEXR.File(header, channels) as exr:
        exr.write(str(path))
    return path


def read(path: Path, ctx) -> np.ndarray:
    """The depth maps of an .exr written by `write`, checked against the run's views."""
    import OpenEXR

    if not path.is_file():
        raise DepthError(f"depth file {str(path)!r} does not exist")
    if path.suffix.lower() != SUFFIX:
        raise DepthError(f"depth file {str(path)!r} is not an {SUFFIX} file")
    try:
        with OpenEXR.File(str(path)) as exr:
            channels = {name: np.array(channel.pixels) for name, channel in exr.channels().items()}
    except Exception as err:
        raise DepthError(f"depth file {str(path)!r} cannot be read as OpenEXR: {type(err).__name__}: {err}") from err
    names = sorted(channels)
    expected = [f"view{i:03d}" for i in range(len(names))]
    if names != expected:
        raise DepthError(f"depth file {str(path)!r} has channels {names}; expected one per view: {expected}")
    return check(np.stack([channels[n] for n in names]), ctx, what=f"depth file {str(path)!r}")


def read_meta(path: Path) -> dict:
    """{FRAMED_PART: the part the maps were drawn for, None for the head alone} when the file says."""
    import OpenEXR

    with OpenEXR.File(str(path), header_only=True) as exr:  # the header empties when the file closes
        if PART_ATTRIBUTE not in exr.header():
            return {}
        return {FRAMED_PART: str(exr.header()[PART_ATTRIBUTE]) or None}


def mask(part: str) -> np.ndarray:
    """(F,) bool over reference-mesh faces: a depth pixel shows the part where the render's face
    id falls in this mask (`parts.pixel_mask` applies it to a render)."""
    from maskscore_core.body import parts

    return parts.part_face_mask(part)
