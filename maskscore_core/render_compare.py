"""The universal metric: render candidates and references, compare inside and outside the part.

Regions (per view, per pixel):
- inside: pixels showing the edited part's region in frame A's render or in frame B's render
  (union), from the face-index pass (`parts.pixel_mask(..., region=True)`): the part plus what
  its own facial actions deform (`parts.region_vertex_ids`: opening the mouth carries the chin,
  which is the edit, not a change of the rest). instruction_following compares the candidate
  with frame B there.
- outside: every other pixel covered by A, B or the candidate. consistency compares the
  candidate with frame A there (a candidate that grows into the background is penalised).

Distances (each a mean over the region's pixels of all views together):
- depth_l1: |depth| difference in metres, capped per pixel at DEPTH_CAP (background depth is 0,
  so silhouette changes count, but as DEPTH_CAP rather than the full camera distance);
- normal_l1: mean absolute difference of the world-space normal components;
- ssim: 1 - SSIM of the normal maps (data range 2);
- lpips: LPIPS (AlexNet, v0.1) of the normal maps as [-1, 1] images, one forward per image,
  spatial output averaged inside / outside (candidates are never run through LPIPS twice);
- activation (instruction_following only, where the candidate and frame B both carry face
  activations): face bone rotation agreement distance (`speech.agreement.distance`).

Head alignment: real frame pairs differ by a small head motion besides the part (edits allow up
to ~1 degree per head-carrying bone), and for a small part (an eyebrow moves a few millimetres)
that rigid motion would dominate every pixel of the part. So frame B is first moved rigidly onto
frame A by the head's own motion (`head_motion`: a least-squares fit on the vertices the head
carries, net of facial actions and jaw and eye rotations), i.e. instruction_following compares
the candidate with frame B's part as it sits on frame A's head; every candidate rendered from
vertices is aligned the same way for instruction_following, so frame B itself still scores 1
there. An alignment that moves the head by less than ALIGN_EPSILON_M is skipped, so a candidate
whose head did not move (every frame-pair ladder rung but the wrong subject) costs one render
and one LPIPS forward; one whose head moved costs a second of each. Consistency uses the
candidate as it is: moving the head is a change of "the rest". Depth-only candidates cannot be
aligned. Not done for the neck, whose bones carry the head: there the head's motion is the
edit. Instead, for the neck, consistency compares each candidate with frame A whose head has
been carried along rigidly to the candidate's head (each vertex moved by its head skinning
weight), so that turning the head as the neck edit demands is not counted as changing "the
rest" (again only re-rendered where that moves the head).

Scores: each distance d maps to exp(-d / SCALES[name]) in (0, 1], 1 for d = 0, strictly
decreasing. A dimension's score is the WEIGHTS-weighted mean of the scores of the distances it
has (depth-only candidates have only depth_l1). overall = OVERALL_WEIGHTS-weighted mean of
instruction_following and consistency. docs/metric.md states the numbers and why.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import math
import threading

import attrs
import numpy as np
import torch

from . import head_motion, threads
from .image_metrics import SsimReference, masked_mean
from .records import CandidateScore, Decoded
from .render import RenderResult, get_renderer
from .views import ViewConfig

# A distance equal to its scale scores exp(-1) = 0.37. Scales sit near the distance of a
# wrong-subject candidate on the default views, so the ladder spreads over (0, 1].
SCALES: dict[str, float] = {
    "depth_l1": 0.02,  # metres
    "normal_l1": 0.1,
    "ssim": 0.25,
    "lpips": 0.1,
    "activation": 0.1,
    "appearance_l1": 0.1,  # mean |RGB| difference of shaded pictures, colours in [0, 1]
}
# Per-pixel depth differences are capped: a silhouette pixel that flips between the mesh and the
# background (depth 0) would otherwise count as the full camera distance (~0.5 m), so sub-pixel
# shifts of the outline would outweigh real changes of the surface.
DEPTH_CAP = 0.05  # metres
WEIGHTS: dict[str, float] = {
    "depth_l1": 1.0, "normal_l1": 1.0, "ssim": 1.0, "lpips": 1.0, "activation": 1.0, "appearance_l1": 1.0,
}  # fmt: skip
OVERALL_WEIGHTS: dict[str, float] = {"instruction_following": 0.5, "consistency": 0.5}

NO_ALIGN_PARTS = ("neck",)
# An alignment that moves no vertex of the head further than this is skipped (no re-render): a
# quarter of a millimetre is about a fifth of a pixel at the default framing (0.6 m, 30 degrees,
# 256 px). Only the head's vertices count, since the cameras frame the head: a rotation too small
# to see there still moves the feet, 1.5 m away, by more.
ALIGN_EPSILON_M = 2.5e-4
HEAD_ACCESSORY_PARTS = ("headwear", "eyewear", "earwear")

DIMENSION_PREFIX = {"instruction_following": "if", "consistency": "cons"}


class RenderCompareError(ValueError):
    """Inputs the metric cannot compare (nothing to render, wrong map sizes, invisible part)."""


@functools.cache
def _head_weights() -> np.ndarray:
    """(V,) how much each reference-mesh vertex is carried by the head: its skinning weight on
    the head's bones (1 for accessories worn on the head, 0 for the others)."""
    from .reference_mesh import get_reference_mesh

    mesh = get_reference_mesh()
    out = np.zeros(mesh.vertex_count)
    out[: mesh.anny_vertex_count] = mesh.body.head_weights
    for slot in mesh.slots:
        if slot.part in HEAD_ACCESSORY_PARTS:
            start, stop = mesh.slot_ranges[slot.name]
            out[start:stop] = 1.0
    return out


def distance_score(name: str, distance: float) -> float:
    """The documented monotone map from a raw distance to a score in (0, 1]."""
    if not math.isfinite(distance) or distance < 0:
        raise RenderCompareError(f"distance {name} = {distance!r} is not a finite non-negative number")
    return math.exp(-distance / SCALES[name])


def combine(distances: dict[str, float]) -> float:
    """Weighted mean of the per-distance scores of one dimension."""
    if not distances:
        raise RenderCompareError("no distance to combine into a score")
    total = sum(WEIGHTS[name] for name in distances)
    return sum(WEIGHTS[name] * distance_score(name, d) for name, d in sorted(distances.items())) / total


@attrs.frozen(eq=False)
class Side:
    """One reference or candidate in render space: depth always; normals and LPIPS features
    only where it was rendered from vertices."""

    depth: np.ndarray  # (N, H, W) float32
    coverage: np.ndarray  # (N, H, W) bool
    normals: np.ndarray | None = None  # (N, H, W, 3)
    render: RenderResult | None = None
    activations: np.ndarray | None = None
    render_vertices: np.ndarray | None = None  # the validated vertices it was rendered from
    appearance: object | None = None  # records.Appearance: its look, where the modality carries one


@attrs.frozen(eq=False)
class PreparedReference:
    """Frames A and B rendered once, their LPIPS features, and the part's pixel regions."""

    part: str
    a: Side
    b: Side
    inside: np.ndarray  # (N, H, W) bool: the part's pixels in A or B
    covered: np.ndarray  # (N, H, W) bool: pixels covered in A or B
    lpips_a: object | None  # image_metrics.LpipsFeatures of A's normals (N images)
    lpips_b: object | None
    vertices_a: np.ndarray | None = None  # frame A's validated vertices (mesh references)
    head_frame: object | None = None  # head_motion.HeadFrame of frame A (mesh references)
    b_as_is: Decoded | None = None  # frame B as given, when `b` is B moved onto A's head
    ssim_a: object | None = None  # image_metrics.SsimReference of A's normals, filtered once per row
    lazy: dict = attrs.field(factory=dict)  # renders made only when a candidate needs them


class RenderCompare:
    """Scores candidates of one edit against frames A and B (see module docstring)."""

    def __init__(self, view_config: ViewConfig | None = None) -> None:
        self.view_config = view_config or ViewConfig()
        self.renderer = get_renderer(self.view_config)
        self._lpips = None
        self._lock = threading.Lock()

    @property
    def lpips(self):
        from .image_metrics import get_lpips

        with self._lock:
            if self._lpips is None:
                self._lpips = get_lpips()
            return self._lpips

    # -- turning a Decoded into render space ------------------------------------------------
    def _side(self, decoded: Decoded, what: str) -> Side:
        if not isinstance(decoded, Decoded):
            raise RenderCompareError(f"{what}: expected a records.Decoded, got {type(decoded).__name__}")
        if decoded.vertices is not None:
            vertices = self.renderer.check(decoded.vertices, what)
            result = self.renderer.render(vertices, what)
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

    # -- references ---------------------------------------------------------------------------
    def prepare(self, ref_a: Decoded, ref_b: Decoded, part: str, *, region: np.ndarray | None = None) -> PreparedReference:
        """Render frames A and B once, take their LPIPS features once, find the part's pixels."""
        from . import parts

        parts.check_active(part)
        pool = _comparison_pool()
        with _one_torch_thread():  # as in `score`: frame A goes through AlexNet while B renders
            a = self._side(ref_a, "frame A")
            if a.render is None:
                raise RenderCompareError(
                    "frames A and B must be meshes (Decoded.vertices): the part's pixels come from their face-index pass"
                )
            lpips_a = pool.submit(self.lpips.features, _lpips_images([a.normals]))
            ssim_a = pool.submit(SsimReference, a.normals)
            # Frame B is rendered once: moved onto A's head when its head moved, as it is
            # otherwise (B as it is is rendered later only if a depth-only candidate needs it).
            b, b_as_is, frame = None, None, None
            if isinstance(ref_b, Decoded) and ref_b.vertices is not None:
                vertices_b = self.renderer.check(ref_b.vertices, "frame B")
                frame = head_motion.head_frame(a.render_vertices, part)
                if part not in NO_ALIGN_PARTS:
                    aligned = head_motion.align_to_a(frame, vertices_b)
                    if head_motion.moves_head(frame, vertices_b, aligned, ALIGN_EPSILON_M):
                        b, b_as_is = self._side(attrs.evolve(ref_b, vertices=aligned), "frame B"), ref_b
            if b is None:
                b = self._side(ref_b, "frame B")
            if b.render is None:
                raise RenderCompareError(
                    "frames A and B must be meshes (Decoded.vertices): the part's pixels come from their face-index pass"
                )
            lpips_b = pool.submit(self.lpips.features, _lpips_images([b.normals]))
            inside = parts.pixel_mask(a.render, part, True, region) | parts.pixel_mask(b.render, part, True, region)
            if not inside.any():
                raise RenderCompareError(
                    f"the part {part!r} is visible in no view of frames A and B ({self.view_config.count} views);"
                    " instruction_following has no pixels to compare"
                )
            lpips_a, lpips_b, ssim_a = lpips_a.result(), lpips_b.result(), ssim_a.result()
        return PreparedReference(
            part=part, a=a, b=b, inside=inside, covered=a.coverage | b.coverage, lpips_a=lpips_a, lpips_b=lpips_b,
            vertices_a=a.render_vertices, head_frame=frame, b_as_is=b_as_is, ssim_a=ssim_a,
        )  # fmt: skip

    # -- candidates ---------------------------------------------------------------------------
    def score(self, prepared: PreparedReference, candidates: list[Decoded]) -> list[CandidateScore]:
        """Scores of G candidates.

        Pipelined on a small thread pool, torch on one thread per task: while the next candidate
        renders (Mitsuba keeps about one core busy), the previous one goes through AlexNet (one
        task per view set) and is compared on depth, normals and SSIM; the LPIPS distances
        follow. Each task is single-threaded and independent, so the scores do
        not depend on the scheduling.
        """
        if not candidates:
            return []
        pool = _comparison_pool()
        with _one_torch_thread():
            sides: list[Side] = []
            follow: dict[int, Side] = {}  # instruction_following: the candidate in A's head frame
            own_a: dict[int, Side] = {}  # consistency (neck): A with its head carried to the candidate's
            pictures, pending = [], {}

            def alexnet(normals):
                return self.lpips.features(_lpips_images([normals]))

            for i, candidate in enumerate(candidates):
                side = self._side(candidate, f"candidate {i}")
                sides.append(side)
                if side.normals is not None:
                    if prepared.head_frame is not None:
                        self._follow_head(prepared, i, side, follow, own_a)
                    for key, picture in (("as_is", side), ("aligned", follow.get(i)), ("own_a", own_a.get(i))):
                        if picture is not None:
                            pending[key, i] = pool.submit(alexnet, picture.normals)
                pictures.append(pool.submit(self._picture_distances, prepared, follow.get(i, side), side,
                                            own_a.get(i, prepared.a)))  # fmt: skip
            rendered = [i for i, s in enumerate(sides) if s.normals is not None]
            features = {key: future.result() for key, future in pending.items()}
            distances = [future.result() for future in pictures]

            def lpips_of(i: int) -> tuple[float, float]:
                as_is, outside = features[("as_is", i)], distances[i][1]
                return (self.lpips.distance(features.get(("aligned", i), as_is), prepared.lpips_b, prepared.inside),
                        self.lpips.distance(as_is, features.get(("own_a", i), prepared.lpips_a), outside))  # fmt: skip

            lpips = dict(zip(rendered, pool.map(lpips_of, rendered)))
        return [
            self._finish(prepared, follow.get(i, side), side, own_a.get(i, prepared.a), *distances[i], lpips.get(i))
            for i, side in enumerate(sides)
        ]

    def _follow_head(self, prepared: PreparedReference, i: int, side: Side, follow: dict, own_a: dict) -> None:
        """Render candidate i in frame A's head frame (or, for the neck, frame A carried to its
        head) where that moves the head by more than ALIGN_EPSILON_M."""
        vertices = side.render_vertices
        if prepared.part in NO_ALIGN_PARTS:
            carried = head_motion.carry_a_to(prepared.head_frame, prepared.vertices_a, vertices, _head_weights())
            if head_motion.moves_head(prepared.head_frame, prepared.vertices_a, carried, ALIGN_EPSILON_M):
                own_a[i] = self._side(Decoded(vertices=carried), "frame A following the candidate's head")
        else:
            aligned = head_motion.align_to_a(prepared.head_frame, vertices)
            if head_motion.moves_head(prepared.head_frame, vertices, aligned, ALIGN_EPSILON_M):
                follow[i] = self._side(Decoded(vertices=aligned, activations=side.activations), f"candidate {i}")

    def _depth_b_as_is(self, prepared: PreparedReference) -> np.ndarray:
        """Frame B's depth as given (not moved onto A's head), rendered on first use."""
        if prepared.b_as_is is None:
            return prepared.b.depth
        with self._lock:
            if "depth_b" not in prepared.lazy:
                prepared.lazy["depth_b"] = self._side(prepared.b_as_is, "frame B").depth
        return prepared.lazy["depth_b"]

    def _picture_distances(self, prepared: PreparedReference, cand_if: Side, cand: Side, ref_a: Side):
        """Depth L1, normal L1 and SSIM of both dimensions (everything but LPIPS), and the
        consistency region."""
        inside = prepared.inside
        outside = (prepared.b.coverage | ref_a.coverage | cand.coverage) & ~inside
        distances: dict[str, dict[str, float]] = {"instruction_following": {}, "consistency": {}}
        for dimension, side, ref, region in (
            ("instruction_following", cand_if, prepared.b, inside),
            ("consistency", cand, ref_a, outside),
        ):
            if not region.any():
                raise RenderCompareError(f"{dimension}: its region holds no pixel in any view")
            found = distances[dimension]
            ref_depth = ref.depth
            if dimension == "instruction_following" and side.render is None:
                ref_depth = self._depth_b_as_is(prepared)  # depth maps cannot be aligned: compare with B as it is
            found["depth_l1"] = _masked_mean(np.minimum(np.abs(side.depth[region] - ref_depth[region]), DEPTH_CAP), None)
            if side.normals is not None:
                found["normal_l1"] = _masked_mean(np.abs(side.normals[region] - ref.normals[region]).mean(axis=-1), None)
                if ref is prepared.a:  # consistency against frame A itself: its filtered planes are shared
                    ssim = masked_mean(prepared.ssim_a.map(side.normals), region)
                else:
                    ssim = _masked_ssim_by_view(side.normals, ref.normals, region)
                found["ssim"] = max(0.0, 1.0 - ssim)
        return distances, outside

    def _finish(self, prepared: PreparedReference, cand_if: Side, cand: Side, ref_a: Side, distances: dict,
                outside: np.ndarray, lpips: tuple[float, float] | None) -> CandidateScore:
        """LPIPS, appearance and activation distances added; the scores."""
        if lpips is not None:
            distances["instruction_following"]["lpips"] = max(0.0, lpips[0])
            distances["consistency"]["lpips"] = max(0.0, lpips[1])
        _add_appearance(distances, prepared, cand_if, cand, ref_a, prepared.inside, outside)
        if cand.activations is not None and prepared.b.activations is not None:
            from .speech import agreement

            distances["instruction_following"]["activation"] = float(
                agreement.distance(np.asarray(cand.activations), np.asarray(prepared.b.activations))
            )
        scores = {dim: combine(found) for dim, found in distances.items()}
        overall = sum(OVERALL_WEIGHTS[d] * scores[d] for d in scores) / sum(OVERALL_WEIGHTS.values())
        flat = {
            f"{DIMENSION_PREFIX[dim]}.{name}": float(value)
            for dim, found in distances.items()
            for name, value in found.items()
        }
        return CandidateScore(
            instruction_following=float(scores["instruction_following"]),
            consistency=float(scores["consistency"]),
            overall=float(overall),
            distances=dict(sorted(flat.items())),
        )


@contextlib.contextmanager
def _one_torch_thread():
    """Run the comparisons on one torch thread.

    They are many small tensor operations (SSIM planes, LPIPS distances, masks): on two threads
    each one pays a barrier, which on a busy 2-core machine cost 2-7x their work (measured);
    AlexNet's convolutions, which do gain from threads, run outside. Fixing the thread count
    here also fixes the float summation order, so scores do not depend on the machine's cores.
    Not thread-safe against other code changing torch's thread count at the same time.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@functools.cache
def _comparison_pool() -> concurrent.futures.ThreadPoolExecutor:
    """The tasks of `RenderCompare.score` and `prepare` (`threads.wanted()` at once, one torch
    thread each). Measured on 2 idle cores, comparing 5 candidates: 0.19 s on the pool against
    0.28 s one after another and 0.22 s on two torch threads."""
    return concurrent.futures.ThreadPoolExecutor(max_workers=threads.wanted(), thread_name_prefix="maskscore-compare")


def _masked_ssim_by_view(a: np.ndarray, b: np.ndarray, mask: np.ndarray) -> float:
    """`image_metrics.masked_ssim` over all views' masked pixels, computed view by view.

    The same number (SSIM windows never cross views), but each call filters only that view's
    bounding box of the mask instead of the box spanning every view, which is 5-40x cheaper.
    """
    from .image_metrics import masked_ssim

    total, count = 0.0, 0
    for view in np.flatnonzero(mask.any(axis=(1, 2))):
        pixels = int(mask[view].sum())
        total += masked_ssim(a[view : view + 1], b[view : view + 1], mask[view : view + 1]) * pixels
        count += pixels
    return total / count


def _masked_mean(values: np.ndarray, mask: np.ndarray | None) -> float:
    """Mean of `values` where `mask` is True (all of `values` when mask is None), summed in
    float64 so that the result does not hang on float32 rounding order."""
    values = np.asarray(values, dtype=np.float64)
    return float((values if mask is None else values[mask]).mean())


def _lpips_images(normal_sets: list[np.ndarray]) -> torch.Tensor:
    from .image_metrics import normals_to_images

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


def _add_appearance(distances, prepared: PreparedReference, cand_if: Side, cand: Side, ref_a: Side, inside, outside) -> None:
    """Add `appearance_l1` (mean absolute RGB difference of the shaded pictures,
    `appearance.shade`) to both dimensions when the candidate and frames A and B all carry an
    appearance and were rendered from vertices; otherwise leave the geometric distances alone.

    instruction_following shades the candidate in frame A's head frame (as compared with B);
    consistency shades it as it is, against frame A (for the neck: frame A carried along to the
    candidate's head, with frame A's look)."""
    from .appearance import shade

    look, look_a, look_b = cand.appearance, prepared.a.appearance, prepared.b.appearance
    if look is None or look_a is None or look_b is None:
        return
    if cand.render is None or cand_if.render is None or ref_a.render is None or prepared.b.render is None:
        return
    edited, rest = appearance_regions(prepared, inside, outside)
    pairs = (
        ("instruction_following", shade(cand_if.render, look), shade(prepared.b.render, look_b), edited),
        ("consistency", shade(cand.render, look), shade(ref_a.render, look_a), rest),
    )
    for dimension, picture, reference, region in pairs:
        if region.any():
            distances[dimension]["appearance_l1"] = _masked_mean(np.abs(picture[region] - reference[region]).mean(axis=-1), None)
