"""Fit ANNY's SOMA face to 2D face landmarks of one or more views (an AnnyInverter-style fit
with an L-BFGS polish).

`anny.AnnyInverter` fits ANNY to a target *mesh*; a video frame only gives 2D landmarks. This
module closes that gap: each landmark a detector reports is tied to a point on the ANNY surface
(`MeshAnchors`: a triangle and barycentric weights), the anchored points are projected through
pinhole cameras, and the facial actions (kept in [0, 1]), the head bone rotation(s), optionally
the phenotype, and the camera position are optimised so that the projections land on the
landmarks. Gradients flow through anny's own forward pass (float64): Adam first (robust from a
neutral start), then `torch.optim.LBFGS` to polish.

Two landmark schemes: "anny-68", 68 ANNY vertices laid out like the common 68-point annotation
(`face_landmarks`, placed from a template), and "mediapipe-478", mediapipe Face Mesh's points,
tied to the mesh once by casting rays through the points a detector finds on a neutral render
(`anchors_from_render`). A detector does not put its points exactly where the anchors sit;
`landmark_bias` measures that offset on a neutral detection of the same subject and view, and
the fit then follows the motion relative to it.

Camera convention: a view's camera looks along its own -Z (`ViewCamera.rotation` turns world
into camera axes; identity looks along world -Z at the face, ANNY facing +Z, Y up); image u
grows to the right, v downwards; the principal point is the image centre. Several views share
one unknown rig origin; their rotations and offsets from it are known (a calibrated rig, or the
renderer's cameras).
"""

from __future__ import annotations

import functools
import math
from typing import Any, Sequence

import attrs
import numpy as np
import torch

from maskscore_core.body.anny_model import BodyModel, chain_weights, get_body_model
from maskscore_core.body.differentiable import posed_points, rotation as rotation_of
from maskscore_core.plugin.records import SOMA_BONES, BodyState
from maskscore_core.threads import one_thread

ANNY68_SCHEME = "anny-68"
MEDIAPIPE_SCHEME = "mediapipe-478"


class LandmarkFitError(ValueError):
    """Landmarks or a camera the fit cannot use (wrong shape, NaN, a face behind the camera)."""


class FaceDetectionError(ValueError):
    """A detector found no usable face (none, several, too small); the caller names file and frame."""


def _array_eq(a, b) -> bool:
    return np.array_equal(a, b)


@attrs.frozen
class Landmarks2D:
    """Detected landmarks: (N, 2) pixel positions in `scheme`'s order, from an image of
    `image_size` (width, height) pixels."""

    points: np.ndarray = attrs.field(eq=attrs.cmp_using(eq=_array_eq), converter=lambda v: np.asarray(v, dtype=np.float64))
    scheme: str = ANNY68_SCHEME
    image_size: tuple[int, int] | None = None


def as_landmarks(value) -> Landmarks2D:
    """A detector's answer as `Landmarks2D` (a bare (68, 2) array is the anny-68 scheme)."""
    return value if isinstance(value, Landmarks2D) else Landmarks2D(points=value, scheme=ANNY68_SCHEME)


# ---------------------------------------------------------------------------------------------
# The landmark set: 68 points in a frontal face frame, snapped onto the neutral ANNY surface.
# Coordinates are in units of the distance between the eye centres, origin at their midpoint,
# x towards the subject's left, y downwards (image-like). Measured against the default ANNY
# subject: eye line y = 0, nose tip 0.57, mouth line 1.15, chin 1.8, half-width ~1.05.


def _template_68() -> tuple[tuple[str, tuple[float, float]], ...]:
    points: list[tuple[str, tuple[float, float]]] = []
    for i, t in enumerate(np.linspace(0.0, 1.0, 17)):  # jaw, subject's right ear to left ear
        phi = math.pi * t
        points.append((f"jaw_{i:02d}", (-1.02 * math.cos(phi), 0.1 + 1.62 * math.sin(phi))))
    brow_x = (0.85, 0.70, 0.54, 0.38, 0.22)
    brow_y = (-0.22, -0.32, -0.36, -0.34, -0.28)
    for i, (x, y) in enumerate(zip(brow_x, brow_y)):  # subject's right brow, outer to inner
        points.append((f"brow_right_{i}", (-x, y)))
    for i, (x, y) in enumerate(zip(reversed(brow_x), reversed(brow_y))):  # left brow, inner to outer
        points.append((f"brow_left_{i}", (x, y)))
    for i, y in enumerate((0.12, 0.27, 0.42, 0.57)):  # nose bridge down to the tip
        points.append((f"nose_bridge_{i}", (0.0, y)))
    for i, x in enumerate((-0.28, -0.14, 0.0, 0.14, 0.28)):  # nostrils and columella
        points.append((f"nose_base_{i}", (x, 0.70 + 0.04 * (1 - abs(x) / 0.28))))
    eye = ((-0.23, 0.0), (-0.09, -0.08), (0.09, -0.08), (0.23, 0.0), (0.09, 0.07), (-0.09, 0.07))
    for i, (dx, dy) in enumerate(eye):  # right eye: outer corner, upper lid, inner corner, lower lid
        points.append((f"eye_right_{i}", (-0.5 - dx, dy)))
    for i, (dx, dy) in enumerate(eye):  # left eye: inner corner, upper lid, outer corner, lower lid
        points.append((f"eye_left_{i}", (0.5 - dx, dy)))
    for i in range(12):  # outer lip, from the right corner, over the upper lip, back along the lower
        phi = math.pi - 2 * math.pi * i / 12
        half_height = 0.12 if math.sin(phi) > 0 else 0.16
        points.append((f"lip_outer_{i:02d}", (0.43 * math.cos(phi), 1.15 - half_height * math.sin(phi))))
    for i in range(8):  # inner lip
        phi = math.pi - 2 * math.pi * i / 8
        points.append((f"lip_inner_{i}", (0.30 * math.cos(phi), 1.15 - 0.025 * math.sin(phi))))
    return tuple(points)


@attrs.frozen
class FaceLandmarks:
    """The landmark set: names (68, in the 68-point order) and the ANNY vertex each sits on."""

    names: tuple[str, ...]
    vertex_ids: np.ndarray = attrs.field(eq=attrs.cmp_using(eq=np.array_equal))

    def __len__(self) -> int:
        return len(self.names)


@functools.cache
def face_landmarks() -> FaceLandmarks:
    """Snap each template point onto the frontmost neutral-ANNY vertex in front of it.

    Deterministic (fixed template, fixed mesh): the same vertex ids every run. The snapping
    uses the eye bones to place and scale the template on the default subject's face.
    """
    body = get_body_model()
    out = body.forward([BodyState()])
    vertices, bones = out["vertices"][0], out["bone_poses"][0]
    left = bones[body.bone_index("LeftEye")][:3, 3]
    right = bones[body.bone_index("RightEye")][:3, 3]
    centre = (left + right) / 2
    unit = float(np.linalg.norm(left - right))
    head = (vertices[:, 1] > centre[1] - 2.5 * unit) & (vertices[:, 2] > centre[2] - 1.5 * unit)
    head &= np.abs(vertices[:, 0] - centre[0]) < 1.6 * unit
    candidates = np.flatnonzero(head)
    names, ids = [], []
    for name, (x, y) in _template_68():
        target = np.array([centre[0] + x * unit, centre[1] - y * unit])
        planar = np.linalg.norm(vertices[candidates, :2] - target, axis=1)
        for radius in (0.05, 0.1, 0.2, 0.4):
            near = candidates[planar < radius * unit]
            if len(near):
                break
        else:
            raise LandmarkFitError(f"landmark {name!r}: no ANNY vertex near the template point")
        names.append(name)
        ids.append(int(near[np.argmax(vertices[near, 2])]))
    if len(set(ids)) != len(ids):
        raise LandmarkFitError("two landmarks snapped onto the same ANNY vertex; the template is too dense")
    return FaceLandmarks(tuple(names), np.asarray(ids, dtype=np.int64))


# ---------------------------------------------------------------------------------------------
# Camera


@attrs.frozen
class PinholeCamera:
    """Intrinsics of the frame the landmarks come from (principal point at the image centre)."""

    width: int
    height: int
    focal_px: float

    def __attrs_post_init__(self) -> None:
        if self.width <= 0 or self.height <= 0 or not (self.focal_px > 0 and math.isfinite(self.focal_px)):
            raise LandmarkFitError(f"invalid camera {self.width}x{self.height}, focal {self.focal_px} px")

    @classmethod
    def from_diagonal_fov(cls, width: int, height: int, diagonal_fov_deg: float) -> "PinholeCamera":
        """E.g. SpeakingFaces' Logitech C920: 768x512 at 78 degrees diagonal."""
        half_diagonal = math.hypot(width, height) / 2
        return cls(width, height, half_diagonal / math.tan(math.radians(diagonal_fov_deg) / 2))

    def project(self, points: torch.Tensor, camera_position: torch.Tensor) -> torch.Tensor:
        """(..., 3) world points -> (..., 2) pixels, for a camera at `camera_position` looking along -Z."""
        rel = points - camera_position
        depth = -rel[..., 2]
        u = self.focal_px * rel[..., 0] / depth + self.width / 2
        v = -self.focal_px * rel[..., 1] / depth + self.height / 2
        return torch.stack([u, v], dim=-1)


SPEAKINGFACES_CAMERA = PinholeCamera.from_diagonal_fov(768, 512, 78.0)


# ---------------------------------------------------------------------------------------------
# Forward model shared by projection and fitting


def _phenotype_tensors(body: BodyModel, phenotype: dict[str, float]) -> dict[str, torch.Tensor]:
    unknown = set(phenotype) - set(body.phenotype_names)
    if unknown:
        raise LandmarkFitError(f"unknown phenotype labels {sorted(unknown)}; known: {body.phenotype_names}")
    return {k: torch.tensor([float(phenotype.get(k, 0.5))], dtype=torch.float64) for k in body.phenotype_names}




# ---------------------------------------------------------------------------------------------
# Anchors: where on the ANNY surface each detected landmark sits


@attrs.frozen
class MeshAnchors:
    """K landmarks tied to the mesh: landmark_index[k] is the row of the detector's points, the
    surface point is weights[k] . vertices[vertex_ids[k]] (a triangle and barycentric weights)."""

    scheme: str
    names: tuple[str, ...] = attrs.field(converter=tuple)
    landmark_index: np.ndarray = attrs.field(eq=attrs.cmp_using(eq=_array_eq))
    vertex_ids: np.ndarray = attrs.field(eq=attrs.cmp_using(eq=_array_eq))
    weights: np.ndarray = attrs.field(eq=attrs.cmp_using(eq=_array_eq))
    # The detector's response beyond geometry (optional): per parameter (a facial action, or
    # "Head.x/y/z" for the head rotation in radians), how far each landmark moves per unit of
    # it in the detector's output minus how far its anchor moves, as a displacement on the
    # resting face (metres, world axes at rest; measured from the front, so z is 0). (P, K, 3).
    response_params: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    response: np.ndarray | None = attrs.field(default=None, eq=False)

    def __attrs_post_init__(self) -> None:
        k = len(self.names)
        if self.landmark_index.shape != (k,) or self.vertex_ids.shape != (k, 3) or self.weights.shape != (k, 3):
            raise LandmarkFitError(f"anchors of {self.scheme}: {k} names but arrays of shapes {self.landmark_index.shape},"
                                   f" {self.vertex_ids.shape}, {self.weights.shape}")  # fmt: skip
        if self.response is not None and self.response.shape != (len(self.response_params), k, 3):
            raise LandmarkFitError(f"anchors of {self.scheme}: response of shape {self.response.shape} for"
                                   f" {len(self.response_params)} parameters and {k} landmarks")  # fmt: skip

    def __len__(self) -> int:
        return len(self.names)

    def select(self, landmarks: Landmarks2D) -> np.ndarray:
        """(K, 2) pixels of the anchored landmarks, checked."""
        if landmarks.scheme != self.scheme:
            raise LandmarkFitError(f"landmarks of scheme {landmarks.scheme!r} cannot be fitted with {self.scheme!r} anchors")
        points = np.asarray(landmarks.points, dtype=np.float64)
        needed = int(self.landmark_index.max()) + 1
        if points.ndim != 2 or points.shape[1] != 2 or points.shape[0] < needed:
            raise LandmarkFitError(f"expected ({needed if self.scheme != ANNY68_SCHEME else 68}, 2) landmark pixels"
                                   f" ({self.scheme}), got shape {points.shape}")  # fmt: skip
        if not np.isfinite(points).all():
            raise LandmarkFitError("landmarks hold NaN or infinite coordinates")
        return points[self.landmark_index]

    def kept(self, prefixes: Sequence[str]) -> np.ndarray:
        """(K,) True for the anchors whose names start with none of `prefixes`."""
        return np.array([not name.startswith(tuple(prefixes)) for name in self.names], dtype=bool)

    def without(self, prefixes: Sequence[str]) -> "MeshAnchors":
        """These anchors less those whose names start with one of `prefixes` (`FitConfig.unfollowed`)."""
        keep = self.kept(prefixes)
        return attrs.evolve(
            self, names=[n for n, k in zip(self.names, keep) if k], landmark_index=self.landmark_index[keep],
            vertex_ids=self.vertex_ids[keep], weights=self.weights[keep],
            response=None if self.response is None else self.response[:, keep],
        )  # fmt: skip

    def to_json(self) -> dict:
        return {
            "scheme": self.scheme,
            "names": list(self.names),
            "landmark_index": self.landmark_index.tolist(),
            "vertex_ids": self.vertex_ids.tolist(),
            "weights": np.round(self.weights, 6).tolist(),
            "response_params": list(self.response_params),
            "response": None if self.response is None else np.round(self.response, 8).tolist(),
        }

    @classmethod
    def from_json(cls, data: dict) -> "MeshAnchors":
        return cls(
            scheme=str(data["scheme"]),
            names=tuple(data["names"]),
            landmark_index=np.asarray(data["landmark_index"], dtype=np.int64),
            vertex_ids=np.asarray(data["vertex_ids"], dtype=np.int64),
            weights=np.asarray(data["weights"], dtype=np.float64),
            response_params=tuple(data.get("response_params") or ()),
            response=None if data.get("response") is None else np.asarray(data["response"], dtype=np.float64),
        )


@functools.cache
def anny68_anchors() -> MeshAnchors:
    """The 68-point template as anchors (each on one vertex)."""
    marks = face_landmarks()
    ids = np.repeat(marks.vertex_ids[:, None], 3, axis=1)
    weights = np.zeros((len(marks), 3))
    weights[:, 0] = 1.0
    return MeshAnchors(ANNY68_SCHEME, marks.names, np.arange(len(marks)), ids, weights)


def _barycentric(origin: np.ndarray, direction: np.ndarray, triangle: np.ndarray) -> np.ndarray:
    """Barycentric weights of where the ray meets the triangle's plane, clamped into the
    triangle (a landmark between two pixels may fall just outside the triangle of its pixel)."""
    a, b, c = triangle
    normal = np.cross(b - a, c - a)
    t = float(np.dot(a - origin, normal) / np.dot(direction, normal))
    hit = origin + t * direction
    v0, v1, v2 = b - a, c - a, hit - a
    d00, d01, d11, d20, d21 = v0 @ v0, v0 @ v1, v1 @ v1, v2 @ v0, v2 @ v1
    denom = d00 * d11 - d01 * d01
    w1 = (d11 * d20 - d01 * d21) / denom
    w2 = (d00 * d21 - d01 * d20) / denom
    weights = np.clip(np.array([1.0 - w1 - w2, w1, w2]), 0.0, None)
    return weights / weights.sum()


def anchors_from_render(scheme: str, names: Sequence[str], landmark_index: Sequence[int], points_px: np.ndarray,
                        face_id: np.ndarray, pose, fov_deg: float, vertices: np.ndarray, faces: np.ndarray) -> MeshAnchors:  # fmt: skip
    """Tie detected landmarks to the mesh: the ray through each landmark's pixel position meets
    the triangle the render shows at that pixel (`face_id`, from `render.Renderer.render` of
    `vertices` seen from camera `pose` of `fov_deg` on the smaller image side).

    Run once on a neutral frontal render of the default subject; a landmark that lands on the
    background is an error naming it."""
    height, width = face_id.shape
    to_world = pose.to_world()
    half = math.tan(math.radians(fov_deg) / 2.0) / min(width, height)
    ids, weights = [], []
    for name, index in zip(names, landmark_index):
        u, v = points_px[index]
        col, row = int(np.clip(math.floor(u), 0, width - 1)), int(np.clip(math.floor(v), 0, height - 1))
        triangle = int(face_id[row, col])
        if triangle < 0:
            raise LandmarkFitError(f"landmark {name!r} at ({u:.1f}, {v:.1f}) px lies off the rendered face")
        # the renderer's ray model (views.pixel_ray_directions) at a sub-pixel position
        local = np.array([-(2 * u - width) * half, -(2 * v - height) * half, 1.0])
        direction = to_world[:3, :3] @ (local / np.linalg.norm(local))
        corners = np.asarray(vertices, dtype=np.float64)[faces[triangle]]
        ids.append(faces[triangle])
        weights.append(_barycentric(to_world[:3, 3], direction, corners))
    return MeshAnchors(scheme, tuple(names), np.asarray(landmark_index, dtype=np.int64),
                       np.asarray(ids, dtype=np.int64), np.asarray(weights, dtype=np.float64))  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Views


@attrs.frozen
class ViewCamera:
    """One view: intrinsics, the world-to-camera rotation (identity: looking along world -Z),
    and the camera centre's offset from the rig origin (world coordinates, metres)."""

    camera: PinholeCamera
    rotation: np.ndarray = attrs.field(factory=lambda: np.eye(3), eq=attrs.cmp_using(eq=_array_eq),
                                       converter=lambda v: np.asarray(v, dtype=np.float64))  # fmt: skip
    offset: np.ndarray = attrs.field(factory=lambda: np.zeros(3), eq=attrs.cmp_using(eq=_array_eq),
                                     converter=lambda v: np.asarray(v, dtype=np.float64))  # fmt: skip

    @classmethod
    def from_pose(cls, pose, fov_deg: float, width: int, height: int, rig_origin=None) -> "ViewCamera":
        """A renderer camera (`views.CameraPose`, fov on the smaller side, Mitsuba's axes: left,
        up, forward) as a view; the offset is from `rig_origin` (default: this camera itself)."""
        to_world = pose.to_world()
        left, up, forward = to_world[:3, 0], to_world[:3, 1], to_world[:3, 2]
        focal = (min(width, height) / 2.0) / math.tan(math.radians(fov_deg) / 2.0)
        origin = to_world[:3, 3] if rig_origin is None else np.asarray(rig_origin, dtype=np.float64)
        return cls(PinholeCamera(int(width), int(height), focal), np.stack([-left, up, -forward]), to_world[:3, 3] - origin)

    def project(self, points: torch.Tensor, rig_origin: torch.Tensor) -> torch.Tensor:
        """(..., 3) world points -> (..., 2) pixels for a rig at `rig_origin`."""
        rotation = torch.as_tensor(self.rotation, dtype=points.dtype)
        rel = (points - rig_origin - torch.as_tensor(self.offset, dtype=points.dtype)) @ rotation.T
        depth = -rel[..., 2]
        u = self.camera.focal_px * rel[..., 0] / depth + self.camera.width / 2
        v = -self.camera.focal_px * rel[..., 1] / depth + self.camera.height / 2
        return torch.stack([u, v], dim=-1)

    def project_linear(self, points: np.ndarray, rig_origin: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`project` in numpy: (N, 3) world points -> (N, 2) pixels, and their derivative in the
        points (N, 2, 3), for fits that move points linearly."""
        rel = (np.asarray(points) - np.asarray(rig_origin) - self.offset) @ self.rotation.T
        depth = -rel[:, 2]
        focal = self.camera.focal_px
        pixels = np.stack([focal * rel[:, 0] / depth + self.camera.width / 2, -focal * rel[:, 1] / depth + self.camera.height / 2], 1)
        d_rel = np.zeros((len(rel), 2, 3))
        d_rel[:, 0, 0] = focal / depth
        d_rel[:, 0, 2] = focal * rel[:, 0] / depth**2
        d_rel[:, 1, 1] = -focal / depth
        d_rel[:, 1, 2] = -focal * rel[:, 1] / depth**2
        return pixels, d_rel @ self.rotation

    def depth(self, points: torch.Tensor, rig_origin: torch.Tensor) -> torch.Tensor:
        rotation = torch.as_tensor(self.rotation, dtype=points.dtype)
        return -((points - rig_origin - torch.as_tensor(self.offset, dtype=points.dtype)) @ rotation.T)[..., 2]


def _as_view(camera) -> ViewCamera:
    return camera if isinstance(camera, ViewCamera) else ViewCamera(camera)


@attrs.frozen
class ViewLandmarks:
    """What one view saw: its landmarks, its camera, and optionally the detector's offset from
    the anchors in this view (`landmark_bias` of a neutral detection), taken off before fitting."""

    landmarks: Landmarks2D = attrs.field(converter=as_landmarks)
    view: ViewCamera = attrs.field(converter=_as_view)
    bias: np.ndarray | None = attrs.field(default=None, eq=False)


def _anchor_points(body: BodyModel, pose, translation, phenotype, actions, anchors: MeshAnchors) -> torch.Tensor:
    """(B, K, 3) world positions of the anchored surface points."""
    ids = torch.as_tensor(anchors.vertex_ids.reshape(-1))
    corners = posed_points(body, pose, translation, phenotype, actions, ids)
    corners = corners.reshape(corners.shape[0], len(anchors), 3, 3)
    return torch.einsum("bkcd,kc->bkd", corners, torch.as_tensor(anchors.weights, dtype=corners.dtype))


def project_anchors(state: BodyState, camera, camera_position: Sequence[float], anchors: MeshAnchors | None = None,
                    reference: bool = False) -> np.ndarray:  # fmt: skip
    """(K, 2) pixel positions of the anchored points for a known body state (the fit's inverse);
    `camera` a `PinholeCamera` or `ViewCamera`, `camera_position` the rig origin. reference:
    on the reference mesh (facial actions kept off the skull: what pictures are rendered of)
    rather than anny's own forward pass."""
    body = get_body_model()
    anchors = anchors or anny68_anchors()
    if reference:
        from maskscore_core.body.reference_mesh import get_reference_mesh

        corners = get_reference_mesh().anny_posed([state])["vertices"][0][anchors.vertex_ids]
        points = torch.as_tensor(np.einsum("kcd,kc->kd", corners, anchors.weights))
        return _as_view(camera).project(points, torch.as_tensor(camera_position, dtype=torch.float64)).numpy()
    with torch.no_grad():
        points = _anchor_points(
            body,
            torch.as_tensor(state.pose[None], dtype=torch.float64),
            torch.as_tensor(state.translation[None], dtype=torch.float64),
            _phenotype_tensors(body, state.phenotype),
            torch.as_tensor(state.expression[None], dtype=torch.float64),
            anchors,
        )
        pixels = _as_view(camera).project(points[0], torch.as_tensor(camera_position, dtype=torch.float64))
    return pixels.numpy()


def project_landmarks(state: BodyState, camera: PinholeCamera, camera_position: Sequence[float]) -> np.ndarray:
    """(68, 2) pixel positions of the anny-68 landmarks for a known body state."""
    return project_anchors(state, camera, camera_position, anny68_anchors())


def landmark_bias(neutral: Landmarks2D, state: BodyState, camera, camera_position, anchors: MeshAnchors) -> np.ndarray:
    """(K, 2) where the detector puts each anchored landmark minus where the anchor projects, on a
    detection of a known (neutral) state of the subject in this view: the detector's own offset,
    which `ViewLandmarks.bias` takes off so that the fit follows the motion. The state is placed
    on the reference mesh: the neutral picture is a render of it."""
    return anchors.select(as_landmarks(neutral)) - project_anchors(state, camera, camera_position, anchors, reference=True)


# ---------------------------------------------------------------------------------------------
# The linear face: the anchored points of one subject as a cheap, exact-enough function


# The bones a linear face turns, root first: the neck's two bones and the head.
LINEAR_BONES: tuple[str, ...] = ("Neck1", "Neck2", "Head")


@attrs.frozen
class LinearFace:
    """Anchored points of one subject (reference mesh: facial actions kept off the skull):

        rest(x) = base + sum_a x_a deltas[a]                             (facial actions x)
        posed   = (1 - sum_b w_b) rest(x) + sum_b w_b T_b rest(x)        (b in LINEAR_BONES)

    T_b turns about the bones' joints down the chain (T_Head = T_Neck1 T_Neck2 R_Head about its
    joint); w_b is each point's skinning weight on bone b and the bones it carries (the jaw and
    eyes ride on the head). Why it holds: facial actions are blendshapes, linear in the rest mesh
    (jawOpen at 0.5 is half of jawOpen at 1), and SOMA's axis-angles are in world
    axes at rest, so this is anny's own linear blend skinning for a pose of these three bones
    (docs/speakingfaces.md, "The fit", has how close it comes to anny's forward pass)."""

    base: np.ndarray = attrs.field(eq=False)
    deltas: np.ndarray = attrs.field(eq=False)
    bone_weights: np.ndarray = attrs.field(eq=False)  # (K, 3) on LINEAR_BONES
    joints: np.ndarray = attrs.field(eq=False)  # (3, 3) joint positions at rest
    # d(rest points) / d(phenotype label) at the subject's phenotype (central differences), (P, K, 3):
    # a nearby subject's face, to first order (the joints stay where they are).
    phenotype_deltas: np.ndarray | None = attrs.field(default=None, eq=False)

    def points(self, actions: torch.Tensor, rotvecs: torch.Tensor, extra=None, phenotype_offset=None) -> torch.Tensor:
        """(K, 3) posed anchored points for actions (52,) and LINEAR_BONES' rotations (3, 3);
        `extra` (K, 3) moves the resting points first (the detector's response);
        `phenotype_offset` (P,) moves the phenotype away from the subject's."""
        base, deltas = torch.as_tensor(self.base), torch.as_tensor(self.deltas)
        rest = base + torch.einsum("a,akd->kd", actions, deltas)
        if extra is not None:
            rest = rest + extra
        if phenotype_offset is not None:
            rest = rest + torch.einsum("p,pkd->kd", phenotype_offset, torch.as_tensor(self.phenotype_deltas))
        weights, joints = torch.as_tensor(self.bone_weights), torch.as_tensor(self.joints)
        rotation = torch.eye(3, dtype=rest.dtype)
        shift = torch.zeros(3, dtype=rest.dtype)
        posed = rest * (1.0 - weights.sum(dim=1, keepdim=True))
        for b in range(len(LINEAR_BONES)):
            local = rotation_of(rotvecs[b])
            # compose: x -> rotation (local (x - j) + j) + shift
            shift = rotation @ (joints[b] - local @ joints[b]) + shift
            rotation = rotation @ local
            posed = posed + weights[:, b : b + 1] * (rest @ rotation.T + shift)
        return posed


_linear_faces: dict = {}
PHENOTYPE_STEP = 0.05


def _chain_weights(body, anchors: MeshAnchors) -> np.ndarray:
    """(K, 3) each anchored point's skinning weight carried by each of LINEAR_BONES."""
    return np.einsum("kcb,kc->kb", chain_weights(body, LINEAR_BONES)[anchors.vertex_ids], anchors.weights)


def linear_face(phenotype: dict[str, float], anchors: MeshAnchors) -> LinearFace:
    """The subject's `LinearFace` (one batch of reference-mesh evaluations, cached per subject)."""
    from maskscore_core.body.reference_mesh import get_reference_mesh

    key = (tuple(sorted((k, float(v)) for k, v in phenotype.items())), anchors.scheme, anchors.vertex_ids.tobytes(), anchors.weights.tobytes())
    if key not in _linear_faces:
        body = get_body_model()
        count = len(body.action_names)
        full = {name: float(phenotype.get(name, 0.5)) for name in body.phenotype_names}
        states = [BodyState(phenotype=full)]
        states += [BodyState(phenotype=full, expression=np.eye(count)[a]) for a in range(count)]
        steps = []
        for name in body.phenotype_names:  # central differences, kept inside [0, 1]
            low, high = max(0.0, full[name] - PHENOTYPE_STEP), min(1.0, full[name] + PHENOTYPE_STEP)
            steps.append(high - low)
            states += [BodyState(phenotype={**full, name: low}), BodyState(phenotype={**full, name: high})]
        posed = get_reference_mesh().anny_posed(states)
        corners = posed["vertices"][:, anchors.vertex_ids]  # (1 + A + 2P, K, 3, 3)
        points = np.einsum("skcd,kc->skd", corners, anchors.weights)
        joints = np.stack([posed["bone_poses"][0][body.bone_index(name)][:3, 3] for name in LINEAR_BONES])
        pairs = points[1 + count :].reshape(len(steps), 2, *points.shape[1:])
        phenotype_deltas = (pairs[:, 1] - pairs[:, 0]) / np.asarray(steps)[:, None, None]
        _linear_faces[key] = LinearFace(points[0], points[1 : 1 + count] - points[0], _chain_weights(body, anchors), joints,
                                        phenotype_deltas)  # fmt: skip
    return _linear_faces[key]


# ---------------------------------------------------------------------------------------------
# The fit


@attrs.frozen
class FitConfig:
    """What the fit optimises and for how long.

    bones: SOMA bones whose rotation is fitted. From face landmarks alone, the neck bones and the
    head bone are not separable (they all turn the head), so the default puts the whole head
    rotation on `Head`; the jaw is driven by the `jawOpen` action, not by the Jaw bone, unless
    "Jaw" is listed. adam_steps: Adam steps on logits from the starting state (a first, rough
    descent); lbfgs_steps / pose_lbfgs_steps: the most iterations of the last stages, which run
    L-BFGS-B on the values themselves until a step no longer lowers the cost (`LBFGS_FTOL`;
    `FitResult.converged` says whether they got there). actions: the facial actions fitted
    (None: all 52); the others keep the starting state's values. action_prior / rotation_prior: small L2 pulls towards neutral that
    keep actions no landmark sees (tongue, eye gaze) from drifting; action_sparsity: an L1 pull
    that settles antagonists (browDown against browOuterUp) at the smaller pair of values.
    fix_camera: keep the rig origin where `camera_position` puts it (a known camera).
    linear: use the subject's `LinearFace` instead of anny's forward pass in every step (bones
    among LINEAR_BONES, phenotype fixed): about a thousand times cheaper a step, within 0.4 mm.
    use_response: with `linear`, add the anchors' measured detector response (`MeshAnchors.response`).
    chain_shares: with `linear` and bones = LINEAR_BONES, fit one turn of the head and share it
    out over the bones in these proportions (the built-in source's 0.4 / 0.3 / 0.3: a neck bends
    with the head), instead of three free rotations that face landmarks cannot tell apart.
    phenotype_prior: with `fit_phenotype`, an L2 pull towards the given phenotype (with the
    linear face the phenotype moves the face to first order about the given one).
    symmetry_prior: an L2 pull of each fitted ...Left action towards its ...Right twin: a face
    moves both sides alike unless the landmarks say otherwise, and without it a detector's
    one-sided error read as one-sided actions (a head pitch as mouthLowerDownLeft alone).
    pose_landmarks: rigid points (anchor names or group prefixes) that alone set the head's turn
    (and a free camera): the turn is fitted on them with the actions held, then the actions and
    phenotype on every point with the turn held, `pose_rounds` times (the turn's L-BFGS runs
    `pose_lbfgs_steps`). A head turn moves every point, so fitted jointly, mouth points the
    detector misreads (an open, smiling mouth) pulled the turn with them.
    rigid_weighed: rigid points for a second fit (as `pose_landmarks`) that is weighed against
    the joint fit by how much worse it explains every landmark (`weighed_fit`, scale
    `rigid_scale_px`): the rigid turn where it costs the other points about nothing, the joint
    one where it runs off (another subject's proportions read as a turn); the actions and
    phenotype are then fitted again with the weighed turn held, so that they fit the turn they
    go with (two fits' actions mixed need not explain any landmark).
    hold_turn: fit the actions and phenotype only, the head's turn (and the camera) held as the
    starting state has them.
    unfollowed: anchors (name prefixes) the fit leaves out: points the detector does not follow
    on the pictures at hand, whose misplacement would otherwise be read as motion.
    """

    bones: tuple[str, ...] = ("Head",)
    fit_phenotype: bool = False
    adam_steps: int = 100
    adam_lr: float = 0.03
    lbfgs_steps: int = 300
    action_prior: float = 1e-6
    rotation_prior: float = 1e-6
    actions: tuple[str, ...] | None = None
    action_sparsity: float = 0.0
    fix_camera: bool = False
    linear: bool = False
    use_response: bool = True
    chain_shares: tuple[float, ...] | None = None
    phenotype_prior: float = 0.0
    symmetry_prior: float = 0.0
    pose_landmarks: tuple[str, ...] | None = None
    pose_rounds: int = 2
    pose_lbfgs_steps: int = 300
    rigid_weighed: tuple[str, ...] | None = None
    rigid_scale_px: float = 1.0
    hold_turn: bool = False
    unfollowed: tuple[str, ...] = ()


# Facial actions a face-landmark detector can see: mouth, jaw opening, lids, brows. The others
# (cheeks, nose, tongue, jaw sideways, dimples) move no fitted landmark much, and gaze (eyeLook*)
# barely changes a picture of the SOMA mesh, whose eyes are sockets without eyeballs (measured:
# a gaze of 0.5 came back as 0); left free they would only soak up detector noise.
PIXEL_ACTIONS: tuple[str, ...] = (
    "jawOpen", "mouthClose", "mouthFunnel", "mouthPucker", "mouthSmileLeft", "mouthSmileRight",
    "mouthStretchLeft", "mouthStretchRight", "mouthFrownLeft", "mouthFrownRight", "mouthLeft", "mouthRight",
    "mouthLowerDownLeft", "mouthLowerDownRight", "mouthUpperUpLeft", "mouthUpperUpRight",
    "eyeBlinkLeft", "eyeBlinkRight", "eyeWideLeft", "eyeWideRight", "eyeSquintLeft", "eyeSquintRight",
    "browDownLeft", "browDownRight", "browInnerUp", "browOuterUpLeft", "browOuterUpRight",
)  # fmt: skip


@attrs.frozen
class FitResult:
    state: BodyState
    camera_position: np.ndarray = attrs.field(eq=attrs.cmp_using(eq=np.array_equal))
    predicted_px: np.ndarray = attrs.field(eq=attrs.cmp_using(eq=np.array_equal))
    mean_error_px: float
    max_error_px: float
    evaluations: int = 0
    rigid_weight: float | None = None  # `weighed_fit`: the rigid fit's share
    converged: bool = True  # every L-BFGS-B stage stopped by its stopping rule, not by `lbfgs_steps`
    photometric: Any = None  # what a refinement against the picture's pixels found (maskscore_face_landmarks.photometric)


# The fit of detected pixels (mediapipe-478 anchors): the visible actions only, with an L1 pull
# that keeps antagonists from cancelling (values chosen on benchmarks/bench_landmark_fit.py).
PIXEL_FIT = FitConfig(actions=PIXEL_ACTIONS, action_sparsity=3e-4, adam_steps=40, lbfgs_steps=1000, linear=True,
                      symmetry_prior=1e-2)  # fmt: skip
# With the camera known (frames a renderer drew), where the head sits tells the neck's bend too:
# one turn of the head is fitted and shared out over the neck's two bones and the head. The
# phenotype is fitted too, held near the subject's by a prior: a picture of someone else must not
# decode to the subject's own face (the ladder's wrong-subject rung); weaker priors (1e-3) let
# it soak up expression and broke the ladder's order, measured.
PIXEL_FIT_KNOWN_CAMERA = attrs.evolve(PIXEL_FIT, bones=LINEAR_BONES, fix_camera=True, chain_shares=(0.4, 0.3, 0.3),
                                      fit_phenotype=True, phenotype_prior=1e-2)  # fmt: skip


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


def fit_landmarks(
    landmarks_px,
    camera: PinholeCamera = SPEAKINGFACES_CAMERA,
    phenotype: dict[str, float] | None = None,
    config: FitConfig = FitConfig(),
    init: BodyState | None = None,
    anchors: MeshAnchors | None = None,
    camera_position=None,
    bias: np.ndarray | None = None,
) -> FitResult:
    """Recover a SOMA body state (face actions, head rotation) and camera from one view's
    landmarks (a (68, 2) anny-68 array or `Landmarks2D`); see `fit_views`."""
    view = ViewLandmarks(landmarks_px, camera, bias)
    return fit_views([view], phenotype, config, init, anchors, camera_position)


def fit_views(
    views: Sequence[ViewLandmarks],
    phenotype: dict[str, float] | None = None,
    config: FitConfig = FitConfig(),
    init: BodyState | None = None,
    anchors: MeshAnchors | None = None,
    camera_position=None,
) -> FitResult:
    """Recover a SOMA body state (face actions, head rotation) and the rig origin from the
    landmarks of one or more views.

    phenotype: the subject's phenotype when known (else ANNY's average); with
    `config.fit_phenotype` it is a starting point that the fit refines. init: a warm start
    (e.g. the previous frame's fit). camera_position: the rig origin's starting point (else
    placed from view 0's landmarks). Deterministic: no random initialisation.

    Runs on one torch thread: the problem is small (about a hundred points), and on a shared
    2-core machine two threads made each iteration much slower (docs/speakingfaces.md).
    """
    if not views:
        raise LandmarkFitError("no views to fit")
    with one_thread():
        views, anchors = _followed(list(views), anchors or anny68_anchors(), config.unfollowed)
        if config.rigid_weighed is None:
            return _fit(views, camera_position, phenotype, config, init, anchors)
        plain = attrs.evolve(config, rigid_weighed=None)
        joint = _fit(views, camera_position, phenotype, plain, init, anchors)
        rigid = _fit(views, camera_position, phenotype, attrs.evolve(plain, pose_landmarks=config.rigid_weighed), init, anchors)
        mixed = weighed_fit(joint, rigid, config.rigid_scale_px)
        held = _fit(views, mixed.camera_position, phenotype, attrs.evolve(plain, hold_turn=True), mixed.state, anchors)
        return attrs.evolve(held, evaluations=mixed.evaluations + held.evaluations, rigid_weight=mixed.rigid_weight,
                            converged=joint.converged and rigid.converged and held.converged)  # fmt: skip


def _followed(views: list[ViewLandmarks], anchors: MeshAnchors, unfollowed: Sequence[str]):
    """The views (their biases) and anchors less the anchors `unfollowed` names."""
    if not unfollowed:
        return views, anchors
    keep = anchors.kept(unfollowed)

    def bias(view):  # a bias of another size is left for `_targets` to refuse by name
        return view.bias if view.bias is None or np.shape(view.bias)[:1] != keep.shape else np.asarray(view.bias)[keep]

    return [attrs.evolve(view, bias=bias(view)) for view in views], anchors.without(unfollowed)


def rigid_weight(joint: FitResult, rigid: FitResult, scale_px: float) -> float:
    """exp(-(excess / scale)^2), the excess being how much larger the rigid fit's mean landmark
    error is than the joint fit's (0 where it is not larger): about 1 while the rigid turn costs
    the other points less than the detector's own jitter (a pixel or two), about 0 where it ran off.
    Smooth in both errors: no threshold switches between the two."""
    excess = max(0.0, rigid.mean_error_px - joint.mean_error_px)
    return math.exp(-((excess / scale_px) ** 2))


def weighed_fit(joint: FitResult, rigid: FitResult, scale_px: float) -> FitResult:
    """The two fits' states mixed by `rigid_weight` (actions, bone rotations, phenotype); the
    landmark predictions and errors mixed alike (a first-order account of the mixed state's)."""
    w = rigid_weight(joint, rigid, scale_px)
    a, b = joint.state, rigid.state
    state = attrs.evolve(
        a, expression=(1.0 - w) * a.expression + w * b.expression, pose=(1.0 - w) * a.pose + w * b.pose,
        phenotype={k: (1.0 - w) * a.phenotype[k] + w * b.phenotype[k] for k in a.phenotype},
    )  # fmt: skip
    return FitResult(
        state=state,
        camera_position=(1.0 - w) * joint.camera_position + w * rigid.camera_position,
        predicted_px=(1.0 - w) * joint.predicted_px + w * rigid.predicted_px,
        mean_error_px=(1.0 - w) * joint.mean_error_px + w * rigid.mean_error_px,
        max_error_px=(1.0 - w) * joint.max_error_px + w * rigid.max_error_px,
        evaluations=joint.evaluations + rigid.evaluations,
        rigid_weight=w,
    )


def _targets(views: list[ViewLandmarks], anchors: MeshAnchors) -> torch.Tensor:
    out = []
    for view in views:
        selected = anchors.select(view.landmarks)
        if view.bias is not None:
            bias = np.asarray(view.bias, dtype=np.float64)
            if bias.shape != selected.shape or not np.isfinite(bias).all():
                raise LandmarkFitError(f"a view's landmark bias has shape {bias.shape}; expected finite {selected.shape}")
            selected = selected - bias
        out.append(selected)
    return torch.as_tensor(np.stack(out))  # (V, K, 2)


def _pose_weights(anchors: MeshAnchors, names, view_count: int) -> torch.Tensor | None:
    """(V, K) 1 on the pose landmarks (anchor names or group prefixes), 0 elsewhere; None when not given."""
    if names is None:
        return None
    wanted = tuple(names)
    mask = [any(n == w or n.startswith(w + "_") for w in wanted) for n in anchors.names]
    if not any(mask):
        raise LandmarkFitError(f"none of the pose landmarks {list(wanted)} is among the {anchors.scheme} anchors")
    return torch.as_tensor(mask, dtype=torch.float64)[None].expand(view_count, -1)


def _adam(params, config: "FitConfig", loss_fn) -> None:
    adam = torch.optim.Adam(params, lr=config.adam_lr)
    for _ in range(config.adam_steps):
        adam.zero_grad()
        loss_fn().backward()
        adam.step()


# The last stage's stopping rule: a step that lowers the cost by less than this (the cost is
# about 1e-3: landmark errors in units of the face's spread, squared), or a largest projected
# gradient below LBFGS_GTOL. Stopped after a fixed count instead, where the fit stopped depended
# on the path it took, and rounding alone changes the path (plugins/maskscore-face-landmarks/README.md,
# "Run to convergence").
LBFGS_FTOL = 1e-14
LBFGS_GTOL = 1e-10


def _bounded_lbfgs(tensors: list[torch.Tensor], bounds, steps: int, loss_fn) -> bool:
    """Minimise loss_fn() over `tensors` (leaves, changed in place) within `bounds` (one (low,
    high) per element, None for no bound) by scipy's L-BFGS-B, for at most `steps` iterations.
    True when it stopped by the stopping rule, not by the iteration count."""
    from scipy.optimize import minimize

    if not tensors:
        return True
    if steps <= 0:
        return False
    sizes = [t.numel() for t in tensors]

    def assign(x: np.ndarray) -> None:
        with torch.no_grad():
            for t, chunk in zip(tensors, np.split(x, np.cumsum(sizes)[:-1])):
                t.copy_(torch.from_numpy(chunk).view_as(t))

    def cost(x: np.ndarray):
        assign(x)
        for t in tensors:
            t.grad = None
        value = loss_fn()
        value.backward()
        return float(value.detach()), np.concatenate([t.grad.reshape(-1).numpy() for t in tensors])

    start = np.concatenate([t.detach().reshape(-1).numpy() for t in tensors]).astype(np.float64)
    found = minimize(cost, start, jac=True, method="L-BFGS-B", bounds=bounds,
                     options={"maxiter": steps, "maxfun": 4 * steps, "ftol": LBFGS_FTOL, "gtol": LBFGS_GTOL, "maxcor": 20})  # fmt: skip
    assign(found.x)
    return bool(found.success)


def _response_terms(anchors: MeshAnchors, body, active, bone_ids, config):
    """The anchors' detector response as (fitted actions' rows (A, K, 3), Head rotation rows
    (3, K, 3) or None), zero rows for parameters it was not measured for."""
    if anchors.response is None:
        return None
    table = dict(zip(anchors.response_params, torch.as_tensor(anchors.response)))
    zero = torch.zeros(len(anchors), 3, dtype=torch.float64)
    actions = torch.stack([table.get(body.action_names[a], zero) for a in active])
    rotation = torch.stack([table.get(f"Head.{axis}", zero) for axis in "xyz"])
    return actions, rotation


def _fit(views, camera_position, phenotype, config, init, anchors) -> FitResult:
    body = get_body_model()
    target = _targets(views, anchors)
    bone_ids = [body.bone_index(name) for name in config.bones]
    active = list(range(len(body.action_names))) if config.actions is None else [body.action_index(n) for n in config.actions]
    init = init or BodyState(phenotype=dict(phenotype or {}))
    pheno0 = _phenotype_tensors(body, dict(phenotype if phenotype is not None else init.phenotype))

    # Parameters. Actions live in [0, 1] through a sigmoid; phenotype likewise.
    start = np.clip(init.expression[active], 0.02, 0.98)
    raw_actions = torch.tensor([_logit(p) for p in start], dtype=torch.float64, requires_grad=True)
    base_actions = torch.as_tensor(init.expression, dtype=torch.float64)
    shares = None
    if config.chain_shares is not None:
        if not config.linear or tuple(config.bones) != LINEAR_BONES or len(config.chain_shares) != len(LINEAR_BONES):
            raise LandmarkFitError(f"chain_shares needs the linear face and bones {LINEAR_BONES}")
        shares = torch.as_tensor(config.chain_shares, dtype=torch.float64)[:, None]
        turn = init.pose[bone_ids].sum(axis=0, keepdims=True)  # the head's whole turn
        rotations = torch.tensor(turn, dtype=torch.float64, requires_grad=True)
    else:
        rotations = torch.tensor(init.pose[bone_ids], dtype=torch.float64, requires_grad=True)

    def bone_rotations(rot):
        """(len(bones), 3) rotations of config.bones from the fitted parameters."""
        return rot if shares is None else shares * rot
    raw_pheno = torch.tensor(
        [_logit(min(max(float(pheno0[k][0]), 0.02), 0.98)) for k in body.phenotype_names],
        dtype=torch.float64,
        requires_grad=config.fit_phenotype,
    )
    base_pose = torch.as_tensor(init.pose, dtype=torch.float64)
    translation = torch.as_tensor(init.translation[None], dtype=torch.float64)

    def actions_of(a):
        full = base_actions.clone()
        full[active] = a
        return full

    response = _response_terms(anchors, body, active, bone_ids, config) if config.use_response and config.linear else None

    def detector_shift(a, rot):
        """(K, 3) metres on the resting face: where the detector's points go beyond the anchors."""
        if response is None:
            return None
        action_rows, rotation_rows = response
        shift = torch.einsum("a,akd->kd", a, action_rows)
        if rotation_rows is not None:  # the head's whole turn: the chain's rotations summed
            shift = shift + torch.einsum("c,ckd->kd", chain_rotations(rot).sum(dim=0), rotation_rows)
        return shift

    if config.linear:
        if not set(config.bones) <= set(LINEAR_BONES):
            raise LandmarkFitError(f"the linear face fits rotations of {LINEAR_BONES}; asked for bones {config.bones}")
        face = linear_face({k: float(v[0]) for k, v in pheno0.items()}, anchors)
        chain_ids = [body.bone_index(name) for name in LINEAR_BONES]

    def chain_rotations(rot):
        pose = base_pose.clone()
        pose[bone_ids] = bone_rotations(rot)
        return pose[chain_ids]

    def phenotype_offset(p):
        """(P,) the fitted phenotype minus the given one, or None when it is not fitted."""
        if not config.fit_phenotype:
            return None
        return p - torch.stack([pheno0[k][0] for k in body.phenotype_names])

    def points_of(a, rot, p):
        """(K, 3) anchor points of action values a, the fitted rotations and phenotype values p."""
        if config.linear:
            return face.points(actions_of(a), chain_rotations(rot), detector_shift(a, rot), phenotype_offset(p))
        pose = base_pose.clone()
        pose[bone_ids] = rot
        if config.fit_phenotype:
            pheno = {k: p[i][None] for i, k in enumerate(body.phenotype_names)}
        else:  # exactly the given phenotype
            pheno = pheno0
        return _anchor_points(body, pose[None], translation, pheno, actions_of(a)[None], anchors)[0]

    first = views[0].view
    with torch.no_grad():
        neutral = points_of(torch.sigmoid(raw_actions), rotations, torch.sigmoid(raw_pheno))
        spreads = [float(torch.linalg.norm(t - t.mean(0), dim=1).mean()) for t in target]
        if min(spreads) <= 0:
            raise LandmarkFitError("all landmarks lie on one pixel; cannot fit a face to them")
        if camera_position is not None:
            cam0 = torch.as_tensor(np.asarray(camera_position, dtype=np.float64))
            depth = float(first.depth(neutral, cam0).mean())
        else:  # place the rig so that view 0 sees the neutral face centred and of the right size
            rotation0 = torch.as_tensor(first.rotation)
            q = neutral @ rotation0.T  # the face in view 0's axes, up to the unknown translation
            spread_3d = float(torch.linalg.norm(q[:, :2] - q[:, :2].mean(0), dim=1).mean())
            depth = first.camera.focal_px * spread_3d / spreads[0]
            centre_px, centre_q = target[0].mean(0), q.mean(0)
            cam_q = torch.stack(
                [
                    centre_q[0] - (centre_px[0] - first.camera.width / 2) * depth / first.camera.focal_px,
                    centre_q[1] + (centre_px[1] - first.camera.height / 2) * depth / first.camera.focal_px,
                    centre_q[2] + depth,
                ]
            )
            cam0 = cam_q @ rotation0 - torch.as_tensor(first.offset)
    # The camera moves in units of a tenth of its distance, so one optimiser step means the same
    # to it as to the rotations (radians) and the actions (logits).
    cam_delta = torch.zeros(3, dtype=torch.float64, requires_grad=not config.fix_camera)
    cam_unit = 0.1 * depth
    scales = torch.as_tensor(spreads, dtype=torch.float64)[:, None, None]  # residuals in spread units
    evaluations = [0]

    pose_weights = _pose_weights(anchors, config.pose_landmarks, len(views))

    def value_loss(a, rot, p, weights=None):
        """The fit's cost of action values a, head rotations rot and phenotype values p."""
        evaluations[0] += 1
        pts = points_of(a, rot, p)
        cam = cam0 + cam_unit * cam_delta
        preds = []
        for item in views:
            if bool((item.view.depth(pts, cam) <= 1e-3).any()):
                raise LandmarkFitError("the fitted face crossed a camera plane; check the landmarks and cameras")
            preds.append(item.view.project(pts, cam))
        squared = ((torch.stack(preds) - target) / scales).pow(2).sum(-1)
        residual = squared.mean() if weights is None else (squared * weights).sum() / weights.sum()
        prior = config.action_prior * a.pow(2).sum() + config.action_sparsity * a.sum()
        prior = prior + config.rotation_prior * rot.pow(2).sum()
        if config.fit_phenotype and config.phenotype_prior > 0:
            prior = prior + config.phenotype_prior * phenotype_offset(p).pow(2).sum()
        if twins:
            prior = prior + config.symmetry_prior * (a[twins[0]] - a[twins[1]]).pow(2).sum()
        return residual + prior

    def loss_fn(with_actions: bool = True, weights=None, with_rotations: bool = True):
        """value_loss through the Adam stages' parameters (actions and phenotype as logits)."""
        raw_a = raw_actions if with_actions else raw_actions.detach()
        raw_p = raw_pheno if with_actions else raw_pheno.detach()
        rot = rotations if with_rotations else rotations.detach()
        return value_loss(torch.sigmoid(raw_a), rot, torch.sigmoid(raw_p), weights)

    # Left/right twins among the fitted actions (positions in `active`), for the symmetry prior;
    # not mouthLeft/mouthRight, jawLeft/jawRight (opposite movements) nor gaze (eyes look one way).
    names = [body.action_names[a] for a in active]
    pairs = [(i, names.index(n[:-4] + "Right")) for i, n in enumerate(names) if n.endswith("Left")
             and n[:-4] + "Right" in names and n[:-4] not in ("mouth", "jaw") and not n.startswith("eyeLook")]  # fmt: skip
    twins = (torch.tensor([i for i, _ in pairs]), torch.tensor([j for _, j in pairs])) if pairs and config.symmetry_prior > 0 else None
    camera_params = [] if config.fix_camera else [cam_delta]
    # Stage 1: rigid (head rotation + camera), stage 2: everything with Adam, stage 3: L-BFGS.
    # With pose landmarks: the rigid stages see those points only, and the turn is held while
    # the actions move (alternating, `pose_rounds` times). With the turn held: stages 2-3 on the
    # actions and phenotype alone.
    face_params = [raw_actions] + ([raw_pheno] if config.fit_phenotype else [])

    def rigid_stage():
        rigid = torch.optim.Adam([rotations, *camera_params], lr=config.adam_lr)
        for _ in range(max(1, config.adam_steps // 4)):
            rigid.zero_grad()
            loss_fn(with_actions=False, weights=pose_weights).backward()
            rigid.step()

    # Stages 1-2 move logits (Adam); the last stage, run to convergence, moves the values
    # themselves within their bounds (`_bounded_lbfgs`): an action at rest sits exactly on 0.
    values = {"rotations": rotations, "camera": cam_delta}  # the camera is fitted where it requires grad
    face_names = ["actions", "phenotype"]  # bounded to [0, 1]
    converged = True

    def to_values():
        values["actions"] = torch.sigmoid(raw_actions).detach().requires_grad_(True)
        values["phenotype"] = torch.sigmoid(raw_pheno).detach().requires_grad_(config.fit_phenotype)

    def value_stage(free: list[str], steps: int, weights=None):
        nonlocal converged
        tensors = [values[name] for name in free if values[name].requires_grad]
        bounds = [(0.0, 1.0) if name in face_names else (None, None)
                  for name in free if values[name].requires_grad for _ in range(values[name].numel())]  # fmt: skip

        def loss():
            return value_loss(values["actions"], values["rotations"], values["phenotype"], weights)

        converged = _bounded_lbfgs(tensors, bounds, steps, loss) and converged

    if config.hold_turn:
        _adam(face_params, config, functools.partial(loss_fn, with_rotations=False))
        to_values()
        value_stage(face_names, config.lbfgs_steps)
    elif pose_weights is None:
        rigid_stage()
        params = [raw_actions, rotations, *camera_params] + ([raw_pheno] if config.fit_phenotype else [])
        _adam(params, config, loss_fn)
        to_values()
        value_stage(face_names + ["rotations", "camera"], config.lbfgs_steps)
    else:
        rigid_stage()
        to_values()
        value_stage(["rotations", "camera"], config.pose_lbfgs_steps, pose_weights)
        _adam(face_params, config, functools.partial(loss_fn, with_rotations=False))
        to_values()
        for round_ in range(max(1, config.pose_rounds)):
            if round_:
                value_stage(["rotations", "camera"], config.pose_lbfgs_steps, pose_weights)
            value_stage(face_names, config.lbfgs_steps)

    with torch.no_grad():
        pts = points_of(values["actions"], rotations, values["phenotype"])
        cam = cam0 + cam_unit * cam_delta
        pred = torch.stack([item.view.project(pts, cam) for item in views]).numpy()
        pose = init.pose.copy()
        pose[bone_ids] = bone_rotations(rotations).numpy()
        pheno_out = {k: float(values["phenotype"][i]) for i, k in enumerate(body.phenotype_names)}
        if not config.fit_phenotype:
            pheno_out = {k: float(pheno0[k][0]) for k in body.phenotype_names}
        actions = np.clip(actions_of(values["actions"]).numpy(), 0.0, 1.0)
    errors = np.linalg.norm(pred - target.numpy(), axis=-1)
    if not np.isfinite(errors).all():
        raise LandmarkFitError("the fit diverged (non-finite landmark projections)")
    state = BodyState(
        phenotype=dict(sorted(pheno_out.items())),
        pose=pose,
        translation=init.translation,
        expression=actions,
        accessories=init.accessories,
        part_scale=dict(init.part_scale),
        appearance=init.appearance,
    )
    return FitResult(
        state=state,
        camera_position=cam.detach().numpy().copy(),
        predicted_px=pred.reshape(-1, 2),
        mean_error_px=float(errors.mean()),
        max_error_px=float(errors.max()),
        evaluations=evaluations[0],
        converged=converged,
    )


__all__ = [
    "ANNY68_SCHEME",
    "FaceDetectionError",
    "FaceLandmarks",
    "FitConfig",
    "FitResult",
    "LandmarkFitError",
    "Landmarks2D",
    "LinearFace",
    "MEDIAPIPE_SCHEME",
    "MeshAnchors",
    "PIXEL_ACTIONS",
    "PIXEL_FIT",
    "PIXEL_FIT_KNOWN_CAMERA",
    "LINEAR_BONES",
    "PinholeCamera",
    "SPEAKINGFACES_CAMERA",
    "ViewCamera",
    "ViewLandmarks",
    "anchors_from_render",
    "anny68_anchors",
    "face_landmarks",
    "fit_landmarks",
    "fit_views",
    "rigid_weight",
    "weighed_fit",
    "landmark_bias",
    "linear_face",
    "project_anchors",
    "project_landmarks",
]
