"""The metric's renderer: one Mitsuba 3 scene of the reference mesh, all views in one launch.

Why this shape: scoring renders thousands of meshes that share one topology, so the scene (and
Mitsuba's compiled kernel) is built once per process and view config; a candidate only swaps
the vertex positions in through `mi.traverse`. A `batch` sensor holds one perspective sensor per
view, and the `aov` integrator returns, per pixel:

- depth: Mitsuba's `depth` AOV, the distance along the camera ray to the hit (metres), 0 on
  background;
- normals: Mitsuba's `sh_normal` AOV, the world-space shading normal, interpolated from
  per-vertex normals (area-weighted mean of the adjacent faces' normals, `vertex_normals`);
  (0,0,0) on background. The vertex normals are computed here in numpy rather than by Mitsuba,
  whose parallel scatter-add sums in a varying order and so changes the last bits between runs;
- face_id: Mitsuba's `prim_index`, the index of the hit triangle in the reference mesh's faces
  (mapped back from the faces actually handed to Mitsuba: `faces_in_view` leaves out faces
  that no view can show). Background also reads 0, so `coverage` (a hit: depth > 0) tells it apart, and face_id is -1
  wherever coverage is False.

A box pixel filter and one sample per pixel through the pixel centre (non-jittered stratified
sampler) make every pixel a single ray: no blending of silhouettes with the background, and
the same mesh gives byte-identical renders.

Variant: `cuda_ad_rgb` when a CUDA GPU is visible, else `llvm_ad_rgb` when an LLVM >= 16 library
is found (drjit 1.5's code does not compile with LLVM 14/15), else `scalar_rgb` with a warning.
"""

from __future__ import annotations

import functools
import glob
import os
import threading
import warnings

import attrs
import numpy as np

from maskscore_core import threads
from maskscore_core.body import oral_cavity
from maskscore_core.metric import appearance
from maskscore_core.metric.views import CameraPose, ViewConfig, camera_poses, pixel_ray_directions

LLVM_SEARCH_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib", "/usr/local/lib", "/usr/lib64")
MIN_LLVM_MAJOR = 16

BACKGROUND_RGB = np.array([40, 40, 48], dtype=np.uint8)
SKIN_RGB = np.array([224.0, 184.0, 160.0])  # render_rgb's one albedo
CAVITY_RGB = 255.0 * np.asarray(appearance.PART_COLOUR[appearance.ORAL_CAVITY])  # inside the mouth
LIGHT_DIRECTION = np.array([0.3, 0.5, 0.8]) / np.linalg.norm([0.3, 0.5, 0.8])


class RenderError(RuntimeError):
    """The renderer could not be set up or could not render what it was given."""


@attrs.frozen(eq=False)
class RenderResult:
    """Per-view render passes of one mesh: depth (N,H,W) float32 metres along the ray (0 off the
    mesh), normals (N,H,W,3) float32 world-space shading normals, face_id (N,H,W) int32 (-1 off
    the mesh), coverage (N,H,W) bool."""

    depth: np.ndarray
    normals: np.ndarray
    face_id: np.ndarray
    coverage: np.ndarray


def _llvm_major(path: str) -> int | None:
    """LLVM's major version from a library name: libLLVM-17.so(.1) -> 17, libLLVM.so.19.1 -> 19."""
    stem, _, suffix = os.path.basename(path).partition(".so")
    if "-" in stem:
        tail = stem.rsplit("-", 1)[1].split(".")[0]
        if tail.isdigit():
            return int(tail)
    major = suffix.lstrip(".").split(".")[0]
    return int(major) if major.isdigit() else None


def find_llvm() -> str | None:
    """The newest libLLVM >= 16 in the usual library directories (DRJIT_LIBLLVM_PATH wins)."""
    configured = os.environ.get("DRJIT_LIBLLVM_PATH")
    if configured and os.path.exists(configured):
        return configured
    found = []
    for directory in LLVM_SEARCH_DIRS:
        for path in glob.glob(os.path.join(directory, "libLLVM*.so*")) + glob.glob(
            os.path.join(directory, "llvm-*", "lib", "libLLVM*.so*")
        ):
            major = _llvm_major(path)
            if major is not None and major >= MIN_LLVM_MAJOR:
                found.append((major, path))
    return max(found)[1] if found else None


def _has_cuda() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001 - no torch CUDA means no CUDA variant
        return False


_variant_lock = threading.Lock()
# One Mitsuba render at a time in the process, whatever the scene: Dr.Jit's LLVM backend runs
# each launch on its own thread pool anyway. Two scenes rendered from two Python threads at once
# (a reference scene on the scorer's pool while a foreign mesh's scene rendered on the caller's
# thread) were seen to fail inside `mi.render` ("error while performing a custom differentiable
# operation") and a test run to abort there.
_RENDER_LOCK = threading.Lock()


@functools.cache
def select_variant() -> str:
    """Pick and set the Mitsuba variant once per process (see module docstring)."""
    with _variant_lock:
        reason = None
        if _has_cuda():
            candidates = ["cuda_ad_rgb"]
        else:
            candidates = []
            reason = "no CUDA GPU"
        llvm = find_llvm()
        if llvm is not None:
            os.environ["DRJIT_LIBLLVM_PATH"] = llvm  # must be set before drjit is imported
            candidates.append("llvm_ad_rgb")
        else:
            reason = f"no libLLVM >= {MIN_LLVM_MAJOR} found in {', '.join(LLVM_SEARCH_DIRS)}"
        import mitsuba as mi

        for variant in candidates:
            if variant in mi.variants():
                try:
                    mi.set_variant(variant)
                    if variant.startswith("llvm"):
                        threads.apply_drjit()
                    return variant
                except Exception as err:  # noqa: BLE001 - fall through to the next variant
                    reason = f"{variant} failed to start: {err}"
        warnings.warn(f"Mitsuba falls back to the slow scalar_rgb variant: {reason}", RuntimeWarning, stacklevel=2)
        mi.set_variant("scalar_rgb")
        return "scalar_rgb"


def _sensor_dict(pose: CameraPose, fov_deg: float, near_clip: float, width: int, height: int,
                 window: tuple[int, int, int, int] | None = None) -> dict:  # fmt: skip
    import mitsuba as mi

    crop = {} if window is None else dict(zip(("crop_offset_x", "crop_offset_y", "crop_width", "crop_height"), map(int, window)))
    return {
        "type": "perspective",
        "fov": float(fov_deg),
        "fov_axis": "smaller",
        "near_clip": float(near_clip),
        "far_clip": FAR_CLIP,
        "to_world": mi.ScalarTransform4f(pose.to_world().tolist()),
        "film": {
            "type": "hdrfilm",
            "width": width,
            "height": height,
            "rfilter": {"type": "box"},
            "pixel_format": "rgb",
            **crop,
        },
    }


def vertex_normals(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """(V, 3) unit normals: the sum of the adjacent faces' (area-weighted) normals, normalised.
    Sums run in a fixed order (bincount), so the same mesh always gives the same bits."""
    v = np.asarray(vertices, dtype=np.float64)
    corners = v[faces]
    face_normals = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    flat_ids = faces.ravel()
    summed = np.stack(
        [np.bincount(flat_ids, weights=np.repeat(face_normals[:, axis], 3), minlength=len(v)) for axis in range(3)],
        axis=1,
    )
    length = np.linalg.norm(summed, axis=1, keepdims=True)
    # Vertices of collapsed (absent) accessories have no area: give them any unit normal.
    return np.where(length > 0, summed / np.where(length > 0, length, 1.0), np.array([0.0, 1.0, 0.0]))


# Frustum culling keeps a face unless it is certainly invisible; this slack (relative to the
# frustum's half-width) keeps float rounding at a frustum side from dropping a visible sliver.
CULL_SLACK = 1.02
WINDOW_SCENES_KEPT = 4
FAR_CLIP = 100.0


def faces_in_view(vertices: np.ndarray, faces: np.ndarray, poses: list[CameraPose], fov_deg: float,
                  near_clip: float, width: int, height: int, window: tuple[int, int, int, int] | None = None) -> np.ndarray:
    """Indices of the faces that may show in at least one of the views (in `window` (x, y, w, h)
    of their pixels when given).

    Why: the aov integrator casts only primary rays, so a triangle lying wholly outside one plane
    of a view's frustum (its sides, near or far clip) cannot be hit in that view. With the
    default head framing most of ANNY's faces are out of every view, and Embree's BVH rebuild
    (the costliest step of swapping a mesh in) shrinks with them; the renders do not change.
    """
    half = np.tan(np.radians(fov_deg) / 2.0)
    x0, y0, w, h = window if window is not None else (0, 0, width, height)
    # The window's sides as tangents of camera space (left, up): column c's edge lies at
    # -(2c - width) * half / smaller, row r's at -(2r - height) * half / smaller.
    scale, slack = half / min(width, height), half * (CULL_SLACK - 1.0)
    left_min, left_max = -(2 * (x0 + w) - width) * scale - slack, -(2 * x0 - width) * scale + slack
    up_min, up_max = -(2 * (y0 + h) - height) * scale - slack, -(2 * y0 - height) * scale + slack
    frames = np.stack([pose.to_world() for pose in poses])  # (N, 4, 4)
    vertices = np.asarray(vertices, dtype=np.float64)
    # Camera-space coordinates (left, up, forward) of every vertex in every view, (V, N) each;
    # written as broadcasts: a BLAS call on these thin matrices costs more than it computes.
    offset = vertices[:, None, :] - frames[None, :, :3, 3]
    x, y, z = (sum(offset[..., k] * frames[None, :, k, axis] for k in range(3)) for axis in range(3))
    outside = np.stack(
        [x > left_max * z, x < left_min * z, y > up_max * z, y < up_min * z, z < near_clip, z > FAR_CLIP], axis=1
    )  # (V, 6 planes, N views)
    # One bit per view, one byte row per plane: a face is out of a view when its three vertices
    # share an "outside" bit of that view in some plane, and culled when that holds in every view.
    bits = np.packbits(outside, axis=2, bitorder="little")  # (V, 6, ceil(N/8))
    shared = np.bitwise_or.reduce(bits[faces[:, 0]] & bits[faces[:, 1]] & bits[faces[:, 2]], axis=1)
    out_of_view = np.unpackbits(shared, axis=1, bitorder="little")[:, : len(poses)]
    return np.flatnonzero(~out_of_view.all(axis=1))


def _inside(window, width: int, height: int) -> bool:
    x, y, w, h = window
    return 0 <= x and 0 <= y and w > 0 and h > 0 and x + w <= width and y + h <= height


def _forward(pose: CameraPose) -> np.ndarray:
    return pose.to_world()[:3, 2]


class _Scene:
    """One Mitsuba scene: the reference mesh seen by `poses`, rendered into (N,H,W) passes.
    window (x, y, w, h): of one view, only that rectangle of its width x height pixels is
    rendered, as (1, h, w) passes (Mitsuba's film crop)."""

    def __init__(self, faces: np.ndarray, vertex_count: int, poses: list[CameraPose], config: ViewConfig, width: int,
                 height: int, window: tuple[int, int, int, int] | None = None):  # fmt: skip
        select_variant()
        import mitsuba as mi

        if window is not None and (len(poses) != 1 or not _inside(window, width, height)):
            raise RenderError(f"a render window is a rectangle inside one view's {width}x{height} pixels, got {window} on {len(poses)} views")
        self.views, self.width, self.height, self.full_size, self.window = len(poses), width, height, (width, height), window
        self.poses, self.fov_deg, self.near_clip = list(poses), float(config.fov_deg), float(config.near_clip)
        self.faces = np.asarray(faces, dtype=np.int64)
        self.vertex_count = vertex_count
        mesh = mi.Mesh("reference", vertex_count=vertex_count, face_count=len(faces), has_vertex_normals=True)
        params = mi.traverse(mesh)
        params["faces"] = mi.UInt32(np.ascontiguousarray(faces, dtype=np.uint32).ravel())
        params["vertex_positions"] = mi.Float(np.zeros(vertex_count * 3, dtype=np.float32))
        params.update()
        sensors = [_sensor_dict(p, config.fov_deg, config.near_clip, width, height, window) for p in poses]
        if len(sensors) == 1:
            sensor = sensors[0]
        else:
            sensor = {"type": "batch", **{f"view{i:03d}": s for i, s in enumerate(sensors)}}
            sensor["film"] = {
                "type": "hdrfilm",
                "width": width * len(sensors),
                "height": height,
                "rfilter": {"type": "box"},
                "pixel_format": "rgb",
            }
        sensor["sampler"] = {"type": "stratified", "sample_count": 1, "jitter": False}
        self.scene = mi.load_dict(
            {
                "type": "scene",
                "integrator": {"type": "aov", "aovs": "dd:depth,nn:sh_normal,pi:prim_index"},
                "sensor": sensor,
                "mesh": mesh,
            }
        )
        self.params = mi.traverse(self.scene)
        self.position_key, self.normal_key, self.faces_key = "mesh.vertex_positions", "mesh.vertex_normals", "mesh.faces"
        for key in (self.position_key, self.normal_key, self.faces_key):
            if key not in self.params:
                raise RenderError(f"Mitsuba scene has no {key!r} parameter; keys: {list(self.params.keys())}")
        # Mitsuba starts each ray on the near clip plane, so its `depth` AOV is measured from
        # there; adding the distance from the eye to that plane along each ray gives the
        # distance from the camera centre that RenderResult promises.
        self.near_offset = np.stack(
            [config.near_clip / (pixel_ray_directions(p, config.fov_deg, width, height) @ _forward(p)) for p in poses]
        ).astype(np.float32)
        if window is not None:
            x, y, self.width, self.height = window
            self.near_offset = np.ascontiguousarray(self.near_offset[:, y : y + self.height, x : x + self.width])

    def render(self, vertices: np.ndarray) -> RenderResult:
        import mitsuba as mi

        flat = np.ascontiguousarray(vertices, dtype=np.float32).ravel()
        normals = np.ascontiguousarray(vertex_normals(vertices, self.faces), dtype=np.float32).ravel()
        shown = faces_in_view(vertices, self.faces, self.poses, self.fov_deg, self.near_clip, *self.full_size, self.window)
        if len(shown) == 0:
            shown = np.zeros(1, dtype=np.int64)  # nothing in view: one face, which no ray hits
        with _RENDER_LOCK:
            self.params[self.position_key] = mi.Float(flat)
            self.params[self.normal_key] = mi.Float(normals)  # both keys: Mitsuba keeps our normals
            self.params[self.faces_key] = mi.UInt32(np.ascontiguousarray(self.faces[shown], dtype=np.uint32).ravel())
            self.params.update()
            image = np.array(mi.render(self.scene, seed=0, spp=1), dtype=np.float32)
        # (H, N*W, 5) seen as (N, H, W, 5) without a copy; each pass is written out in (N, H, W)
        # order as it is read (copying the whole image first cost more than the passes together)
        image = image.reshape(self.height, self.views, self.width, image.shape[-1]).transpose(1, 0, 2, 3)
        coverage = np.greater(image[..., 0], 0, order="C")
        depth = np.where(coverage, image[..., 0] + self.near_offset, np.float32(0.0))
        normals = np.ascontiguousarray(image[..., 1:4])
        # prim_index is a whole number (exact in float32 below 2^24): an index into the faces shown
        hit = np.minimum(image[..., 4].astype(np.int32, order="C"), np.int32(len(shown) - 1))
        face_id = np.where(coverage, shown.astype(np.int32)[hit], np.int32(-1))
        return RenderResult(depth=depth, normals=normals, face_id=face_id, coverage=coverage)


class Renderer:
    """Renders reference-mesh vertices on `view_config`'s views (see module docstring)."""

    def __init__(self, view_config: ViewConfig | None = None) -> None:
        from maskscore_core.body.reference_mesh import get_reference_mesh

        self.view_config = view_config or ViewConfig()
        self.reference = get_reference_mesh()
        self.variant = select_variant()
        self.poses = camera_poses(self.view_config)
        size = self.view_config.resolution
        self._scene = _Scene(self.reference.faces, self.reference.vertex_count, self.poses, self.view_config, size, size)
        self._rgb_scenes: dict[tuple[int, int, int], _Scene] = {}
        self._window_scenes: dict[tuple[int, int, int, int], _Scene] = {}
        self._rgb_lock = threading.Lock()

    def check(self, vertices: np.ndarray, what: str = "mesh") -> np.ndarray:
        """Validated (V,3) reference-mesh vertices (bare ANNY meshes get collapsed accessory slots)."""
        return self.reference.check(vertices, what)

    def render(self, vertices: np.ndarray, what: str = "mesh") -> RenderResult:
        """Depth, normals, face ids and coverage of one mesh on every view."""
        return self._scene.render(self.check(vertices, what))

    def render_window(self, vertices: np.ndarray, window: tuple[int, int, int, int], what: str = "mesh") -> RenderResult:
        """The passes of one view's rectangle window = (x, y, w, h) of its pixels, (1, h, w) each,
        for fits that compare a small part of a picture many times: what `render` gives there,
        to float32 rounding of the rays (which may flip a rare edge pixel; tests/test_render.py).
        Needs a one-view config; the last few windows' scenes are kept."""
        window = tuple(int(v) for v in window)
        with self._rgb_lock:
            scene = self._window_scenes.get(window)
            if scene is None:
                size = self.view_config.resolution
                scene = _Scene(self.reference.faces, self.reference.vertex_count, self.poses, self.view_config, size, size, window)
                while len(self._window_scenes) >= WINDOW_SCENES_KEPT:
                    self._window_scenes.pop(next(iter(self._window_scenes)))
                self._window_scenes[window] = scene
        return scene.render(self.check(vertices, what))

    def render_rgb(self, vertices: np.ndarray, width: int, height: int, view_index: int = 0) -> np.ndarray:
        """A plain shaded (H,W,3) uint8 picture of the mesh from view `view_index`, for video
        frames: Lambert shading of the shading normal under one fixed directional light
        (LIGHT_DIRECTION, world space), skin-coloured but the inside of the mouth (dark),
        grey-blue background. Deterministic."""
        if not 0 <= view_index < len(self.poses):
            raise ValueError(f"view_index {view_index} outside 0..{len(self.poses) - 1}")
        if width <= 0 or height <= 0:
            raise ValueError(f"image size must be positive, got {width}x{height}")
        key = (int(width), int(height), int(view_index))
        with self._rgb_lock:
            scene = self._rgb_scenes.get(key)
            if scene is None:
                scene = _Scene(
                    self.reference.faces, self.reference.vertex_count, [self.poses[view_index]],
                    self.view_config, width, height,
                )  # fmt: skip
                self._rgb_scenes[key] = scene
        result = scene.render(self.check(vertices))
        lambert = np.clip(np.abs(result.normals[0] @ LIGHT_DIRECTION), 0.0, 1.0)
        shade = 0.15 + 0.85 * lambert
        # Skin everywhere but inside the mouth, which no light reaches (`appearance.ORAL_CAVITY`).
        inside_mouth = _cavity_pixels(result.face_id[0], result.coverage[0])
        albedo = np.where(inside_mouth[..., None], CAVITY_RGB, SKIN_RGB)
        rgb = np.where(result.coverage[0][..., None], shade[..., None] * albedo, BACKGROUND_RGB)
        return np.clip(np.rint(rgb), 0, 255).astype(np.uint8)


def _cavity_pixels(face_id: np.ndarray, coverage: np.ndarray) -> np.ndarray:
    """(H, W) bool: covered pixels that show a triangle of the oral cavity."""
    cavity = oral_cavity.cavity_face_mask()
    ids = np.where(coverage & (face_id >= 0) & (face_id < len(cavity)), face_id, 0)
    return coverage & cavity[ids]


_renderers: dict[ViewConfig, Renderer] = {}
_renderers_lock = threading.Lock()


def get_renderer(view_config: ViewConfig | None = None) -> Renderer:
    """The process-wide renderer for `view_config` (one Mitsuba scene per config)."""
    config = view_config or ViewConfig()
    with _renderers_lock:
        if config not in _renderers:
            _renderers[config] = Renderer(config)
        return _renderers[config]
