"""Meshes of any topology against the same meshes in ANNY's topology (issue 15 item 2).

The ladder of tests/test_render_compare.py (per part: 1 frame B, 2 half the edit, 3 a fifth,
4 another part edited, 5 another subject with B's expression) is scored with the candidates on
ANNY's topology, then as meshes of their own topology (`metric.foreign_mesh`): the same
triangles, one midpoint subdivision, vertex clustering at 2 mm and 4 mm, quadric decimation to
50 % and 20 % of the triangles (`body.remesh`), each taken both ways (`foreign_mesh.decode`):
its own triangles rendered, and ANNY fitted to it from frame A's state. Prints each ladder, the
largest gap to ANNY's topology per dimension over rungs 1-4 (rung 5 is moved onto frame A's head
only on ANNY's topology), whether each ladder keeps its order on overall, and seconds per
candidate (a fit included).

    .venv/bin/python benchmarks/bench_foreign_mesh.py --views 8 --resolution 128

`--surface-error` prints instead what a remeshing leaves of each edit: how far the edit moves the
surface in its part's region (frame B's vertices off frame A's surface) against how far each
remeshing moves it (frame A's vertices off frame A remeshed), both point-to-plane, in mm. Where
the second is as large as the first, no decode of the remeshed mesh can tell the edit from the
remeshing.
"""

from __future__ import annotations

import json
import time

import click

DIMENSIONS = ("instruction_following", "consistency", "overall")
LADDER = {
    "mouth": ({"jawOpen": 0.8}, {"browInnerUp": 1.0}),
    "eyebrow": ({"browInnerUp": 1.0}, {"jawOpen": 0.8}),
    "irides": ({"eyeLookUpLeft": 1.0, "eyeLookUpRight": 1.0}, {"jawOpen": 0.8}),
    "neck": ({"bone:Neck1:1": 0.25, "bone:Neck2:1": 0.15}, {"jawOpen": 0.8}),
}
OTHER_SUBJECT = {"gender": 0.9, "weight": 0.8, "age": 0.3}
# rendered: the mesh's own triangles on the views; fitted: ANNY fitted to it (`body.surface_fit`).
DECODES = ("rendered", "fitted")


def _state(actions=None, phenotype=None):
    from maskscore_core.edits.calibration import edited_state

    return edited_state(actions or {}, phenotype=phenotype, lower_arms=False)


def _mesh(actions=None, phenotype=None):
    from maskscore_core.body.reference_mesh import get_reference_mesh
    from maskscore_core.plugin.records import Decoded

    return Decoded(vertices=get_reference_mesh().vertices([_state(actions, phenotype)])[0])


def _remeshings():
    from maskscore_core.body import remesh

    return {
        "same triangles": lambda v, f: (v, f),
        "subdivided": remesh.subdivide,
        "clustered 2 mm": lambda v, f: remesh.cluster(v, f, 0.002),
        "clustered 4 mm": lambda v, f: remesh.cluster(v, f, 0.004),
        "decimated 50%": lambda v, f: remesh.decimate(v, f, 0.5),
        "decimated 20%": lambda v, f: remesh.decimate(v, f, 0.2),
    }


@click.command()
@click.option("--views", default=8, show_default=True)
@click.option("--resolution", default=128, show_default=True)
@click.option("--part", "parts", multiple=True, type=click.Choice(tuple(LADDER)), help="parts to run (default: all four)")
@click.option("--remeshing", "remeshings", multiple=True, help="remeshings to run (default: all)")
@click.option("--decode", "decodes", multiple=True, type=click.Choice(DECODES), help="how foreign meshes are taken (default: both)")
@click.option("--surface-error", is_flag=True, help="print each edit's surface change against each remeshing's surface error")
@click.option("--out", type=click.Path(), help="also write the figures as JSON here")
def main(views, resolution, parts, remeshings, decodes, surface_error, out):
    unknown = sorted(set(remeshings) - set(_remeshings()))
    if unknown:
        raise click.BadParameter(f"unknown remeshing {unknown[0]!r}; choose from {', '.join(_remeshings())}", param_hint="--remeshing")
    if surface_error:
        report = surface_error_table(parts or tuple(LADDER), remeshings or tuple(_remeshings()))
        if out:
            with open(out, "w", encoding="utf-8") as handle:
                json.dump(report, handle, indent=1, sort_keys=True)
        return
    from maskscore_core.body import remesh
    from maskscore_core.metric import foreign_mesh
    from maskscore_core.metric.render_compare import RenderCompare
    from maskscore_core.metric.views import ViewConfig

    compare = RenderCompare(ViewConfig(count=views, resolution=resolution))
    report = {}
    for part in parts or LADDER:
        edit, wrong = LADDER[part]
        a, b = _mesh(), _mesh(edit)
        prepared = compare.prepare(a, b, part)
        rungs = [b, _mesh({k: 0.5 * v for k, v in edit.items()}), _mesh({k: 0.2 * v for k, v in edit.items()}),
                 _mesh(wrong), _mesh(edit, OTHER_SUBJECT)]  # fmt: skip
        start = time.perf_counter()
        anny = compare.score(prepared, rungs)
        rows = {"anny": (anny, (time.perf_counter() - start) / len(rungs))}
        for name, how in _remeshings().items():
            if remeshings and name not in remeshings:
                continue
            meshes = [foreign_mesh.check(*how(*remesh.body_surface(r.vertices))) for r in rungs]
            for decode in decodes or DECODES:
                start = time.perf_counter()
                # fitted: ANNY fitted from frame A's state, as a modality plugin decodes a model's mesh
                decoded = [foreign_mesh.decode(m, _state() if decode == "fitted" else None) for m in meshes]
                scores = compare.score(prepared, decoded)
                rows[f"{name}, {decode}"] = (scores, (time.perf_counter() - start) / len(rungs))
        click.echo(f"{part} ({views} views x {resolution} px): overall | instruction_following | consistency, rungs 1-5;"
                   " max |gap| to anny over rungs 1-4 (if, cons, overall); in order; s/candidate")  # fmt: skip
        report[part] = {}
        for name, (scores, seconds) in rows.items():
            figures = {d: [round(getattr(s, d), 3) for s in scores] for d in DIMENSIONS}
            gaps = {d: round(max(abs(getattr(s, d) - getattr(t, d)) for s, t in zip(scores[:4], anny[:4])), 3) for d in DIMENSIONS}
            ordered = all(x > y for x, y in zip(figures["overall"], figures["overall"][1:]))
            click.echo(f"  {name:25s} {' '.join(f'{x:.3f}' for x in figures['overall'])} | "
                       f"{' '.join(f'{x:.3f}' for x in figures['instruction_following'])} | "
                       f"{' '.join(f'{x:.3f}' for x in figures['consistency'])}; "
                       f"gap {gaps['instruction_following']:.3f} {gaps['consistency']:.3f} {gaps['overall']:.3f}; "
                       f"{'in order' if ordered else 'OUT OF ORDER'}; {seconds:.2f} s")  # fmt: skip
            report[part][name] = {**figures, "gap": gaps, "in_order": ordered, "seconds_per_candidate": round(seconds, 3)}
    if out:
        with open(out, "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=1, sort_keys=True)


def surface_error_table(parts, remeshings) -> dict:
    """Per part: the edit's (and a fifth of it's) surface change in the part's region, and each
    remeshing's surface error there, mean and 90th percentile in mm; printed as a Markdown table."""
    import numpy as np

    from maskscore_core.body import parts as body_parts
    from maskscore_core.body import remesh
    from maskscore_core.body.surface_fit import surface_distances

    def figures(distances):
        return {"mean_mm": round(float(distances.mean()) * 1000, 3), "p90_mm": round(float(np.percentile(distances, 90)) * 1000, 3)}

    frame_a = remesh.body_surface(_mesh().vertices)
    # Frame A remeshed once for every part ("same triangles" and "subdivided" keep the surface).
    remeshed = {name: how(*frame_a) for name, how in _remeshings().items()
                if name in remeshings and name not in ("same triangles", "subdivided")}  # fmt: skip
    report = {}
    click.echo("| part | surface moved by | mean mm | 90th percentile mm |\n|---|---|---|---|")
    for part in parts:
        edit = LADDER[part][0]
        ids = body_parts.region_vertex_ids(part)
        ids = ids[ids < len(frame_a[0])]
        rows = {}
        for label, scale in (("the edit", 1.0), ("a fifth of the edit", 0.2)):
            edited = remesh.body_surface(_mesh({k: scale * v for k, v in edit.items()}).vertices)[0]
            rows[label] = figures(surface_distances(edited[ids], *frame_a))
        for name, mesh in remeshed.items():
            rows[name] = figures(surface_distances(frame_a[0][ids], *mesh))
        for label, row in rows.items():
            click.echo(f"| {part} | {label} | {row['mean_mm']:.3f} | {row['p90_mm']:.3f} |")
        report[part] = rows
    return report


if __name__ == "__main__":
    main()
