"""Where Pixal3D's mesh lies: its camera parameters from the scorer's camera, and its output
brought back into the reference frame.

Pixal3D is pixel-aligned: it is told the camera its picture was taken with
(`camera_params = {camera_angle_x, distance, mesh_scale}`) and generates the mesh in the frame
that camera defines. Its projection (upstream `ProjGrid` and `project_points_to_image_batch`):
a point v of the output mesh, in [-0.5, 0.5]^3, sits in Blender's world at
P = (v_x, -v_z, v_y) / mesh_scale; the camera stands at (0, -distance, 0) looking along +Y, up
+Z, right +X, with the horizontal field of view camera_angle_x. Upstream's own inference picks
distance = 0.5 / (mesh_scale tan(camera_angle_x / 2)), so the cube's width fills the picture at
its centre's depth; so does this plugin.

Our picture is taken by the scorer's camera model (its field of view, distance and target, at a
chosen yaw and pitch) of frame A framed on the default head (`framing.Framing`). Mapping Blender's
camera frame onto that camera (right, up, forward), with Blender units scaled so that `distance`
is the camera's radius in metres, puts the output mesh where the framed subject is; the row's
framing is then undone (`foreign_mesh.unframe`), so the candidate is in the subject's own frame
like any mesh candidate, and the scorer frames it again with every other mesh of the row.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from maskscore_core.metric.views import CameraPose, ViewConfig, camera_poses


def picture_view(scorer: ViewConfig, yaw_deg: float, pitch_deg: float, resolution: int) -> ViewConfig:
    """The scorer's camera model (field of view, radius, target, near clip) as one view at
    (yaw, pitch) degrees (Hammersley offset chosen so that its one sample is that direction)."""
    if not -90.0 < pitch_deg < 90.0:
        raise ValueError(f"pixal3d: pitch must lie strictly between -90 and 90 degrees, got {pitch_deg}")
    u = (1.0 + math.sin(math.radians(pitch_deg))) / 2.0
    return attrs.evolve(
        scorer, count=1, resolution=int(resolution), offset=(u, (yaw_deg / 360.0) % 1.0),
        min_pitch_deg=min(scorer.min_pitch_deg, pitch_deg), max_pitch_deg=max(scorer.max_pitch_deg, pitch_deg),
    )  # fmt: skip


def camera_params(view: ViewConfig, mesh_scale: float = 1.0) -> dict:
    """Pixal3D's camera parameters for pictures taken on `view` (square, fov on both sides)."""
    if not mesh_scale > 0:
        raise ValueError(f"pixal3d: mesh_scale must be positive, got {mesh_scale}")
    angle = math.radians(view.fov_deg)
    return {"camera_angle_x": angle, "distance": 0.5 / (mesh_scale * math.tan(angle / 2.0)), "mesh_scale": float(mesh_scale)}


def _basis(pose: CameraPose) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(origin, right, up, forward) of a camera, world space."""
    frame = pose.to_world()
    return frame[:3, 3], -frame[:3, 0], frame[:3, 1], frame[:3, 2]


def to_world(vertices: np.ndarray, view: ViewConfig, params: dict) -> np.ndarray:
    """Pixal3D output vertices (its [-0.5, 0.5]^3 frame) -> the framed reference frame, metres."""
    (pose,) = camera_poses(view)
    v = np.asarray(vertices, dtype=np.float64)
    blender = np.stack([v[:, 0], -v[:, 2], v[:, 1]], axis=1) / params["mesh_scale"]
    metres = view.radius / params["distance"]
    origin, right, up, forward = _basis(pose)
    right_c, depth, up_c = blender[:, 0], blender[:, 1] + params["distance"], blender[:, 2]
    return origin + metres * (right_c[:, None] * right + up_c[:, None] * up + depth[:, None] * forward)


def from_world(vertices: np.ndarray, view: ViewConfig, params: dict) -> np.ndarray:
    """The inverse of `to_world`: framed reference-frame points in Pixal3D's output frame."""
    (pose,) = camera_poses(view)
    origin, right, up, forward = _basis(pose)
    offset = (np.asarray(vertices, dtype=np.float64) - origin) / (view.radius / params["distance"])
    right_c, up_c, depth = offset @ right, offset @ up, offset @ forward
    blender = np.stack([right_c, depth - params["distance"], up_c], axis=1) * params["mesh_scale"]
    return np.stack([blender[:, 0], blender[:, 2], -blender[:, 1]], axis=1)
