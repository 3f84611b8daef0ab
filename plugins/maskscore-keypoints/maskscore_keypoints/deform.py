"""Keypoint displacements -> a displacement of the mesh's vertices (docs/design.md: displace
the vertices at the keypoint locations, re-render), by one sparse least-squares solve.

Each keypoint is a triangle and barycentric coordinates (`keypoint_set`), so the displacement of
the surface point it names is the barycentric blend of its triangle's corner displacements. The
vertex displacement field D is the smoothest field whose blends meet the keypoints' displacements:

    minimise  |L D|^2 + CONSTRAINT_WEIGHT * |C D - d|^2     over the free vertices

L is the graph Laplacian of frame A's mesh (mesh edges only, so the upper lip is not tied to
the lower lip across the mouth opening), normalised by vertex degree; C (K, V) holds each
keypoint's barycentric weights on its triangle's corners; d (K, 3) the keypoint displacements.
Minimising the squared Laplacian (bending) rather than blending nearby displacements carries a
smooth motion, such as a head turned by the neck, across the gaps between keypoints instead of
shrinking it there. The free vertices are those within FREE_RADIUS_M of a keypoint's triangle
along the surface; the rest of the body (beyond the neck) keeps frame A's place and is the
boundary the solve is anchored to. The system depends on frame A only, so it is factorised once
per frame A and every candidate of an edit is one back-substitution.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import dijkstra
from scipy.sparse.linalg import splu

FREE_RADIUS_M = 0.06
CONSTRAINT_WEIGHT = 100.0


def _edges(faces: np.ndarray) -> np.ndarray:
    return np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]])


class SurfaceSolve:
    """The factorised solve of one frame A: `displace(d)` moves its vertices by keypoint
    displacements d (K, 3). `faces` are the triangles the solve runs over (the body's)."""

    def __init__(self, vertices: np.ndarray, faces: np.ndarray, keypoint_faces: np.ndarray, barycentric: np.ndarray):
        vertices = np.asarray(vertices, dtype=np.float64)
        count = len(vertices)
        edges = _edges(faces)
        lengths = np.linalg.norm(vertices[edges[:, 0]] - vertices[edges[:, 1]], axis=1)
        graph = sparse.coo_matrix((lengths, (edges[:, 0], edges[:, 1])), shape=(count, count)).tocsr()
        graph = graph.maximum(graph.T)
        corners = faces[keypoint_faces]  # (K, 3)
        reach = dijkstra(graph, directed=False, indices=np.unique(corners), limit=FREE_RADIUS_M, min_only=True)
        self.free = np.flatnonzero(np.isfinite(reach))
        adjacency = (graph > 0).astype(np.float64)
        degree = np.asarray(adjacency.sum(axis=1)).ravel()
        laplacian = sparse.diags(1.0 / np.maximum(degree, 1.0)) @ (sparse.diags(degree) - adjacency)
        laplacian = laplacian.tocsr()[:, self.free]
        rows = np.flatnonzero(np.asarray(abs(laplacian).sum(axis=1)).ravel() > 0)  # every row touching a free vertex
        laplacian = laplacian[rows]
        k = len(keypoint_faces)
        blend = sparse.coo_matrix(
            (np.asarray(barycentric, dtype=np.float64).ravel(), (np.repeat(np.arange(k), 3), corners.ravel())),
            shape=(k, count),
        ).tocsr()[:, self.free]
        self._blend_t = (CONSTRAINT_WEIGHT * blend.T).tocsr()
        self._factor = splu((laplacian.T @ laplacian + CONSTRAINT_WEIGHT * (blend.T @ blend)).tocsc())
        self.vertices = vertices

    def displace(self, displacements: np.ndarray) -> np.ndarray:
        """Frame A's vertices moved by the solved field (vertices outside the free region stay)."""
        moved = self.vertices.copy()
        moved[self.free] += self._factor.solve(self._blend_t @ np.asarray(displacements, dtype=np.float64))
        return moved
