"""Remeshing a body mesh into another topology: what an image-to-3D model's output looks like.

Why: meshes of any topology are scored by rendering them (`metric.foreign_mesh`); to know that
this is honest, the same body is scored in ANNY's topology and remeshed, and the scores must
agree. Two remeshings, both deterministic:

- `subdivide`: every triangle split into four at its edge midpoints (the surface is unchanged;
  only the vertex normals, hence the shading, differ slightly);
- `cluster`: vertex clustering on a grid of `cell` metres (every vertex of a cell merged into
  their mean, triangles that collapse dropped): fewer vertices, and a surface that differs from
  the original by up to about a cell;
- `decimate`: quadric edge-collapse decimation (`fast-simplification`, through trimesh) to a
  fraction of the triangles, the way mesh tools simplify: new vertex positions chosen to keep
  the surface, so a detail survives as long as triangles are left to hold it.
"""

from __future__ import annotations

import numpy as np


def body_surface(vertices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(vertices, faces) of the bare ANNY body of reference-mesh vertices (accessory slots that
    are collapsed have no area and are left out; worn accessories are not part of the body)."""
    from maskscore_core.body.reference_mesh import get_reference_mesh

    reference = get_reference_mesh()
    v = reference.check(vertices)
    return v[: reference.anny_vertex_count].copy(), reference.body.faces.astype(np.int64)


def subdivide(vertices: np.ndarray, faces: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One midpoint subdivision (each triangle -> 4; shared edges share their midpoint)."""
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    edges = np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]])
    unique, inverse = np.unique(np.sort(edges, axis=1), axis=0, return_inverse=True)
    mid = len(v) + inverse.reshape(3, len(f)).T  # (F, 3): midpoints of edges 01, 12, 20
    out_v = np.concatenate([v, 0.5 * (v[unique[:, 0]] + v[unique[:, 1]])])
    a, b, c = f[:, 0], f[:, 1], f[:, 2]
    ab, bc, ca = mid[:, 0], mid[:, 1], mid[:, 2]
    out_f = np.concatenate(
        [np.stack(t, axis=1) for t in ((a, ab, ca), (ab, b, bc), (ca, bc, c), (ab, bc, ca))]
    )
    return out_v, out_f


def cluster(vertices: np.ndarray, faces: np.ndarray, cell: float) -> tuple[np.ndarray, np.ndarray]:
    """Vertex clustering on a grid of `cell` metres: each occupied cell's vertices merged into
    their mean; triangles with two corners in one cell dropped, duplicates kept once."""
    if not cell > 0:
        raise ValueError(f"cluster cell must be positive, got {cell!r}")
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    keys = np.floor((v - v.min(axis=0)) / cell).astype(np.int64)
    _cells, label = np.unique(keys, axis=0, return_inverse=True)
    label = label.ravel()
    counts = np.bincount(label)
    merged = np.stack([np.bincount(label, weights=v[:, k]) for k in range(3)], axis=1) / counts[:, None]
    g = label[f]
    keep = (g[:, 0] != g[:, 1]) & (g[:, 1] != g[:, 2]) & (g[:, 2] != g[:, 0])
    g = g[keep]
    # the same triangle reached from several original ones (any winding): keep its first
    _same, first = np.unique(np.sort(g, axis=1), axis=0, return_index=True)
    g = g[np.sort(first)]
    used, compact = np.unique(g, return_inverse=True)
    return merged[used], compact.reshape(g.shape)


def decimate(vertices: np.ndarray, faces: np.ndarray, keep: float) -> tuple[np.ndarray, np.ndarray]:
    """Quadric edge-collapse decimation keeping about `keep` (0 < keep < 1) of the triangles."""
    import trimesh

    if not 0.0 < keep < 1.0:
        raise ValueError(f"decimate keeps a fraction of the triangles in (0, 1), got {keep!r}")
    mesh = trimesh.Trimesh(vertices=np.asarray(vertices, dtype=np.float64), faces=np.asarray(faces, dtype=np.int64), process=False)
    simple = mesh.simplify_quadric_decimation(percent=1.0 - keep)
    return np.asarray(simple.vertices, dtype=np.float64), np.asarray(simple.faces, dtype=np.int64)
