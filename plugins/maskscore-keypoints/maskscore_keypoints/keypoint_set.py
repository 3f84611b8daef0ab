"""The fixed keypoint set: surface points of the reference mesh, named by face and barycentrics.

A keypoint is a point ON the mesh surface (docs/design.md: keypoints are not free-floating landmarks),
so it is stored as (triangle index, barycentric coordinates) on the reference topology; its xyz
on any body state is the barycentric blend of that triangle's corners. The set is the same for
every subject, frame and dataset:

- for each part of `vocab.ACTIVE_FACE_PARTS` (in that order), points sampled uniformly by area
  over the part's triangles (`parts.part_face_mask`) of the neutral default body, with a numpy
  Generator seeded by (SET_SEED, part index): one point per POINT_SPACING_M^2 of part area,
  between MIN_PER_PART and MAX_PER_PART points (the cap of 200 leaves the face's points about
  1.3 cm apart: at 48 they were 2.5 cm apart, coarser than a cheek raise, README.md);
- for each accessory part (headwear, earwear, eyewear, neckwear), one keypoint ON EACH VERTEX of
  its accessory slot (barycentric one-hot on a triangle of that vertex). Such a keypoint pins
  its vertex (`vertex`): an accessory is not a deformation of the body, so adding, removing or
  replacing it can only be expressed by where its own points are (all on one point: absent).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import attrs
import numpy as np

from maskscore_core import vocab

SET_SEED = 5_000
POINT_SPACING_M = 0.01
MIN_PER_PART = 16
MAX_PER_PART = 200
SIDECAR_NAME = "keypoint_set.json"


@attrs.frozen(eq=False)
class KeypointSet:
    """K surface points: triangle `faces` (K,), `barycentric` (K, 3), the `part` of each, and
    `vertex` (K,): the reference-mesh vertex a keypoint pins (accessories), -1 for body points."""

    faces: np.ndarray
    barycentric: np.ndarray
    parts: tuple[str, ...]
    vertex: np.ndarray

    @property
    def pinned(self) -> np.ndarray:
        """(K,) bool: keypoints that pin one vertex (accessory slots)."""
        return self.vertex >= 0

    def __len__(self) -> int:
        return len(self.faces)

    def positions(self, vertices: np.ndarray) -> np.ndarray:
        """(K, 3) xyz of every keypoint on a reference mesh with these vertices."""
        from maskscore_core.body.reference_mesh import get_reference_mesh

        corners = vertices[get_reference_mesh().faces[self.faces]]  # (K, 3 corners, 3)
        return np.einsum("kc,kcd->kd", self.barycentric, corners)

    def ids(self, part: str) -> np.ndarray:
        """Indices of the keypoints that sit on `part`."""
        return np.array([i for i, p in enumerate(self.parts) if p == part], dtype=np.int64)

    def to_json(self) -> str:
        records = [
            {"part": p, "face": int(f), "barycentric": [float(b) for b in bary], "vertex": int(v)}
            for p, f, bary, v in zip(self.parts, self.faces, self.barycentric, self.vertex)
        ]
        return json.dumps({"seed": SET_SEED, "keypoints": records}, indent=1, sort_keys=True) + "\n"


def _sample_part(part_index: int, faces: np.ndarray, areas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Triangles and barycentrics of one part's keypoints."""
    total = float(areas.sum())
    count = int(np.clip(round(total / POINT_SPACING_M**2), MIN_PER_PART, MAX_PER_PART))
    rng = np.random.default_rng([SET_SEED, part_index])
    chosen = rng.choice(faces, size=count, replace=count > len(faces), p=areas / total)
    # Uniform point in a triangle: (1 - sqrt(r1), sqrt(r1) (1 - r2), sqrt(r1) r2).
    r1, r2 = rng.random(count), rng.random(count)
    s = np.sqrt(r1)
    bary = np.stack([1.0 - s, s * (1.0 - r2), s * r2], axis=1)
    order = np.lexsort((bary[:, 1], chosen))  # a stable order that does not depend on sampling order
    return chosen[order], bary[order]


@functools.cache
def get_keypoint_set() -> KeypointSet:
    """The project's keypoint set (built once per process; deterministic)."""
    from maskscore_core.body import parts
    from maskscore_core.plugin.records import BodyState
    from maskscore_core.body.reference_mesh import get_reference_mesh

    reference = get_reference_mesh()
    vertices = reference.vertices([BodyState()])[0]
    corners = vertices[reference.faces]
    areas = 0.5 * np.linalg.norm(np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]), axis=1)
    all_faces, all_bary, all_parts, all_vertex = [], [], [], []
    for part_index, part in enumerate(vocab.ACTIVE_FACE_PARTS):
        on_body = np.arange(len(areas)) < reference.anny_face_count
        faces = np.flatnonzero(parts.part_face_mask(part) & on_body & (areas > 0))
        if len(faces) == 0:
            raise ValueError(f"part {part!r} has no triangles on the reference mesh; cannot place keypoints on it")
        chosen, bary = _sample_part(part_index, faces, areas[faces])
        all_faces.append(chosen)
        all_bary.append(bary)
        all_parts.extend([part] * len(chosen))
        all_vertex.append(np.full(len(chosen), -1, dtype=np.int64))
    for slot in reference.slots:
        start, stop = reference.slot_ranges[slot.name]
        faces, bary = _pin_vertices(reference.faces, np.arange(start, stop))
        all_faces.append(faces)
        all_bary.append(bary)
        all_parts.extend([slot.part] * len(faces))
        all_vertex.append(np.arange(start, stop, dtype=np.int64))
    return KeypointSet(np.concatenate(all_faces), np.concatenate(all_bary), tuple(all_parts), np.concatenate(all_vertex))


def _pin_vertices(faces: np.ndarray, vertex_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each vertex: the first triangle that uses it, and the one-hot barycentrics of it there."""
    owner = np.full(int(vertex_ids.max()) + 1, -1, dtype=np.int64)
    corner = np.zeros_like(owner)
    for c in (2, 1, 0):  # the lowest corner wins ties inside a face; then the first face wins
        for f in np.flatnonzero(np.isin(faces[:, c], vertex_ids))[::-1]:
            owner[faces[f, c]] = f
            corner[faces[f, c]] = c
    found = owner[vertex_ids]
    if (found < 0).any():
        raise ValueError(f"accessory vertices {vertex_ids[found < 0][:5].tolist()} belong to no triangle")
    bary = np.zeros((len(vertex_ids), 3))
    bary[np.arange(len(vertex_ids)), corner[vertex_ids]] = 1.0
    return found, bary


def write_sidecar(directory: Path) -> Path:
    """`keypoint_set.json` next to keypoint assets: which triangle and barycentrics each of the
    table's xyz triples belongs to, so a reader can keep the points on the surface."""
    path = Path(directory) / SIDECAR_NAME
    text = get_keypoint_set().to_json()
    if not path.exists() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return path
