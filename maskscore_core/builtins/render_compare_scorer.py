"""Built-in scorer plugin `render-compare`: the universal metric behind the `score` hook.

For one edit instance it asks the candidates' modality plugin for frames A and B
(`decode_reference`) and for each candidate's decoded form (`decode_to_mesh`), then scores them
with `render_compare.RenderCompare`, which is built once per run and view config and shared
through `ctx.shared`.

Views come from the run's config: `ctx.config["views"]` (default 8) cameras of
`ctx.config["resolution"]` (default 256) pixels, the same keys the depth plugin reads.

Two modality shapes need help here:
- a reference without vertices (depth: the maps are already the render of the frame's mesh)
  is re-made from the instance's frame state on the reference mesh, because the part's pixels
  come from the face-index pass of a mesh render;
- clips (video: `Decoded.frames`, one vertex array per sampled frame) are scored frame by frame
  against the references' frames and the scores and distances averaged; the face activation
  distance is taken once on the whole sequences. Each frame is scored with its clip's look
  (`Decoded.appearance`: one per clip, the video plugin refuses clips whose look changes), so
  the appearance task types are scored on the shaded pictures as for meshes.
"""

from __future__ import annotations

import attrs
import numpy as np

from maskscore_core import Scorer, hookimpl
from maskscore_core.edits.ladder import edit_fraction, ideal_edit
from maskscore_core.plugin.records import CandidateScore, Decoded, PartMask
from maskscore_core.dataset.reward_tables import view_config
from maskscore_core.metric.framing import framing_of, row_framing
from maskscore_core.plugin import manager as plugins
from maskscore_core.plugin.context import RunConfig

NAME = "render-compare"


class RenderCompareScorerError(ValueError):
    """Candidates or references the render-compare scorer cannot put side by side."""


@hookimpl
def register_scorers(register):
    # Two rows at once: a row alone leaves a core idle at its ends (dataset/rows_in_flight.py).
    register(Scorer(NAME, "render-and-compare through the ANNY mesh: depth, normals, SSIM, LPIPS in the part's region",
                    rows_in_flight=2))  # fmt: skip


def view_config_of(ctx):
    return view_config(ctx)


def render_compare_of(ctx):
    """The run's RenderCompare for its views (built once, shared by every plugin)."""
    from maskscore_core.metric.render_compare import RenderCompare

    config = view_config_of(ctx)
    if ctx is None:
        return RenderCompare(config)
    return ctx.shared(f"render-compare:{config.count}x{config.resolution}", lambda: RenderCompare(config))


def _with_vertices(reference: Decoded, target) -> Decoded:
    if reference.vertices is not None:
        return reference
    from maskscore_core.body.reference_mesh import get_reference_mesh

    vertices = get_reference_mesh().vertices([target.state])[0]
    return Decoded(vertices=vertices, activations=reference.activations)


def _exact_reference(modality: str, instance, which: str, read: Decoded, ctx) -> Decoded:
    """The reference `read` was read from pixels for, exactly: a clip's frames sampled as its
    modality samples them (`decode_reference` without `pixel_references`), one frame's the
    reference mesh of its state."""
    if read.frames is not None:
        return plugins.call("decode_reference", modality, modality=modality, instance=instance, which=which, ctx=ctx)
    return _with_vertices(Decoded(), getattr(instance, which))


def _mean_scores(per_frame: list[CandidateScore]) -> CandidateScore:
    keys = sorted(per_frame[0].distances)
    return CandidateScore(
        instruction_following=float(np.mean([s.instruction_following for s in per_frame])),
        consistency=float(np.mean([s.consistency for s in per_frame])),
        overall=float(np.mean([s.overall for s in per_frame])),
        distances={k: float(np.mean([s.distances[k] for s in per_frame])) for k in keys},
    )


def _frame(clip: Decoded, t: int) -> Decoded:
    """Frame t of a clip as one mesh, with the clip's look (the activations stay with the clip:
    they are compared once, on the whole sequences)."""
    return Decoded(vertices=clip.frames[t], appearance=clip.appearance)


def score_decoded(compare, part: str, ref_a: Decoded, ref_b: Decoded, candidates: list[Decoded],
                  framing=None, region=None, halfway: Decoded | None = None,
                  read_from: tuple | None = None) -> list[CandidateScore]:
    """Scores of decoded candidates; clips frame by frame when every side is a clip. `framing`
    (`framing.Framing`) defaults to frame A's own; `halfway` (the edit made half way, which
    calibrates instruction_following) to frame A's and B's vertices averaged; `read_from`: where
    the references were read from pixels, the exact (frame A, frame B, halfway) they were drawn
    from (`RenderCompare.prepare`)."""
    clips = [c for c in candidates if c.frames is not None]
    if not clips or ref_a.frames is None or ref_b.frames is None:
        return compare.score(compare.prepare(ref_a, ref_b, part, framing, region=region, halfway=halfway,
                                             read_from=read_from), candidates)  # fmt: skip
    if len(clips) != len(candidates):
        raise RenderCompareScorerError("some candidates are clips (frames) and some are not; score them separately")
    count = len(ref_a.frames)
    for what, frames in [("frame B", ref_b.frames), *((f"candidate {i}", c.frames) for i, c in enumerate(candidates))]:
        if len(frames) != count:
            raise RenderCompareScorerError(f"{what} has {len(frames)} frames, frame A has {count}")
    if framing is None:  # one framing for the whole clip: frame A's first frame
        framing = framing_of(compare.renderer.check(ref_a.frames[0], "frame A"), part)
    per_candidate: list[list[CandidateScore]] = [[] for _ in candidates]
    for t in range(count):
        middle = _frame(halfway, t) if halfway is not None and halfway.frames is not None and len(halfway.frames) == count else None
        exact = None if read_from is None else tuple(_frame_of(d, t, count) for d in read_from)
        prepared = compare.prepare(_frame(ref_a, t), _frame(ref_b, t), part, framing, region=region, halfway=middle,
                                   read_from=exact)  # fmt: skip
        frame_scores = compare.score(prepared, [_frame(c, t) for c in candidates])
        for i, s in enumerate(frame_scores):
            per_candidate[i].append(s)
    results = []
    for cand, scores in zip(candidates, per_candidate):
        mean = _mean_scores(scores)
        if cand.activations is not None and ref_b.activations is not None and ref_a.activations is not None:
            mean = _add_activation(mean, cand.activations, ref_a.activations, ref_b.activations)
        results.append(mean)
    return results


def _frame_of(clip: Decoded | None, t: int, count: int) -> Decoded | None:
    """Frame t of an exact reference clip of `count` frames, or None where it has no such frame."""
    if clip is None or clip.frames is None or len(clip.frames) != count:
        return None
    return Decoded(vertices=clip.frames[t])


def _add_activation(score: CandidateScore, activations, activations_a, activations_b) -> CandidateScore:
    """Fold the face activation agreement into instruction_following, as RenderCompare does:
    instruction_following is recomputed from the frames' mean distances plus the activation's."""
    from maskscore_core.metric import render_compare as rc
    from maskscore_core.speech import agreement

    def part_of(prefix: str) -> dict[str, float]:
        return {k.split(".", 1)[1]: v for k, v in score.distances.items() if k.startswith(prefix + ".")}

    follow, rest = part_of("if"), part_of("cons")
    references, halfway = part_of(rc.REFERENCE_PREFIX), part_of(rc.HALFWAY_PREFIX)
    follow["activation"] = float(agreement.distance(np.asarray(activations), np.asarray(activations_b)))
    references["activation"], halfway["activation"] = rc.activation_references(activations_a, activations_b)
    return rc.scores_of({"instruction_following": follow, "consistency": rest}, references, halfway)


@hookimpl
def score(scorer, instance, candidates, ctx):
    if not candidates:
        return []
    # Rows may be scored two at once (`Scorer.rows_in_flight`): the modality's plugin calls and
    # the references' making run one row at a time, the rendering and comparing side by side.
    with plugins.serialized():
        row = _decoded_row(scorer, instance, candidates, ctx)
    if isinstance(row, list):  # candidates read from pixels of several sizes, scored group by group
        return row
    return score_decoded(*row)


def _decoded_row(scorer, instance, candidates, ctx):
    """(compare, part, frame A, the ideal edit, the candidates decoded, framing, region, halfway, read_from)
    for `score_decoded`, or the scores themselves where the candidates fall into groups."""
    modalities = sorted({c.asset.modality for c in candidates})
    if len(modalities) != 1:
        raise RenderCompareScorerError(f"one edit's candidates share one modality; got {modalities}")
    modality = modalities[0]
    part = instance.instruction.part
    # The part's pixels are those of the region its modality masks (`mask_part`).
    mask = plugins.call("mask_part", modality, modality=modality, part=part, ctx=ctx)
    if not isinstance(mask, PartMask):
        raise RenderCompareScorerError(f"mask_part of the {modality} modality returned {type(mask).__name__}, not a records.PartMask")
    # Candidates a modality reads from pixels (`Modality.pixel_size`) are compared with references
    # read from pixels of the same size, others with exact references: each group scored alone.
    sizes = [plugins.modality(modality).pixel_size(c.asset) for c in candidates]
    if len(set(sizes)) > 1:
        scores = [None] * len(candidates)
        for size in dict.fromkeys(sizes):
            group = [i for i, s in enumerate(sizes) if s == size]
            for i, found in zip(group, score(scorer, instance, [candidates[i] for i in group], ctx)):
                scores[i] = found
        return scores
    exact_ctx = ctx
    if sizes[0] is not None:
        ctx = attrs.evolve(ctx, config=RunConfig.of({**dict(ctx.config), "pixel_references": int(sizes[0])}))
    # instruction_following is measured against frame B's part carried onto frame A (the ideal
    # edit), consistency against frame A itself.
    ideal = attrs.evolve(instance, b=ideal_edit(instance))
    # The edit made half way, as the ladder makes it, calibrates instruction_following.
    half = attrs.evolve(instance, b=edit_fraction(instance, 0.5))
    refs, exact = {}, {}
    for which, reference in (("a", instance), ("b", ideal), ("half", half)):
        side = "b" if which == "half" else which
        decoded = plugins.call("decode_reference", modality, modality=modality, instance=reference, which=side, ctx=ctx)
        refs[which] = _with_vertices(decoded, getattr(reference, side))
        if sizes[0] is not None:  # read from pixels: the same reference exactly, to measure the reading's error
            exact[which] = _exact_reference(modality, reference, side, refs[which], exact_ctx)
    decoded = [
        plugins.call("decode_to_mesh", modality, asset=c.asset, instance=instance, ctx=ctx) for c in candidates
    ]
    # Every mesh of the row is framed on frame A's subject at rest, zoomed for the part, as the
    # depth modality's maps are (`Target.framed_part`).
    framing = row_framing(instance)
    read_from = (exact["a"], exact["b"], exact["half"]) if exact else None
    return render_compare_of(ctx), part, refs["a"], refs["b"], decoded, framing, mask.region, refs["half"], read_from
