"""MaskScore editor `pixal3d` (README.md): Pixal3D lifts an edited picture of frame A to a mesh.

The edit: frame A's picture from the scorer's camera model (frontal by default), with the
part's pixels taken from frame B's part carried onto A (`ladder.ideal_edit`, what the scorer
compares with), goes to Pixal3D with the camera parameters of that picture; its mesh, of its
own topology, is brought back into the reference frame (`camera`) and becomes a mesh candidate
scored by rendering its own triangles (`maskscore_core.metric.foreign_mesh`). The mask is the
part's pixel region from the mesh modality's `mask_part`. It runs only where Pixal3D's packages,
CUDA and weights exist; elsewhere `edit` fails with one line naming the first thing missing.
"""

from __future__ import annotations

import numpy as np

from maskscore_core import Editor, hookimpl
from maskscore_core.metric.foreign_mesh import ForeignMesh, unframe
from maskscore_core.plugin import model_editors

from . import camera, pipeline
from .pipeline import ENV, MODEL_CLASS, PACKAGES, Pixal3DUnavailable  # noqa: F401 - the plugin's names

EDITOR = "pixal3d"
MODALITY = "mesh"
# steps: per sampling stage (upstream inference uses 12); yaw/pitch: the picture's camera
# direction (degrees, yaw 0 = the face); size: picture side in pixels; mesh_scale: Pixal3D's.
DEFAULTS = {"candidates": 1, "steps": 12, "pipeline_type": "1024_cascade", "max_tokens": 49152,
            "yaw": 0.0, "pitch": 0.0, "size": 512, "mesh_scale": 1.0}  # fmt: skip


def settings(ctx) -> tuple[dict, str | None]:
    """DEFAULTS overridden by the run's editor options; the weights directory."""
    options, weights = model_editors.options(EDITOR, ctx, DEFAULTS)
    if options["candidates"] < 1 or options["steps"] < 1 or options["size"] < 16:
        raise ValueError(f"pixal3d: candidates and steps must be >= 1 and size >= 16, got {options}")
    if options["pipeline_type"] not in pipeline.PIPELINE_TYPES:
        raise ValueError(f"pixal3d: pipeline_type {options['pipeline_type']!r}; known: {', '.join(pipeline.PIPELINE_TYPES)}")
    return options, pipeline.weights_dir(weights)


def missing(ctx=None) -> str | None:
    """The first missing prerequisite (package, CUDA, weights), as one line, or None."""
    return pipeline.missing(settings(ctx)[1] if ctx is not None else pipeline.weights_dir(None))


def picture(instance, view, framing, ctx) -> np.ndarray:
    """(H, W, 3) uint8: frame A drawn on `view` (framed on its head), the part's region in frame
    A's or the ideal edit's render drawn from the ideal edit, on black (Pixal3D's background)."""
    from maskscore_core.body import parts
    from maskscore_core.body.reference_mesh import get_reference_mesh
    from maskscore_core.edits.ladder import ideal_edit
    from maskscore_core.metric.render import get_renderer
    from maskscore_core.plugin import manager as plugins

    part = instance.instruction.part
    region = plugins.call("mask_part", MODALITY, modality=MODALITY, part=part, ctx=ctx).region
    renderer, size = get_renderer(view), view.resolution
    reference = get_reference_mesh()
    a, b = (framing.apply(reference.vertices([s])[0]) for s in (instance.a.state, ideal_edit(instance).state))
    render_a, render_b = renderer.render(a), renderer.render(b)
    inside = parts.pixel_mask(render_a, part, True, region)[0] | parts.pixel_mask(render_b, part, True, region)[0]
    drawn = np.where(inside[..., None], renderer.render_rgb(b, size, size), renderer.render_rgb(a, size, size))
    covered = np.where(inside, render_b.coverage[0], render_a.coverage[0])
    return np.where(covered[..., None], drawn, 0).astype(np.uint8)


def output_mesh(vertices, faces, view, params, framing) -> ForeignMesh:
    """A Pixal3D output (its frame; tensors or arrays) as a mesh candidate in the subject's own
    frame; checked when the mesh modality decodes it, so a bad output is recorded, not scored."""
    world = camera.to_world(pipeline.as_numpy(vertices).reshape(-1, 3), view, params)
    return ForeignMesh(vertices=unframe(framing, world), faces=pipeline.as_numpy(faces))


def candidates_from(instance, ctx, outputs, view, params, framing, config: dict):
    """outputs: (label, seed, vertices, faces) per pass, in Pixal3D's frame -> the candidates
    that decode (the others recorded with their reason, `model_editors.keep_decodable`)."""
    passes = [(label, seed, output_mesh(v, f, view, params, framing), {}) for label, seed, v, f in outputs]
    return model_editors.keep_decodable(EDITOR, instance, ctx, passes, config)


@hookimpl
def register_editors(register):
    status = missing() or "package, CUDA and weights found"
    register(Editor(EDITOR, f"{MODEL_CLASS} lifts an edited picture to a mesh of its own topology; {status}"))


@hookimpl
def edit(editor, modality, instance, ctx):
    from maskscore_core.dataset.reward_tables import view_config
    from maskscore_core.metric.framing import subject_framing

    options, weights = settings(ctx)
    if modality != MODALITY:
        raise ValueError(f"pixal3d makes meshes: it edits the {MODALITY} modality, not {modality!r}")
    reason = pipeline.missing(weights)
    if reason:
        raise Pixal3DUnavailable(reason)
    view = camera.picture_view(view_config(ctx), options["yaw"], options["pitch"], options["size"])
    params = camera.camera_params(view, options["mesh_scale"])
    framing = subject_framing(instance.a.state.phenotype)
    image = picture(instance, view, framing, ctx)
    pipe = pipeline.load(weights)
    outputs = []
    for index in range(options["candidates"]):
        seed = model_editors.seed(ctx, instance.key, index)
        outputs.append((f"pixal3d-{index}", seed, *pipeline.generate(pipe, image, params, seed, options)))
    config = {"model_class": MODEL_CLASS, "weights": str(weights), "options": options, "camera_params": params}
    return candidates_from(instance, ctx, outputs, view, params, framing, config)
