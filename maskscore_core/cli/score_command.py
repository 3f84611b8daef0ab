"""`maskscore score`: score candidate files of any installed modality against frames A and B
for one part, as JSON.

    maskscore score --frame-a A.glb --frame-b B.glb --part mouth CAND1.glb CAND2.ply ...
    maskscore score --modality speech --frame-a a.wav --frame-b b.wav --part mouth c1.wav c2.wav

Files are read and decoded by their modality's plugin (`maskscore_core.metric.file_scoring`);
`--modality` defaults to the modality whose registered suffixes match the candidates. Meshes on
the reference topology need no plugin. The output is one JSON object: the part, the modality, the
views, and per candidate its file, the three scores and the raw distances they come from (keys
sorted, so the same inputs print the same bytes).
"""

from __future__ import annotations

import tempfile

import click

from maskscore_core.cli import options
from maskscore_core.cli.output import noise_to_stderr, write_json
from maskscore_core.metric.file_scoring import score_files
from maskscore_core.plugin import manager as plugins
from maskscore_core.plugin.context import Context


@click.command("score")
@click.option("--modality", default=None, help="modality of the candidates (default: from their file type)")
@click.option("--frame-a", "frame_a", required=True, type=click.Path(), help="frame A (the input) file")
@click.option("--frame-b", "frame_b", required=True, type=click.Path(), help="frame B (the target) file")
@click.option("--part", required=True, type=options.Part(), help="See-Through part the edit targets, e.g. mouth")
@click.option("--views", default=8, show_default=True, type=options.VIEWS, help="number of camera views")
@click.option("--resolution", default=256, show_default=True, type=options.RESOLUTION, help="pixels per view side")
@click.argument("candidates", nargs=-1, required=True, type=click.Path())
def score_command(modality, frame_a, frame_b, part, views, resolution, candidates):
    """Score candidate files for 'edit the PART to match frame B' (render-and-compare)."""
    options.check_render_size(views, resolution)
    if modality is not None and modality not in plugins.names("modality"):
        raise click.BadParameter(f"unknown modality {modality!r}; installed: {', '.join(plugins.names('modality')) or 'none'}",
                                 param_hint="--modality")  # fmt: skip
    try:
        with noise_to_stderr(), tempfile.TemporaryDirectory(prefix="maskscore-score-") as workdir:  # stdout: JSON only
            ctx = Context(workdir=workdir, seed=0, config={"views": views, "resolution": resolution})
            report = score_files(frame_a, frame_b, part, candidates, ctx, modality=modality)
    except ValueError as err:  # a file or value that cannot be scored: its message says which
        raise click.ClickException(str(err)) from err
    write_json(report)
