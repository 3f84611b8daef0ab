"""The keypoints modality's representation: xyz of the fixed surface keypoint set, (K, 3).

Body keypoints drive a vertex displacement solved over the surface (`deform`); accessory
keypoints pin the vertex they sit on (see `keypoint_set`). The table column holds the xyz flattened (docs/design.md: "surface point coordinates"); which triangle
and barycentrics each point belongs to is fixed by `keypoint_set` (asset meta in memory,
`keypoint_set.json` next to the assets on disk). Decoding applies a candidate's keypoints to
frame A: each keypoint's displacement from its place on frame A's mesh moves the mesh's
surface around it (`deform`: the smoothest vertex displacement whose barycentric blends meet
the keypoints'), and the metric renders the displaced mesh.
"""

from __future__ import annotations

import collections
import hashlib

import numpy as np

from maskscore_core import vocab
from maskscore_core.plugin.records import Asset, Decoded, EditInstance, Target
from maskscore_core.body.reference_mesh import get_reference_mesh

from . import deform
from .keypoint_set import get_keypoint_set

MODALITY = "keypoints"
_SOLVE_CACHE: collections.OrderedDict = collections.OrderedDict()
_SOLVE_CACHE_SIZE = 4


class KeypointError(ValueError):
    """Keypoints of the wrong count, holding NaN/infinite values, or not numbers at all."""


def check(values, what: str = "keypoints") -> np.ndarray:
    """(K, 3) float64 keypoints from a flat list of K*3 floats or a (K, 3) array."""
    count = len(get_keypoint_set())
    try:
        points = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise KeypointError(f"{what}: not a list of numbers ({err})") from err
    if points.size != count * 3 or points.ndim not in (1, 2) or (points.ndim == 2 and points.shape[1] != 3):
        raise KeypointError(f"{what}: expected {count} keypoints x 3 coordinates ({count * 3} floats), got shape {points.shape}")
    points = points.reshape(count, 3)
    bad = ~np.isfinite(points).all(axis=1)
    if bad.any():
        raise KeypointError(f"{what}: {int(bad.sum())} keypoints hold NaN or infinite coordinates (first: {int(np.argmax(bad))})")
    return points


def _asset(points: np.ndarray, **meta) -> Asset:
    keypoints = get_keypoint_set()
    return Asset(modality=MODALITY, data=points, meta={"faces": keypoints.faces, "barycentric": keypoints.barycentric, **meta})


def encode(target: Target) -> Asset:
    """Where the keypoint set sits on the target's mesh."""
    vertices = get_reference_mesh().vertices([target.state])[0]
    return _asset(get_keypoint_set().positions(vertices), label=target.label)


def from_column(values, what: str = "keypoints column value") -> Asset:
    return _asset(check(values, what=what))


def _solve(vertices: np.ndarray) -> deform.SurfaceSolve:
    """The factorised surface solve of frame A's body, cached: every candidate of an edit shares
    frame A."""
    key = hashlib.sha256(np.ascontiguousarray(vertices).tobytes()).hexdigest()
    if key not in _SOLVE_CACHE:
        reference = get_reference_mesh()
        keypoints = get_keypoint_set()
        body = ~keypoints.pinned
        _SOLVE_CACHE[key] = deform.SurfaceSolve(
            vertices[: reference.anny_vertex_count], reference.faces[: reference.anny_face_count],
            keypoints.faces[body], keypoints.barycentric[body],
        )  # fmt: skip
        while len(_SOLVE_CACHE) > _SOLVE_CACHE_SIZE:
            _SOLVE_CACHE.popitem(last=False)
    return _SOLVE_CACHE[key]


def decode(asset: Asset, instance: EditInstance) -> Decoded:
    """Frame A's mesh with its body vertices displaced where the candidate moved the body
    keypoints (`deform`), and its accessory vertices where the candidate put their pinning
    keypoints."""
    points = check(asset.data, what=f"keypoints {asset.path or asset.meta.get('label', '')}".strip())
    keypoints = get_keypoint_set()
    vertices_a = get_reference_mesh().vertices([instance.a.state])[0]
    points_a = keypoints.positions(vertices_a)
    body = ~keypoints.pinned
    moved = vertices_a.copy()
    count = get_reference_mesh().anny_vertex_count
    moved[:count] = _solve(vertices_a).displace((points - points_a)[body])
    moved[keypoints.vertex[keypoints.pinned]] = points[keypoints.pinned]
    return Decoded(vertices=moved)


def mask(part: str) -> np.ndarray:
    """Indices of the keypoints on `part`; a clear error for parts that carry none."""
    from maskscore_core.body import parts

    vocab.check_part(part)
    ids = get_keypoint_set().ids(part)
    if len(ids) == 0:
        raise parts.PartError(
            f"part {part!r} has no keypoints; the keypoint set covers the active face parts: {', '.join(vocab.ACTIVE_FACE_PARTS)}"
        )
    return ids
