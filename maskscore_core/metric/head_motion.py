"""The head's own rigid motion between two meshes, net of facial actions and the jaw and eyes.

Why not a rigid fit on the hair and ears alone: ANNY's facial actions move those vertices too,
almost rigidly (docs/metric.md, "Head frame", has the sizes), so such a fit reads a mouth
edit as a head motion the size of a real small turn.
The metric would then re-render every candidate of a mouth edit "aligned", for nothing. The
reference mesh holds the skull still for the states it makes (`reference_mesh`, whose fields
D_k below are), but a mesh from elsewhere (a .glb from another ANNY pipeline) may carry the
pull, and a face decoded from keypoints only approximates the fields.

What is fitted instead: on every vertex the head carries (head skinning weight 1; minus the
edited part's own vertices when no facial action drives it: hair and ears), the displacement
from frame A to the other mesh is modelled as

    rigid head motion (rotation about the head's centre + translation, 6 unknowns)
    + sum over the 52 facial actions of a_k * D_k        (D_k: action k's displacement field)
    + small rotations of the Jaw, LeftEye and RightEye bones (3 unknowns each, skinning-weighted)

solved in the least-squares sense; the rigid part is the head's motion. D_k and the bone pivots
are taken once from ANNY's reference subject and turned into frame A's head orientation. The
model is linear (small motions: frame pairs turn the head by ~1 degree), so the solve is refined
by a few Gauss-Newton steps, each a product with a pseudo-inverse computed once per frame A
(a step larger than the last ends the refinement: a mesh far from the model does not run off).
Large jaw-bone turns are where the linear model is weakest (ANNY's own jaw is driven by the
jawOpen action; only fits that free the Jaw bone turn it). docs/metric.md, "Head frame", has
the accuracy measured on ANNY.
"""

from __future__ import annotations

import functools
import math

import attrs
import numpy as np

from maskscore_core.body.anny_model import HEAD_CHILD_BONES
from maskscore_core.body import parts
from maskscore_core.metric.render import vertex_normals
from maskscore_core.plugin.records import BodyState, FACIAL_ACTIONS

# A vertex counts as carried by the head when its head skinning weight is at least this.
CARRIED = 0.999
GAUSS_NEWTON_STEPS = 4
HEAD_RADIUS_M = 0.1  # turns a step's rotation into a displacement, to compare steps
RANK_CUTOFF = 1e-12  # relative eigenvalue of the normal matrix (1e-6 in singular values)
_CONVERGED_RAD = 1e-9
_CONVERGED_M = 1e-10


class HeadMotionError(ValueError):
    """Meshes whose head motion cannot be fitted (wrong vertex count, nothing to fit on)."""


@attrs.frozen
class _Model:
    """The reference subject's displacement fields, on the ANNY vertices."""

    head_ids: np.ndarray  # (H,) vertices carried by the head (BodyModel.head_weights >= CARRIED)
    rest: np.ndarray  # (V, 3) reference subject, neutral
    actions: np.ndarray  # (52, V, 3) displacement of each facial action at 1.0
    bone_weights: np.ndarray  # (3, V) skinning weight of each head child bone
    bone_pivots: np.ndarray  # (3, 3) their world positions on the reference subject


@functools.cache
def _model() -> _Model:
    from maskscore_core.body.reference_mesh import get_reference_mesh

    mesh = get_reference_mesh()
    body = mesh.body
    # The fields of the meshes MaskScore renders: facial actions with the skull held still.
    out = mesh.anny_posed([BodyState()] + [BodyState(expression=np.eye(FACIAL_ACTIONS)[k]) for k in range(FACIAL_ACTIONS)])
    rest = out["vertices"][0]
    weights, bones = body.skinning()
    per_bone = {name: (weights * (bones == body.bone_index(name))).sum(axis=1) for name in HEAD_CHILD_BONES}
    return _Model(
        head_ids=np.flatnonzero(body.head_weights >= CARRIED),
        rest=rest,
        actions=out["vertices"][1:] - rest,
        bone_weights=np.stack([per_bone[name] for name in HEAD_CHILD_BONES]),
        bone_pivots=np.stack([out["bone_poses"][0][body.bone_index(name)][:3, 3] for name in HEAD_CHILD_BONES]),
    )


def rotation_matrix(rotvec: np.ndarray) -> np.ndarray:
    """Rodrigues' formula for one axis-angle vector."""
    angle = float(np.linalg.norm(rotvec))
    if angle < 1e-15:
        return np.eye(3)
    k = rotvec / angle
    cross = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + np.sin(angle) * cross + (1.0 - np.cos(angle)) * (cross @ cross)


def _cross_columns(points: np.ndarray, pivot: np.ndarray, weights: np.ndarray | None = None) -> list[np.ndarray]:
    """Displacements of `points` under a small rotation about each axis through `pivot`."""
    columns = []
    for axis in np.eye(3):
        column = np.cross(axis, points - pivot)
        columns.append(column if weights is None else weights[:, None] * column)
    return columns


@attrs.frozen(eq=False)
class HeadFrame:
    """Frame A's head, ready to measure other meshes' head motion against (built once per row)."""

    ids: np.ndarray  # vertices fitted on
    points: np.ndarray  # (n, 3) frame A's vertices there
    centre: np.ndarray  # (3,) the rotation centre: their mean
    rigid_solver: np.ndarray  # (6, 3n): rows of the pseudo-inverse giving the rigid unknowns


def head_frame(vertices_a: np.ndarray, part: str | None = None) -> HeadFrame:
    """Prepare frame A (its ANNY vertices first, accessory vertices after are ignored); the
    edited `part`'s own vertices are left out of the fit, since the edit may reshape them."""
    from maskscore_core.body.reference_mesh import rigid_fit

    model = _model()
    count = len(model.rest)
    vertices_a = np.asarray(vertices_a, dtype=np.float64)
    if vertices_a.ndim != 2 or vertices_a.shape[0] < count or vertices_a.shape[1] != 3:
        raise HeadMotionError(f"frame A has vertices of shape {vertices_a.shape}; expected at least ({count}, 3)")
    ids = model.head_ids
    if part is not None and not parts.part_actions(part):
        # A part no facial action drives (hair and ears, which edits rescale; the neck) may be
        # reshaped in ways the fields do not model: fit on the rest of the head. Action-driven
        # parts stay in: their motion is modelled, and without them (the face, say) the rest
        # of the head cannot tell an action's slight pull on the scalp from a head motion.
        ids = np.setdiff1d(ids, parts.part_vertex_ids(part)[parts.part_vertex_ids(part) < count])
    if len(ids) < 100:
        raise HeadMotionError(f"only {len(ids)} head vertices are left outside the part {part!r}")
    points = vertices_a[ids]
    centre = points.mean(axis=0)
    # Frame A's head orientation relative to the reference subject turns the fields with it.
    turn = rigid_fit(model.rest[model.head_ids], vertices_a[model.head_ids])[0]
    ref_centre = model.rest[model.head_ids].mean(axis=0)
    head_centre = vertices_a[model.head_ids].mean(axis=0)
    columns = _cross_columns(points, centre) + [np.broadcast_to(axis, points.shape) for axis in np.eye(3)]
    columns += [field[ids] @ turn.T for field in model.actions]
    for weights, pivot in zip(model.bone_weights, model.bone_pivots):
        columns += _cross_columns(points, (pivot - ref_centre) @ turn.T + head_centre, weights[ids])
    matrix = np.stack([np.ascontiguousarray(c).ravel() for c in columns], axis=1)
    norms = np.linalg.norm(matrix, axis=0)
    keep = np.flatnonzero((norms > 1e-9) | (np.arange(matrix.shape[1]) < 6))  # fields that reach these vertices
    # Rows of the pseudo-inverse for the 6 rigid unknowns, through the (small) normal matrix:
    # an SVD of the tall matrix costs ~100x more. Directions the fields cannot tell apart
    # (eigenvalues below RANK_CUTOFF of the largest) are dropped, as a pseudo-inverse does.
    scaled = matrix[:, keep] / norms[keep]
    values, vectors = np.linalg.eigh(scaled.T @ scaled)
    kept = values > RANK_CUTOFF * values.max()
    inverse = (vectors[:, kept] / values[kept]) @ vectors[:, kept].T
    solver = (inverse[:6] @ scaled.T) / norms[:6, None]
    return HeadFrame(ids=ids, points=points, centre=centre, rigid_solver=solver)


def head_motion(frame: HeadFrame, vertices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(R, t) with `vertices`' head ~= R (A's head - centre) + centre + t, net of facial actions
    and jaw and eye rotations."""
    target = np.asarray(vertices, dtype=np.float64)[frame.ids]
    rotation, translation = np.eye(3), np.zeros(3)
    previous = np.inf
    for _step in range(GAUSS_NEWTON_STEPS):
        # The residual is taken in frame A's head frame, where the action fields were turned to.
        # (target - centre - t) R + centre, exactly `target` when nothing moved (see align_to_a).
        back = target + ((target - frame.centre) @ (rotation - np.eye(3)) - translation @ rotation)
        step = frame.rigid_solver @ (back - frame.points).ravel()
        size = float(np.linalg.norm(step[:3]) * HEAD_RADIUS_M + np.linalg.norm(step[3:]))
        if size > previous:
            break  # steps that grow do not converge (a mesh far outside the model): keep the last estimate
        previous = size
        translation = translation + rotation @ step[3:]
        rotation = rotation @ rotation_matrix(step[:3])
        if np.linalg.norm(step[:3]) < _CONVERGED_RAD and np.linalg.norm(step[3:]) < _CONVERGED_M:
            break
    return rotation, translation


@attrs.frozen(eq=False)
class HeadMove:
    """Where a mesh's head stands against frame A's: the displacement (metres) of frame A's head
    points under the rigid motion found. `weights` say how much each point counts (a skull point
    far from a mesh of its own topology counts less); None: all alike."""

    shift: np.ndarray  # (n, 3)
    weights: np.ndarray | None = None

    @property
    def size(self) -> float:
        """RMS displacement of the points (weighted): how far the head moved."""
        return _rms(self.shift, self.weights)


def _rms(shift: np.ndarray, weights: np.ndarray | None) -> float:
    squared = (shift**2).sum(axis=1)
    if weights is None:
        return float(np.sqrt(squared.mean()))
    return float(np.sqrt((weights * squared).sum() / weights.sum()))


def rigid_shift(points: np.ndarray, centre: np.ndarray, rotation: np.ndarray, translation: np.ndarray) -> np.ndarray:
    """Displacement of `points` under q -> R (q - centre) + centre + t (exactly 0 when nothing moved)."""
    return (points - centre) @ (rotation - np.eye(3)).T + translation


def beyond(move: HeadMove, allowed: HeadMove | None) -> float:
    """How far a candidate's head move lies from the way frame A's head takes to frame B's: the
    RMS distance (weighted as the candidate's points) from its shift to the nearest s x B's shift,
    0 <= s <= 1. Doing nothing, B's own move or part of it cost 0; a head moved another way (a
    wrong part's turn where frame B's head moved too) costs what it moved off that way; without a
    move of frame B's, the candidate's own size. Continuous in the candidate (s is the projection
    onto B's shift, clipped)."""
    if allowed is None:
        return move.size
    if allowed.shift.shape != move.shift.shape:
        raise HeadMotionError(f"head moves on {len(move.shift)} and {len(allowed.shift)} points cannot be compared")
    weights = np.ones(len(move.shift)) if move.weights is None else move.weights
    along = float((weights * (move.shift * allowed.shift).sum(axis=1)).sum())
    length = float((weights * (allowed.shift**2).sum(axis=1)).sum())
    fraction = min(1.0, max(0.0, along / length)) if length > 0.0 else 0.0
    return _rms(move.shift - fraction * allowed.shift, move.weights)


def reading_error(exact_a: np.ndarray, part: str | None, pairs) -> float:
    """How far a reading (pixels through a detector and a fit) puts a reference's head from where
    it is: for each (read move, exact vertices) of one reference (frame B, the halfway mesh), its
    head's move as read, measured against the read frame A (`align_and_measure`), less its exact
    move against the exact frame A `exact_a`, RMS over the head's points; the largest. 0 where
    every reading is exact."""
    exact_frame = head_frame(exact_a, part)
    error = 0.0
    for read_move, exact in pairs:
        exact_move = align_and_measure(exact_frame, exact)[1]
        error = max(error, _rms(read_move.shift - exact_move.shift, None))
    return error


def past_reading_error(distance: float, error: float) -> float:
    """A head move `distance` as far as it exceeds a reading `error`, smoothly:
    sqrt(distance^2 + error^2) - error, about distance^2 / (2 error) below the error and
    distance - error above it; the distance itself when the reading is exact (error 0). A move
    the reading cannot tell from its own error costs little, a larger one what it exceeds it by,
    and the cost is continuous and increasing in the distance."""
    if error == 0.0:
        return distance
    return distance * distance / (math.hypot(distance, error) + error)  # the same, without cancelling


def align_to_a(frame: HeadFrame, vertices: np.ndarray) -> np.ndarray:
    """All of `vertices` moved rigidly so that their head sits where frame A's head is."""
    return align_and_measure(frame, vertices)[0]


def align_and_measure(frame: HeadFrame, vertices: np.ndarray) -> tuple[np.ndarray, HeadMove]:
    """`align_to_a`, and the head's move that the alignment took back (`HeadMove` on frame A's
    fitted head points)."""
    rotation, translation = head_motion(frame, vertices)
    vertices = np.asarray(vertices, dtype=np.float64)
    # (v - centre - t) R + centre, written so that no motion leaves every vertex bit for bit as it is.
    aligned = vertices + ((vertices - frame.centre) @ (rotation - np.eye(3)) - translation @ rotation)
    return aligned, HeadMove(shift=rigid_shift(frame.points, frame.centre, rotation, translation))


# -- meshes of their own topology ---------------------------------------------------------------
# A mesh from an image-to-3D model has no ANNY vertices to fit the model above on. Its head's
# motion is found on its surface instead: the rigid motion that lays frame A's skull (hair region
# and ears, which the reference mesh holds still under facial actions) onto the mesh's surface,
# point-to-plane to the mesh's nearest vertex (ICP). A skull point far from the mesh (a region
# the mesh lacks) counts less, smoothly (SKULL_REACH_M), so nothing switches on or off. The same
# triangles, or a finer triangulation holding the same vertices, give no motion at all.
SKULL_REACH_M = 0.01
ICP_STEPS = 8


@attrs.frozen(eq=False)
class SkullSurface:
    """Frame A's skull vertices to lay onto other surfaces."""

    points: np.ndarray  # (S, 3)
    centre: np.ndarray  # (3,)


def skull_surface(vertices_a: np.ndarray, part: str | None = None) -> SkullSurface:
    """Frame A's skull vertices (the edited part's own left out, as `head_frame` does for parts
    no facial action drives)."""
    from maskscore_core.body.reference_mesh import _skull_ids

    ids = _skull_ids()
    if part is not None and not parts.part_actions(part):
        ids = np.setdiff1d(ids, parts.part_vertex_ids(part))
    if len(ids) < 100:
        raise HeadMotionError(f"only {len(ids)} skull vertices are left outside the part {part!r}")
    points = np.asarray(vertices_a, dtype=np.float64)[ids]
    return SkullSurface(points=points, centre=points.mean(axis=0))


def surface_head_motion(skull: SkullSurface, vertices: np.ndarray, faces: np.ndarray) -> tuple[np.ndarray, np.ndarray, HeadMove]:
    """(R, t, move): frame A's skull moved by `q -> R (q - centre) + centre + t` lies on the
    mesh's surface; `move` is that displacement of the skull's points, each weighted by how near
    the surface it lies (its size: weighted RMS, metres)."""
    from scipy.spatial import cKDTree

    points = np.asarray(vertices, dtype=np.float64)
    normals = vertex_normals(points, np.asarray(faces, dtype=np.int64))
    tree = cKDTree(points)
    rotation, translation = np.eye(3), np.zeros(3)
    weights = np.zeros(len(skull.points))
    for _step in range(ICP_STEPS):
        # q + ((q - c) (R - I)^T + t): exactly q while nothing has moved
        moved = skull.points + ((skull.points - skull.centre) @ (rotation - np.eye(3)).T + translation)
        distance, nearest = tree.query(moved)
        weights = 1.0 / (1.0 + (distance / SKULL_REACH_M) ** 2)
        n = normals[nearest]
        residual = np.einsum("ij,ij->i", moved - points[nearest], n)
        if not np.abs(residual).max() > 0:
            break  # the skull lies on the mesh as it is
        # Linearised step: d(residual) = n . (w x (q - c) + dt).
        jacobian = np.concatenate([np.cross(moved - skull.centre, n), n], axis=1)
        weighted = jacobian * weights[:, None]
        step = np.linalg.lstsq(weighted.T @ jacobian, -weighted.T @ residual, rcond=None)[0]
        turn = rotation_matrix(step[:3])
        rotation, translation = turn @ rotation, translation @ turn.T + step[3:]
        if np.linalg.norm(step[:3]) < _CONVERGED_RAD and np.linalg.norm(step[3:]) < _CONVERGED_M:
            break
    return rotation, translation, HeadMove(shift=rigid_shift(skull.points, skull.centre, rotation, translation), weights=weights)


def align_surface_to_a(skull: SkullSurface, vertices: np.ndarray, faces: np.ndarray) -> tuple[np.ndarray, HeadMove]:
    """The mesh moved rigidly so that its head lies where frame A's is, and its head's move
    (`surface_head_motion`); unmoved, bit for bit, when it had not."""
    motion = surface_head_motion(skull, vertices, faces)
    return undo_surface_motion(skull, motion, vertices), motion[2]


def undo_surface_motion(skull: SkullSurface, motion: tuple, points: np.ndarray) -> np.ndarray:
    """Points moved by the inverse of a `surface_head_motion` (R, t, move): what
    `align_surface_to_a` does to the mesh it was measured on, for other points carried with it
    (the surface a mesh was fitted to); unmoved, bit for bit, when nothing moved."""
    rotation, translation, _move = motion
    points = np.asarray(points, dtype=np.float64)
    if np.array_equal(rotation, np.eye(3)) and not translation.any():
        return points
    return (points - skull.centre - translation) @ rotation + skull.centre
