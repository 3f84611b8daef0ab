"""The subject's build from the person's outline in a picture.

Face landmarks say little about who a person is. Held near frame A's subject by a prior, the
landmark fit read a picture of someone else (another build) as frame A's subject with the same
mouth, and the image ladder's wrong-subject rung scored above the wrong-part rung
(plugins/maskscore-image/README.md). The outline of the head, neck, shoulders and what the person
wears tells them apart. The person segmenter (`segmenter.py`) gives the picture's outline.

Two steps (`pixels.PixelFitter.fit`):

1. **Is it the subject?** The subject, posed as the landmarks read the picture (`outline_state`),
   is rendered with what it wears by the picture's camera, and the mean distance from its
   outline to the picture's is measured (`outline_distance`), over the body and what it wears
   but a hat (`UNCOUNTED_SLOTS`): the segmenter takes a tall dark hat whole in one picture and
   cuts it in half in the next picture of the same person, while a scarf is what told one
   subject from another whose landmarks and body outline nearly match. A hat still hides what
   lies behind it. Within `same_build` of the picture's width, the picture is the subject's and the
   landmark fit stands: the outline cannot tell builds apart more finely than that, and fitted
   anyway it moved the build of the subject's own pictures by up to 0.17 from picture to picture,
   which the metric then charged as edits.
2. **Whose build, then?** Otherwise the phenotype is fitted to the outline (`fit_phenotype`), and
   the face is fitted again with that build.

The mesh's outline: the mesh is rendered and each pixel on the edge of its coverage (not on the
frame's border) gives the point its ray hits, a fixed barycentric point of one triangle. Those
points' pixels move with the phenotype to first order (forward differences of the whole forward
pass, then the camera's projection), so one render serves a whole L-BFGS-B run. The fit's cost
is the mean distance (pseudo-Huber, in picture widths) between the two outlines, both ways, plus
an L2 pull towards the subject's phenotype; each round renders and linearises again where the
last one ended, until a round barely moves the phenotype. A round whose step made the cost worse
(the outline moves to first order only, and a large step outruns that) is taken back and halved:
unchecked, the rounds ran away from an outline the shown person's own build explains. The fit
uses the body's outline alone (the subject's accessories are not the other person's).
"""

from __future__ import annotations

import attrs
import numpy as np
from scipy import ndimage

from maskscore_core.plugin.records import BodyState
from maskscore_core.trials import landmark_fit as lf


# The accessory slots whose outline the same-build test does not count (module docstring, step 1).
UNCOUNTED_SLOTS = ("hat",)


@attrs.frozen
class SilhouetteFit:
    """same_build: the mean outline distance, in picture widths, within which a picture is the
    subject's (step 1 of the module docstring; measured in this plugin's README, "The build from
    the outline"). prior: the pull towards the subject's phenotype, per unit of phenotype
    squared, against the mean outline distance in picture widths. rounds: the most renders and
    linearisations; they stop early once a round moves no label by `settled`. huber_px: the
    pseudo-Huber scale of the mesh side (distances below it count as squares, above it as
    lengths). picture_sigma_px: the Geman-McClure scale of the picture side (no pixel counts for
    more than it), so that outline the body does not explain (a hat, a scarf) pulls little.
    step: the forward differences' step. A round whose step made the cost worse counts as a
    round and is halved, until its step is under `settled`."""

    same_build: float = 0.007
    prior: float = 1e-3
    rounds: int = 5
    huber_px: float = 1.0
    picture_sigma_px: float = 10.0
    step: float = 0.02
    lbfgs_steps: int = 200
    settled: float = 0.005


def outline(mask: np.ndarray) -> np.ndarray:
    """(H, W) bool: the person's outer outline in `mask`. The pixels with a 4-neighbour outside
    the filled mask, not on the frame's border (where the body runs out of the picture there is no
    outline). Filled: the body goes on below the frame, so background it encloses there (between
    an arm and the chest) is filled first. The segmenter smooths such gaps over, so their edges
    are not an outline both sides see."""
    mask = ndimage.binary_fill_holes(np.pad(mask, ((0, 1), (0, 0)), constant_values=True))[:-1]
    edge = mask & ~ndimage.binary_erosion(mask, border_value=1)
    edge[0, :] = edge[-1, :] = edge[:, 0] = edge[:, -1] = False
    return edge


def outline_state(fitted: BodyState, subject: BodyState, fitted_bones) -> BodyState:
    """`fitted` (a landmark fit) with the subject's phenotype (the fit's start and anchor), and
    the subject's pose outside `fitted_bones`, accessories and part scales: what the picture
    shows that landmarks do not read."""
    from maskscore_core.body.anny_model import get_body_model

    body = get_body_model()
    pose = np.array(subject.pose, dtype=np.float64, copy=True)
    rows = [body.bone_index(name) for name in fitted_bones]
    pose[rows] = np.asarray(fitted.pose)[rows]
    return attrs.evolve(fitted, phenotype=dict(subject.phenotype), pose=pose, accessories=subject.accessories,
                        part_scale=dict(subject.part_scale))  # fmt: skip


def _with_phenotype(state: BodyState, names, values) -> BodyState:
    return attrs.evolve(state, phenotype=dict(zip(names, (float(v) for v in np.clip(values, 0.0, 1.0)))))


def _meshes(state: BodyState, names, step: float):
    """The reference mesh of `state` (V, 3) and its derivative in each phenotype label (P, V, 3),
    by forward differences (backward at the top of [0, 1]); one batched forward pass."""
    from maskscore_core.body.reference_mesh import get_reference_mesh

    values = np.array([state.phenotype[n] for n in names])
    steps = np.where(values + step <= 1.0, step, -step)
    moved = [_with_phenotype(state, names, values + steps[k] * np.eye(len(names))[k]) for k in range(len(names))]
    vertices = get_reference_mesh().vertices([state, *moved])
    return vertices[0], (vertices[1:] - vertices[0]) / steps[:, None, None]


def _outline_hits(vertices: np.ndarray, resolution: int, slots: tuple[str, ...] = ()):
    """Triangles (N, 3) and barycentric weights (N, 3) of the rays through the outline pixels as
    `pixel_view(resolution)` renders `vertices`: those that show the body or an accessory of one
    of `slots`."""
    from maskscore_core.body.reference_mesh import get_reference_mesh
    from maskscore_core.metric.render import get_renderer
    from maskscore_core.metric.views import camera_poses, pixel_ray_directions

    from .pixels import pixel_view

    reference = get_reference_mesh()
    config = pixel_view(resolution)
    pose = camera_poses(config)[0]
    rendered = get_renderer(config).render(vertices)
    face_id = rendered.face_id[0]
    rows, cols = np.nonzero(outline(rendered.coverage[0]) & (face_id >= 0))
    triangles = reference.faces[face_id[rows, cols]]
    counted = triangles[:, 0] < reference.anny_vertex_count  # the body's triangles come first
    for slot in slots:
        start, stop = reference.slot_ranges[slot]
        counted |= (triangles[:, 0] >= start) & (triangles[:, 0] < stop)
    rows, cols, triangles = rows[counted], cols[counted], triangles[counted]
    ray = pixel_ray_directions(pose, config.fov_deg, resolution, resolution)[rows, cols]
    a, b, c = (vertices[triangles[:, i]] for i in range(3))
    ab, ac, to_origin = b - a, c - a, np.asarray(pose.origin) - a
    p = np.cross(ray, ac)
    det = (ab * p).sum(1)
    u = (to_origin * p).sum(1) / det
    v = (ray * np.cross(to_origin, ab)).sum(1) / det
    u, v = np.clip(u, 0.0, 1.0), np.clip(v, 0.0, 1.0)
    return triangles, np.stack([1.0 - u - v, u, v], axis=1)


def _bilinear(field: np.ndarray, pixels: np.ndarray):
    """`field` (H, W) at pixel positions (N, 2) (x, y; pixel centres at .5), bilinear, and its
    gradient (N, 2); clamped at the border."""
    height, width = field.shape
    x = np.clip(pixels[:, 0] - 0.5, 0.0, width - 1.0)
    y = np.clip(pixels[:, 1] - 0.5, 0.0, height - 1.0)
    x0, y0 = np.minimum(np.floor(x).astype(int), width - 2), np.minimum(np.floor(y).astype(int), height - 2)
    fx, fy = x - x0, y - y0
    f00, f01, f10, f11 = field[y0, x0], field[y0, x0 + 1], field[y0 + 1, x0], field[y0 + 1, x0 + 1]
    value = (1 - fy) * ((1 - fx) * f00 + fx * f01) + fy * ((1 - fx) * f10 + fx * f11)
    gradient = np.stack([(1 - fy) * (f01 - f00) + fy * (f11 - f10), (1 - fx) * (f10 - f00) + fx * (f11 - f01)], 1)
    return value, gradient


def _outline_pixels(state: BodyState, resolution: int, names=None, step: float = 0.0, slots: tuple[str, ...] = ()):
    """Pixels (N, 2) of the outline points (`_outline_hits`) as the picture's camera sees `state`,
    and, with phenotype `names`, how they move with each label (N, 2, P), to first order."""
    from maskscore_core.body.reference_mesh import get_reference_mesh

    from .pixels import frame_camera

    if names is None:
        vertices, motion = get_reference_mesh().vertices([state])[0], None
    else:
        vertices, motion = _meshes(state, names, step)
    triangles, weights = _outline_hits(vertices, resolution, slots)
    if len(triangles) == 0:
        raise lf.FaceDetectionError("the body's outline is out of the picture")
    view, origin = frame_camera(resolution)
    pixels, d_pixels = view.project_linear(np.einsum("nk,nkd->nd", weights, vertices[triangles]), origin)
    if motion is None:
        return pixels, None
    return pixels, np.einsum("nij,pnkj,nk->nip", d_pixels, motion[:, triangles], weights)


def _person_outline(person: np.ndarray) -> np.ndarray:
    edge = outline(person)
    if not edge.any():
        raise lf.FaceDetectionError("the person's outline is empty")
    return edge


def outline_distance(person: np.ndarray, state: BodyState, slots: tuple[str, ...] | None = None) -> float:
    """Mean distance (pixels) from the outline of `state`'s body and what it wears, seen by the
    picture's camera, to the outline of `person`: how well `state` (its build, pose and what it
    wears) explains the picture. slots: the accessory slots whose outline counts (default: all
    but `UNCOUNTED_SLOTS`; what is not counted still hides the body behind it)."""
    from maskscore_core.body.reference_mesh import get_reference_mesh

    if slots is None:
        slots = tuple(slot for slot in get_reference_mesh().slot_ranges if slot not in UNCOUNTED_SLOTS)
    pixels = _outline_pixels(state, int(person.shape[0]), slots=slots)[0]
    far, _ = _bilinear(ndimage.distance_transform_edt(~_person_outline(person)), pixels)
    return float(far.mean())


def fit_phenotype(person: np.ndarray, state: BodyState, config: SilhouetteFit = SilhouetteFit()) -> dict:
    """The phenotype whose outline, with everything else of `state` held, matches the outline of
    `person` (an (R, R) bool mask from the picture's camera, `pixels.pixel_view(R)`); it starts
    from `state`'s phenotype and is pulled towards it (`outline_state` puts the subject's there).

    Both ways: each mesh outline point's distance to the picture's outline, and each picture
    outline pixel's distance to the nearest mesh outline point. The first alone let a smaller
    body pass, its outline points each finding some nearby edge of the picture's; the second,
    counted in full, dragged the build after a tall hat and a scarf, hence its bounded cost."""
    from scipy.optimize import minimize

    from maskscore_core.body.anny_model import get_body_model

    resolution = int(person.shape[0])
    edge = _person_outline(person)
    distance = ndimage.distance_transform_edt(~edge)
    targets = np.argwhere(edge)[:, ::-1] + 0.5  # (M, 2) pixel centres, x then y
    names = get_body_model().phenotype_names
    anchor = np.array([float(state.phenotype.get(n, 0.5)) for n in names])
    values, best, best_cost = anchor.copy(), anchor.copy(), np.inf

    for round_ in range(config.rounds):
        pixels, slope = _outline_pixels(_with_phenotype(state, names, values), resolution, names, config.step)
        cost = _linearised_cost(pixels, slope, values, anchor, distance, targets, resolution, config)
        here = cost(values)[0]  # exact: the outline was rendered at `values`
        if here >= best_cost:
            # The linear model's step made the outlines worse: back to the best, half the step.
            values = best + 0.5 * (values - best)
            if np.abs(values - best).max() < config.settled:
                break
            continue
        best, best_cost = values.copy(), here
        if round_ == config.rounds - 1:  # no round left to render and measure another step
            break
        found = minimize(cost, values, jac=True, method="L-BFGS-B", bounds=[(0.0, 1.0)] * len(names),
                         options={"maxiter": config.lbfgs_steps, "ftol": lf.LBFGS_FTOL, "gtol": lf.LBFGS_GTOL})  # fmt: skip
        step = np.clip(found.x, 0.0, 1.0) - values
        if np.abs(step).max() < config.settled:
            break
        values = values + step
    return dict(zip(names, (float(v) for v in best)))


def _linearised_cost(pixels0, slope, start, anchor, distance, targets, resolution: int, config: SilhouetteFit):
    """`fit_phenotype`'s cost and its gradient in the phenotype, with the mesh's outline points
    moved to first order from where they were rendered (`pixels0` at phenotype `start`)."""
    from scipy.spatial import cKDTree

    huber, sigma = config.huber_px, config.picture_sigma_px

    def cost(x):
        pixels = pixels0 + slope @ (x - start)
        far, toward = _bilinear(distance, pixels)
        soft = np.sqrt(far**2 + huber**2)
        pull = (far / soft)[:, None] * toward / len(far)
        near, nearest = cKDTree(pixels).query(targets)
        back = sigma * near**2 / (near**2 + sigma**2)  # Geman-McClure: at most sigma a pixel
        np.add.at(pull, nearest, (pixels[nearest] - targets) * (2.0 * sigma**3 / (near**2 + sigma**2) ** 2)[:, None] / len(targets))
        spread = ((soft - huber).mean() + back.mean()) / resolution
        grad = np.einsum("ni,nip->p", pull, slope) / resolution
        return spread + config.prior * ((x - anchor) ** 2).sum(), grad + 2.0 * config.prior * (x - anchor)

    return cost
