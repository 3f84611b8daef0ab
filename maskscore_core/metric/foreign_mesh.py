"""Meshes of any topology on the metric's views: an image-to-3D model's output scored honestly.

Why: a model such as Pixal3D returns a mesh with its own vertices and triangles, not ANNY's.
The metric never needs ANNY's vertex order to compare a candidate: it compares renders. So a
foreign mesh is drawn by the same Mitsuba renderer on the scorer's own views (same cameras,
same framing on frame A's head), giving depth, shading normals and coverage per pixel, and is
compared with the references' renders inside the part's pixels and outside, like any mesh. The
part's pixels come from the references (a foreign mesh has no part labels). No point-set
distance (Chamfer) is involved: every distance is the render-space one of `render_compare`.

Two ways to take one (`decode`). Where frame A's body state is known (a modality plugin decoding
a model's output for an edit instance), ANNY is fitted to the mesh (`body.surface_fit`) and the
fit, a smooth surface with every thin part ANNY has, is what is rendered; what the fit does not
explain is charged to consistency as the depth difference between the mesh's own render and the
fit's (`render_compare`, "surface_residual"). Without a state (two files scored by `maskscore
score`), the mesh's own triangles are rendered. Either way its normals are read from its depth
and its head is laid onto frame A's by the skull's surface (`head_motion.align_surface_to_a`).
A coarse mesh (decimated, large facets) is far from its ANNY scores the second way and close the
first (docs/metric.md, "Meshes of any topology"). A foreign mesh carries no appearance (no part
per triangle).

One Mitsuba scene serves one topology; a few are kept (`SCENES_KEPT`), keyed by the view config
and a digest of the faces, so a candidate whose vertices move over the same triangles reuses its
scene like reference meshes do.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import attrs
import numpy as np

from maskscore_core.kept import Kept
from maskscore_core.metric.framing import Framing
from maskscore_core.metric.views import ViewConfig
from maskscore_core.body import meshio
from maskscore_core.body.meshio import FORMATS, MeshFileError, check_extent, check_topology
from maskscore_core.metric import render as renderer
from maskscore_core.metric.views import camera_poses
from maskscore_core.plugin.records import Decoded

SCENES_KEPT = 4


class ForeignMeshError(ValueError):
    """A mesh of its own topology that cannot be drawn: empty, no faces, NaN, bad indices."""


@attrs.frozen(eq=False)
class ForeignMesh:
    """A triangle mesh of any topology in the reference frame (Y up, metres, face towards +Z):
    (V, 3) float64 vertices, (F, 3) int64 faces. Build it with `check`."""

    vertices: np.ndarray
    faces: np.ndarray


def check(vertices, faces, what: str = "mesh") -> ForeignMesh:
    """A validated ForeignMesh, or ForeignMeshError with one line naming what is wrong."""
    if vertices is None or np.size(vertices) == 0:
        raise ForeignMeshError(f"{what}: the mesh has no vertices")
    v = np.asarray(vertices, dtype=np.float64)
    if v.ndim != 2 or v.shape[1] != 3:
        raise ForeignMeshError(f"{what}: vertices must have shape (V, 3), got {v.shape}")
    bad = ~np.isfinite(v).all(axis=1)
    if bad.any():
        raise ForeignMeshError(f"{what}: {int(bad.sum())} vertices hold NaN or infinite coordinates (first: {int(np.argmax(bad))})")
    if faces is None or np.size(faces) == 0:
        raise ForeignMeshError(f"{what}: the mesh has no faces (a point cloud cannot be rendered)")
    f = np.asarray(faces)
    if f.ndim != 2 or f.shape[1] != 3:
        raise ForeignMeshError(f"{what}: faces must have shape (F, 3) (triangles), got {f.shape}")
    if not np.issubdtype(f.dtype, np.integer):
        if not np.all(np.isfinite(f)) or not np.array_equal(f, np.round(f)):
            raise ForeignMeshError(f"{what}: face indices must be whole numbers")
    f = f.astype(np.int64)
    if f.min() < 0 or f.max() >= len(v):
        raise ForeignMeshError(f"{what}: face indices run {int(f.min())}..{int(f.max())}, outside the {len(v)} vertices")
    corners = v[f]
    area = np.linalg.norm(np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]), axis=1)
    if not (area > 0).any():
        raise ForeignMeshError(f"{what}: all {len(f)} faces have zero area")
    try:
        check_extent(v, what)
    except MeshFileError as err:
        raise ForeignMeshError(str(err)) from None
    return ForeignMesh(vertices=v, faces=f)


def decode(mesh: ForeignMesh, start=None):
    """The `records.Decoded` the metric compares for a mesh of its own topology: the reference
    mesh fitted to it from `start` (frame A's `records.BodyState`) when one is given, carrying
    the mesh as `surface`; otherwise the mesh's own vertices and triangles. Either is compared as
    a mesh of its own topology (normals read from depth, head laid on by the skull's surface):
    the fit's vertices slide along its surface where the actions cannot be told apart (a brow
    raise and its neighbours), which interpolated normals would read as a change."""
    if start is None:
        return Decoded(vertices=mesh.vertices, faces=mesh.faces)
    from maskscore_core.body.reference_mesh import get_reference_mesh
    from maskscore_core.body.surface_fit import fit_surface

    fit = fit_surface(mesh.vertices, mesh.faces, start)
    return Decoded(vertices=fit.vertices, faces=get_reference_mesh().faces, surface=mesh)


def shown(decoded: Decoded, what: str = "mesh") -> ForeignMesh:
    """The mesh a picture of a decoded mesh of its own topology shows (the contact sheet, a
    judge model's views): the model's own surface where ANNY was fitted to it (`surface`), since
    a picture is of the candidate, not of the metric's reading of it; else its vertices and faces."""
    if decoded.surface is not None:
        return decoded.surface
    return check(decoded.vertices, decoded.faces, what)


def is_reference(mesh: ForeignMesh) -> bool:
    """Whether the mesh is on the reference topology after all (then it is scored as one, with
    head alignment): the reference's or bare ANNY's vertex count and faces."""
    from maskscore_core.body.reference_mesh import get_reference_mesh

    reference = get_reference_mesh()
    if len(mesh.vertices) not in (reference.vertex_count, reference.anny_vertex_count):
        return False
    try:
        check_topology(mesh.faces, len(mesh.vertices))
    except MeshFileError:
        return False
    return True


def read(path: str | Path) -> ForeignMesh:
    """A .glb, .ply or .obj of any topology, checked. Several meshes in one file (a glTF scene)
    are joined with their node transforms; vertices are kept as stored (no merging)."""
    import trimesh

    path = Path(path)
    loaded = meshio.load_mesh_file(path, ForeignMeshError)
    if isinstance(loaded, trimesh.Scene):
        meshes = [g for g in loaded.dump(concatenate=False) if isinstance(g, trimesh.Trimesh)] if loaded.geometry else []
        if not meshes:
            raise ForeignMeshError(f"{path}: the file holds no triangle mesh")
        loaded = meshes[0] if len(meshes) == 1 else trimesh.util.concatenate(meshes)
    if not isinstance(loaded, trimesh.Trimesh):
        raise ForeignMeshError(f"{path}: the file holds a {type(loaded).__name__}, not a triangle mesh")
    return check(np.asarray(loaded.vertices), np.asarray(loaded.faces), str(path))


def write(path: str | Path, mesh: ForeignMesh) -> Path:
    """Write a foreign mesh as .glb, .ply or .obj (the same mesh gives the same bytes)."""
    import trimesh

    path = Path(path)
    suffix = meshio.mesh_format(path, ForeignMeshError)
    data = trimesh.Trimesh(vertices=mesh.vertices, faces=mesh.faces, process=False).export(file_type=suffix[1:])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return path


_scenes = Kept(SCENES_KEPT)


def _scene(faces: np.ndarray, vertex_count: int, view_config: ViewConfig):
    """The Mitsuba scene of this topology on these views (built once, a few kept)."""
    key = (view_config, vertex_count, hashlib.sha256(np.ascontiguousarray(faces, dtype=np.int64).tobytes()).hexdigest())
    scene = _scenes.get(key)
    if scene is not None:
        return scene
    size = view_config.resolution
    # The renderer's own scene class: the same cameras, sampler, integrator and passes as the
    # reference mesh's, only with these triangles.
    return _scenes.put(key, renderer._Scene(faces, vertex_count, camera_poses(view_config), view_config, size, size))


def render(mesh: ForeignMesh, view_config: ViewConfig, framing: Framing | None = None):
    """`render.RenderResult` of the mesh on `view_config`'s views, moved by `framing` (the row's,
    as every mesh of the row is); face_id indexes the mesh's own faces."""
    vertices = mesh.vertices if framing is None else framing.apply(mesh.vertices)
    return _scene(mesh.faces, len(mesh.vertices), view_config).render(vertices)


def unframe(framing: Framing, vertices: np.ndarray) -> np.ndarray:
    """The inverse of `framing.apply`: framed coordinates back to the subject's own."""
    v = np.asarray(vertices, dtype=np.float64)
    return (v - framing.home) / framing.scale + framing.centre
