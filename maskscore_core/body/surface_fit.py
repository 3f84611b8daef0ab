"""ANNY fitted to a mesh of its own topology: a model's output decoded onto the reference mesh.

Why: an image-to-3D model (Pixal3D) returns a surface with its own vertices and triangles.
Rendering that surface as it is (`metric.foreign_mesh`) is exact for a fine mesh, but a coarse
one (a decimated mesh, large facets, thin parts collapsed) differs from ANNY's surface over the
whole head, and the metric reads those differences as edits. Seed 000 decodes every candidate
to the ANNY mesh; for a mesh that means finding the ANNY state whose surface it is. Starting
from frame A's state, the fit frees what an edit of the head changes (the 52 facial actions,
the rotations of the neck and head bones, the phenotype, each pulled gently towards frame A's)
and lays the head's vertices onto the mesh's surface, point-to-plane (ICP): the nearest
surface sample of each vertex, re-found every round, weighted smoothly by its distance
(Cauchy) and by how well the normals agree, with the reach shrinking from a centimetre-scale
jaw motion down to millimetres; and, in the last stage, the mesh's own vertices onto the head's
triangles (`_ReversePairs`), since a coarse mesh's vertices lie on the surface its facets cut.

The head is modelled linearly around frame A (`LinearHead`): the reference mesh's vertices at
frame A's state, each facial action's and phenotype label's displacement of them, and world
rotations of the neck and head bones about their joints, skinning-weighted down the chain
(`trials.landmark_fit.LinearFace` is the same model for landmarks). Facial actions are
blendshapes, so they are linear; the bones are composed exactly. The fitted state is then
evaluated by ANNY itself (`reference_mesh.vertices`), so the candidate the metric scores is an
exact reference mesh. What the fit cannot explain (a surface ANNY cannot take, a part missing)
is measured by the metric in render space and counts against consistency (`render_compare`).
"""

from __future__ import annotations

import hashlib
import json

import attrs
import numpy as np
import scipy.optimize

from maskscore_core import threads
from maskscore_core.kept import Kept
from maskscore_core.body import bounded_gauss_newton
from maskscore_core.body.anny_model import chain_weights, get_body_model
from maskscore_core.metric.head_motion import rotation_matrix
from maskscore_core.metric.render import vertex_normals
from maskscore_core.plugin.records import FACIAL_ACTIONS, BodyState, converter

FIT_BONES: tuple[str, ...] = ("Neck1", "Neck2", "Head")
# A vertex is fitted when the fitted bones carry at least this much of it (the head and neck).
CARRIED = 0.5
PHENOTYPE_STEP = 0.05
MM = 1000.0  # residuals in millimetres: the priors and the Cauchy reach read in familiar units
HEADS_KEPT = 8
FITS_KEPT = 16
# The surface is sampled near the head only: triangles longer than SPLIT_EDGE_M (a backdrop, a
# scrambled mesh) are cut to the region first, and a region needing more than MAX_PIECES pieces
# or MAX_SAMPLES samples (over twenty times ANNY's head at the default spacing) is refused
# rather than exhausting memory.
SPLIT_EDGE_M = 0.25  # about a head's size; no remeshing of a body tried has triangles this long
MAX_PIECES = 2_000_000
MAX_SAMPLES = 8_000_000  # about 2.5 million fine triangles near the head (3 samples each)


class SurfaceFitError(ValueError):
    """A surface ANNY cannot be fitted to (none near the head, or far more than a head's)."""


@attrs.frozen
class SurfaceFitConfig:
    """How the fit runs. reach_m: the Cauchy scale of a vertex's distance to the surface, per
    ICP round from the first value to the last (geometric steps); steps: L-BFGS-B iterations per
    round; refine_steps: the most evaluations of the last stage, whose pairs are re-found at every
    step and which runs until a step lowers its cost by less than refine_ftol (relative): stopped
    partway, its result would depend on the path it took, which rounding alone changes;
    spacing_m: the surface is sampled at least this densely; reverse_weight: how much the last
    stage's reverse pairs (the mesh's vertices on ANNY's head triangles) count against the
    forward ones, in all; the priors pull actions,
    phenotype and bone rotations towards frame A's (per unit squared, against the mean squared
    point-to-plane distance in square millimetres)."""

    rounds: int = 6
    steps: int = 30
    refine_steps: int = 200
    refine_ftol: float = 1e-6
    reach_m: tuple[float, float] = (0.02, 0.002)
    spacing_m: float = 0.0015
    action_prior: float = 1e-4
    phenotype_prior: float = 1e-1
    reverse_weight: float = 1.0
    rotation_prior: float = 1e-4


@attrs.frozen(eq=False)
class SurfaceFit:
    """The fitted state, its reference-mesh vertices, and how closely its head lies on the
    surface (weighted RMS point-to-plane distance of the last round, metres)."""

    state: BodyState
    vertices: np.ndarray
    rms_m: float


@attrs.frozen(eq=False)
class LinearHead:
    """The head's vertices around frame A's state, as a function of the unknowns
    x = (52 facial actions, phenotype label offsets, world rotation vectors of FIT_BONES):

        rest(x) = base + sum_s (x_s - x0_s) shapes[s]          (s: the actions and phenotype labels)
        posed   = (1 - sum_b w_b) rest + sum_b w_b (T_1 ... T_b)(rest)            (b in FIT_BONES)

    T_b turns by a world rotation about bone b's joint (frame A's, moved linearly by the shapes);
    w_b is the vertex's skinning weight carried by bone b (`anny_model.chain_weights`)."""

    ids: np.ndarray
    base: np.ndarray  # (K, 3)
    origin: np.ndarray  # (S + 3 * len(FIT_BONES),) frame A's unknowns
    shapes: np.ndarray  # (S, 3K) displacement per unit of each action and phenotype label (flat, contiguous)
    weights: np.ndarray  # (K, 3) on FIT_BONES
    joints: np.ndarray  # (3, 3) their positions in frame A
    joint_shapes: np.ndarray  # (S, 3, 3) how each action and phenotype label moves them
    parent_rotations: np.ndarray  # (3, 3, 3) world rotation of each fitted bone's parent in frame A

    def _chain(self, shape: np.ndarray, rotvecs: np.ndarray):
        """(R, t, dt/dshape) of T_1 ... T_b for each fitted bone b, about the joints where the
        shape puts them (a phenotype moves the joints; a turn about the wrong joint misplaces
        the head by millimetres)."""
        joints = self.joints + np.einsum("s,sbd->bd", shape, self.joint_shapes)
        rotation, shift, moved, chain = np.eye(3), np.zeros(3), np.zeros((3, len(shape))), []
        for b in range(len(FIT_BONES)):
            local = rotation_matrix(rotvecs[b])
            shift = rotation @ (joints[b] - local @ joints[b]) + shift
            moved = rotation @ (np.eye(3) - local) @ self.joint_shapes[:, b].T + moved
            rotation = rotation @ local
            chain.append((rotation, shift, moved))
        return chain

    def _split(self, x: np.ndarray):
        count = len(self.shapes)
        return x[:count] - self.origin[:count], x[count:].reshape(len(FIT_BONES), 3)

    def _rest(self, shape: np.ndarray) -> np.ndarray:
        return self.base + (shape @ self.shapes).reshape(self.base.shape)

    def _pose(self, rest: np.ndarray, chain) -> np.ndarray:
        posed = rest * (1.0 - self.weights.sum(axis=1, keepdims=True))
        for b, (rotation, shift, _moved) in enumerate(chain):
            posed = posed + self.weights[:, b : b + 1] * (rest @ rotation.T + shift)
        return posed

    def _turned(self, shape, rotvecs, rest, k: int, step: float) -> np.ndarray:
        offset = np.zeros(rotvecs.size)
        offset[k] = step
        return self._pose(rest, self._chain(shape, rotvecs + offset.reshape(rotvecs.shape)))

    def points(self, x: np.ndarray) -> np.ndarray:
        """(K, 3) posed vertices at x."""
        shape, rotvecs = self._split(x)
        return self._pose(self._rest(shape), self._chain(shape, rotvecs))

    def gradient(self, x: np.ndarray, pull: np.ndarray, step: float = 1e-6) -> np.ndarray:
        """(n,) J^T pull for a (K, 3) pull on the points: `jacobian(x)` contracted without
        forming it (the shapes' part is one product; forward differences for the rotations)."""
        shape, rotvecs = self._split(x)
        rest = self._rest(shape)
        chain = self._chain(shape, rotvecs)
        posed = self._pose(rest, chain)
        back = pull * (1.0 - self.weights.sum(axis=1, keepdims=True))
        joints = np.zeros(len(shape))
        for b, (rotation, _shift, moved) in enumerate(chain):
            back = back + self.weights[:, b : b + 1] * (pull @ rotation)
            joints = joints + (self.weights[:, b] @ pull) @ moved
        turns = [float(((self._turned(shape, rotvecs, rest, k, step) - posed) * pull).sum() / step) for k in range(rotvecs.size)]
        return np.concatenate([self.shapes @ back.ravel() + joints, turns])

    def jacobian(self, x: np.ndarray, step: float = 1e-6) -> np.ndarray:
        """(K, 3, n) d points / d x: exact for the shapes (the pose is linear in the rest
        vertices and the joints), central differences for the rotations."""
        shape, rotvecs = self._split(x)
        rest = self._rest(shape)
        chain = self._chain(shape, rotvecs)
        shapes = self.shapes.reshape(len(shape), -1, 3)
        moved = shapes * (1.0 - self.weights.sum(axis=1))[None, :, None]
        for b, (rotation, _shift, joints) in enumerate(chain):
            moved = moved + self.weights[None, :, b : b + 1] * (shapes @ rotation.T + joints.T[:, None, :])
        columns = [moved.transpose(1, 2, 0)]
        for k in range(rotvecs.size):
            up, down = self._turned(shape, rotvecs, rest, k, step), self._turned(shape, rotvecs, rest, k, -step)
            columns.append(((up - down) / (2.0 * step))[:, :, None])
        return np.concatenate(columns, axis=2)


_heads = Kept(HEADS_KEPT)


def _state_key(state: BodyState) -> str:
    digest = hashlib.sha256()
    for array in (state.pose, state.translation, state.expression):
        digest.update(np.ascontiguousarray(array, dtype=np.float64).tobytes())
    digest.update(repr(sorted(state.phenotype.items())).encode())
    return digest.hexdigest()


def linear_head(state: BodyState) -> LinearHead:
    """The `LinearHead` of a state (one batch of ANNY evaluations; a few are kept)."""
    key = _state_key(state)
    kept = _heads.get(key)
    if kept is not None:
        return kept
    from maskscore_core.body.reference_mesh import get_reference_mesh

    body = get_body_model()
    weights = chain_weights(body, FIT_BONES)
    ids = np.flatnonzero(weights.sum(axis=1) >= CARRIED)
    phenotype = {name: float(state.phenotype.get(name, 0.5)) for name in body.phenotype_names}
    plain = attrs.evolve(state, phenotype=phenotype, accessories=(), part_scale={}, appearance=None)
    # Each action one unit away from frame A's value, inwards, so every state stays in [0, 1].
    signs = np.where(plain.expression <= 0.5, 1.0, -1.0)
    states = [plain] + [attrs.evolve(plain, expression=plain.expression + signs[a] * np.eye(FACIAL_ACTIONS)[a])
                        for a in range(FACIAL_ACTIONS)]  # fmt: skip
    steps = []
    for name in body.phenotype_names:  # central differences, kept inside [0, 1]
        low, high = max(0.0, phenotype[name] - PHENOTYPE_STEP), min(1.0, phenotype[name] + PHENOTYPE_STEP)
        steps.append(high - low)
        states += [attrs.evolve(plain, phenotype={**phenotype, name: low}), attrs.evolve(plain, phenotype={**phenotype, name: high})]
    posed = get_reference_mesh().anny_posed(states)
    points = posed["vertices"][:, ids]
    base = points[0]
    actions = (points[1 : 1 + FACIAL_ACTIONS] - base) * signs[:, None, None]
    pairs = points[1 + FACIAL_ACTIONS :].reshape(len(steps), 2, len(ids), 3)
    parents = list(body.torch_model.bone_parents)
    fitted = [body.bone_index(name) for name in FIT_BONES]
    joints = posed["bone_poses"][:, fitted][:, :, :3, 3]  # (states, 3, 3)
    joint_pairs = joints[1 + FACIAL_ACTIONS :].reshape(len(steps), 2, len(fitted), 3)
    joint_shapes = np.concatenate([(joints[1 : 1 + FACIAL_ACTIONS] - joints[0]) * signs[:, None, None],
                                   (joint_pairs[:, 1] - joint_pairs[:, 0]) / np.asarray(steps)[:, None, None]])  # fmt: skip
    head = LinearHead(
        ids=ids,
        base=base,
        origin=np.concatenate([plain.expression, np.zeros(len(steps) + 3 * len(FIT_BONES))]),
        shapes=np.ascontiguousarray(np.concatenate([actions, (pairs[:, 1] - pairs[:, 0]) / np.asarray(steps)[:, None, None]]).reshape(FACIAL_ACTIONS + len(steps), -1)),
        weights=weights[ids],
        joints=joints[0],
        joint_shapes=joint_shapes,
        parent_rotations=np.stack([_world_rotation(plain.pose, parents, parents[j]) for j in fitted]),
    )
    return _heads.put(key, head)


def _world_rotation(pose: np.ndarray, parents: list, bone: int) -> np.ndarray:
    """A bone's rotation in world axes: the product of its chain's local rotations, root first
    (SOMA rotations are in world axes at rest; anny's bone poses also hold each bone's rest
    orientation, so they are not this)."""
    rotation = np.eye(3)
    while bone is not None and bone >= 0:
        rotation = rotation_matrix(pose[bone]) @ rotation
        bone = parents[bone]
    return rotation


@attrs.frozen(eq=False)
class _Surface:
    points: np.ndarray  # (S, 3) samples
    normals: np.ndarray  # (S, 3) their triangle's unit normal
    tree: object  # scipy cKDTree of the samples


def _near(corners: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Which triangles' bounding boxes meet the box [low, high]."""
    return np.all((corners.max(axis=1) >= low) & (corners.min(axis=1) <= high), axis=1)


def _split_large(corners: np.ndarray, normals: np.ndarray, low: np.ndarray, high: np.ndarray):
    """Triangles longer than SPLIT_EDGE_M cut into four at their edge midpoints (normals
    interpolated alike) until none is, keeping only the pieces that meet the box: a triangle
    that spans far beyond the head (a backdrop, scrambled faces) is sampled only near it."""
    done_corners, done_normals = [], []
    while len(corners):
        longest = np.max(np.linalg.norm(corners - np.roll(corners, 1, axis=1), axis=2), axis=1)
        small = longest <= SPLIT_EDGE_M
        done_corners.append(corners[small])
        done_normals.append(normals[small])
        corners, normals = corners[~small], normals[~small]
        if 4 * len(corners) > MAX_PIECES:
            raise SurfaceFitError(f"the mesh has {len(corners):,} triangles near frame A's head longer than"
                                  f" {SPLIT_EDGE_M * 100:.0f} cm still to cut, more than a head's surface can hold"
                                  " (overlapping or scrambled faces?)")  # fmt: skip
        pieces = []
        for mesh_corners in (corners, normals):
            a, b, c = mesh_corners[:, 0], mesh_corners[:, 1], mesh_corners[:, 2]
            ab, bc, ca = (a + b) / 2, (b + c) / 2, (c + a) / 2
            pieces.append(np.concatenate([np.stack(t, axis=1) for t in ((a, ab, ca), (ab, b, bc), (ca, bc, c), (ab, bc, ca))]))
        keep = _near(pieces[0], low, high)
        corners, normals = pieces[0][keep], pieces[1][keep]
    return np.concatenate(done_corners), np.concatenate(done_normals)


def _surface(vertices: np.ndarray, faces: np.ndarray, near: np.ndarray, spacing: float,
             normals: np.ndarray | None = None) -> _Surface:
    """Samples of the triangles near the head (within 5 cm of `near`'s bounding box), on a
    barycentric grid fine enough that no sample is farther than `spacing` from the next, with
    the vertex normals interpolated across each triangle (Phong): a coarse mesh's facets then
    stand for the smooth surface they approximate, and a vertex's distance to the surface changes
    smoothly as it moves from one facet to the next. Large triangles are cut to the region first
    (`_split_large`); a surface that would take more than MAX_SAMPLES samples is an error.
    `normals`: the mesh's vertex normals, when the caller has them already."""
    from scipy.spatial import cKDTree

    corners = vertices[faces]
    low, high = near.min(axis=0) - 0.05, near.max(axis=0) + 0.05
    area = np.linalg.norm(np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]), axis=1)
    keep = _near(corners, low, high) & (area > 0)
    if not keep.any():
        raise SurfaceFitError("the mesh has no surface near frame A's head")
    normals = vertex_normals(vertices, faces) if normals is None else normals
    corners, corner_normals = _split_large(corners[keep], normals[faces[keep]], low, high)
    longest = np.max(np.linalg.norm(corners - np.roll(corners, 1, axis=1), axis=2), axis=1)
    divisions = np.maximum(1, np.ceil(longest / spacing).astype(np.int64))
    samples = int(np.sum((divisions + 1) * (divisions + 2) // 2))
    if samples > MAX_SAMPLES:
        raise SurfaceFitError(f"the mesh's {len(corners):,} triangles near frame A's head take {samples:,} samples at"
                              f" {spacing * 1000:.1f} mm, more than {MAX_SAMPLES:,} (overlapping or scrambled faces?)")  # fmt: skip
    points, point_normals = [], []
    for n in np.unique(divisions):
        group = divisions == n
        i, j = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
        inside = i + j <= n
        grid = np.stack([i[inside], j[inside]], axis=1) / n  # (G, 2) barycentric (b1, b2)
        bary = np.concatenate([1.0 - grid.sum(axis=1, keepdims=True), grid], axis=1)
        points.append(np.einsum("gc,fcd->fgd", bary, corners[group]).reshape(-1, 3))
        point_normals.append(np.einsum("gc,fcd->fgd", bary, corner_normals[group]).reshape(-1, 3))
    points, point_normals = np.concatenate(points), np.concatenate(point_normals)
    length = np.linalg.norm(point_normals, axis=1, keepdims=True)
    point_normals = np.where(length > 0, point_normals / np.where(length > 0, length, 1.0), 0.0)
    return _Surface(points, point_normals, cKDTree(points))


def surface_distances(points: np.ndarray, vertices: np.ndarray, faces: np.ndarray, spacing: float = 0.0003) -> np.ndarray:
    """(P,) unsigned point-to-plane distances (metres) of points to a mesh's surface as the fit
    sees it (`_surface`: samples `spacing` apart near the points, Phong normals). Why: how far a
    remeshing moves the surface, set against how far an edit moves it, is what a fit to the
    remeshed mesh can still tell apart (docs/metric.md, "Meshes of any topology")."""
    points = np.asarray(points, dtype=np.float64)
    surface = _surface(np.asarray(vertices, dtype=np.float64), np.asarray(faces, dtype=np.int64), points, spacing)
    _distance, nearest = surface.tree.query(points)
    return np.abs(np.einsum("kd,kd->k", points - surface.points[nearest], surface.normals[nearest]))


def _vertex_normals(head: LinearHead, start: np.ndarray) -> np.ndarray:
    from maskscore_core.body.reference_mesh import get_reference_mesh

    reference = get_reference_mesh()
    return vertex_normals(start[: reference.anny_vertex_count], reference.body.faces)[head.ids]


def fit_surface(vertices: np.ndarray, faces: np.ndarray, start: BodyState,
                config: SurfaceFitConfig | None = None) -> SurfaceFit:
    """ANNY fitted to the surface (module docstring), from `start` (frame A's state). The last
    FITS_KEPT fits are kept: a model editor's output is decoded when the editor checks that it
    decodes, again when it is scored, and again for a contact sheet, and a fit takes seconds."""
    config = config or SurfaceFitConfig()
    vertices, faces = np.asarray(vertices, dtype=np.float64), np.asarray(faces, dtype=np.int64)
    key = _fit_key(vertices, faces, start, config)
    kept = _fits.get(key)
    if kept is not None:
        return kept
    fit = _fit(vertices, faces, start, config)
    fit.vertices.flags.writeable = False  # shared by every caller of the same fit
    return _fits.put(key, fit)


_fits = Kept(FITS_KEPT)


def _fit_key(vertices: np.ndarray, faces: np.ndarray, start: BodyState, config: SurfaceFitConfig) -> str:
    digest = hashlib.sha256()
    for array in (vertices, faces):
        digest.update(repr(array.shape).encode())
        digest.update(np.ascontiguousarray(array).tobytes())
    digest.update(json.dumps(converter.unstructure(start), sort_keys=True).encode())
    digest.update(repr(config).encode())
    return digest.hexdigest()


def _fit(vertices: np.ndarray, faces: np.ndarray, start: BodyState, config: SurfaceFitConfig) -> SurfaceFit:
    from maskscore_core.body.reference_mesh import get_reference_mesh

    head = linear_head(start)
    body = get_body_model()
    model_normals = _vertex_normals(head, get_reference_mesh().vertices([start])[0])
    mesh_normals = vertex_normals(vertices, faces)
    surface = _surface(vertices, faces, head.base, config.spacing_m, mesh_normals)
    labels = len(body.phenotype_names)
    phenotype = np.array([float(start.phenotype.get(name, 0.5)) for name in body.phenotype_names])
    rotations = 3 * len(FIT_BONES)
    # Actions in [0, 1], phenotype labels in [0, 1] (as offsets from frame A's), rotations free.
    lower = np.concatenate([np.zeros(FACIAL_ACTIONS), -phenotype, np.full(rotations, -np.inf)])
    upper = np.concatenate([np.ones(FACIAL_ACTIONS), 1.0 - phenotype, np.full(rotations, np.inf)])
    priors = np.sqrt(len(head.ids) * np.concatenate([
        np.full(FACIAL_ACTIONS, config.action_prior), np.full(labels, config.phenotype_prior),
        np.full(rotations, config.rotation_prior),
    ]))  # fmt: skip

    points_at = _kept_for_last_x(head.points)

    @_kept_for_last_x
    def pairs(x: np.ndarray):
        """Each head vertex's nearest surface sample at x (its point and normal) and how much the
        pair counts: the cosine of their normals, squared, 0 where they face apart."""
        _distance, nearest = surface.tree.query(points_at(x))
        normals = surface.normals[nearest]
        weight = np.clip(np.einsum("kd,kd->k", model_normals, normals), 0.0, 1.0)
        if not weight.any():
            raise SurfaceFitError("no vertex of frame A's head faces the mesh's surface")
        return surface.points[nearest], normals, weight

    reverse = _ReversePairs.of(vertices, mesh_normals, head, config.reverse_weight)
    reverse_pairs = _kept_for_last_x(lambda x: reverse.found(points_at(x)))

    def residuals(x):
        """Point-to-plane distances (mm) to the pairs re-found at x, the mesh's vertices to the
        head's triangles, then the priors."""
        targets, normals, weight = pairs(x)
        points = points_at(x)
        plane = weight * np.einsum("kd,kd->k", points - targets, normals) * MM
        return np.concatenate([plane, reverse.residuals(points, reverse_pairs(x)), priors * (x - head.origin)])

    def jacobian(x):
        _targets, normals, weight = pairs(x)
        points_jacobian = head.jacobian(x)
        plane = (weight[:, None] * MM) * np.einsum("kdn,kd->kn", points_jacobian, normals)
        return np.concatenate([plane, reverse.jacobian(points_jacobian, reverse_pairs(x)), np.diag(priors)])

    start_x = np.clip(head.origin, lower, upper)

    def refine(x: np.ndarray) -> bounded_gauss_newton.BoundedFit:
        return bounded_gauss_newton.solve(residuals, jacobian, x, lower, upper, scale=config.reach_m[1] * MM,
                                          ftol=config.refine_ftol, max_evaluations=config.refine_steps)  # fmt: skip

    with threads.one_thread():
        # ICP rounds, the pairs held fixed in each, by gradient descent (L-BFGS-B): the large
        # motions (a jaw, a neck turn) move first, with a reach that shrinks. Cauchy: a vertex
        # far from the surface (a part the mesh lacks) counts less, smoothly.
        x = start_x
        for reach in np.geomspace(*config.reach_m, config.rounds) * MM:
            x = _descend(head, pairs(x), priors, x, reach, (lower, upper), config.steps)
        # Then the pairs re-found at every step, by damped Gauss-Newton whose steps hold the
        # bounds as constraints (`bounded_gauss_newton`: frame A's actions mostly sit on their
        # bound, 0, where a reflective trust region leaves them): what slides along the surface
        # (a brow raised, an eye turned) shows only in the surface's shape, which fixed pairs
        # barely follow. It starts twice, from the ICP's result and from frame A itself (a small
        # edit the ICP rounds blurred), and keeps the lower cost.
        found = min((refine(x), refine(start_x)), key=lambda result: result.cost)
        x = found.x
        _targets, _normals, weight = pairs(x)
        plane = residuals(x)[: len(head.ids)] / MM
        rms = float(np.sqrt((plane**2).sum() / (weight**2).sum()))
    state = _state_of(start, head, x)
    return SurfaceFit(state=state, vertices=get_reference_mesh().vertices([state])[0], rms_m=rms)


@attrs.frozen(eq=False)
class _ReversePairs:
    """The mesh's vertices near the head, each laid point-to-plane on the nearest of the head's
    triangles (the closest point of the three nearest by centre, re-found at every step).

    Why: a coarse mesh's facets are chords that lie inside the surface it approximates, while its
    vertices lie on it; pairs from ANNY's vertices to the facets read that as a thinner, other face
    (a fifth-decimated neutral head fitted 0.33 mm off), pairs from the mesh's vertices to ANNY's
    triangles do not (0.12 mm). Laid on triangles, not on ANNY's vertices' tangent planes, whose
    own error between vertices would move a subdivided mesh's exact fit by 0.1 mm. Triangles on
    the border of the fitted region are left out (a neck vertex beyond it would pull the border),
    and a pair counts by how well the normals agree."""

    points: np.ndarray  # (M, 3) the mesh's vertices near the head
    normals: np.ndarray  # (M, 3) their vertex normals
    triangles: np.ndarray  # (T, 3) the head's triangles, as indices into head.ids
    interior: np.ndarray  # (T,) bool: not on the region's border
    scale: float  # sqrt(weight * K / M): the reverse pairs weigh `weight` times the forward ones

    NEAREST = 3

    @classmethod
    def of(cls, vertices: np.ndarray, normals: np.ndarray, head: LinearHead, weight: float) -> "_ReversePairs":
        """From the mesh's vertices and their normals."""
        from maskscore_core.body.reference_mesh import get_reference_mesh

        reference = get_reference_mesh()
        inside = np.zeros(reference.anny_vertex_count, dtype=bool)
        inside[head.ids] = True
        ref_faces = reference.body.faces
        counted = inside[ref_faces].sum(axis=1)
        border = np.zeros_like(inside)
        border[ref_faces[(counted > 0) & (counted < 3)].ravel()] = True
        local = np.full(len(inside), -1, dtype=np.int64)
        local[head.ids] = np.arange(len(head.ids))
        triangles = ref_faces[counted == 3]
        low, high = head.base.min(axis=0) - 0.01, head.base.max(axis=0) + 0.01
        near = np.all((vertices >= low) & (vertices <= high), axis=1)
        count = int(near.sum())
        return cls(points=vertices[near], normals=normals[near], triangles=local[triangles],
                   interior=~border[triangles].any(axis=1),
                   scale=float(np.sqrt(weight * len(head.ids) / count)) if count and weight > 0 else 0.0)  # fmt: skip

    def found(self, head_points: np.ndarray):
        """(triangle, barycentric weights, unit normal) of each mesh vertex's closest point on
        the head's triangles posed as `head_points`."""
        from scipy.spatial import cKDTree

        if self.scale == 0.0:
            return None
        corners = head_points[self.triangles]
        _distance, candidates = cKDTree(corners.mean(axis=1)).query(self.points, k=self.NEAREST)

        def on(triangle):  # (triangle, barycentric weights, normal, distance)
            return (triangle, *_closest_on_triangles(self.points, corners[triangle]))

        best = on(candidates[:, 0])
        for column in range(1, self.NEAREST):
            found = on(candidates[:, column])
            closer = found[3] < best[3]
            best = tuple(np.where(closer.reshape(-1, *([1] * (new.ndim - 1))), new, old) for new, old in zip(found, best))
        return best[:3]

    def residuals(self, head_points: np.ndarray, found) -> np.ndarray:
        if found is None:
            return np.zeros(0)
        triangle, bary, normal = found
        closest = np.einsum("mc,mcd->md", bary, head_points[self.triangles[triangle]])
        return self._weights(found) * np.einsum("md,md->m", self.points - closest, normal) * MM

    def jacobian(self, points_jacobian: np.ndarray, found) -> np.ndarray:
        if found is None:
            return np.zeros((0, points_jacobian.shape[2]))
        triangle, bary, normal = found
        closest = np.einsum("mc,mcdn->mdn", bary, points_jacobian[self.triangles[triangle]])
        return -(self._weights(found) * MM)[:, None] * np.einsum("mdn,md->mn", closest, normal)

    def _weights(self, found) -> np.ndarray:
        triangle, _bary, normal = found
        agree = np.clip(np.einsum("md,md->m", self.normals, normal), 0.0, 1.0)
        return self.scale * self.interior[triangle] * agree


def _closest_on_triangles(points: np.ndarray, corners: np.ndarray):
    """(barycentric weights, unit normal, distance) of each point's projection on its triangle's
    plane, the weights clipped to the triangle (the nearest point on it, up to the corner
    regions)."""
    first, second = corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]
    normal = np.cross(first, second)
    normal /= np.maximum(np.linalg.norm(normal, axis=1, keepdims=True), 1e-30)
    offset = points - corners[:, 0]
    d00, d01, d11 = (first * first).sum(1), (first * second).sum(1), (second * second).sum(1)
    o0, o1 = (offset * first).sum(1), (offset * second).sum(1)
    determinant = np.maximum(d00 * d11 - d01 * d01, 1e-30)
    u, v = (d11 * o0 - d01 * o1) / determinant, (d00 * o1 - d01 * o0) / determinant
    bary = np.clip(np.stack([1.0 - u - v, u, v], axis=1), 0.0, None)
    bary /= np.maximum(bary.sum(axis=1, keepdims=True), 1e-30)
    distance = np.linalg.norm(points - np.einsum("mc,mcd->md", bary, corners), axis=1)
    return bary, normal, distance


def _kept_for_last_x(compute):
    """compute(x), kept for the last x it was asked for: least squares asks for the residuals and
    the Jacobian at the same x, and both need the same posed head and pairs."""
    last: dict = {}

    def at(x: np.ndarray):
        key = x.tobytes()
        if key not in last:
            last.clear()
            last[key] = compute(x)
        return last[key]

    return at


def _descend(head: LinearHead, found, priors: np.ndarray, x: np.ndarray, reach: float, bounds, steps: int) -> np.ndarray:
    """x after L-BFGS-B on the Cauchy loss (reach in mm) of the point-to-plane residuals to the
    pairs `found`, plus the priors, within bounds."""
    targets, normals, weight = found

    def objective(values):
        plane = weight * np.einsum("kd,kd->k", head.points(values) - targets, normals) * MM
        prior = priors * (values - head.origin)
        value = reach**2 * np.log1p((plane / reach) ** 2).sum() + (prior**2).sum()
        slope = 2.0 * plane / (1.0 + (plane / reach) ** 2)
        pull = (slope * weight * MM)[:, None] * normals
        return value, head.gradient(values, pull) + 2.0 * priors * prior

    return scipy.optimize.minimize(objective, x, jac=True, method="L-BFGS-B", bounds=list(zip(*bounds)),
                                   options={"maxiter": steps, "ftol": 1e-15, "gtol": 1e-12}).x  # fmt: skip


def _state_of(start: BodyState, head: LinearHead, x: np.ndarray) -> BodyState:
    """The BodyState of fitted parameters: actions and phenotype clipped to [0, 1]; each world
    rotation turned into the bone's local axis-angle (SOMA rotations are in world axes at rest,
    so a bone's world rotation is its parents' times its own: L' = P^T W P L)."""
    from scipy.spatial.transform import Rotation

    body = get_body_model()
    actions, phenotype = x[:FACIAL_ACTIONS], x[FACIAL_ACTIONS : len(head.shapes)]
    rotvecs = x[len(head.shapes) :].reshape(len(FIT_BONES), 3)
    pose = start.pose.copy()
    for b, name in enumerate(FIT_BONES):
        j = body.bone_index(name)
        parent = head.parent_rotations[b]
        local = parent.T @ rotation_matrix(rotvecs[b]) @ parent @ rotation_matrix(start.pose[j])
        pose[j] = Rotation.from_matrix(local).as_rotvec()
    names = body.phenotype_names
    base = {name: float(start.phenotype.get(name, 0.5)) for name in names}
    fitted = {name: float(np.clip(base[name] + phenotype[i], 0.0, 1.0)) for i, name in enumerate(names)}
    return attrs.evolve(start, pose=pose, expression=np.clip(actions, 0.0, 1.0), phenotype=fitted)
