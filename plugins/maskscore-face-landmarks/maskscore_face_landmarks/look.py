"""The look a picture shows, read from its pixels on the body decoded from it.

Why: a mesh read from a picture is compared with its references by its shape and, where every
side carries one, by its look (render-compare's `appearance_l1`). A picture of someone else in
another light and before another backdrop is then not mistaken for the subject because the two
happen to share an outline. The look the picture was expected in stands where it draws the
picture as well as the look read here does (`shown_look`).

The model is the one pictures are drawn with (`maskscore_core.metric.appearance`): every covered
pixel is albedo x (ambient + intensity x max(0, n . l)), the albedo the skin's for skin, the skin
times a fixed tint for lips and brows, and a fixed colour for the eyes and the inside of the
mouth (which fix the light's scale: skin alone says only albedo times light); every other pixel
is the backdrop. `LookReading` renders the decoded body from the picture's camera and fits skin,
light (direction, intensity, ambient) and backdrop to the pixels by robust least squares, from
the best of a grid of light directions. Pixels at a region's edge, where a decoded outline a
pixel off would show another region, are left out.
"""

from __future__ import annotations

import numpy as np

from maskscore_core.plugin.records import Appearance, BodyState, Light

# Pixels this far (in pixels) inside a region's edge, or outside the body's, are read.
EDGE_PX = 2
# Colours at or above this are taken as clipped (the model clips at 1): left out.
CLIPPED = 0.985
# Light directions tried before the least squares (a Fibonacci half sphere facing the camera).
DIRECTIONS = 256
# The robust loss's scale: a colour difference of this much counts fully, larger ones less.
ROBUST_SCALE = 0.03
# The look is rounded to this many decimals (far below what a picture tells apart): the least
# squares' last bits, which another machine's BLAS kernels may change, then reach the scores only
# where a value lies on a rounding boundary.
DECIMALS = 5
# The subject's look is the picture's while it draws the picture within this much (mean |colour|,
# 0-1) of the look read from it: above what the decoded body's errors cost the subject's own
# pictures, far below what another look costs (README.md, "The look a picture shows").
SAME_LOOK = 0.01
# Covered pixels the fit reads at most (every k-th, in raster order): enough for seven numbers.
MAX_PIXELS = 20000


class LookReadError(ValueError):
    """A picture whose look cannot be read (too little skin or backdrop seen)."""


def _regions_albedo():
    """(R + 1, 3) tint and fixed colour per region (`appearance.PART_PRECEDENCE`, then the skin
    outside every part): a region's albedo is tint x skin + fixed, the rule of
    `appearance.part_albedo` for a look that names no part (linear in the skin: read at black
    and at white skin)."""
    from maskscore_core.metric import appearance

    names = [*appearance.PART_PRECEDENCE, None]
    black = np.stack([appearance.part_albedo(Appearance(skin=(0.0, 0.0, 0.0)), name) for name in names])
    white = np.stack([appearance.part_albedo(Appearance(skin=(1.0, 1.0, 1.0)), name) for name in names])
    return white - black, black


def _interior(mask: np.ndarray) -> np.ndarray:
    from scipy.ndimage import binary_erosion

    return binary_erosion(mask, iterations=EDGE_PX, border_value=0)


def _directions() -> np.ndarray:
    """(DIRECTIONS, 3) unit vectors on the half sphere z >= 0 (towards the camera side)."""
    i = np.arange(DIRECTIONS) + 0.5
    z = i / DIRECTIONS
    angle = np.pi * (3.0 - np.sqrt(5.0)) * i
    r = np.sqrt(1.0 - z * z)
    return np.stack([r * np.cos(angle), r * np.sin(angle), z], axis=1)


def _unit(angles: np.ndarray) -> np.ndarray:
    yaw, pitch = angles
    return np.array([np.sin(yaw) * np.cos(pitch), np.sin(pitch), np.cos(yaw) * np.cos(pitch)])


def _angles(direction: np.ndarray) -> np.ndarray:
    x, y, z = direction / np.linalg.norm(direction)
    return np.array([np.arctan2(x, z), np.arcsin(np.clip(y, -1.0, 1.0))])


def _start(colour, normals, tint, fixed):
    """Skin, ambient, intensity and light angles of the best grid direction: per direction, the
    skin pixels' colour is a + b max(0, n . l) per channel, linear in (a, b) = skin x (ambient,
    intensity); the light's scale from the fixed-colour pixels where there are any."""
    skin = (fixed.max(axis=1) == 0.0) & (tint.min(axis=1) == 1.0)
    directions = _directions()
    cosines = np.maximum(0.0, normals[skin] @ directions.T)  # (P, D)
    best = None
    for d in range(cosines.shape[1]):
        design = np.stack([np.ones(len(cosines)), cosines[:, d]], axis=1)
        coef, *_ = np.linalg.lstsq(design, colour[skin], rcond=None)  # (2, 3)
        coef = np.maximum(coef, 1e-4)
        cost = float(np.sum((design @ coef - colour[skin]) ** 2))
        if best is None or cost < best[0]:
            best = (cost, d, coef)
    _cost, d, (a, b) = best
    direction = directions[d]
    shading = np.maximum(0.0, normals @ direction)
    ratio = float(np.sum(b) / np.sum(a))  # intensity / ambient
    scale = 1.0 / (1.0 + ratio)  # ambient when ambient + intensity = 1
    known = fixed.max(axis=1) > 0.0
    if known.sum() >= 50:
        unit = fixed[known] * (1.0 + ratio * shading[known])[:, None]
        scale = float(np.sum(unit * colour[known]) / max(np.sum(unit * unit), 1e-12))
    skin_colour = np.clip(a / max(scale, 1e-4), 0.0, 1.0)
    return np.concatenate([skin_colour, [np.clip(scale, 0.0, 1.0), np.clip(ratio * scale, 0.0, 2.0)], _angles(direction)])


def _fit_light(colour, normals, tint, fixed) -> np.ndarray:
    from scipy.optimize import least_squares

    from maskscore_core.plugin.records import MAX_LIGHT_INTENSITY

    def residual(x):
        skin, ambient, intensity = x[:3], x[3], x[4]
        shading = ambient + intensity * np.maximum(0.0, normals @ _unit(x[5:]))
        return (np.clip((tint * skin + fixed) * shading[:, None], 0.0, 1.0) - colour).ravel()

    start = _start(colour, normals, tint, fixed)
    lower = [0.0, 0.0, 0.0, 0.0, 0.0, -np.pi, -np.pi / 2]
    upper = [1.0, 1.0, 1.0, 1.0, MAX_LIGHT_INTENSITY, np.pi, np.pi / 2]
    start = np.clip(start, lower, upper)
    return least_squares(residual, start, bounds=(lower, upper), loss="soft_l1", f_scale=ROBUST_SCALE, x_scale="jac").x


class LookReading:
    """One picture's pixels read against the body decoded from it, drawn by the pictures' camera
    (`pixels.pixel_view`): the pixels inside the body's regions and the backdrop's, where the
    look is read (`read`) and where a look is measured against them (`distance`)."""

    def __init__(self, image: np.ndarray, state: BodyState) -> None:
        from maskscore_core.body.reference_mesh import get_reference_mesh
        from maskscore_core.metric import appearance
        from maskscore_core.metric.render import get_renderer

        from .pixels import pixel_view

        image = np.asarray(image)[..., :3]
        (vertices,) = get_reference_mesh().vertices([state])
        self.render = get_renderer(pixel_view(int(image.shape[0]))).render(vertices)
        coverage = np.asarray(self.render.coverage[0], dtype=bool)
        self.colours = image.astype(np.float64) / 255.0
        self.backdrop = _interior(~coverage)
        if self.backdrop.sum() < 100:
            raise LookReadError(f"the picture shows {int(self.backdrop.sum())} px of backdrop; the look needs 100 or more")
        self.regions = np.full(coverage.shape, -2, dtype=np.int64)
        self.regions[coverage] = appearance.face_regions()[np.asarray(self.render.face_id[0])[coverage]]
        inner = np.zeros_like(coverage)
        for region in np.unique(self.regions[coverage]):
            inner |= _interior(self.regions == region)
        self.inner = inner & np.all(self.colours < CLIPPED, axis=-1)
        self.tint, self.fixed = _regions_albedo()
        skin = (self.fixed.max(axis=1) == 0.0) & (self.tint.min(axis=1) == 1.0)
        if skin[self.regions[self.inner]].sum() < 100:
            raise LookReadError("the picture shows fewer than 100 px of skin; the look needs more")

    def read(self) -> Appearance:
        """The look (skin, light, backdrop) under which the body comes closest to the picture
        (module docstring). Deterministic."""
        background = np.median(self.colours[self.backdrop], axis=0)
        pixels = np.flatnonzero(self.inner)[:: max(1, int(np.ceil(self.inner.sum() / MAX_PIXELS)))]
        which = self.regions.ravel()[pixels]
        normals = np.asarray(self.render.normals[0], dtype=np.float64).reshape(-1, 3)[pixels]
        x = _fit_light(self.colours.reshape(-1, 3)[pixels], normals, self.tint[which], self.fixed[which])
        light = Light(_rounded(_unit(x[5:])), round(float(x[4]), DECIMALS), round(float(x[3]), DECIMALS))
        return Appearance(skin=_rounded(x[:3]), light=light, background=_rounded(background))

    def distance(self, look: Appearance) -> float:
        """Mean |colour difference| (0-1, over channels and the read pixels, body and backdrop)
        of the body drawn in `look` from the picture."""
        from maskscore_core.metric import appearance

        shaded = appearance.shade(self.render, look)[0].astype(np.float64)
        read = self.inner | self.backdrop
        return float(np.abs(shaded[read] - self.colours[read]).mean())


def read_look(image: np.ndarray, state: BodyState) -> Appearance:
    """The look under which `state` comes closest to `image` (H, W, 3 uint8): `LookReading.read`.
    Raises LookReadError where too little skin or backdrop is seen."""
    return LookReading(image, state).read()


def shown_look(image: np.ndarray, state: BodyState, subject_look: Appearance | None) -> Appearance | None:
    """The look `image` shows, `state` the body decoded from it: `subject_look` (the look the
    picture was expected in, None for none) where it draws the picture within `SAME_LOOK` as
    well as the look read from it does, else the look read. Why not the read look always: it
    carries the decoded body's errors (a shoulder a pixel off), and the subject's pictures
    would differ in look by those alone."""
    reading = LookReading(image, state)
    read = reading.read()
    expected = subject_look if subject_look is not None else Appearance()
    if reading.distance(expected) <= reading.distance(read) + SAME_LOOK:
        return subject_look
    return read


def _rounded(values) -> tuple[float, ...]:
    return tuple(round(float(v), DECIMALS) for v in values)
