"""The depth modality's representation: per-view depth maps (N, H, W) float32, one .exr file.

Depth is the mesh rendered to a depth buffer (docs/design.md): encoding a target renders its reference
mesh with Mitsuba on the run's sphere_hammersley_sequence views, and a depth candidate is
compared with the depth channel of the reference render directly, so decoding only checks that
the maps fit the run's views. Values are metres along each camera ray, 0 off the mesh.

On disk: one OpenEXR file, one float32 channel per view (`view000`, `view001`, ...), ZIP
compression (lossless, byte-identical for identical maps).
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
    edited subject's for the ladder's wrong subject), as render-and-compare frames a row."""
    from maskscore_core.metric.render import get_renderer
    from maskscore_core.metric.views import subject_framing

    state = target.state
    vertices = subject_framing(target.framing_phenotype).apply(get_reference_mesh().vertices([state])[0])
    return get_renderer(view_config(ctx)).render(vertices, what=f"mesh of {target.label}").depth


def encode(target: Target, ctx) -> Asset:
    return Asset(modality=MODALITY, data=render_depth(target, ctx), meta={"label": target.label})


def decode(asset: Asset, ctx) -> Decoded:
    """Depth candidates live in render space already: checked, then compared as they are."""
    what = f"depth {asset.path or asset.meta.get('label', '')}".strip()
    return Decoded(depth=check(asset.data, ctx, what=what))


def write(depth: np.ndarray, path: Path, ctx) -> Path:
    import OpenEXR

    maps = check(depth, ctx, what=f"depth for {path.name}")
    channels = {f"view{i:03d}": np.ascontiguousarray(m) for i, m in enumerate(maps)}
    header = {"compression": OpenEXR.ZIP_COMPRESSION, "type": OpenEXR.scanlineimage, VIEW_ATTRIBUTE: len(maps)}
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


def mask(part: str) -> np.ndarray:
    """(F,) bool over reference-mesh faces: a depth pixel shows the part where the render's face
    id falls in this mask (`parts.pixel_mask` applies it to a render)."""
    from maskscore_core.body import parts

    return parts.part_face_mask(part)
