"""Reading and writing reference-topology meshes as .glb, .ply or .obj files.

A MaskScore mesh file carries the reference mesh's vertices in the reference mesh's vertex
order; the faces are the fixed topology's. Loading therefore never lets trimesh merge, reorder
or drop vertices (`process=False`, `maintain_order=True`), and every loaded mesh passes
`ReferenceMesh.check` (vertex count, finiteness) before anyone renders it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

FORMATS = (".glb", ".ply", ".obj")


class MeshFileError(ValueError):
    """A mesh file that is missing, empty, unreadable, or not on the reference topology."""


def _format(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise MeshFileError(f"{path}: unsupported mesh format {suffix or '(none)'!r}; use one of {', '.join(FORMATS)}")
    return suffix


def write_mesh(path: str | Path, vertices: np.ndarray, faces: np.ndarray | None = None) -> Path:
    """Write reference-mesh vertices (and the reference faces unless `faces` is given)."""
    import trimesh

    from .reference_mesh import get_reference_mesh

    path = Path(path)
    suffix = _format(path)
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

    from .reference_mesh import get_reference_mesh

    path = Path(path)
    suffix = _format(path)
    if not path.is_file():
        raise MeshFileError(f"{path}: mesh file not found")
    if path.stat().st_size == 0:
        raise MeshFileError(f"{path}: mesh file is empty")
    try:
        loaded = trimesh.load(path, file_type=suffix[1:], process=False, maintain_order=True, force=None)
    except Exception as err:  # noqa: BLE001 - any parser failure is a corrupt file
        raise MeshFileError(f"{path}: cannot read {suffix} mesh ({type(err).__name__}: {err})") from err
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
        return get_reference_mesh().check(vertices, str(path))
    except ValueError as err:
        raise MeshFileError(str(err)) from err
