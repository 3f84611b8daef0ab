"""The universal metric: render candidates and references, compare inside and outside the part.

Framing: every mesh of a row is moved by frame A's framing (`framing.framing_of`): frame A's head
onto the default subject's head, at its size, zoomed for the edited part (`framing.part_zoom`), so
the cameras frame every subject's edited part alike.

Regions (per view, per pixel):
- inside: pixels showing the edited part's region in frame A's render or in frame B's render
  (union), from the face-index pass (`parts.pixel_mask(..., region=True)`).
- outside: every other pixel covered by A, B or the candidate.

instruction_following is calibrated on the edit itself: for each distance d (inside), how much
of frame A's distance to frame B the candidate took away,

    term = max(-1, 1 - (d(candidate, B) / d(A, B)) ** e),  e such that the halfway mesh scores 0.5

so frame B scores 1, doing nothing 0, moving away from B below 0 (down to -1 at twice A's
distance from it), overshooting or moving the wrong way less than B. Each row
calibrates e per distance on the mesh halfway between frames A and B (vertex by vertex, B on A's
head), rendered once with them: how fast a distance falls as the part nears B depends on the
part, the subject and the resolution (outlines and shading shift by whole pixels), and the
halfway mesh measures it, so a candidate a fraction f of the way scores about f. The terms are
averaged with weights d(A, B) / SCALES[d]: a distance that barely tells A from B (the geometry of
a lighting change) carries no weight, and nothing switches on or off. The mean m in [-1, 1] maps
to the score through a soft floor, max(m, 0) + SOFT_FLOOR * log(1 + exp(-|m| / SOFT_FLOOR)):
m for every m well above 0, SOFT_FLOOR * log 2 (0.014) for doing nothing, and still falling below
it, so a candidate that moved the part away from B ranks below one that did nothing. Terms are
not floored at 0 one by one: a candidate a little closer on one distance and farther on the
others (another subject's mouth, rung 5) would keep the one and drop the others.

consistency compares the candidate with frame A outside, counting per pixel only the change
beyond the one frame B (or the halfway mesh) itself makes there (`max(0, d(c, A) - d(B, A))` per
pixel, LPIPS per layer position): what the asked edit moves outside the part (the chin with the jaw, the head with
the neck) is not a change of the rest, doing nothing and the exact edit both score 1. Each
such distance maps to exp(-d / SCALES[d]).

Head alignment: for every part but the neck, frame B and every candidate rendered from vertices
are first moved rigidly onto frame A's head (`head_motion`: the head's own motion, net of
facial actions), always, so scores are continuous in the candidate. One render per candidate
serves both dimensions: a head that moved shows as the neck and shoulders moving against it,
and consistency's `head_motion` distance counts how far the candidate's head stood off the way
from frame A's head to frame B's (RMS over the head's points: `head_motion.beyond`), past the
error with which the references themselves were read where they come from pixels
(`head_motion.past_reading_error`). The neck's bones carry the head, so its motion is the edit: no
alignment there.

Distances (each a mean over the region's pixels of all views together): depth_l1 (capped per
pixel at DEPTH_CAP), normal_l1, ssim (1 - SSIM of the normal maps), lpips (AlexNet v0.1 of the
normal maps as [-1, 1] images), activation (instruction_following, face activations),
appearance_l1 (shaded pictures, where all sides carry a look), surface_residual (consistency, a
reference mesh fitted to a mesh of its own topology: the capped depth difference between the two
renders, what the fit left unexplained). docs/metric.md gives the numbers.
"""

from __future__ import annotations

import concurrent.futures
import functools
import math
import threading

import attrs
import numpy as np
import torch

from maskscore_core import allocator, threads
from maskscore_core.body import parts
from maskscore_core.metric import foreign_mesh
from maskscore_core.metric import head_motion
from maskscore_core.metric.appearance import shade
from maskscore_core.metric.depth_normals import depth_normals
from maskscore_core.metric.framing import Framing, framing_of
from maskscore_core.metric.image_metrics import SsimReference, masked_mean, region_ssim
from maskscore_core.metric.render import RenderResult, get_renderer
from maskscore_core.metric.views import ViewConfig
from maskscore_core.plugin.records import CandidateScore, Decoded

# consistency: a distance equal to its scale scores exp(-1) = 0.37. instruction_following:
# the scale turns d(A, B) into a unitless weight. The scales sit near the inside distance between
# frames A and B of a strong mouth edit (jawOpen 0 -> 0.8).
SCALES: dict[str, float] = {
    "depth_l1": 0.02,  # metres (of the framed head)
    "normal_l1": 0.1,
    "ssim": 0.25,
    "lpips": 0.1,
    "activation": 0.1,
    "appearance_l1": 0.1,  # mean |RGB| difference of shaded pictures, colours in [0, 1]
    "head_motion": 0.005,  # metres: RMS motion of the head's vertices (a 1-degree turn ~1.7 mm)
    "surface_residual": 0.02,  # metres, as depth_l1: a fitted mesh's depth against its surface's
}
# instruction_following's exponent e = log(1/2) / log(d(halfway, B) / d(A, B)), kept within these
# bounds where the halfway mesh is no help (d(A, B) at render noise, or no closer to B than A is).
# Measured d(halfway, B) / d(A, B): 0.36-0.8 over the parts the source edits (docs/metric.md).
EXPONENT_RANGE = (0.5, 3.0)
# How far below 0 one follow term goes (a candidate twice as far from B as A is), and the width
# of the soft floor that keeps the averaged terms' order below 0 (docs/metric.md).
TERM_FLOOR, SOFT_FLOOR = -1.0, 0.02
# Keeps d(c, B) / d(A, B) finite where frame B equals frame A (then only B itself scores 1) and
# gives every distance a little weight then; a millionth of the scale is far below render noise.
FLOOR = 1e-6
# Per-pixel depth differences are capped: a silhouette pixel that flips between the mesh and the
# background (depth 0) would otherwise count as the full camera distance (~0.5 m), so sub-pixel
# shifts of the outline would outweigh real changes of the surface.
DEPTH_CAP = 0.05  # metres
WEIGHTS: dict[str, float] = {
    "depth_l1": 1.0, "normal_l1": 1.0, "ssim": 1.0, "lpips": 1.0, "activation": 1.0, "appearance_l1": 1.0,
    "head_motion": 1.0, "surface_residual": 1.0,
}  # fmt: skip
# overall = consistency * (1 + instruction_following) / 2 (`overall_of`): the mean of the two,
# less the part of the edit's credit that was bought with the rest of the picture.

NO_ALIGN_PARTS = ("neck",)
# The formulas' revision: bump when a change moves any score. `dataset.scorer_config` keys stored
# scores by it. 2: calibrated instruction_following, consistency beyond frame B's own change,
# alignment always, framing on frame A's head (issue 12). 3: follow terms down to TERM_FLOOR,
# averaged, then the soft floor; overall = consistency * (1 + instruction_following) / 2 (issue 12
# point 5). 4: meshes of their own topology compared with normals read from depth on every side
# and their head laid onto frame A's by the skull's surface (issue 15 item 2); the scores of
# reference-topology candidates are those of revision 3. 5: a mesh of its own topology decoded
# by a modality is ANNY fitted to it (`body.surface_fit`), what the fit leaves charged as
# surface_residual; reference-topology scores unchanged. 6: the fit's last stage runs until it
# converges (it stopped after 30 evaluations, where its path, hence a float32 round trip of the
# mesh, set the result); reference-topology scores unchanged. 7: that stage's steps hold the
# bounds as constraints (`body.bounded_gauss_newton`; scipy's reflective trust region left facial
# actions on their bound, 0), its phenotype prior is 1e-1 (1e-2 read remeshing errors as
# another subject), and it also lays the mesh's vertices on ANNY's head triangles (a coarse mesh's
# facets lie inside the surface); reference-topology scores unchanged. 8: a row is zoomed further
# for its edited part (`framing.part_zoom`), so the part shows the default subject's pixels on every
# subject (the head's scale alone left a tall old man's irides at 0.78 of the default's). 9: the
# body model skins with anny's torch blend skinning instead of Warp's kernel
# (`anny_model.SKINNING`): every reference mesh may move in its last bit. 10: a candidate's head
# motion is charged by how far it lies off the way from frame A's head to frame B's
# (`head_motion.beyond`), not by how much its size exceeds frame B's: a head turned another way
# than frame B's (misread) one cost nothing while it was the smaller of the two. 11: where the
# references were read from pixels, that charge is what lies past the error the reading put on
# their own heads (`head_motion.reading_error`, `past_reading_error`): a picture of the halfway
# face read with the head a few millimetres off no longer loses more consistency than the
# references' own reading error; scores of candidates decoded exactly unchanged. 12: the inside of
# the mouth is shaded dark (`appearance.ORAL_CAVITY`, `body.oral_cavity`), in the pictures the
# pixel modalities read and in the appearance distances; scores without either unchanged. 13: the
# face-landmark fit of pictures runs its last stage to convergence within the actions' bounds
# (`landmark_fit._bounded_lbfgs`; it stopped after a fixed count, where rounding set the reading):
# scores of pictures and pixel clips may move, others unchanged.
METRIC_VERSION = 13

DIMENSION_PREFIX = {"instruction_following": "if", "consistency": "cons"}
# distances["ref.<d>"] and ["half.<d>"]: d(A, B) and d(halfway, B) inside, what instruction_following
# is calibrated on.
REFERENCE_PREFIX, HALFWAY_PREFIX = "ref", "half"


class RenderCompareError(ValueError):
    """Inputs the metric cannot compare (nothing to render, wrong map sizes, invisible part)."""


def _check_distance(name: str, distance: float) -> None:
    if not math.isfinite(distance) or distance < 0:
        raise RenderCompareError(f"distance {name} = {distance!r} is not a finite non-negative number")


def distance_score(name: str, distance: float) -> float:
    """consistency's monotone map from a raw distance to a score in (0, 1]."""
    _check_distance(name, distance)
    return math.exp(-distance / SCALES[name])


def combine(distances: dict[str, float]) -> float:
    """consistency: weighted mean of the per-distance scores."""
    if not distances:
        raise RenderCompareError("no distance to combine into a score")
    total = sum(WEIGHTS[name] for name in distances)
    return sum(WEIGHTS[name] * distance_score(name, d) for name, d in sorted(distances.items())) / total


def exponent(name: str, reference: float, halfway: float) -> float:
    """e with (d(halfway, B) / d(A, B)) ** e = 1/2, within EXPONENT_RANGE."""
    _check_distance(f"{REFERENCE_PREFIX}.{name}", reference)
    _check_distance(f"{HALFWAY_PREFIX}.{name}", halfway)
    low, high = EXPONENT_RANGE
    ratio = halfway / (reference + FLOOR * SCALES[name])
    if ratio <= 0.5 ** (1.0 / low):
        return low
    if ratio >= 0.5 ** (1.0 / high):
        return high
    return math.log(0.5) / math.log(ratio)


def follow_term(name: str, distance: float, reference: float, halfway: float) -> float:
    """How much of d(A, B) = `reference` a candidate at d(c, B) = `distance` took away, in
    [TERM_FLOOR, 1] (below 0: it moved away from B), calibrated so that d(c, B) = `halfway` (the
    halfway mesh's) scores 1/2."""
    _check_distance(name, distance)
    ratio = distance / (reference + FLOOR * SCALES[name])
    return max(TERM_FLOOR, 1.0 - ratio ** exponent(name, reference, halfway))


def soft_floor(mean: float) -> float:
    """The averaged follow terms as a score in (0, 1]: `mean` above 0, smoothly above 0 below it
    (strictly increasing, so candidates that moved away from B keep their order)."""
    return max(mean, 0.0) + SOFT_FLOOR * math.log1p(math.exp(-abs(mean) / SOFT_FLOOR))


def follow_score(distances: dict[str, float], references: dict[str, float], halfway: dict[str, float]) -> float:
    """instruction_following: the follow terms averaged with weights d(A, B) / scale (+ FLOOR),
    through the soft floor."""
    if not distances:
        raise RenderCompareError("no distance to combine into a score")
    missing = sorted(set(distances) - (set(references) & set(halfway)))
    if missing:
        raise RenderCompareError(f"no frame A to frame B distance to calibrate {missing} on")
    weights = {k: WEIGHTS[k] * (references[k] / SCALES[k] + FLOOR) for k in sorted(distances)}
    total = sum(weights.values())
    return soft_floor(sum(weights[k] * follow_term(k, distances[k], references[k], halfway[k]) for k in weights) / total)


def overall_of(follow: float, consistency: float) -> float:
    """overall: the asked change counts only as far as the rest was kept,
    consistency * (1 + instruction_following) / 2. Equal to their mean where consistency is 1
    (doing nothing 0.5, frame B 1) and never above it; another subject whose part happens to
    look like frame B's (a hat taken off, a subject without one) no longer outranks a wrong-part
    edit that kept the subject (docs/metric.md, "Scores")."""
    return consistency * (1.0 + follow) / 2.0


def scores_of(distances: dict[str, dict[str, float]], references: dict[str, float], halfway: dict[str, float]) -> CandidateScore:
    """The CandidateScore of one candidate's distances {"instruction_following": {...},
    "consistency": {...}} and the row's d(A, B) and d(halfway, B) per distance."""
    follow = follow_score(distances["instruction_following"], references, halfway)
    consistency = combine(distances["consistency"])
    overall = overall_of(follow, consistency)
    flat = {f"{DIMENSION_PREFIX[dim]}.{name}": float(v) for dim, found in distances.items() for name, v in found.items()}
    for name in distances["instruction_following"]:
        flat[f"{REFERENCE_PREFIX}.{name}"], flat[f"{HALFWAY_PREFIX}.{name}"] = float(references[name]), float(halfway[name])
    return CandidateScore(
        instruction_following=float(follow), consistency=float(consistency), overall=float(overall),
        distances=dict(sorted(flat.items())),
    )  # fmt: skip


@attrs.frozen(eq=False)
class Side:
    """One reference or candidate in render space: depth always; normals and LPIPS features
    only where it was rendered from vertices."""

    depth: np.ndarray  # (N, H, W) float32
    coverage: np.ndarray  # (N, H, W) bool
    normals: np.ndarray | None = None  # (N, H, W, 3)
    render: RenderResult | None = None
    activations: np.ndarray | None = None
    render_vertices: np.ndarray | None = None  # the validated vertices (before framing)
    appearance: object | None = None  # records.Appearance: its look, where the modality carries one
    head_move: head_motion.HeadMove | None = None  # where its head stood against frame A's before it was moved onto it
    surface_residual: float | None = None  # a fitted mesh's depth against the surface it was fitted to


@attrs.frozen(eq=False)
class PreparedReference:
    """Frames A and B rendered once, their LPIPS features, the part's pixel regions, frame B's
    own change against A (per pixel, for consistency) and d(A, B) inside."""

    part: str
    a: Side
    b: Side
    inside: np.ndarray  # (N, H, W) bool: the part's pixels in A or B
    covered: np.ndarray  # (N, H, W) bool: pixels covered in A or B
    lpips_a: object | None  # image_metrics.LpipsFeatures of A's normals (N images)
    lpips_b: object | None
    framing: Framing
    vertices_a: np.ndarray | None = None  # frame A's validated vertices (mesh references)
    head_frame: object | None = None  # head_motion.HeadFrame of frame A (mesh references)
    b_as_is: Decoded | None = None  # frame B as given, when `b` is B moved onto A's head
    ssim_a: object | None = None  # image_metrics.SsimReference of A's normals, filtered once per row
    ssim_b: object | None = None  # and of B's
    b_change: dict = attrs.field(factory=dict)  # frame B against A per pixel: "depth", "normal", "ssim", "lpips"
    references: dict = attrs.field(factory=dict)  # d(A, B) inside, per distance
    halfway: dict = attrs.field(factory=dict)  # d(halfway mesh, B) inside, per distance
    lazy: dict = attrs.field(factory=dict)  # renders made only when a candidate needs them
    head_reading_error: float = 0.0  # metres: how far reading the references from pixels put their heads off


class RenderCompare:
    """Scores candidates of one edit against frames A and B (see module docstring)."""

    def __init__(self, view_config: ViewConfig | None = None) -> None:
        allocator.keep_freed_buffers()  # a row's large buffers reused, not faulted in again
        self.view_config = view_config or ViewConfig()
        self.renderer = get_renderer(self.view_config)
        self._lpips = None
        self._lock = threading.Lock()

    @property
    def lpips(self):
        from maskscore_core.metric.image_metrics import get_lpips

        with self._lock:
            if self._lpips is None:
                self._lpips = get_lpips()
            return self._lpips

    # -- turning a Decoded into render space ------------------------------------------------
    def _side(self, decoded: Decoded, what: str, framing: Framing | None, vertices=None) -> Side:
        """`decoded` in render space; `vertices` (already checked, with its faces for a mesh of
        its own topology) replace its own when given."""
        if not isinstance(decoded, Decoded):
            raise RenderCompareError(f"{what}: expected a records.Decoded, got {type(decoded).__name__}")
        if decoded.faces is not None:  # a mesh of its own topology: its own triangles rendered
            mesh = (foreign_mesh.check(decoded.vertices, decoded.faces, what) if vertices is None
                    else foreign_mesh.ForeignMesh(vertices=vertices, faces=decoded.faces))  # fmt: skip
            result = foreign_mesh.render(mesh, self.view_config, framing)
            normals = depth_normals(result.depth, result.coverage, self.view_config)  # not its triangles' shading
            return Side(result.depth, result.coverage, normals, activations=decoded.activations)
        if vertices is None and decoded.vertices is not None:
            vertices = self.renderer.check(decoded.vertices, what)
        if vertices is not None:
            result = self.renderer.render(framing.apply(vertices), what)
            return Side(
                result.depth, result.coverage, result.normals, result, decoded.activations, vertices, decoded.appearance
            )
        if decoded.depth is not None:
            depth = np.asarray(decoded.depth, dtype=np.float32)
            size = self.view_config.resolution
            expected = (self.view_config.count, size, size)
            if depth.shape != expected:
                raise RenderCompareError(f"{what}: depth maps of shape {depth.shape}, the views need {expected}")
            if not np.all(np.isfinite(depth)) or (depth < 0).any():
                raise RenderCompareError(f"{what}: depth maps hold NaN, infinite or negative values")
            return Side(depth, depth > 0, activations=decoded.activations)
        if decoded.frames is not None:
            raise RenderCompareError(
                f"{what}: a frame sequence is scored per frame by its modality plugin (mean over frames);"
                " pass one frame's vertices here"
            )
        raise RenderCompareError(f"{what}: nothing to compare (no vertices and no depth maps)")

    def _moved(self, side: Side, vertices: np.ndarray, framing: Framing) -> Side:
        """`side` rendered again from `vertices` (checked reference-mesh vertices placed elsewhere),
        keeping what it carries besides its geometry (activations, appearance)."""
        result = self.renderer.render(framing.apply(vertices))
        return attrs.evolve(side, depth=result.depth, coverage=result.coverage, normals=result.normals, render=result,
                            render_vertices=vertices)  # fmt: skip

    def _aligned(self, prepared: PreparedReference, vertices: np.ndarray) -> tuple[np.ndarray, head_motion.HeadMove | None]:
        """The vertices moved onto frame A's head, and the head's move that took back (None for the neck)."""
        if prepared.head_frame is None:
            return vertices, None
        return head_motion.align_and_measure(prepared.head_frame, vertices)

    def _laid_onto_a(self, prepared: PreparedReference, candidate: Decoded, what: str):
        """A mesh of its own topology, checked, with its head laid onto frame A's by the skull's
        surface (where the part is aligned), its head's move that took back, and the surface it was fitted
        to (`Decoded.surface`, None for a mesh taken as it is) moved with it."""
        mesh = foreign_mesh.check(candidate.vertices, candidate.faces, what)
        surface = candidate.surface
        if surface is not None:
            surface = foreign_mesh.check(surface.vertices, surface.faces, f"{what}'s surface")
        if "skull" not in prepared.lazy:
            return mesh, None, surface
        skull = prepared.lazy["skull"]
        motion = head_motion.surface_head_motion(skull, mesh.vertices, mesh.faces)
        mesh = attrs.evolve(mesh, vertices=head_motion.undo_surface_motion(skull, motion, mesh.vertices))
        if surface is not None:
            surface = attrs.evolve(surface, vertices=head_motion.undo_surface_motion(skull, motion, surface.vertices))
        return mesh, motion[2], surface

    def _surface_residual(self, side: Side, surface, framing: Framing) -> float:
        """Mean capped depth difference between a fitted mesh's render and the render of the
        surface it was fitted to, over the pixels either covers: what the fit did not explain."""
        result = foreign_mesh.render(surface, self.view_config, framing)
        covered = side.coverage | result.coverage
        if not covered.any():
            raise RenderCompareError("a fitted mesh and its surface cover no pixel")
        return _masked_mean(_capped(np.abs(side.depth - result.depth)), covered)

    # -- references ---------------------------------------------------------------------------
    def prepare(self, ref_a: Decoded, ref_b: Decoded, part: str, framing: Framing | None = None, *,
                region: np.ndarray | None = None, halfway: Decoded | None = None,
                read_from: tuple | None = None) -> PreparedReference:
        """Render frames A and B once (B on A's head), take their LPIPS features once, find the
        part's pixels, frame B's change against A, d(A, B) and d(halfway, B). `framing` defaults
        to frame A's own (`framing.framing_of`); the scorer plugin passes the subject's
        (`framing.subject_framing`). `halfway` is the edit made half way (the scorer plugin passes
        the ladder's, `ladder.edit_fraction(instance, 0.5)`: an accessory half its size where it
        is worn, a look half mixed); by default frame A's and B's vertices averaged. `read_from`:
        where the references were read from pixels, the exact meshes they were drawn from (frame A,
        frame B, the halfway mesh or None, as Decoded): how far the reading put their heads off
        (`head_motion.reading_error`) is what a candidate's head move is charged beyond."""
        parts.check_active(part)
        if not isinstance(ref_a, Decoded) or ref_a.vertices is None or not isinstance(ref_b, Decoded) or (
            ref_b.vertices is None
        ):
            raise RenderCompareError(
                "frames A and B must be meshes (Decoded.vertices): the part's pixels come from their face-index pass"
            )
        if ref_a.faces is not None or ref_b.faces is not None:
            raise RenderCompareError(
                "frames A and B must be on the reference topology (the part's pixels come from its triangles);"
                " only candidates may be meshes of their own topology"
            )
        vertices_a = self.renderer.check(ref_a.vertices, "frame A")
        vertices_b = self.renderer.check(ref_b.vertices, "frame B")
        if framing is None:
            framing = framing_of(vertices_a, part)
        pool = _comparison_pool()
        with threads.one_thread():  # as in `score`: frame A goes through AlexNet while B renders
            a = self._side(ref_a, "frame A", framing, vertices_a)
            lpips_a = pool.submit(self.lpips.features, _lpips_images([a.normals]))
            ssim_a = pool.submit(SsimReference, a.normals)
            frame = None if part in NO_ALIGN_PARTS else head_motion.head_frame(vertices_a, part)
            aligned, b_move = (vertices_b, None) if frame is None else head_motion.align_and_measure(frame, vertices_b)
            b = attrs.evolve(self._side(ref_b, "frame B", framing, aligned), head_move=b_move)
            lpips_b = pool.submit(self.lpips.features, _lpips_images([b.normals]))
            ssim_b = pool.submit(SsimReference, b.normals)
            # The halfway mesh calibrates instruction_following (module docstring).
            middle_move = None  # its head's move, where it is given and aligned
            if halfway is None or halfway.vertices is None:
                halfway, middle_vertices = Decoded(), 0.5 * (vertices_a + aligned)
                middle_as_is = None
            else:
                middle_vertices = middle_as_is = self.renderer.check(halfway.vertices, "the halfway reference")
                if frame is not None:
                    middle_vertices, middle_move = head_motion.align_and_measure(frame, middle_vertices)
            reading = 0.0
            if frame is not None and read_from is not None:
                exact_a, exact_b, exact_half = (None if d is None else d.vertices for d in read_from)
                pairs = [(b_move, exact_b)] + ([(middle_move, exact_half)] if middle_move is not None and exact_half is not None else [])
                reading = head_motion.reading_error(self.renderer.check(exact_a, "exact frame A"), part,
                                                    [(m, self.renderer.check(e, "an exact reference")) for m, e in pairs])  # fmt: skip
            middle = self._side(halfway, "the mesh halfway from A to B", framing, middle_vertices)
            lpips_middle = pool.submit(self.lpips.features, _lpips_images([middle.normals]))
            inside = parts.pixel_mask(a.render, part, True, region) | parts.pixel_mask(b.render, part, True, region)
            if not inside.any():
                raise RenderCompareError(
                    f"the part {part!r} is visible in no view of frames A and B ({self.view_config.count} views);"
                    " instruction_following has no pixels to compare"
                )
            # The picture distances on this thread while the halfway mesh is still in AlexNet.
            ssim_a, ssim_b = ssim_a.result(), ssim_b.result()
            change, references, halfway_distances = _picture_references(a, b, middle, inside, (ssim_a, ssim_b))
            lpips_a, lpips_b, lpips_middle = lpips_a.result(), lpips_b.result(), lpips_middle.result()
            inside_lpips = self._lpips_references(
                change, references, halfway_distances, inside, (lpips_a, lpips_b, lpips_middle)
            )
            if a.activations is not None and b.activations is not None:
                references["activation"], halfway_distances["activation"] = activation_references(
                    a.activations, b.activations, middle.activations
                )
        prepared = PreparedReference(
            part=part, a=a, b=b, inside=inside, covered=a.coverage | b.coverage, lpips_a=lpips_a, lpips_b=lpips_b,
            framing=framing, vertices_a=vertices_a, head_frame=frame, b_as_is=None if aligned is vertices_b else ref_b,
            ssim_a=ssim_a, ssim_b=ssim_b, b_change=change, references=references, halfway=halfway_distances,
            head_reading_error=reading,
        )  # fmt: skip
        prepared.lazy["inside_lpips"] = inside_lpips  # the part's mask at LPIPS's layer sizes, for every candidate
        # for the references of meshes of their own topology (`_surface_reference`)
        prepared.lazy.update(middle=middle, b_vertices=vertices_b, middle_as_is=middle_as_is, lpips_middle=lpips_middle)
        _appearance_reference(prepared, middle)
        return prepared

    def _lpips_references(self, change: dict, references: dict, halfway: dict, inside: np.ndarray,
                          lpips_features: tuple):
        """`_picture_references`' LPIPS counterparts added to its dicts, from the three sides'
        features (A, B, the halfway mesh); returns the part's mask at LPIPS's layer sizes."""
        lpips_a, lpips_b, lpips_middle = lpips_features
        change["lpips"] = _layer_maximum(*(self.lpips.layer_maps(features, lpips_a) for features in (lpips_b, lpips_middle)))
        inside_lpips = self.lpips.pull(inside, lpips_b)
        for distances, features in ((references, lpips_a), (halfway, lpips_middle)):  # d(A, B), d(halfway, B)
            distances["lpips"] = max(0.0, self.lpips.distance(features, lpips_b, inside_lpips))
        return inside_lpips

    def _surface_reference(self, prepared: PreparedReference) -> PreparedReference:
        """`prepared` with every normal read from the depth pass (`depth_normals`), made on first
        use: a mesh of its own topology is compared with references whose normals are read the
        way its own are, so that its triangulation does not count as a change of the surface.
        Frame B and the halfway mesh are laid onto frame A's head the way such a mesh is, by the
        skull's surface (`head_motion.align_surface_to_a`), so that frame B itself, given as a
        mesh of its own topology, is laid exactly where its reference is."""
        with self._lock:
            found = prepared.lazy.get("surface")
        if found is not None:
            return found
        lazy = prepared.lazy
        with threads.one_thread():
            b, middle, skull = prepared.b, lazy["middle"], None
            if prepared.head_frame is not None:
                skull = head_motion.skull_surface(prepared.vertices_a, prepared.part)
                faces = self.renderer.reference.faces
                aligned, motion = head_motion.align_surface_to_a(skull, lazy["b_vertices"], faces)
                b = attrs.evolve(self._moved(b, aligned, prepared.framing), head_move=motion)
                if lazy["middle_as_is"] is None:
                    middle_vertices = 0.5 * (prepared.vertices_a + aligned)
                else:
                    middle_vertices = head_motion.align_surface_to_a(skull, lazy["middle_as_is"], faces)[0]
                middle = self._moved(middle, middle_vertices, prepared.framing)
            a, b, middle = (
                attrs.evolve(side, normals=depth_normals(side.depth, side.coverage, self.view_config))
                for side in (prepared.a, b, middle)
            )
            pool = _comparison_pool()
            lpips_features = tuple(pool.map(lambda side: self.lpips.features(_lpips_images([side.normals])), (a, b, middle)))
            ssim_references = tuple(pool.map(lambda side: SsimReference(side.normals), (a, b)))
            change, references, halfway = _picture_references(a, b, middle, prepared.inside, ssim_references)
            inside_lpips = self._lpips_references(change, references, halfway, prepared.inside, lpips_features)
        surface = attrs.evolve(
            prepared, a=a, b=b, lpips_a=lpips_features[0], lpips_b=lpips_features[1], ssim_a=ssim_references[0],
            ssim_b=ssim_references[1], b_change={**prepared.b_change, **change},
            references={**prepared.references, **references}, halfway={**prepared.halfway, **halfway},
            lazy={"inside_lpips": inside_lpips},
        )  # fmt: skip
        if skull is not None:  # its candidates' heads are laid onto frame A's by the skull's surface
            surface.lazy["skull"] = skull
        with self._lock:
            return prepared.lazy.setdefault("surface", surface)

    # -- candidates ---------------------------------------------------------------------------
    def score(self, prepared: PreparedReference, candidates: list[Decoded]) -> list[CandidateScore]:
        """Scores of G candidates, in their order. Meshes of their own topology are scored against
        the references with normals read from depth (`_surface_reference`), the others against
        `prepared` itself."""
        if not candidates:
            return []
        own_topology = [i for i, c in enumerate(candidates) if isinstance(c, Decoded) and c.faces is not None]
        if own_topology:  # compared with references whose normals are read as theirs are
            scores = dict(zip(own_topology, self._score(self._surface_reference(prepared), [candidates[i] for i in own_topology])))
            rest = [i for i in range(len(candidates)) if i not in scores]
            scores.update(zip(rest, self._score(prepared, [candidates[i] for i in rest])))
            return [scores[i] for i in range(len(candidates))]
        return self._score(prepared, candidates)

    def _score(self, prepared: PreparedReference, candidates: list[Decoded]) -> list[CandidateScore]:
        """Scores of G candidates against one set of references.

        Pipelined on a small thread pool, torch on one thread per task: while the next candidate
        renders (Mitsuba keeps about one core busy), the previous one goes through AlexNet (one
        task per view set) and is compared on depth, normals and SSIM; the LPIPS distances
        follow. Each task is single-threaded and independent, so the scores do
        not depend on the scheduling.
        """
        if not candidates:
            return []
        pool = _comparison_pool()
        # One torch thread: the comparisons are many small tensor operations, and on two threads each
        # pays a barrier that costs more than its work (docs/metric.md, "Speed"); it also fixes the
        # float summation order, so scores do not depend on the machine's cores.
        with threads.one_thread():
            sides: list[Side] = []
            pictures, pending, known = [], {}, {}  # known: candidates that are frame B or the halfway mesh

            def alexnet(normals):
                return self.lpips.features(_lpips_images([normals]))

            for i, candidate in enumerate(candidates):
                vertices, motion, surface = None, None, None
                if isinstance(candidate, Decoded) and candidate.vertices is not None and candidate.faces is None:
                    vertices, motion = self._aligned(prepared, self.renderer.check(candidate.vertices, f"candidate {i}"))
                elif isinstance(candidate, Decoded) and candidate.faces is not None:
                    mesh, motion, surface = self._laid_onto_a(prepared, candidate, f"candidate {i}")
                    candidate, vertices = attrs.evolve(candidate, faces=mesh.faces), mesh.vertices
                reused = _rendered_reference(prepared, vertices) if vertices is not None and candidate.faces is None else None
                if reused is not None:  # the very mesh of a reference: its render, features, distances
                    which, side, features_of_side = reused
                    side = attrs.evolve(side, activations=candidate.activations, appearance=candidate.appearance,
                                        head_move=motion)  # fmt: skip
                    pending[i] = _done(features_of_side)
                    if which != "a":
                        known[i] = which
                        pictures.append(_done(_reference_distances(prepared, side, which)))
                else:
                    side = attrs.evolve(self._side(candidate, f"candidate {i}", prepared.framing, vertices), head_move=motion)
                    if surface is not None:
                        side = attrs.evolve(side, surface_residual=self._surface_residual(side, surface, prepared.framing))
                    if side.normals is not None:
                        pending[i] = pool.submit(alexnet, side.normals)
                sides.append(side)
                if i not in known:
                    pictures.append(pool.submit(self._picture_distances, prepared, side))
            rendered = [i for i, s in enumerate(sides) if s.normals is not None]
            features = {i: future.result() for i, future in pending.items()}
            distances = [future.result() for future in pictures]
            inside = prepared.lazy.get("inside_lpips", prepared.inside)

            def lpips_of(i: int) -> tuple[float, float]:
                outside = distances[i][1]
                follow = self.lpips.distance(features[i], prepared.lpips_b, inside)
                own = self.lpips.layer_maps(features[i], prepared.lpips_a)
                beyond = {size: torch.clamp(own[size] - prepared.b_change["lpips"][size], min=0.0) for size in own}
                return follow, self.lpips.masked_layer_mean(beyond, outside, features[i])

            computed = [i for i in rendered if i not in known]
            lpips = dict(zip(computed, pool.map(lpips_of, computed)))
            # d(B, B) is 0 and d(halfway, B) is the prepared one; neither changes A beyond B or halfway.
            lpips.update({i: (0.0 if which == "b" else prepared.halfway["lpips"], 0.0) for i, which in known.items()})
        return [self._finish(prepared, side, *distances[i], lpips.get(i)) for i, side in enumerate(sides)]

    def _b_as_is(self, prepared: PreparedReference) -> tuple[np.ndarray, float]:
        """Frame B's depth as given (not moved onto A's head) and its d(A, B) inside, rendered on
        first use: depth-only candidates cannot be aligned, so they are compared with it."""
        if prepared.b_as_is is None:
            return prepared.b.depth, prepared.references["depth_l1"]
        with self._lock:
            if "depth_b" not in prepared.lazy:
                depth = self._side(prepared.b_as_is, "frame B", prepared.framing).depth
                reference = _masked_mean(_capped(np.abs(depth - prepared.a.depth)), prepared.inside)
                prepared.lazy["depth_b"] = (depth, reference)
        return prepared.lazy["depth_b"]

    def _picture_distances(self, prepared: PreparedReference, cand: Side):
        """Depth L1, normal L1 and SSIM of both dimensions (everything but LPIPS), the
        consistency region, and d(A, B) where it differs from the prepared one (depth maps)."""
        inside, outside = _regions(prepared, cand)
        change, a, b = prepared.b_change, prepared.a, prepared.b
        follow, rest, references, halfway = {}, {}, dict(prepared.references), dict(prepared.halfway)
        depth_b = b.depth
        if cand.normals is None:  # depth maps cannot be aligned: compare with B as it is (same exponent)
            depth_b, references["depth_l1"] = self._b_as_is(prepared)
            halfway["depth_l1"] *= references["depth_l1"] / max(prepared.references["depth_l1"], FLOOR * SCALES["depth_l1"])
        # Per pixel on the regions' pixels only (the same numbers, less work), picked by index:
        # np.take is ~10x faster than indexing with a boolean mask.
        inside_at, outside_at = np.flatnonzero(inside), np.flatnonzero(outside)
        follow["depth_l1"] = _masked_mean(_capped(np.abs(_pick(cand.depth, inside_at) - _pick(depth_b, inside_at))), None)
        rest["depth_l1"] = _beyond(
            _capped(np.abs(_pick(cand.depth, outside_at) - _pick(a.depth, outside_at))), _pick(change["depth"], outside_at)
        )
        if cand.normals is not None:
            follow["normal_l1"] = _masked_mean(_normal_l1(_pick(cand.normals, inside_at), _pick(b.normals, inside_at)), None)
            rest["normal_l1"] = _beyond(
                _normal_l1(_pick(cand.normals, outside_at), _pick(a.normals, outside_at)), _pick(change["normal"], outside_at)
            )
            to_a, to_b = region_ssim(cand.normals, [prepared.ssim_a, prepared.ssim_b], [outside, inside])
            follow["ssim"] = max(0.0, 1.0 - _ssim_mean_by_view(to_b))
            rest["ssim"] = _beyond(_dissimilarity(torch.cat(to_a)), _pick(change["ssim"], outside_at))
        if cand.head_move is not None:  # its head moved against the body, off the way to frame B's
            rest["head_motion"] = _head_motion_cost(prepared, cand, b)
        if cand.surface_residual is not None:  # what ANNY fitted to a mesh did not explain of it
            rest["surface_residual"] = cand.surface_residual
        return {"instruction_following": follow, "consistency": rest}, outside, (references, halfway)

    def _finish(self, prepared: PreparedReference, cand: Side, distances: dict, outside: np.ndarray,
                references: tuple[dict, dict], lpips: tuple[float, float] | None) -> CandidateScore:
        """LPIPS, appearance and activation distances added; the scores."""
        if lpips is not None:
            distances["instruction_following"]["lpips"] = max(0.0, lpips[0])
            distances["consistency"]["lpips"] = max(0.0, lpips[1])
        _add_appearance(distances, prepared, cand, outside)
        if cand.activations is not None and prepared.b.activations is not None and "activation" in references[0]:
            from maskscore_core.speech import agreement

            distances["instruction_following"]["activation"] = float(
                agreement.distance(np.asarray(cand.activations), np.asarray(prepared.b.activations))
            )
        return scores_of(distances, *references)


def _regions(prepared: PreparedReference, cand: Side) -> tuple[np.ndarray, np.ndarray]:
    """(inside, outside) of a candidate: the part's pixels, and every other pixel A, B or the
    candidate covers; a region with no pixel in any view is an error."""
    inside = prepared.inside
    outside = (prepared.covered | cand.coverage) & ~inside
    for dimension, region in (("instruction_following", inside), ("consistency", outside)):
        if not region.any():
            raise RenderCompareError(f"{dimension}: its region holds no pixel in any view")
    return inside, outside


def _rendered_reference(prepared: PreparedReference, vertices: np.ndarray):
    """(which: "a", "b" or "halfway"; its side; its LPIPS features) of the reference whose
    rendered vertices are exactly `vertices`, or None. A frame-pair ladder's rung 1 is the ideal
    edit and its rung 2 the halfway edit, vertex for vertex: the same vertices give the same
    render and the same features, so they are not rendered and run through AlexNet again. Only
    where the reference's normals are its render's own (not read from depth for meshes of their
    own topology, `_surface_reference`)."""
    middle = prepared.lazy.get("middle")
    for which, side, features in (("a", prepared.a, prepared.lpips_a), ("b", prepared.b, prepared.lpips_b),
                                  ("halfway", middle, prepared.lazy.get("lpips_middle"))):  # fmt: skip
        if (side is not None and features is not None and side.render is not None and side.normals is side.render.normals
                and side.render_vertices is not None and side.render_vertices.shape == vertices.shape
                and np.array_equal(side.render_vertices, vertices)):  # fmt: skip
            return which, side, features
    return None


def _head_motion_cost(prepared: PreparedReference, cand: Side, b: Side) -> float:
    """consistency's head_motion distance: how far the candidate's head lies off frame A's way to
    frame B's, past the error the row's references were read with (0 unless read from pixels)."""
    return head_motion.past_reading_error(head_motion.beyond(cand.head_move, b.head_move), prepared.head_reading_error)


def _reference_distances(prepared: PreparedReference, cand: Side, which: str):
    """`RenderCompare._picture_distances` of a candidate that is frame B ("b") or the halfway mesh
    ("halfway") itself, from what `prepare` measured: its distances to B inside are 0 (B) or
    d(halfway, B); outside, its change against A per pixel is one of the two that frame B's change
    is the larger of, so nothing exceeds it (0); its head motion is its own. The same numbers the
    pixels give (tested), without going over them again."""
    _inside, outside = _regions(prepared, cand)
    pictures = ("depth_l1", "normal_l1", "ssim")
    follow = {name: 0.0 if which == "b" else prepared.halfway[name] for name in pictures}
    rest = dict.fromkeys(pictures, 0.0)
    if cand.head_move is not None:
        rest["head_motion"] = _head_motion_cost(prepared, cand, prepared.b)
    return {"instruction_following": follow, "consistency": rest}, outside, (dict(prepared.references), dict(prepared.halfway))


def _done(value) -> concurrent.futures.Future:
    """A future that already holds `value` (a reused reference's features beside computed ones)."""
    future = concurrent.futures.Future()
    future.set_result(value)
    return future


def _picture_references(a: Side, b: Side, middle: Side, inside: np.ndarray, ssim_references: tuple) -> tuple[dict, dict, dict]:
    """Frame B's change against A per pixel, d(A, B) and d(halfway, B) inside, on depth, normals
    and SSIM (LPIPS: `RenderCompare._lpips_references`), from the three sides' renders (normals as
    the sides carry them) and A's and B's `SsimReference`."""
    ssim_a, ssim_b = ssim_references
    # What frame B changes against A, per pixel; the halfway mesh's too, where larger: an
    # outline the edit sweeps across (a turning head's) differs half way, not at either end.
    change = {
        "depth": np.maximum(*(_capped(np.abs(side.depth - a.depth)) for side in (b, middle))),
        "normal": np.maximum(*(_normal_l1(side.normals, a.normals) for side in (b, middle))),
        "ssim": np.maximum(*(_dissimilarity(ssim_a.map(side)) for side in (ssim_b, middle.normals))),
    }
    inside_at = np.flatnonzero(inside)  # the part's pixels picked by index (`_picture_distances`)
    references, halfway = (
        {
            "depth_l1": _masked_mean(_capped(np.abs(_pick(side.depth, inside_at) - _pick(b.depth, inside_at))), None),
            "normal_l1": _masked_mean(_normal_l1(_pick(side.normals, inside_at), _pick(b.normals, inside_at)), None),
            "ssim": max(0.0, 1.0 - _ssim_mean_by_view(region_ssim(side.normals, [ssim_b], [inside])[0])),
        }
        for side in (a, middle)
    )  # d(A, B), d(halfway, B)
    return change, references, halfway


def activation_references(activations_a, activations_b, halfway=None) -> tuple[float, float]:
    """d(A, B) and d(halfway, B) of (T, 52) face activation sequences; the halfway one defaults
    to A's and B's averaged (time-normalised to the longer one, as `speech.agreement.distance`
    compares them)."""
    from maskscore_core.speech import agreement

    a, b = np.asarray(activations_a, dtype=np.float64), np.asarray(activations_b, dtype=np.float64)
    if halfway is None:
        length = max(len(a), len(b))
        halfway = 0.5 * (agreement.time_normalise(a, length) + agreement.time_normalise(b, length))
    return float(agreement.distance(a, b)), float(agreement.distance(np.asarray(halfway, dtype=np.float64), b))


def _capped(depth_difference: np.ndarray) -> np.ndarray:
    return np.minimum(depth_difference, np.float32(DEPTH_CAP))


def _layer_maximum(first: dict, second: dict) -> dict:
    return {size: torch.maximum(first[size], second[size]) for size in first}


def _dissimilarity(ssim_map) -> np.ndarray:
    """1 - SSIM per pixel, never below 0 (rounding can lift SSIM a hair above 1)."""
    return np.maximum(1.0 - np.asarray(ssim_map, dtype=np.float64), 0.0)


def _beyond(candidate: np.ndarray, allowed: np.ndarray, region: np.ndarray | None = None) -> float:
    """Mean over `region` (all of the arrays when None: pixels already picked) of how far the
    candidate's per-pixel change exceeds frame B's (the region's pixels taken before they are
    widened to float64: the same numbers, less work)."""
    candidate, allowed = np.asarray(candidate), np.asarray(allowed)
    if region is not None:
        candidate, allowed = candidate[region], allowed[region]
    excess = candidate.astype(np.float64) - allowed.astype(np.float64)
    return float(np.maximum(excess, 0.0).mean())


def _pick(array: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The pixels `at` (flat indices into (N, H, W), as `np.flatnonzero(mask)` gives them) of an
    (N, H, W) or (N, H, W, C) array: `array[mask]`, in the same order."""
    array = np.asarray(array)
    return np.take(array.reshape(-1, *array.shape[3:]), at, axis=0)


def _normal_l1(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Per-pixel mean |difference| of (..., 3) normals, the same bits as `.mean(axis=-1)`."""
    difference = np.abs(first - second)
    return (difference[..., 0] + difference[..., 1] + difference[..., 2]) / np.float32(3.0)


def _ssim_mean_by_view(values: list) -> float:
    """`image_metrics.masked_ssim` over every view's region pixels, from `image_metrics.region_ssim`'s
    per-view values (SSIM windows never cross views, so the sums are the same)."""
    total, count = 0.0, 0
    for found in values:
        if len(found):
            total += float(found.sum() / len(found)) * len(found)
            count += len(found)
    return total / count


def _comparison_pool() -> threads.OneThreadPool:
    """The tasks of `RenderCompare.score` and `prepare` (`threads.wanted()` at once, one torch
    thread each): faster than one after another or on two torch threads (docs/metric.md, "Speed").
    One pool for the process (`threads.kept_pool`): rows scored at once share it, and no task
    waits on another, so they cannot block each other."""
    return threads.kept_pool("maskscore-compare")


def _masked_mean(values: np.ndarray, mask: np.ndarray | None) -> float:
    """Mean of `values` where `mask` is True (all of `values` when mask is None), summed in
    float64 so that the result does not hang on float32 rounding order."""
    values = np.asarray(values)
    return float((values if mask is None else values[mask]).astype(np.float64).mean())


def _lpips_images(normal_sets: list[np.ndarray]) -> torch.Tensor:
    from maskscore_core.metric.image_metrics import normals_to_images

    return normals_to_images(np.concatenate(normal_sets, axis=0))

def appearance_regions(prepared: PreparedReference, inside: np.ndarray, outside: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where the shaded pictures are compared: (edited region, the rest of the picture).

    The edited region is the part's pixels; when frame B's backdrop colour differs from frame A's
    (a background_change), the backdrop too: every pixel neither frame covers. The rest is every
    other pixel of the picture, backdrop included, so a look changed where it was not asked
    (a backdrop, a wrong part's colour or light) costs consistency.
    """
    a, b = prepared.a.appearance, prepared.b.appearance
    edited = inside
    if a is not None and b is not None and a.background != b.background:
        edited = inside | ~prepared.covered
    return edited, ~edited


def _appearance_reference(prepared: PreparedReference, middle: Side) -> None:
    """Frames A's and B's shaded pictures, B's change against A per pixel, d(A, B) and
    d(halfway, B) in the edited region, when both carry a look."""
    look_a, look_b = prepared.a.appearance, prepared.b.appearance
    if look_a is None or look_b is None:
        return
    picture_a, picture_b = shade(prepared.a.render, look_a), shade(prepared.b.render, look_b)
    edited, _rest = appearance_regions(prepared, prepared.inside, None)
    change = np.abs(picture_b - picture_a).mean(axis=-1)
    prepared.b_change.update(picture_a=picture_a, picture_b=picture_b, appearance=change)
    if edited.any():
        prepared.references["appearance_l1"] = _masked_mean(change, edited)
        if middle.appearance is not None:  # the halfway reference's own look
            halfway = np.abs(shade(middle.render, middle.appearance) - picture_b).mean(axis=-1)
            prepared.halfway["appearance_l1"] = _masked_mean(halfway, edited)
        else:  # the mean of A's and B's pictures: exactly half of d(A, B) from B
            prepared.halfway["appearance_l1"] = 0.5 * prepared.references["appearance_l1"]


def _add_appearance(distances, prepared: PreparedReference, cand: Side, outside) -> None:
    """Add `appearance_l1` (mean absolute RGB difference of the shaded pictures,
    `appearance.shade`) to both dimensions when the candidate and frames A and B all carry an
    appearance and the candidate was rendered from vertices; otherwise leave the geometric
    distances alone. Consistency counts, as for geometry, only the change beyond frame B's."""
    if cand.appearance is None or cand.render is None or "appearance" not in prepared.b_change:
        return
    edited, rest = appearance_regions(prepared, prepared.inside, outside)
    picture = shade(cand.render, cand.appearance)
    change = prepared.b_change
    if edited.any():
        distances["instruction_following"]["appearance_l1"] = _masked_mean(
            np.abs(picture - change["picture_b"]).mean(axis=-1), edited
        )
    if rest.any():
        distances["consistency"]["appearance_l1"] = _beyond(
            np.abs(picture - change["picture_a"]).mean(axis=-1), change["appearance"], rest
        )
