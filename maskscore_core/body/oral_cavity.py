"""The oral cavity: the mouth's triangles that the mesh itself closes in at rest.

Why: pictures are shaded without shadows (`metric.appearance`), so the inside of an open mouth
was lit like the lips and the skin around it. A face-landmark detector then finds no inner lip
contour, and a wide-open mouth read as less open than a half-open one (measured on the image
modality's ladders, plugins/maskscore-image/README.md). Light does not reach a real mouth's
inside; these triangles are shaded as such (`appearance.PART_COLOUR["oral cavity"]`).

Which triangles: on the default subject at rest (lips closed), a mouth vertex is inside when most
of the hemisphere above its surface is blocked by the mesh within REACH_M: rays in HEMISPHERE_RAYS
fixed directions (a Hammersley set, cosine-weighted) hit another triangle for more than
ENCLOSED_SHARE of them. The lips' outer and inner faces see out (or across the lip seam); the
floor, roof and throat do not. A triangle is in the cavity when all three of its vertices are.
The rays take seconds, so the result is committed (`maskscore_core/data/oral_cavity.json`, the
triangles' indices) and read from there; `python -m maskscore_core.body.oral_cavity` computes it
again (plain float64 arithmetic: the same triangles on every machine) and writes it, and
tests/test_oral_cavity.py checks that a fresh computation still agrees with the file.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from pathlib import Path

import numpy as np
from numba import njit

from maskscore_core.body import parts
from maskscore_core.plugin.records import BodyState

REACH_M = 0.12  # how far a ray looks for the mesh around it (the mouth is ~11 cm deep)
HEMISPHERE_RAYS = 64
ENCLOSED_SHARE = 0.5
NEIGHBOURHOOD_M = 0.15  # triangles that can close the mouth in: within this of its centre
LIFT_M = 1e-5  # rays start this far off the surface, so that they miss their own triangles


def hemisphere_directions(count: int) -> np.ndarray:
    """(count, 3) unit directions around +z, cosine-weighted, from a Hammersley set (fixed)."""
    i = np.arange(count)
    u = (i + 0.5) / count
    v = np.array([int(f"{k:032b}"[::-1], 2) / 2.0**32 for k in i])  # van der Corput, base 2
    radius, angle = np.sqrt(u), 2.0 * np.pi * v
    return np.stack([radius * np.cos(angle), radius * np.sin(angle), np.sqrt(1.0 - u)], axis=1)


@njit(cache=True, nogil=True)
def _blocked(origins, directions, triangles, reach):
    """(P, D) whether each ray origins[p] + t directions[p, d], 0 < t < reach, hits a triangle
    (Moller-Trumbore, no culling)."""
    points, rays, count = directions.shape[0], directions.shape[1], triangles.shape[0]
    out = np.zeros((points, rays), np.bool_)
    for p in range(points):
        ox, oy, oz = origins[p, 0], origins[p, 1], origins[p, 2]
        for d in range(rays):
            rx, ry, rz = directions[p, d, 0], directions[p, d, 1], directions[p, d, 2]
            for k in range(count):
                ax, ay, az = triangles[k, 0, 0], triangles[k, 0, 1], triangles[k, 0, 2]
                e1x, e1y, e1z = triangles[k, 1, 0] - ax, triangles[k, 1, 1] - ay, triangles[k, 1, 2] - az
                e2x, e2y, e2z = triangles[k, 2, 0] - ax, triangles[k, 2, 1] - ay, triangles[k, 2, 2] - az
                qx, qy, qz = ry * e2z - rz * e2y, rz * e2x - rx * e2z, rx * e2y - ry * e2x
                det = e1x * qx + e1y * qy + e1z * qz
                if abs(det) < 1e-18:
                    continue
                sx, sy, sz = ox - ax, oy - ay, oz - az
                u = (sx * qx + sy * qy + sz * qz) / det
                if u < 0.0 or u > 1.0:
                    continue
                wx, wy, wz = sy * e1z - sz * e1y, sz * e1x - sx * e1z, sx * e1y - sy * e1x
                v = (rx * wx + ry * wy + rz * wz) / det
                if v < 0.0 or u + v > 1.0:
                    continue
                t = (e2x * wx + e2y * wy + e2z * wz) / det
                if 0.0 < t < reach:
                    out[p, d] = True
                    break
    return out


def _frames(normals: np.ndarray) -> np.ndarray:
    """(P, 3, 3) rotations taking +z to each normal (rows: tangent, bitangent, normal)."""
    helper = np.where(np.abs(normals[:, :1]) < 0.9, np.array([[1.0, 0.0, 0.0]]), np.array([[0.0, 1.0, 0.0]]))
    tangent = np.cross(helper, normals)
    tangent /= np.linalg.norm(tangent, axis=1, keepdims=True)
    return np.stack([tangent, np.cross(normals, tangent), normals], axis=1)


def enclosed_vertices(vertices: np.ndarray, faces: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """The `candidates` (vertex ids) whose surface the mesh closes in (module docstring)."""
    from maskscore_core.metric.render import vertex_normals

    normals = vertex_normals(vertices, faces)[candidates]
    centre = vertices[candidates].mean(axis=0)
    near = np.linalg.norm(vertices[faces].mean(axis=1) - centre, axis=1) < NEIGHBOURHOOD_M
    directions = np.einsum("dk,pkc->pdc", hemisphere_directions(HEMISPHERE_RAYS), _frames(normals))
    origins = vertices[candidates] + LIFT_M * normals
    blocked = _blocked(np.ascontiguousarray(origins), np.ascontiguousarray(directions),
                       np.ascontiguousarray(vertices[faces[near]]), REACH_M)  # fmt: skip
    return candidates[blocked.mean(axis=1) > ENCLOSED_SHARE]


CAVITY_FILE = "data/oral_cavity.json"  # in the maskscore_core package


class OralCavityError(RuntimeError):
    """The committed cavity is missing or does not fit the reference mesh."""


def compute_face_mask() -> np.ndarray:
    """(F,) bool: the reference mesh's triangles inside the mouth, found by the rays (module
    docstring)."""
    from maskscore_core.body.reference_mesh import get_reference_mesh

    reference = get_reference_mesh()
    vertices = np.asarray(reference.vertices([BodyState()])[0], dtype=np.float64)[: reference.vertex_count]
    faces = np.asarray(reference.faces)
    mouth = parts.part_vertex_ids("mouth")
    inside = np.zeros(reference.vertex_count, dtype=bool)
    inside[enclosed_vertices(vertices, faces, mouth[mouth < reference.vertex_count])] = True
    return inside[faces].all(axis=1)


@functools.cache
def cavity_face_mask() -> np.ndarray:
    """(F,) bool: the reference mesh's triangles inside the mouth, as committed (module docstring)."""
    from maskscore_core.body.reference_mesh import get_reference_mesh

    face_count = len(get_reference_mesh().faces)
    source = resources.files("maskscore_core").joinpath(CAVITY_FILE)
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
        ids = np.asarray(data["faces"], dtype=np.int64)
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise OralCavityError(f"{source}: cannot read the committed oral cavity ({err})") from None
    if data.get("face_count") != face_count or ids.size == 0 or ids.min() < 0 or ids.max() >= face_count:
        raise OralCavityError(f"{source}: made for a mesh of {data.get('face_count')} triangles, the reference mesh has {face_count}")
    mask = np.zeros(face_count, dtype=bool)
    mask[ids] = True
    mask.flags.writeable = False
    return mask


def write(mask: np.ndarray, path: Path | None = None) -> Path:
    """Commit `mask` (what `compute_face_mask` gives) as the triangles' indices."""
    path = Path(path) if path is not None else Path(str(resources.files("maskscore_core").joinpath(CAVITY_FILE)))
    data = {"face_count": int(len(mask)), "faces": [int(i) for i in np.flatnonzero(mask)]}
    path.write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")
    return path


if __name__ == "__main__":
    print(write(compute_face_mask()))
