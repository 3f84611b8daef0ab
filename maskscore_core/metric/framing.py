"""Framing: where a row's meshes are moved so that the views see the edited part as they see it
on the default subject (the cameras of `views` stand still; the meshes move).
"""

from __future__ import annotations

import functools
import math

import attrs
import numpy as np

from maskscore_core import vocab
from maskscore_core.body import parts
from maskscore_core.metric.render import get_renderer
from maskscore_core.metric.views import ViewConfig
from maskscore_core.plugin.records import BodyState


# -- framing on the subject's own head -------------------------------------------------------
# The cameras stand around the default subject's head (`views`). A shorter, taller, older or
# younger subject's head sits elsewhere and is another size, so a fixed camera frames it badly
# (a face half out of frame, a mouth a tenth of the pixels). Instead of moving the cameras (one
# Mitsuba scene serves every mesh), the meshes of a row are moved: a similarity transform puts
# frame A's head where the default subject's head is, at the default head's size. Depth, normals
# and face ids are unchanged in meaning (depth is then in metres of the default head's size).


@attrs.frozen(eq=False)
class Framing:
    """v -> v + (v - centre) (scale - 1) + (home - centre): the subject's head `centre` moved
    to `home` (the default subject's head centre) and scaled by `scale` about it. Written so that
    the default subject's own framing leaves every vertex bit for bit as it is."""

    centre: np.ndarray  # (3,) the subject's head centre
    scale: float
    home: np.ndarray  # (3,) the default subject's head centre

    def apply(self, vertices: np.ndarray) -> np.ndarray:
        v = np.asarray(vertices, dtype=np.float64)
        return v + ((v - self.centre) * (self.scale - 1.0) + (self.home - self.centre))


def _head_centre_and_size(anny_vertices: np.ndarray) -> tuple[np.ndarray, float]:
    """Mean and RMS radius of the vertices the head carries (skinning weight ~1 on the head)."""
    from maskscore_core.body.anny_model import get_body_model

    weights = get_body_model().head_weights
    head = np.asarray(anny_vertices, dtype=np.float64)[: len(weights)][weights >= 0.999]
    centre = head.mean(axis=0)
    return centre, float(np.sqrt(((head - centre) ** 2).sum(axis=1).mean()))


@functools.cache
def _default_head() -> tuple[np.ndarray, float]:
    return _head_centre_and_size(_rest_vertices(()))


def _head_framing(vertices: np.ndarray) -> Framing:
    home, size = _default_head()
    centre, own = _head_centre_and_size(vertices)
    if not own > 0:
        raise ValueError("the mesh's head has no extent: cannot frame it")
    return Framing(centre=centre, scale=size / own, home=home)


def _zoomed(head: Framing, part: str | None, pixels) -> Framing:
    """`head` zoomed for `part`; `pixels()` gives the head-framed mesh's part pixels, asked only
    for a part that is zoomed."""
    if part is None or vocab.check_part(part) not in ZOOMED_PARTS:
        return head
    zoom = part_zoom(pixels()[part], _subject_part_pixels(())[part])
    return head if zoom == 1.0 else attrs.evolve(head, scale=head.scale * zoom)


def framing_of(vertices: np.ndarray, part: str | None = None) -> Framing:
    """The framing that centres these reference-mesh vertices' head on the default subject's,
    scales it to the default head's size (RMS radius of the head's vertices) and, for an edited
    `part`, zooms further so that the part shows the default subject's pixels (`part_zoom`)."""
    head = _head_framing(vertices)
    return _zoomed(head, part, lambda: _part_pixels(head.apply(vertices)))


def _rest_vertices(phenotype: tuple[tuple[str, float], ...]) -> np.ndarray:
    from maskscore_core.body.reference_mesh import get_reference_mesh

    return get_reference_mesh().vertices([BodyState(phenotype=dict(phenotype))])[0]


@functools.lru_cache(maxsize=256)
def _subject_head(phenotype: tuple[tuple[str, float], ...]) -> Framing:
    return _head_framing(_rest_vertices(phenotype))


@functools.lru_cache(maxsize=256)
def _subject_part_pixels(phenotype: tuple[tuple[str, float], ...]) -> dict[str, int]:
    """Every zoomed part's pixels on the subject at rest, framed on its head (one render)."""
    return _part_pixels(_subject_head(phenotype).apply(_rest_vertices(phenotype)))


def subject_framing(phenotype: dict[str, float], part: str | None = None) -> Framing:
    """The framing of a subject at rest (its phenotype only: no pose, expression or edit), for a
    row that edits `part` (None: the head alone), so every candidate of one row, mesh or depth
    map, is seen by the same framing."""
    key = tuple(sorted((str(k), float(v)) for k, v in phenotype.items()))
    return _zoomed(_subject_head(key), part, lambda: _subject_part_pixels(key))


def row_framing(instance) -> Framing:
    """How every mesh of an edit instance's row is seen: frame A's subject at rest, zoomed for the
    row's part; the scorer, the depth maps of the row's targets and every picture of the row."""
    return subject_framing(instance.a.framing_phenotype, instance.instruction.part)


# -- a zoom per edited part ------------------------------------------------------------------
# The head's scale frames most parts of every subject within 20 % of the default subject's pixels,
# but not all: ANNY's eyes keep their size while the head scales with the body, older subjects'
# lids cover more of the eye, and older subjects' ears grow (docs/metric.md, "Calibration").
# A row that edits such a part is zoomed further about the head's centre, so that the part shows
# on the subject at rest as many pixels as on the default subject at rest. The zoom is a property
# of the subject and the part, measured on fixed views (ZOOM_VIEWS), never on the run's own: a
# run's small views would make it a matter of rounding, and two runs of one row would disagree.

ZOOM_VIEWS = ViewConfig()  # 8 views x 256 px
ZOOMED_PARTS = vocab.ACTIVE_FACE_PARTS  # on every body at rest; an accessory is framed on the head
# Subjects at rest of the source's phenotype box need far less (docs/metric.md, table 4). A mesh
# framed on its own vertices (`framing_of` a frame A with the eyes all but shut) could ask for any
# zoom and push the head out of the frame: the zoom stays within these bounds.
ZOOM_LIMITS = (2.0 / 3.0, 1.5)


def _part_pixels(framed_vertices: np.ndarray) -> dict[str, int]:
    """{part: pixels} of framed reference-mesh vertices on ZOOM_VIEWS."""
    render = get_renderer(ZOOM_VIEWS).render(framed_vertices, what="mesh framed for its part's zoom")
    return {part: int(parts.pixel_mask(render, part).sum()) for part in ZOOMED_PARTS}


def part_zoom(own_pixels: int, default_pixels: int) -> float:
    """How much further to zoom a head-framed mesh whose part shows `own_pixels` so that it shows
    the default subject's `default_pixels`: sqrt(default / own), within ZOOM_LIMITS; 1 where
    either shows none (nothing to measure the part by)."""
    if not (own_pixels and default_pixels):
        return 1.0
    return min(max(math.sqrt(default_pixels / own_pixels), ZOOM_LIMITS[0]), ZOOM_LIMITS[1])
