"""Calibration of the universal metric: what its scores say along an edit, and how every subject is
framed (issue 12). Prints four tables (docs/metric.md, "Calibration", shows this output):

1. parts: meshes made straight from ANNY (default subject, arms lowered as the built-in source
   lowers them), each part's edit made a fraction f = 0, 0.25, 0.5, 0.75, 1 of the way, then
   overshot (1.5) and made the wrong way (-0.5): instruction_following and consistency, and the
   consistency of another part's edit;
2. modalities: built-in instances (anny source, seed 0) of every installed modality, the edit
   made f of the way (`ladder.edit_fraction`: the part, and for a clip's mouth the words too),
   encoded by the modality and scored by the `render-compare` scorer plugin;
3. coverage: each part's pixels for subjects at the corners of the source's phenotype box,
   relative to the default subject's, framed as scored (on the subject's head, zoomed for the
   part), on the head alone (metric revisions 2-7) and with the fixed cameras of revision 1;
4. coverage over the whole box: the same ratio for every corner of all six labels of the box and
   for subjects drawn uniformly inside it (seeded), per part the lowest, the highest and how many
   subjects fall outside +/- 20 %, framed as scored and on the head alone (the corners of table
   3 vary height, age and gender only).

    .venv/bin/python benchmarks/bench_calibration.py --out out/bench/bench_calibration.json
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import click
import numpy as np

from maskscore_core.edits.calibration import PART_EDITS, edited_state

FRACTIONS = (0.0, 0.25, 0.5, 0.75, 1.0)
OVERSHOOT, WRONG_WAY = 1.5, -0.5
# Corners of trials.subjects.PHENOTYPE_RANGES (ANNY's default is 0.5 for what is not named).
SUBJECTS = {
    "short": {"height": 0.25}, "tall": {"height": 0.75}, "young": {"age": 0.45}, "old": {"age": 0.9},
    "male": {"gender": 0.0}, "female": {"gender": 1.0},
    "short young woman": {"height": 0.25, "age": 0.45, "gender": 1.0},
    "tall old man": {"height": 0.75, "age": 0.9, "gender": 0.0},
}  # fmt: skip
COVERAGE_PARTS = ("mouth", "nose", "eyebrow", "irides", "eyelash", "eyewhite", "ears", "neck", "front hair", "back hair", "face")


def part_sweeps(compare) -> dict:
    from maskscore_core.plugin.records import Decoded
    from maskscore_core.body.reference_mesh import get_reference_mesh

    rows = {}
    fractions = (*FRACTIONS, OVERSHOOT, WRONG_WAY)
    for part, (edit, wrong) in PART_EDITS.items():
        states = [edited_state(edit, f) for f in fractions] + [edited_state(wrong, 1.0)]
        meshes = [Decoded(vertices=v) for v in get_reference_mesh().vertices(states)]
        scores = compare.score(compare.prepare(meshes[0], meshes[len(FRACTIONS) - 1], part), meshes)
        rows[part] = {
            "instruction_following": [s.instruction_following for s in scores[: len(FRACTIONS)]],
            "consistency": [s.consistency for s in scores[: len(FRACTIONS)]],
            "overshoot_if": scores[len(FRACTIONS)].instruction_following,
            "wrong_way_if": scores[len(FRACTIONS) + 1].instruction_following,
            "wrong_part_consistency": scores[-1].consistency,
        }
    return rows


def modality_sweeps(views: int, resolution: int, instances: int, workdir: Path) -> dict:
    """{modality: [row per instance]} or {modality: {"error": ...}} where it could not be scored."""
    from maskscore_core.edits import instances as edits
    from maskscore_core.edits import ladder
    from maskscore_core.plugin import manager as plugins
    from maskscore_core.plugin.context import Context
    from maskscore_core.plugin.records import Candidate
    from maskscore_core.trials.anny_source import AnnySourceConfig, generate_trials

    trials = generate_trials(AnnySourceConfig(seed=0, subjects=3, trials_per_subject=2, max_words=3), workdir / "trials")
    ctx = Context(workdir=workdir, seed=0, config={"views": views, "resolution": resolution, "frame_resolution": 64})
    out = {}
    for modality in plugins.modalities():
        name = getattr(modality, "name", modality)
        try:
            rows = []
            for instance in edits.make_instances(trials, name, np.random.default_rng(0), instances):
                targets = [ladder.edit_fraction(instance, f) for f in FRACTIONS]
                candidates = [Candidate(t.label, plugins.modality(name).encode(t, ctx)) for t in targets]
                scores = plugins.call("score", "render-compare", scorer="render-compare", instance=instance,
                                      candidates=candidates, ctx=ctx)  # fmt: skip
                rows.append({
                    "key": instance.key, "part": instance.instruction.part, "task_type": instance.instruction.task_type,
                    "instruction_following": [s.instruction_following for s in scores],
                    "consistency": [s.consistency for s in scores],
                })  # fmt: skip
            out[name] = rows
        except Exception as err:  # a modality that cannot be swept is reported, never given scores
            out[name] = {"error": f"{type(err).__name__}: {err}"}
    return out


FRAMINGS = ("framed", "head only", "fixed cameras")


def part_pixels(views: int, resolution: int, phenotype: dict, parts_list=COVERAGE_PARTS, how: str = "framed") -> dict:
    """{part: pixels} of the subject at rest on the scorer's views: framed as a row that edits
    the part is scored (`framing.subject_framing(phenotype, part)`), on its head alone, or seen by
    the fixed cameras of metric revision 1."""
    from maskscore_core.body import parts
    from maskscore_core.body.reference_mesh import get_reference_mesh
    from maskscore_core.metric.render import get_renderer
    from maskscore_core.metric.framing import subject_framing
    from maskscore_core.metric.views import ViewConfig

    vertices = get_reference_mesh().vertices([edited_state({}, 0.0, phenotype)])[0]
    renderer = get_renderer(ViewConfig(count=views, resolution=resolution))
    if how == "framed":
        return {p: int(parts.pixel_mask(renderer.render(subject_framing(phenotype, p).apply(vertices)), p).sum())
                for p in parts_list}  # fmt: skip
    render = renderer.render(subject_framing(phenotype).apply(vertices) if how == "head only" else vertices)
    return {p: int(parts.pixel_mask(render, p).sum()) for p in parts_list}


def coverage(views: int, resolution: int) -> dict:
    """{framing: {subject: {part: pixels / default subject's pixels}}} for each of FRAMINGS."""
    default = part_pixels(views, resolution, {})
    out = {"default pixels": default}
    for how in FRAMINGS:
        out[how] = {
            name: {p: n / default[p] for p, n in part_pixels(views, resolution, phenotype, how=how).items()}
            for name, phenotype in SUBJECTS.items()
        }  # fmt: skip
    return out


def _row(label: str, values, width: int = 12) -> str:
    return f"{label:<{width}}" + " ".join(f"{v:6.3f}" for v in values)


def report(figures: dict) -> None:
    head = " ".join(f"{f:6g}" for f in FRACTIONS)
    print(f"\n1. parts, meshes straight from ANNY ({figures['views']} views x {figures['resolution']} px)")
    print(f"{'part':<12}{'if at f = ' + head:<44} | cons at f = {head} | if at 1.5, -0.5 | wrong-part cons")
    for part, row in figures["parts"].items():
        print(_row(part, row["instruction_following"]) + " | " + " ".join(f"{v:6.3f}" for v in row["consistency"])
              + f" | {row['overshoot_if']:6.3f} {row['wrong_way_if']:6.3f} | {row['wrong_part_consistency']:6.3f}")  # fmt: skip
    if "modalities" in figures:
        print(f"\n2. modalities, built-in instances (f = {head})")
        for modality, rows in figures["modalities"].items():
            if isinstance(rows, dict):
                print(f"{modality:<12}not swept: {rows['error']}")
                continue
            for row in rows:
                label = f"{modality}/{row['part']}"
                print(_row(label, row["instruction_following"], 22) + "   cons " + " ".join(f"{v:6.3f}" for v in row["consistency"]))
    cover = figures["coverage"]
    print(f"\n3. part pixels relative to the default subject's ({figures['views']} views x {figures['resolution']} px)")
    print(f"{'':<19}" + " ".join(f"{p[:7]:>7}" for p in COVERAGE_PARTS))
    print(f"{'default (pixels)':<19}" + " ".join(f"{cover['default pixels'][p]:7d}" for p in COVERAGE_PARTS))
    for how in FRAMINGS:
        print(how)
        for name, ratios in cover[how].items():
            print(f"  {name:<17}" + " ".join(f"{ratios[p]:7.2f}" for p in COVERAGE_PARTS))
    for key in ("box coverage", "box coverage, head only"):
        if key not in figures:
            continue
        box = figures[key]
        print(f"\n4. part pixels relative to the default subject's over the box ({box['subjects']} subjects: 64 corners,"
              f" {box['subjects'] - 64} drawn), {box['framing']}")
        zoomed = box["framing"] == "framed"
        print(f"{'part':<12}{'lowest':>8}  {'subject':<58}{'highest':>8}  {'subject':<58}outside +/-20 %"
              + ("   part zoom" if zoomed else ""))  # fmt: skip
        for p, row in box["parts"].items():
            zoom = f"   {row['zoom'][0]:.3f}-{row['zoom'][1]:.3f}" if zoomed else ""
            print(f"{p:<12}{row['lowest']:8.3f}  {row['lowest_subject']:<58}{row['highest']:8.3f}  {row['highest_subject']:<58}"
                  f"{row['outside_20_percent']:<15d}{zoom}".rstrip())  # fmt: skip


def box_subjects(draws: int, seed: int = 0) -> dict[str, dict[str, float]]:
    """Every corner of trials.subjects.PHENOTYPE_RANGES (2^6) and `draws` subjects drawn uniformly
    inside it with `default_rng(seed)`, named by their values."""
    import itertools

    from maskscore_core.trials.subjects import PHENOTYPE_RANGES

    labels = list(PHENOTYPE_RANGES)
    subjects = {}
    for ends in itertools.product((0, 1), repeat=len(labels)):
        phenotype = {label: PHENOTYPE_RANGES[label][end] for label, end in zip(labels, ends)}
        subjects["corner " + " ".join(f"{label[:3]}={value:g}" for label, value in phenotype.items())] = phenotype
    rng = np.random.default_rng(seed)
    low, high = (np.array([r[k] for r in PHENOTYPE_RANGES.values()]) for k in (0, 1))
    for n in range(draws):
        values = rng.uniform(low, high)
        subjects[f"drawn {n}"] = {label: round(float(v), 4) for label, v in zip(labels, values)}
    return subjects


def box_coverage(views: int, resolution: int, draws: int, parts_list=COVERAGE_PARTS, how: str = "framed") -> dict:
    """Per part: the lowest and highest coverage ratio over `box_subjects(draws)`, framed `how`
    (FRAMINGS), and how many subjects fall outside [0.8, 1.2]."""
    default = part_pixels(views, resolution, {}, parts_list, how)
    shown = [p for p in parts_list if default[p] > 0]  # at a small resolution an iris may show no pixel
    subjects = box_subjects(draws)
    ratios = {}
    for name, phenotype in subjects.items():
        counts = part_pixels(views, resolution, phenotype, parts_list, how)
        ratios[name] = {p: counts[p] / default[p] for p in shown}
    out = {"subjects": len(subjects), "phenotypes": subjects, "parts": {}, "framing": how,
           "not shown on the default subject": [p for p in parts_list if p not in shown]}  # fmt: skip
    for p in shown:
        lowest = min(ratios, key=lambda name: ratios[name][p])
        highest = max(ratios, key=lambda name: ratios[name][p])
        out["parts"][p] = {
            "lowest": ratios[lowest][p], "lowest_subject": lowest,
            "highest": ratios[highest][p], "highest_subject": highest,
            "outside_20_percent": sum(not 0.8 <= r[p] <= 1.2 for r in ratios.values()),
        }  # fmt: skip
        if how == "framed":
            zooms = [part_zoom_of(phenotype, p) for phenotype in subjects.values()]
            out["parts"][p]["zoom"] = [min(zooms), max(zooms)]
    return out


def part_zoom_of(phenotype: dict, part: str) -> float:
    """The zoom a row that edits `part` of this subject gets beyond its head's framing."""
    from maskscore_core.metric.framing import subject_framing

    return subject_framing(phenotype, part).scale / subject_framing(phenotype).scale


@click.command()
@click.option("--out", "out_path", type=click.Path(dir_okay=False), default=None, help="write the figures as JSON here")
@click.option("--views", default=8, show_default=True, type=click.IntRange(min=1))
@click.option("--resolution", default=256, show_default=True, type=click.IntRange(min=16))
@click.option("--instances", default=2, show_default=True, type=click.IntRange(min=0),
              help="built-in instances per modality (0: skip the modality table)")
@click.option("--box-draws", default=30, show_default=True, type=click.IntRange(min=0),
              help="subjects drawn inside the phenotype box for table 4, beside its 64 corners")
def main(out_path, views, resolution, instances, box_draws):
    from maskscore_core.metric.render_compare import METRIC_VERSION, RenderCompare
    from maskscore_core.metric.views import ViewConfig

    start = time.perf_counter()
    figures = {"views": views, "resolution": resolution, "metric_version": METRIC_VERSION}
    figures["parts"] = part_sweeps(RenderCompare(ViewConfig(count=views, resolution=resolution)))
    if instances:
        with tempfile.TemporaryDirectory(prefix="maskscore-calibration-") as workdir:
            figures["modalities"] = modality_sweeps(views, resolution, instances, Path(workdir))
    figures["coverage"] = coverage(views, resolution)
    figures["box coverage"] = box_coverage(views, resolution, box_draws)
    figures["box coverage, head only"] = box_coverage(views, resolution, box_draws, how="head only")
    figures["seconds"] = time.perf_counter() - start
    report(figures)
    if out_path:
        Path(out_path).parent.mkdir(parents=True, exist_ok=True)
        Path(out_path).write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
