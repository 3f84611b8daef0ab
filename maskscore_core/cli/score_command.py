"""`maskscore score`: score candidate meshes against frames A and B for one part, as JSON.

    maskscore score --frame-a A.glb --frame-b B.glb --part mouth CAND1.glb CAND2.ply ...

Meshes are .glb, .ply or .obj files on the reference topology (see `meshio`). The output is one
JSON object: the part, the views, and per candidate its file, the three scores and the raw
distances they come from (keys sorted, so the same inputs print the same bytes).
"""

from __future__ import annotations

import click

from . import options
from .output import noise_to_stderr, write_json


@click.command("score")
@click.option("--frame-a", "frame_a", required=True, type=click.Path(dir_okay=False), help="frame A (the input) mesh")
@click.option("--frame-b", "frame_b", required=True, type=click.Path(dir_okay=False), help="frame B (the target) mesh")
@click.option("--part", required=True, type=options.Part(), help="See-Through part the edit targets, e.g. mouth")
@click.option("--views", default=8, show_default=True, type=options.VIEWS, help="number of camera views")
@click.option("--resolution", default=256, show_default=True, type=options.RESOLUTION, help="pixels per view side")
@click.argument("candidates", nargs=-1, required=True, type=click.Path(dir_okay=False))
def score_command(frame_a, frame_b, part, views, resolution, candidates):
    """Score candidate meshes for 'edit the PART to match frame B' (render-and-compare)."""
    from maskscore_core.meshio import MeshFileError, read_vertices
    from maskscore_core.records import Decoded
    from maskscore_core.render_compare import RenderCompare, RenderCompareError
    from maskscore_core.views import ViewConfig

    options.check_render_size(views, resolution)
    try:
        with noise_to_stderr():  # stdout holds the JSON document only
            ref_a = Decoded(vertices=read_vertices(frame_a))
            ref_b = Decoded(vertices=read_vertices(frame_b))
            decoded = [Decoded(vertices=read_vertices(path)) for path in candidates]
            config = ViewConfig(count=views, resolution=resolution)
            compare = RenderCompare(config)
            scores = compare.score(compare.prepare(ref_a, ref_b, part), decoded)
    except (MeshFileError, RenderCompareError, ValueError) as err:
        raise click.ClickException(str(err)) from err
    report = {
        "part": part,
        "frame_a": str(frame_a),
        "frame_b": str(frame_b),
        "views": {"count": config.count, "resolution": config.resolution, "fov_deg": config.fov_deg,
                  "radius": config.radius, "target": config.target},
        "candidates": [
            {
                "path": str(path),
                "instruction_following": s.instruction_following,
                "consistency": s.consistency,
                "overall": s.overall,
                "distances": s.distances,
            }
            for path, s in zip(candidates, scores)
        ],
    }  # fmt: skip
    write_json(report)
