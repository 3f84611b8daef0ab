"""Keypoint displacements -> a smooth displacement of the mesh's vertices (seed 000: "displace
mesh vertices at the keypoint locations, re-render").

Each vertex moves by a Gaussian-weighted blend of the displacements of the keypoints near it,
nearness measured ALONG THE SURFACE of frame A's mesh (shortest paths over mesh edges), so the
upper lip does not follow the lower lip's keypoints across the mouth opening:

    w[v, k] = exp(-g(v, k)^2 / (2 sigma_k^2))          g: surface distance, cut at CUTOFF sigma_k
    offset[v] = sum_k w[v, k] d[k] / (sum_k w[v, k] + FLOOR)

Inside the keypoint cloud (sum w >> FLOOR) this is the weighted mean of nearby displacements;
away from every keypoint the offset decays smoothly to zero. sigma_k is the keypoint's blend
radius (`keypoint_set`: about its part's point spacing).
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import dijkstra

CUTOFF = 3.0
FLOOR = 0.05


def _edge_graph(vertices: np.ndarray, faces: np.ndarray) -> sparse.csr_matrix:
    edges = np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]])
    lengths = np.linalg.norm(vertices[edges[:, 0]] - vertices[edges[:, 1]], axis=1)
    keep = lengths > 0  # collapsed accessory slots: zero-length edges carry no surface
    n = len(vertices)
    graph = sparse.coo_matrix((lengths[keep], (edges[keep, 0], edges[keep, 1])), shape=(n, n)).tocsr()
    return graph.maximum(graph.T)


def surface_weights(vertices: np.ndarray, faces: np.ndarray, keypoint_faces: np.ndarray, keypoints: np.ndarray,
                    sigma: np.ndarray) -> sparse.csr_matrix:  # fmt: skip
    """(V, K) sparse Gaussian weights of surface distance from each keypoint to each vertex.

    A keypoint's distance to a vertex is the straight distance to the nearest corner of its
    triangle plus the shortest edge path from that corner. sigma: (K,) blend radii in metres.
    """
    sigma = np.broadcast_to(np.asarray(sigma, dtype=np.float64), (len(keypoints),))
    if not (sigma > 0).all():
        raise ValueError("keypoint blend radii must be positive")
    corners = faces[keypoint_faces]  # (K, 3)
    corner_gap = np.linalg.norm(vertices[corners] - keypoints[:, None, :], axis=2)
    nearest = corners[np.arange(len(corners)), np.argmin(corner_gap, axis=1)]
    start = corner_gap.min(axis=1)
    limit = CUTOFF * sigma
    paths = dijkstra(_edge_graph(vertices, faces), directed=False, indices=nearest, limit=float(limit.max()))  # (K, V)
    distance = paths + start[:, None]
    k_idx, v_idx = np.nonzero(distance <= limit[:, None])
    weights = np.exp(-(distance[k_idx, v_idx] ** 2) / (2.0 * sigma[k_idx] ** 2))
    return sparse.csr_matrix((weights, (v_idx, k_idx)), shape=(len(vertices), len(keypoints)))


def displace(vertices: np.ndarray, weights: sparse.csr_matrix, displacements: np.ndarray) -> np.ndarray:
    """Vertices moved by the blended keypoint displacements (see the module docstring)."""
    total = np.asarray(weights.sum(axis=1)).ravel()
    offsets = (weights @ displacements) / (total + FLOOR)[:, None]
    return vertices + offsets
