"""The mesh modality's representation: reference-mesh vertices in memory, a .glb file on disk.

The mesh is the root representation (seed 000): every other geometric modality is a projection
of it, so encoding is just evaluating the reference mesh and decoding is validating it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from maskscore_core import meshio
from maskscore_core.records import Asset, Decoded, Target
from maskscore_core.reference_mesh import get_reference_mesh

MODALITY = "mesh"
SUFFIX = ".glb"


class MeshFileError(meshio.MeshFileError):
    """A mesh asset that is empty or not a .glb (file problems: `meshio.MeshFileError`)."""


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
    return meshio.write_mesh(path, vertices)


def read(path: Path) -> np.ndarray:
    """The vertices of a .glb on the reference topology (the faces are the reference's; a file
    with another vertex count, NaN coordinates or no mesh at all is rejected by name)."""
    if path.suffix.lower() != SUFFIX:
        raise MeshFileError(f"mesh file {str(path)!r} is not a {SUFFIX} file")
    return meshio.read_vertices(path)
