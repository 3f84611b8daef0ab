"""Procedural accessories (glasses, hat, earrings, scarf) for the Part group of task types.

ANNY has no accessories; the design's Part tasks (part_add/remove/replace on headwear, earwear,
eyewear, neckwear) need them. Each accessory here is a small procedural mesh built with numpy
(tubes, boxes, a lathe), NOT a scanned or artist-made asset. It is attached to a SOMA bone
(`Head` for glasses, hat and earrings, `Neck1` for the scarf), oriented by that bone's world
rotation and sized from landmarks on the subject's own skinned ANNY vertices, so it follows
the head and fits every phenotype.

Each slot has two variants of one fixed topology, so part_replace swaps one for the other
without changing the reference mesh: `glasses_round`/`glasses_square` (superellipse rims),
`hat_brimmed`/`hat_tall`, `earrings_hoop`/`earrings_stud`, `scarf_thick`/`scarf_thin`.
A `BodyState` wears an accessory by listing its variant name in `state.accessories` (at most one
per slot). An absent accessory collapses onto one point inside the head (the Head bone's
origin): its triangles are degenerate and invisible while the topology stays fixed.
`state.part_scale[slot.part]` is a worn accessory's size (the ladder uses it for the in-between
rungs of part edits), applied where the accessory is worn so that a smaller one is still seen:
a scarf gets thinner around the neck, a hat's crown lower and its brim narrower on the same band,
an earring smaller from the same lobe, glasses smaller about their centre. Scaled about its
centroid a half-size scarf sank inside the neck, half-size earrings inside the head (their
centroid is between the ears) and a half-size hat inside the skull, so "half an accessory"
rendered as none (`SIZED_PARAMETERS`).

Landmarks (SOMA topology vertex ids, found as the most lateral head vertex and the lowest
lateral ear vertex of the default subject, mirrored): ear tops 5824 (left, +X) and 10289
(right), earlobes 5850 and 10315. Eye centres and the head top come from the LeftEye,
RightEye and HeadEnd bones.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import attrs
import numpy as np

# Landmark vertex ids on the SOMA topology (see module docstring).
LEFT_EAR_TOP, RIGHT_EAR_TOP = 5824, 10289
LEFT_EARLOBE, RIGHT_EARLOBE = 5850, 10315


class AccessoryError(ValueError):
    """An accessory name that does not exist, or two accessories in one slot."""


# ---------------------------------------------------------------------------------------------
# Primitives. All return (vertices (n,3), faces (m,3) int64) in a local frame.


def _ring_frame(normal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two unit vectors orthogonal to `normal` and to each other."""
    normal = normal / np.linalg.norm(normal)
    helper = np.array([1.0, 0.0, 0.0]) if abs(normal[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    u = np.cross(normal, helper)
    u /= np.linalg.norm(u)
    return u, np.cross(normal, u)


def _tube(path: np.ndarray, radius: float, sides: int) -> tuple[np.ndarray, np.ndarray]:
    """A closed tube of `sides` segments swept along the closed polyline `path` (M,3)."""
    m = len(path)
    tangents = np.roll(path, -1, axis=0) - np.roll(path, 1, axis=0)
    tangents /= np.linalg.norm(tangents, axis=1, keepdims=True)
    plane_normal = np.cross(path[1] - path[0], path[m // 3] - path[0])
    plane_normal /= np.linalg.norm(plane_normal)
    angles = 2 * np.pi * np.arange(sides) / sides
    verts = []
    for point, tangent in zip(path, tangents):
        outward = np.cross(tangent, plane_normal)
        for a in angles:
            verts.append(point + radius * (np.cos(a) * outward + np.sin(a) * plane_normal))
    faces = []
    for i in range(m):
        j = (i + 1) % m
        for k in range(sides):
            kk = (k + 1) % sides
            a, b, c, d = i * sides + k, j * sides + k, j * sides + kk, i * sides + kk
            faces += [(a, b, c), (a, c, d)]
    return np.asarray(verts), np.asarray(faces, dtype=np.int64)


def _bar(p0: np.ndarray, p1: np.ndarray, half_width: float, up: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A closed box from p0 to p1 with a square cross-section (8 vertices, 12 triangles)."""
    axis = (p1 - p0) / np.linalg.norm(p1 - p0)
    side = np.cross(axis, up)
    side /= np.linalg.norm(side)
    top = np.cross(side, axis)
    corners = [(-1, -1), (1, -1), (1, 1), (-1, 1)]
    verts = [p + half_width * (s * side + t * top) for p in (p0, p1) for s, t in corners]
    faces = [(0, 2, 1), (0, 3, 2), (4, 5, 6), (4, 6, 7)]
    for k in range(4):
        kk = (k + 1) % 4
        faces += [(k, kk, 4 + kk), (k, 4 + kk, 4 + k)]
    return np.asarray(verts), np.asarray(faces, dtype=np.int64)


def _lathe(profile: np.ndarray, segments: int) -> tuple[np.ndarray, np.ndarray]:
    """Revolve a (radius, height) profile about the local y axis; a last radius of 0 is a pole."""
    angles = 2 * np.pi * np.arange(segments) / segments
    rings = profile[:-1] if profile[-1, 0] == 0 else profile
    verts = [(r * np.sin(a), h, r * np.cos(a)) for r, h in rings for a in angles]
    faces = []
    for i in range(len(rings) - 1):
        for k in range(segments):
            kk = (k + 1) % segments
            a, b, c, d = i * segments + k, i * segments + kk, (i + 1) * segments + kk, (i + 1) * segments + k
            faces += [(a, b, c), (a, c, d)]
    if profile[-1, 0] == 0:
        pole = len(verts)
        verts.append((0.0, profile[-1, 1], 0.0))
        last = (len(rings) - 1) * segments
        faces += [(last + k, last + (k + 1) % segments, pole) for k in range(segments)]
    return np.asarray(verts, dtype=np.float64), np.asarray(faces, dtype=np.int64)


def _merge(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    verts, faces, offset = [], [], 0
    for v, f in parts:
        verts.append(v)
        faces.append(f + offset)
        offset += len(v)
    return np.concatenate(verts), np.concatenate(faces)


# ---------------------------------------------------------------------------------------------
# Landmarks and frames.


@attrs.frozen
class HeadFrame:
    """The Head bone's orientation at the eye midpoint: x = subject's left, y = up, z = forward.

    Landmark coordinates are expressed in this frame (metres), so accessory builders work in
    one upright, forward-facing frame whatever the head pose.
    """

    origin: np.ndarray
    axes: np.ndarray  # (3,3): columns are left, up, forward in world coordinates
    eye_left: np.ndarray
    eye_right: np.ndarray
    ear_left: np.ndarray
    ear_right: np.ndarray
    lobe_left: np.ndarray
    lobe_right: np.ndarray
    top: np.ndarray

    def to_world(self, local: np.ndarray) -> np.ndarray:
        return self.origin + local @ self.axes.T


def head_frame(anny_vertices: np.ndarray, bone_poses: np.ndarray, body) -> HeadFrame:
    """Landmarks of one skinned subject in its head frame."""
    head = bone_poses[body.bone_index("Head")]
    rotation = head[:3, :3]
    # SOMA's Head bone: local x points up, local y forward, local z to the subject's left.
    axes = np.stack([rotation[:, 2], rotation[:, 0], rotation[:, 1]], axis=1)
    eye_l = bone_poses[body.bone_index("LeftEye")][:3, 3]
    eye_r = bone_poses[body.bone_index("RightEye")][:3, 3]
    origin = (eye_l + eye_r) / 2

    def local(p):
        return (np.asarray(p) - origin) @ axes

    return HeadFrame(
        origin=origin,
        axes=axes,
        eye_left=local(eye_l),
        eye_right=local(eye_r),
        ear_left=local(anny_vertices[LEFT_EAR_TOP]),
        ear_right=local(anny_vertices[RIGHT_EAR_TOP]),
        lobe_left=local(anny_vertices[LEFT_EARLOBE]),
        lobe_right=local(anny_vertices[RIGHT_EARLOBE]),
        top=local(bone_poses[body.bone_index("HeadEnd")][:3, 3]),
    )


# ---------------------------------------------------------------------------------------------
# Builders: (variant parameters, landmarks) -> vertices in the head frame (or neck frame).

_RIM_POINTS, _RIM_SIDES = 20, 4


def _superellipse(a: float, b: float, exponent: float, n: int) -> np.ndarray:
    t = 2 * np.pi * np.arange(n) / n
    c, s = np.cos(t), np.sin(t)
    x = a * np.sign(c) * np.abs(c) ** (2 / exponent)
    y = b * np.sign(s) * np.abs(s) ** (2 / exponent)
    return np.stack([x, y, np.zeros(n)], axis=1)


def _build_glasses(params: dict, f: HeadFrame) -> tuple[np.ndarray, np.ndarray]:
    """Two rims in front of the eyes, a bridge, and two temple arms back to the ears."""
    ipd = float(np.linalg.norm(f.eye_left - f.eye_right))
    a, b = 0.42 * ipd, 0.32 * ipd
    front = max(f.eye_left[2], f.eye_right[2]) + 0.032
    pieces = []
    for eye in (f.eye_left, f.eye_right):
        rim = _superellipse(a, b, params["exponent"], _RIM_POINTS) + np.array([eye[0], eye[1], front])
        pieces.append(_tube(rim, 0.0022, _RIM_SIDES))
    up = np.array([0.0, 1.0, 0.0])
    inner_l = np.array([f.eye_left[0] - a, f.eye_left[1] + 0.3 * b, front])
    inner_r = np.array([f.eye_right[0] + a, f.eye_right[1] + 0.3 * b, front])
    pieces.append(_bar(inner_r, inner_l, 0.0018, up))
    for eye, ear, sign in ((f.eye_left, f.ear_left, 1.0), (f.eye_right, f.ear_right, -1.0)):
        hinge = np.array([eye[0] + sign * a, eye[1] + 0.3 * b, front])
        tip = ear + np.array([sign * 0.006, 0.0, 0.0])
        pieces.append(_bar(hinge, tip, 0.0018, up))
    return _merge(pieces)


def _build_hat(params: dict, f: HeadFrame) -> tuple[np.ndarray, np.ndarray]:
    """A crown and brim (a lathe), elliptical to fit the skull, resting 6.5 cm below the top."""
    half_width = float(f.ear_left[0] - f.ear_right[0]) / 2
    depth = params["crown_height"]
    profile = np.array(
        [
            (0.96, 0.0),
            (params["brim"], 0.0),
            (params["brim"], 0.012),
            (1.0, 0.012),
            (0.95, depth),
            (0.0, depth),
        ]
    )
    unit, faces = _lathe(profile, 24)
    scale = np.array([1.0 * half_width, 1.0, 1.25 * half_width])
    base = np.array([0.0, f.top[1] - 0.065, f.top[2]])
    return unit * scale + base, faces


def _build_earrings(params: dict, f: HeadFrame) -> tuple[np.ndarray, np.ndarray]:
    """One ring per ear, hanging from the earlobe in the sagittal plane."""
    radius = params["radius"]
    pieces = []
    for lobe, sign in ((f.lobe_left, 1.0), (f.lobe_right, -1.0)):
        centre = lobe + np.array([sign * 0.004, -radius, 0.004])
        t = 2 * np.pi * np.arange(12) / 12
        path = centre + radius * np.stack([np.zeros(12), np.cos(t), np.sin(t)], axis=1)
        pieces.append(_tube(path, params["thickness"], 4))
    return _merge(pieces)


def _neck_ring(anny_vertices: np.ndarray, bone_poses: np.ndarray, body) -> tuple[np.ndarray, np.ndarray, float]:
    """Centre, axis and outer radius of the neck 60% of the way from Neck1 to Neck2."""
    n1 = bone_poses[body.bone_index("Neck1")][:3, 3]
    n2 = bone_poses[body.bone_index("Neck2")][:3, 3]
    axis = (n2 - n1) / np.linalg.norm(n2 - n1)
    centre = n1 + 0.6 * (n2 - n1)
    rel = anny_vertices - centre
    height = rel @ axis
    radial = np.linalg.norm(rel - np.outer(height, axis), axis=1)
    band = (np.abs(height) < 0.006) & (radial < 0.12)
    if not band.any():
        raise AccessoryError("no neck vertices found around the Neck1 bone; cannot fit the scarf")
    return centre, axis, float(radial[band].max())


def _build_scarf(params: dict, neck_radius: float) -> tuple[np.ndarray, np.ndarray]:
    """A torus around the neck (local y = neck axis)."""
    tube = params["thickness"]
    major = neck_radius + 0.6 * tube
    t = 2 * np.pi * np.arange(20) / 20
    path = major * np.stack([np.sin(t), np.zeros(20), np.cos(t)], axis=1)
    return _tube(path, tube, 6)


# ---------------------------------------------------------------------------------------------
# Slots.

VARIANTS: dict[str, dict[str, dict]] = {
    "glasses": {"glasses_round": {"exponent": 2.0}, "glasses_square": {"exponent": 6.0}},
    "hat": {
        "hat_brimmed": {"brim": 1.6, "crown_height": 0.085},
        "hat_tall": {"brim": 1.2, "crown_height": 0.17},
    },
    "earrings": {
        "earrings_hoop": {"radius": 0.011, "thickness": 0.0014},
        "earrings_stud": {"radius": 0.004, "thickness": 0.0028},
    },
    "scarf": {"scarf_thick": {"thickness": 0.026}, "scarf_thin": {"thickness": 0.013}},
}

# How an accessory's size scales it (`AccessorySlot.place`): these parameters are multiplied by
# the size (the hat's brim by its extension beyond the band); a slot not listed scales about its
# centroid.
SIZED_PARAMETERS: dict[str, tuple[str, ...]] = {
    "hat": ("crown_height", "brim"),
    "earrings": ("radius", "thickness"),
    "scarf": ("thickness",),
}

SLOT_PARTS: dict[str, str] = {"glasses": "eyewear", "hat": "headwear", "earrings": "earwear", "scarf": "neckwear"}
SLOT_BONES: dict[str, str] = {"glasses": "Head", "hat": "Head", "earrings": "Head", "scarf": "Neck1"}

ACCESSORY_NAMES: tuple[str, ...] = tuple(name for slot in VARIANTS.values() for name in slot)


def slot_of(accessory: str) -> str:
    """The slot an accessory variant name belongs to ('glasses_round' -> 'glasses')."""
    for slot, variants in VARIANTS.items():
        if accessory in variants:
            return slot
    raise AccessoryError(f"unknown accessory {accessory!r}; expected one of: {', '.join(ACCESSORY_NAMES)}")


def slot_for_part(part: str) -> str:
    """The slot that provides an accessory part ('eyewear' -> 'glasses')."""
    for slot, slot_part in SLOT_PARTS.items():
        if slot_part == part:
            return slot
    raise AccessoryError(f"{part!r} is not an accessory part; accessory parts: {', '.join(SLOT_PARTS.values())}")


def check_accessories(names) -> tuple[str, ...]:
    """Validate a worn-accessory list: known names, at most one per slot. Returns it sorted."""
    seen: dict[str, str] = {}
    for name in names:
        slot = slot_of(name)
        if slot in seen:
            raise AccessoryError(f"two accessories in the {slot!r} slot: {seen[slot]!r} and {name!r}")
        seen[slot] = name
    return tuple(sorted(names))


def worn(accessories, slot: str) -> str | None:
    """The variant of `slot` in a worn-accessory list, or None."""
    for name in accessories:
        if slot_of(name) == slot:
            return name
    return None


@attrs.frozen(eq=False)
class AccessorySlot:
    """One accessory slot of the reference mesh: a fixed topology, two procedural variants."""

    name: str
    part: str
    bone: str
    variants: tuple[str, ...]
    vertices: np.ndarray  # template: the first variant on the default subject, in the bone frame
    faces: np.ndarray
    _build: Callable = attrs.field(repr=False)

    def place(self, state, anny_vertices: np.ndarray, bone_poses: np.ndarray, body) -> np.ndarray:
        """World vertices (n,3) of this slot for one posed subject; collapsed when not worn."""
        variant = worn(check_accessories(state.accessories), self.name)
        if variant is None:
            anchor = bone_poses[body.bone_index("Head")][:3, 3]
            return np.repeat(anchor[None, :], len(self.vertices), axis=0)
        size = float(state.part_scale.get(self.part, 1.0))
        params = VARIANTS[self.name][variant]
        if size != 1.0 and self.name in SIZED_PARAMETERS:
            params = sized(self.name, params, size)
        placed = self._build(params, anny_vertices, bone_poses, body)
        if size != 1.0 and self.name not in SIZED_PARAMETERS:
            centre = placed.mean(axis=0)
            placed = centre + (placed - centre) * size
        return placed


def sized(slot: str, params: dict, size: float) -> dict:
    """A variant's parameters at `size` (1 = as made): SIZED_PARAMETERS multiplied by it, the hat's
    brim by its extension beyond the band (a brim factor of 1 is no brim)."""
    out = dict(params)
    for name in SIZED_PARAMETERS[slot]:
        out[name] = 1.0 + (params[name] - 1.0) * size if name == "brim" else params[name] * size
    return out


def _head_builder(build):
    def place(params, anny_vertices, bone_poses, body):
        frame = head_frame(anny_vertices, bone_poses, body)
        local, _ = build(params, frame)
        return frame.to_world(local)

    return place


def _scarf_place(params, anny_vertices, bone_poses, body):
    centre, axis, radius = _neck_ring(anny_vertices, bone_poses, body)
    forward = bone_poses[body.bone_index("Neck1")][:3, 1]
    forward = forward - axis * (forward @ axis)
    forward /= np.linalg.norm(forward)
    left = np.cross(axis, forward)
    local, _ = _build_scarf(params, radius)
    return centre + local @ np.stack([left, axis, forward], axis=1).T


# Default-subject landmarks in the head frame (measured on ANNY SOMA, default phenotype); used
# only for the slots' template vertices, never for placement.
_DEFAULT_FRAME = HeadFrame(
    origin=np.zeros(3),
    axes=np.eye(3),
    eye_left=np.array([0.03, 0.0, 0.0]),
    eye_right=np.array([-0.03, 0.0, 0.0]),
    ear_left=np.array([0.0856, 0.0053, -0.0903]),
    ear_right=np.array([-0.0856, 0.0055, -0.0905]),
    lobe_left=np.array([0.0766, -0.0351, -0.0817]),
    lobe_right=np.array([-0.0766, -0.0351, -0.0817]),
    top=np.array([0.0, 0.108, -0.10]),
)


@functools.cache
def _slots() -> tuple[AccessorySlot, ...]:
    head_builders = {"glasses": _build_glasses, "hat": _build_hat, "earrings": _build_earrings}
    out = []
    for name, variants in VARIANTS.items():
        first = next(iter(variants.values()))
        if name == "scarf":
            vertices, faces = _build_scarf(first, 0.06)
            place = _scarf_place
        else:
            vertices, faces = head_builders[name](first, _DEFAULT_FRAME)
            place = _head_builder(head_builders[name])
        out.append(
            AccessorySlot(
                name=name,
                part=SLOT_PARTS[name],
                bone=SLOT_BONES[name],
                variants=tuple(variants),
                vertices=vertices,
                faces=faces,
                build=place,
            )
        )
    return tuple(out)


def slots() -> list[AccessorySlot]:
    """The accessory slots of the reference mesh, in a fixed order: glasses, hat, earrings, scarf."""
    return list(_slots())
