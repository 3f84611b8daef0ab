"""Surface normals read from a depth pass: the same surface gives the same normals, however it
is triangulated.

Why: a mesh of its own topology (an image-to-3D model's output) is drawn with the shading
normals of its own vertices, interpolated over its own triangles. Two triangulations of one
surface (ANNY's, and the same body subdivided) then shade differently by about as much as a
subtle edit (an eyebrow raise) changes the shading, so the normal distances would read the
remeshing as an edit. The depth pass does not depend on the triangulation: each pixel's ray hits
the same surface point. Normals taken from it, by finite differences of the back-projected
points of neighbouring pixels, are a property of the surface alone; `render_compare` compares a
foreign mesh with references whose normals are read the same way.

Per pixel, along each image axis, the differences to both neighbours are blended, the one whose
depth is nearer this pixel's weighted more (`_difference`): across an outline or an occlusion
edge the other side belongs to another surface. A pixel with no covered neighbour along an axis
faces the camera. The normal is turned to face the camera; background pixels read (0, 0, 0), as
Mitsuba's `sh_normal` pass does.
"""

from __future__ import annotations

import functools

import numpy as np

from maskscore_core.metric.views import ViewConfig, camera_poses, pixel_ray_directions


# The depth jump between neighbouring pixels below which both sides count about alike: well
# under a pixel's footprint on the face (1-2 mm at the default views), far under an occlusion's.
JUMP_M = 0.0002


@functools.cache
def _rays(view_config: ViewConfig) -> tuple[np.ndarray, np.ndarray]:
    """Camera centres (N, 3) and unit ray directions (N, H, W, 3) of the views, float64."""
    poses = camera_poses(view_config)
    size = view_config.resolution
    origins = np.stack([pose.to_world()[:3, 3] for pose in poses])
    directions = np.stack([pixel_ray_directions(pose, view_config.fov_deg, size, size) for pose in poses])
    return origins, directions


def _difference(points: np.ndarray, depth: np.ndarray, coverage: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """The step from each pixel's point to its neighbour along `axis` (towards +axis): the
    forward and backward differences blended, each weighted by 1 / (its depth jump^2 + JUMP_M^2),
    so that across an outline or an occlusion edge the side on the other surface counts for
    almost nothing, and the blend changes smoothly with the depth (no side is switched to). Also
    whether a covered neighbour existed on either side."""
    n = points.shape[axis]
    ahead = [slice(None)] * 3
    behind = [slice(None)] * 3
    ahead[axis], behind[axis] = slice(1, n), slice(0, n - 1)
    ahead, behind = tuple(ahead), tuple(behind)
    # forward[p] = P[p + 1] - P[p] where both are covered; backward[p] = P[p] - P[p - 1].
    pair = coverage[ahead] & coverage[behind]
    step = np.where(pair[..., None], points[ahead] - points[behind], 0.0)
    weight = np.where(pair, 1.0 / ((depth[ahead] - depth[behind]) ** 2 + JUMP_M**2), 0.0)
    forward, backward = np.zeros(points.shape), np.zeros(points.shape)
    forward_weight, backward_weight = np.zeros(depth.shape), np.zeros(depth.shape)
    forward[behind], forward_weight[behind] = step, weight
    backward[ahead], backward_weight[ahead] = step, weight
    total = forward_weight + backward_weight
    blended = (forward * forward_weight[..., None] + backward * backward_weight[..., None]) / np.where(total > 0, total, 1.0)[..., None]
    return blended, total > 0


def depth_normals(depth: np.ndarray, coverage: np.ndarray, view_config: ViewConfig) -> np.ndarray:
    """(N, H, W, 3) float32 unit normals of the surface seen in (N, H, W) `depth` (distance along
    each pixel's ray from the camera centre) on `view_config`'s views; 0 where not covered."""
    origins, directions = _rays(view_config)
    depth = np.asarray(depth, dtype=np.float64)
    coverage = np.asarray(coverage, dtype=bool)
    if depth.shape != directions.shape[:3] or coverage.shape != depth.shape:
        raise ValueError(f"depth {depth.shape} and coverage {coverage.shape} do not match the views {directions.shape[:3]}")
    points = origins[:, None, None, :] + directions * depth[..., None]
    across, found_across = _difference(points, depth, coverage, axis=2)  # along image columns
    down, found_down = _difference(points, depth, coverage, axis=1)  # along image rows
    normals = np.cross(down, across)
    length = np.linalg.norm(normals, axis=-1, keepdims=True)
    usable = (found_across & found_down & coverage)[..., None] & (length > 0)
    normals = np.where(usable, normals / np.where(length > 0, length, 1.0), -directions)
    facing_away = np.sum(normals * directions, axis=-1, keepdims=True) > 0
    normals = np.where(facing_away, -normals, normals)
    return np.where(coverage[..., None], normals, 0.0).astype(np.float32)
