"""The mesh modality's representation: reference-mesh vertices in memory, a .glb file on disk.

The mesh is the root representation (seed 000): every other geometric modality is a projection
of it, so encoding is just evaluating the reference mesh and decoding is validating it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from maskscore_core.records import Asset, Decoded, Target
from maskscore_core.reference_mesh import get_reference_mesh

MODALITY = "mesh"
SUFFIX = ".glb"


class MeshFileError(ValueError):
    """A mesh file that is missing, unreadable, or not on the reference topology."""


def encode(target: Target) -> Asset:
    """The reference mesh (ANNY + accessory slots) of the target's representative frame."""
    vertices = get_reference_mesh().vertices([target.state])[0]
    return Asset(modality=MODALITY, data=vertices, meta={"label": target.label})


def decode(asset: Asset) -> Decoded:
    """A mesh asset decodes to itself once its vertices pass the reference-mesh check."""
    if asset.data is None:
        raise MeshFileError(f"mesh asset {asset.path or asset.meta.get('label', '?')!r} holds no vertices")
    vertices = get_reference_mesh().check(asset.data, what=f"mesh {asset.path or asset.meta.get('label', '')}".strip())
    return Decoded(vertices=vertices)


def write(vertices: np.ndarray, path: Path) -> Path:
    """Write vertices on the reference topology as a binary glTF (.glb)."""
    reference = get_reference_mesh()
    checked = reference.check(vertices, what=f"mesh for {path.name}")
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_glb(path, checked, reference.faces)
    return path


def read(path: Path) -> np.ndarray:
    """Read a .glb written by `write` (or any .glb on the reference topology): its vertices."""
    if not path.is_file():
        raise MeshFileError(f"mesh file {str(path)!r} does not exist")
    if path.suffix.lower() != SUFFIX:
        raise MeshFileError(f"mesh file {str(path)!r} is not a {SUFFIX} file")
    try:
        vertices, faces = _read_glb(path)
    except Exception as err:  # noqa: BLE001 - any parser failure means a corrupt file
        raise MeshFileError(f"mesh file {str(path)!r} cannot be read as glTF: {type(err).__name__}: {err}") from err
    reference = get_reference_mesh()
    faces = np.asarray(faces, dtype=np.int64)
    if faces.shape != reference.faces.shape or not np.array_equal(faces, reference.faces):
        raise MeshFileError(
            f"mesh file {str(path)!r} has {len(faces)} triangles that are not the reference topology's"
            f" {len(reference.faces)}; candidates must be on the ANNY reference mesh"
        )
    return reference.check(vertices, what=f"mesh file {str(path)!r}")


def _write_glb(path: Path, vertices: np.ndarray, faces: np.ndarray) -> None:
    # Local stand-in until maskscore_core.meshio (issue 3) lands.
    import trimesh

    mesh = trimesh.Trimesh(vertices=vertices, faces=faces, process=False)
    path.write_bytes(mesh.export(file_type="glb"))


def _read_glb(path: Path) -> tuple[np.ndarray, np.ndarray]:
    import trimesh

    mesh = trimesh.load(path, file_type="glb", force="mesh", process=False)
    return np.asarray(mesh.vertices, dtype=np.float64), np.asarray(mesh.faces, dtype=np.int64)
