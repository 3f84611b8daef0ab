"""The universal metric: render candidates and references, compare inside and outside the part.

Regions (per view, per pixel):
- inside: pixels showing the edited part in frame A's render or in frame B's render (union),
  from the face-index pass (`parts.pixel_mask`). instruction_following compares the candidate
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

Scores: each distance d maps to exp(-d / SCALES[name]) in (0, 1], 1 for d = 0, strictly
decreasing. A dimension's score is the WEIGHTS-weighted mean of the scores of the distances it
has (depth-only candidates have only depth_l1). overall = OVERALL_WEIGHTS-weighted mean of
instruction_following and consistency. docs/metric.md states the numbers and why.
"""

from __future__ import annotations

import math
import threading

import attrs
import numpy as np
import torch

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
}
# Per-pixel depth differences are capped: a silhouette pixel that flips between the mesh and the
# background (depth 0) would otherwise count as the full camera distance (~0.5 m), so sub-pixel
# shifts of the outline would outweigh real changes of the surface.
DEPTH_CAP = 0.05  # metres
WEIGHTS: dict[str, float] = {"depth_l1": 1.0, "normal_l1": 1.0, "ssim": 1.0, "lpips": 1.0, "activation": 1.0}
OVERALL_WEIGHTS: dict[str, float] = {"instruction_following": 0.5, "consistency": 0.5}

DIMENSION_PREFIX = {"instruction_following": "if", "consistency": "cons"}


class RenderCompareError(ValueError):
    """Inputs the metric cannot compare (nothing to render, wrong map sizes, invisible part)."""


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
            result = self.renderer.render(decoded.vertices, what)
            return Side(result.depth, result.coverage, result.normals, result, decoded.activations)
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
    def prepare(self, ref_a: Decoded, ref_b: Decoded, part: str) -> PreparedReference:
        """Render frames A and B once, take their LPIPS features once, find the part's pixels."""
        from . import parts

        parts.check_active(part)
        a = self._side(ref_a, "frame A")
        b = self._side(ref_b, "frame B")
        if a.render is None or b.render is None:
            raise RenderCompareError(
                "frames A and B must be meshes (Decoded.vertices): the part's pixels come from their face-index pass"
            )
        inside = parts.pixel_mask(a.render, part) | parts.pixel_mask(b.render, part)
        if not inside.any():
            raise RenderCompareError(
                f"the part {part!r} is visible in no view of frames A and B ({self.view_config.count} views);"
                " instruction_following has no pixels to compare"
            )
        features = self.lpips.features(_lpips_images([a.normals, b.normals]))
        n = self.view_config.count
        lpips_a, lpips_b = _split_features(features, [n, n])
        return PreparedReference(
            part=part, a=a, b=b, inside=inside, covered=a.coverage | b.coverage, lpips_a=lpips_a, lpips_b=lpips_b
        )

    # -- candidates ---------------------------------------------------------------------------
    def score(self, prepared: PreparedReference, candidates: list[Decoded]) -> list[CandidateScore]:
        """Scores of G candidates; rendered candidates share one LPIPS forward."""
        if not candidates:
            return []
        sides = [self._side(c, f"candidate {i}") for i, c in enumerate(candidates)]
        rendered = [i for i, s in enumerate(sides) if s.normals is not None]
        lpips_maps: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        if rendered:
            lp = self.lpips
            feats = lp.features(_lpips_images([sides[i].normals for i in rendered]))
            to_b = lp.distance_map(feats, prepared.lpips_b)
            to_a = lp.distance_map(feats, prepared.lpips_a)
            n = self.view_config.count
            for k, i in enumerate(rendered):
                lpips_maps[i] = (to_b[k * n : (k + 1) * n], to_a[k * n : (k + 1) * n])
        return [self._score_one(prepared, side, lpips_maps.get(i)) for i, side in enumerate(sides)]

    def _score_one(self, prepared: PreparedReference, cand: Side, lpips_maps) -> CandidateScore:
        from .image_metrics import masked_ssim

        inside = prepared.inside
        outside = (prepared.covered | cand.coverage) & ~inside
        distances: dict[str, dict[str, float]] = {"instruction_following": {}, "consistency": {}}
        for dimension, ref, region, lpips_map in (
            ("instruction_following", prepared.b, inside, None if lpips_maps is None else lpips_maps[0]),
            ("consistency", prepared.a, outside, None if lpips_maps is None else lpips_maps[1]),
        ):
            if not region.any():
                raise RenderCompareError(f"{dimension}: its region holds no pixel in any view")
            found = distances[dimension]
            found["depth_l1"] = _masked_mean(np.minimum(np.abs(cand.depth[region] - ref.depth[region]), DEPTH_CAP), None)
            if cand.normals is not None:
                found["normal_l1"] = _masked_mean(np.abs(cand.normals[region] - ref.normals[region]).mean(axis=-1), None)
                # masked_ssim filters only the region's bounding box (plus the window's reach).
                found["ssim"] = max(0.0, 1.0 - masked_ssim(cand.normals, ref.normals, region))
                found["lpips"] = max(0.0, float(lpips_map[torch.from_numpy(region)].to(torch.float64).mean()))
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


def _masked_mean(values: np.ndarray, mask: np.ndarray | None) -> float:
    """Mean of `values` where `mask` is True (all of `values` when mask is None), summed in
    float64 so that the result does not hang on float32 rounding order."""
    values = np.asarray(values, dtype=np.float64)
    return float((values if mask is None else values[mask]).mean())


def _lpips_images(normal_sets: list[np.ndarray]) -> torch.Tensor:
    from .image_metrics import normals_to_images

    return normals_to_images(np.concatenate(normal_sets, axis=0))


def _split_features(features, sizes: list[int]):
    from .image_metrics import LpipsFeatures

    out, start = [], 0
    for size in sizes:
        out.append(
            LpipsFeatures(layers=tuple(l[start : start + size] for l in features.layers), image_size=features.image_size)
        )
        start += size
    return out
