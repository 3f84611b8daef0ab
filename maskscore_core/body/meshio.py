"""Reading and writing reference-topology meshes as .glb, .ply or .obj files.

A MaskScore mesh file carries the reference mesh's vertices in the reference mesh's vertex
order; the faces are the fixed topology's. Loading therefore never lets trimesh merge, reorder
or drop vertices (`process=False`, `maintain_order=True`), and every loaded mesh passes
`ReferenceMesh.check` (vertex count, finiteness) before anyone renders it. The renderer draws
the reference faces whatever a file holds, so a file whose triangles are not the reference's is
refused rather than silently drawn as something else (`check_topology`); so is one whose
coordinates cannot be a body in metres, such as a mesh in centimetres or scaled by 1e6
(`check_extent`).
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

FORMATS = (".glb", ".ply", ".obj")
# A body of any phenotype the reference model makes (arms in a T-pose included) is well under
# two metres across and stands around the origin; these bounds leave room for any pose.
MAX_REACH_M = 10.0  # no coordinate farther from the origin
MAX_SPAN_M = 5.0  # no side of the bounding box longer
MIN_SPAN_M = 0.05  # and the longest side at least this long


class MeshFileError(ValueError):
    """A mesh file that is missing, empty, unreadable, or not on the reference topology."""


def mesh_format(path: Path, error: type[Exception] = MeshFileError) -> str:
    """The file's suffix, if it is a mesh format MaskScore reads and writes; else `error`."""
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise error(f"{path}: unsupported mesh format {suffix or '(none)'!r}; use one of {', '.join(FORMATS)}")
    return suffix


def load_mesh_file(path: Path, error: type[Exception] = MeshFileError):
    """What trimesh reads from a .glb, .ply or .obj file (a Trimesh or a Scene), unprocessed and
    in stored order; `error` naming the file for a wrong format, a missing, empty or corrupt file."""
    import trimesh

    suffix = mesh_format(path, error)
    if not path.is_file():
        raise error(f"{path}: mesh file not found")
    if path.stat().st_size == 0:
        raise error(f"{path}: mesh file is empty")
    try:
        return trimesh.load(io.BytesIO(path.read_bytes()), file_type=suffix[1:], process=False, maintain_order=True)
    except Exception as err:  # noqa: BLE001 - any parser failure is a corrupt file
        raise error(f"{path}: cannot read {suffix} mesh ({type(err).__name__}: {err})") from None


def write_mesh(path: str | Path, vertices: np.ndarray, faces: np.ndarray | None = None) -> Path:
    """Write reference-mesh vertices (and the reference faces unless `faces` is given)."""
    import trimesh

    from maskscore_core.body.reference_mesh import get_reference_mesh

    path = Path(path)
    suffix = mesh_format(path)
    reference = get_reference_mesh()
    vertices = reference.check(vertices, str(path))
    faces = reference.faces if faces is None else np.asarray(faces)
    mesh = trimesh.Trimesh(vertices=vertices, faces=faces, process=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = mesh.export(file_type=suffix[1:])
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return path


def read_vertices(path: str | Path) -> np.ndarray:
    """The (V, 3) float64 vertices of a mesh file on the reference topology, validated.

    Raises MeshFileError naming the file and the problem: missing, empty, unreadable, no
    geometry, several meshes, wrong vertex count, NaN or infinite coordinates.
    """
    import trimesh

    from maskscore_core.body.reference_mesh import get_reference_mesh

    path = Path(path)
    loaded = load_mesh_file(path)
    if isinstance(loaded, trimesh.Scene):
        geometries = [g for g in loaded.geometry.values() if isinstance(g, trimesh.Trimesh)]
        if not geometries:
            raise MeshFileError(f"{path}: the file holds no triangle mesh")
        if len(geometries) > 1:
            raise MeshFileError(f"{path}: the file holds {len(geometries)} meshes; a MaskScore mesh file holds one")
        loaded = geometries[0]
    if not isinstance(loaded, trimesh.Trimesh):
        raise MeshFileError(f"{path}: the file holds a {type(loaded).__name__}, not a triangle mesh")
    vertices = np.asarray(loaded.vertices, dtype=np.float64)
    if vertices.size == 0:
        raise MeshFileError(f"{path}: the mesh has no vertices")
    try:
        checked = get_reference_mesh().check(vertices, str(path))
    except ValueError as err:
        raise MeshFileError(str(err)) from err
    check_topology(np.asarray(loaded.faces), len(vertices), str(path))
    check_extent(checked, str(path))
    return checked


def _triangle_set(faces: np.ndarray) -> np.ndarray:
    """Faces as a canonical array: each triangle's corners sorted, rows sorted (order and
    winding do not change which triangles a mesh has)."""
    corners = np.sort(faces, axis=1)
    return corners[np.lexsort(corners.T[::-1])]


def check_topology(faces: np.ndarray, vertex_count: int, what: str = "mesh") -> None:
    """MeshFileError unless `faces` are the reference's triangles for a mesh of `vertex_count`
    vertices (the full reference, or bare ANNY without accessory slots)."""
    from maskscore_core.body.reference_mesh import get_reference_mesh

    reference = get_reference_mesh()
    expected = reference.faces if vertex_count == reference.vertex_count else reference.body.faces
    faces = np.asarray(faces, dtype=np.int64).reshape(-1, 3) if np.size(faces) else np.zeros((0, 3), np.int64)
    if faces.shape == expected.shape and np.array_equal(faces, expected):
        return
    theirs = {tuple(t) for t in _triangle_set(faces)}
    missing = sum(1 for t in _triangle_set(expected) if tuple(t) not in theirs)
    if not missing and len(faces) == len(expected):
        return  # the same triangles, listed in another order or winding
    raise MeshFileError(
        f"{what}: its {len(faces)} triangles are not the reference topology's {len(expected)} ({missing} of the"
        " reference's are missing); a MaskScore mesh keeps the reference mesh's faces: deform it, do not remesh it"
    )


def check_extent(vertices: np.ndarray, what: str = "mesh") -> None:
    """MeshFileError unless the coordinates can be a human body in metres near the origin."""
    reach = float(np.abs(vertices).max())
    span = float((vertices.max(axis=0) - vertices.min(axis=0)).max())
    if reach > MAX_REACH_M or not MIN_SPAN_M <= span <= MAX_SPAN_M:
        raise MeshFileError(
            f"{what}: coordinates reach {reach:.3g} m from the origin over a {span:.3g} m box; a body in metres lies"
            f" within {MAX_REACH_M:g} m of the origin and spans {MIN_SPAN_M:g}-{MAX_SPAN_M:g} m (was the mesh scaled,"
            " or saved in centimetres or millimetres?)"
        )
