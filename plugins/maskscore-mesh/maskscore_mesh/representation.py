"""The mesh modality's representation: reference-mesh vertices in memory, a .glb file on disk.

The mesh is the root representation (docs/design.md): every other geometric modality is a projection
of it, so encoding is just evaluating the reference mesh and decoding is validating it.

A mesh also carries its look when the frame has one (`records.Appearance`: the appearance task
types). In memory it is `Asset.meta["appearance"]`; in a .glb the per-vertex albedo is the
standard vertex colour attribute COLOR_0 (what any glTF viewer shows), and the full record
(skin, part colours, light, part lights, backdrop; glTF has no core directional-light or
backdrop field) is the scene's `extras["maskscore_appearance"]`. Reading checks that the two
agree (to COLOR_0's 8-bit precision), so a file whose colours were changed without its record
(or the reverse) is rejected rather than scored with the wrong look.

A mesh of another topology (an image-to-3D model's output: Pixal3D) is a candidate too: in
memory a `foreign_mesh.ForeignMesh` (its own vertices and triangles, reference frame), on disk a
.glb, .ply or .obj. It decodes to `Decoded(vertices, faces)`, which the metric renders with its
own triangles (`maskscore_core.metric.foreign_mesh`); it carries no look.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from maskscore_core.metric import appearance, foreign_mesh

from maskscore_core.body import meshio
from maskscore_core.plugin.records import Appearance, Asset, Decoded, Target, converter
from maskscore_core.body.reference_mesh import get_reference_mesh

MODALITY = "mesh"
SUFFIX = ".glb"
EXTRAS_KEY = "maskscore_appearance"
COLOUR_TOLERANCE = 1.0 / 255.0 + 1e-6  # COLOR_0 is stored as normalised 8-bit


class MeshFileError(meshio.MeshFileError):
    """A mesh asset that is empty or not a .glb (file problems: `meshio.MeshFileError`)."""


def encode(target: Target) -> Asset:
    """The reference mesh (ANNY + accessory slots) of the target's representative frame."""
    vertices = get_reference_mesh().vertices([target.state])[0]
    return Asset(modality=MODALITY, data=vertices, meta={"label": target.label, "appearance": target.state.appearance})


def decode(asset: Asset, start=None) -> Decoded:
    """A mesh asset decodes to itself once its vertices pass the reference-mesh check; a mesh of
    its own topology, once it passes `foreign_mesh.check`, to ANNY fitted to it from `start`
    (frame A's body state), or to its own vertices and faces without one (`foreign_mesh.decode`)."""
    if asset.data is None:
        raise MeshFileError(f"mesh asset {asset.path or asset.meta.get('label', '?')!r} holds no vertices")
    if isinstance(asset.data, foreign_mesh.ForeignMesh):
        return decode_foreign(asset, start)
    vertices = get_reference_mesh().check(asset.data, what=f"mesh {asset.path or asset.meta.get('label', '')}".strip())
    look = asset.meta.get("appearance")
    if look is not None and not isinstance(look, Appearance):
        raise MeshFileError(f"mesh asset {asset.path or asset.meta.get('label', '?')!r}: its appearance is a"
                            f" {type(look).__name__}, not a records.Appearance")  # fmt: skip
    return Decoded(vertices=vertices, appearance=look)


def decode_foreign(asset: Asset, start=None) -> Decoded:
    """A ForeignMesh asset: on the reference topology after all, the reference mesh (scored with
    head alignment); otherwise fitted from `start`, or its own vertices and triangles."""
    what = f"mesh {asset.path or asset.meta.get('label', '')}".strip()
    mesh = foreign_mesh.check(asset.data.vertices, asset.data.faces, what)
    if asset.meta.get("appearance") is not None:
        raise MeshFileError(f"{what}: a mesh of its own topology carries no appearance (no part per triangle)")
    if foreign_mesh.is_reference(mesh):
        return Decoded(vertices=get_reference_mesh().check(mesh.vertices, what))
    return foreign_mesh.decode(mesh, start)


def write(vertices: np.ndarray, path: Path, look: Appearance | None = None) -> Path:
    """Write vertices on the reference topology as a binary glTF (.glb); with `look`, also the
    vertex colours (COLOR_0) and the appearance record (scene extras)."""
    if look is None:
        return meshio.write_mesh(path, vertices)
    import trimesh

    reference = get_reference_mesh()
    vertices = reference.check(vertices, str(path))
    mesh = trimesh.Trimesh(vertices=vertices, faces=reference.faces, process=False)
    colours = np.rint(appearance.vertex_albedo(look) * 255.0).astype(np.uint8)
    rgba = np.concatenate([colours, np.full((len(colours), 1), 255, dtype=np.uint8)], axis=1)
    mesh.visual = trimesh.visual.ColorVisuals(mesh, vertex_colors=rgba)
    scene = trimesh.Scene(mesh)
    scene.metadata[EXTRAS_KEY] = converter.unstructure(look)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(trimesh.exchange.gltf.export_glb(scene))
    return path


def read(path: Path) -> np.ndarray | foreign_mesh.ForeignMesh:
    """The vertices of a mesh file on the reference topology (.glb), or a ForeignMesh for a .glb,
    .ply or .obj of any other topology (a file with NaN coordinates, no faces or no mesh at all
    is rejected by name)."""
    mesh = foreign_mesh.read(path)  # names a missing, corrupt, empty or bad file first
    if foreign_mesh.is_reference(mesh):  # its count, triangles and extent checked: the reference mesh
        return get_reference_mesh().check(mesh.vertices, str(path))
    return mesh


def read_appearance(path: Path) -> Appearance | None:
    """The appearance record of a .glb written by `write` (None when it has none), checked
    against its COLOR_0 vertex colours."""
    import trimesh

    loaded = trimesh.load(io.BytesIO(Path(path).read_bytes()), file_type="glb", process=False, maintain_order=True)
    record = (loaded.metadata or {}).get(EXTRAS_KEY) if isinstance(loaded, trimesh.Scene) else None
    if record is None:
        return None
    try:
        look = converter.structure(record, Appearance)
    except Exception as err:  # noqa: BLE001 - cattrs groups the record's AppearanceError
        reason = err.exceptions[0] if isinstance(err, BaseExceptionGroup) and err.exceptions else err
        raise MeshFileError(f"{path}: scene extras {EXTRAS_KEY!r} is not a valid appearance: {reason}") from None
    mesh = next(iter(loaded.geometry.values()))
    if getattr(mesh.visual, "kind", None) != "vertex":
        raise MeshFileError(f"{path}: has an appearance record but no COLOR_0 vertex colours")
    stored = np.asarray(mesh.visual.vertex_colors, dtype=np.float64)[:, :3] / 255.0
    expected = appearance.vertex_albedo(look)
    if stored.shape != expected.shape or np.abs(stored - expected).max() > COLOUR_TOLERANCE:
        raise MeshFileError(f"{path}: COLOR_0 vertex colours disagree with the appearance record in the scene extras")
    return look
