"""Shaded pictures from the geometric render passes: how a body looks, without a second render.

Why no extra Mitsuba pass: the aov pass already gives, per pixel, the world-space shading normal
and the visible triangle. Lambertian shading needs nothing else: the triangle says which part
(and so which albedo and which light) the pixel shows, the normal gives the cosine term, and
pixels no triangle covers show the backdrop colour. The picture is exact for this model and
costs a few array operations per view.

Model (all colours linear RGB in [0, 1]):

    colour = clip(albedo x (ambient + intensity x max(0, n . l / |l|)), 0, 1)   covered pixels
    colour = background                                                       other pixels

Which part a triangle belongs to: the most specific part whose face mask holds it
(`PART_PRECEDENCE`: the iris before the eye surface before the face, ...), or none (the rest of
the body: skin, the global light). A part's albedo is `Appearance.albedo[part]` when given, else
`PART_COLOUR[part]` for parts that are not skin (eyes, accessories), else `PART_TINT[part]` x
the albedo of its nearest container that has one (`PART_CONTAINER`, as in
`parts.declared_overlaps`), else x the skin. A part's
light is `Appearance.part_light` of the part or of its nearest container, else the global light.
The inside of the mouth (`ORAL_CAVITY`, the triangles `body.oral_cavity` finds) is a region of its
own with a fixed dark colour: no light reaches it, and a model without shadows would light it
like the lips.
"""

from __future__ import annotations

import functools

import numpy as np

from maskscore_core import vocab
from maskscore_core.plugin.records import Appearance, Light
from maskscore_core.body import oral_cavity, parts

# The inside of the mouth (`body.oral_cavity`): not a part one edits, a region shaded apart, dark
# like a real mouth's inside, which no light reaches (this model casts no shadows).
ORAL_CAVITY = "oral cavity"
# Most specific first: a triangle takes the first part whose face mask holds it.
PART_PRECEDENCE: tuple[str, ...] = (
    ORAL_CAVITY,
    "irides",
    "eyelash",
    "eyebrow",
    "eyewhite",
    "mouth",
    "nose",
    "ears",
    "front hair",
    "back hair",
    "neck",
    "face",
    *vocab.ACCESSORY_PARTS,
)
# The part that contains another (parts.declared_overlaps): albedo and light are inherited from it.
PART_CONTAINER: dict[str, str] = {
    ORAL_CAVITY: "mouth",
    "irides": "eyewhite",
    "eyewhite": "face",
    "eyelash": "face",
    "eyebrow": "face",
    "nose": "face",
    "mouth": "face",
}
# Default colour of skin parts relative to the skin: lips redder and darker, the brow region
# darker (ANNY is bald: the brows are skin with hair on it). Body parts not listed take the skin.
PART_TINT: dict[str, tuple[float, float, float]] = {
    "mouth": (0.85, 0.55, 0.55),
    "eyebrow": (0.6, 0.5, 0.45),
}
# Parts that are not skin have their own default colour (they do not follow a tan).
PART_COLOUR: dict[str, tuple[float, float, float]] = {
    ORAL_CAVITY: (0.12, 0.04, 0.04),
    "irides": (0.3, 0.2, 0.12),
    "eyewhite": (0.85, 0.82, 0.78),
    "eyelash": (0.1, 0.08, 0.07),
    **{part: (0.2, 0.2, 0.23) for part in vocab.ACCESSORY_PARTS},
}


class AppearanceShadingError(ValueError):
    """Inputs that cannot be shaded (render passes of another mesh or of mismatched shapes)."""


def _containers(part: str) -> list[str]:
    chain, current = [], part
    while current in PART_CONTAINER:
        current = PART_CONTAINER[current]
        chain.append(current)
    return chain


def part_albedo(appearance: Appearance, part: str | None) -> np.ndarray:
    """(3,) albedo of `part` (None: the body outside every part, i.e. the skin)."""
    if part is None:
        return np.asarray(appearance.skin, dtype=np.float64)
    if part in appearance.albedo:
        return np.asarray(appearance.albedo[part], dtype=np.float64)
    if part in PART_COLOUR:
        return np.asarray(PART_COLOUR[part], dtype=np.float64)
    base = appearance.skin
    for container in _containers(part):
        if container in appearance.albedo:
            base = appearance.albedo[container]
            break
    return np.clip(np.asarray(PART_TINT.get(part, (1.0, 1.0, 1.0))) * np.asarray(base), 0.0, 1.0)


def part_light(appearance: Appearance, part: str | None) -> Light:
    """The light that falls on `part` (None: the body outside every part)."""
    for name in ([part, *_containers(part)] if part is not None else []):
        if name in appearance.part_light:
            return appearance.part_light[name]
    return appearance.light


def _face_mask(part: str) -> np.ndarray:
    if part == ORAL_CAVITY:
        return oral_cavity.cavity_face_mask()
    return parts.part_face_mask(part)


@functools.cache
def face_regions() -> np.ndarray:
    """(F,) index into PART_PRECEDENCE of each reference-mesh triangle's part, -1 for none."""
    from maskscore_core.body.reference_mesh import get_reference_mesh

    regions = np.full(len(get_reference_mesh().faces), -1, dtype=np.int64)
    for index, part in reversed(list(enumerate(PART_PRECEDENCE))):  # the most specific part wins
        regions[_face_mask(part)] = index
    regions.flags.writeable = False
    return regions


@functools.cache
def vertex_regions() -> np.ndarray:
    """(V,) index into PART_PRECEDENCE of each reference-mesh vertex's part, -1 for none."""
    from maskscore_core.body.reference_mesh import get_reference_mesh

    reference = get_reference_mesh()
    regions = np.full(reference.vertex_count, -1, dtype=np.int64)
    for index, part in reversed(list(enumerate(PART_PRECEDENCE))):
        ids = np.unique(reference.faces[_face_mask(part)]) if part == ORAL_CAVITY else parts.part_vertex_ids(part)
        regions[ids] = index
    regions.flags.writeable = False
    return regions


def _region_table(appearance: Appearance, dark_cavity: bool = True):
    """Per region (PART_PRECEDENCE, then the body outside every part, at index -1): albedo (R, 3),
    unit light direction (R, 3), intensity (R,), ambient (R,). dark_cavity False: the oral
    cavity takes the mouth's albedo."""
    names = [*PART_PRECEDENCE, None]
    albedo = np.stack([part_albedo(appearance, "mouth" if name == ORAL_CAVITY and not dark_cavity else name) for name in names])
    lights = [part_light(appearance, name) for name in names]
    direction = np.array([light.direction for light in lights], dtype=np.float64)
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    intensity = np.array([light.intensity for light in lights], dtype=np.float64)
    ambient = np.array([light.ambient for light in lights], dtype=np.float64)
    return albedo, direction, intensity, ambient


def vertex_albedo(appearance: Appearance) -> np.ndarray:
    """(V, 3) albedo of every reference-mesh vertex (what a mesh file stores as COLOR_0)."""
    albedo, *_ = _region_table(appearance)
    return albedo[vertex_regions()]


def shade(render, appearance: Appearance, *, dark_cavity: bool = True) -> np.ndarray:
    """(N, H, W, 3) float32 shaded picture of a `render.RenderResult` under `appearance`.
    dark_cavity False draws the inside of the mouth as the lips (the look before the oral cavity
    was shaded apart), for `maskscore_face_landmarks.anchors`' tie at rest."""
    normals = np.asarray(render.normals, dtype=np.float64)
    coverage = np.asarray(render.coverage, dtype=bool)
    face_id = np.asarray(render.face_id)
    if normals.shape != (*coverage.shape, 3) or face_id.shape != coverage.shape:
        raise AppearanceShadingError(
            f"render passes disagree in shape: normals {normals.shape}, face_id {face_id.shape}, coverage {coverage.shape}"
        )
    regions = face_regions()
    ids = face_id[coverage]
    if ids.size and (ids.min() < 0 or ids.max() >= len(regions)):
        raise AppearanceShadingError(
            f"face ids span {ids.min()}..{ids.max()} but the reference mesh has {len(regions)} faces:"
            " was it rendered from another mesh?"
        )
    albedo, direction, intensity, ambient = _region_table(appearance, dark_cavity)
    region = regions[ids]  # -1 (no part) indexes the last row: the body's skin and global light
    cosine = np.maximum(0.0, np.einsum("pc,pc->p", normals[coverage], direction[region]))
    radiance = albedo[region] * (ambient[region] + intensity[region] * cosine)[:, None]
    out = np.empty((*coverage.shape, 3), dtype=np.float64)
    out[...] = np.asarray(appearance.background, dtype=np.float64)
    out[coverage] = np.clip(radiance, 0.0, 1.0)
    return out.astype(np.float32)


def picture(render, appearance: Appearance, view: int = 0, *, dark_cavity: bool = True) -> np.ndarray:
    """(H, W, 3) uint8 image of one view of `shade` (colours scaled to 0..255 and rounded), for
    video frames and source frames a person or an image model looks at."""
    shaded = shade(render, appearance, dark_cavity=dark_cavity)
    if not 0 <= view < len(shaded):
        raise AppearanceShadingError(f"view {view} outside 0..{len(shaded) - 1}")
    return np.clip(np.rint(shaded[view].astype(np.float64) * 255.0), 0, 255).astype(np.uint8)
