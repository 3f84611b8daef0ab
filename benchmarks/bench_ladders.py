"""The candidate ladder per modality (issue 12 point 5): the frame-pair editor's rungs of
built-in instances, scored by the `render-compare` scorer plugin, as each plugin's README shows
them. Prints, per modality and instance, instruction_following / consistency / overall of every
rung the modality makes, and the graded pairs out of order by the modality's own ladder levels
(`plugin.testing.misordered_pairs`); the last line counts the instances in order.

    .venv/bin/python benchmarks/bench_ladders.py --seeds 0 --instances 3 --views 4 --resolution 96
    .venv/bin/python benchmarks/bench_ladders.py --modality speech --modality text --seeds 0,1,2

The READMEs' tables are this script's output at the options they name. The multimodal modality is
scored through the pair its key chooses (`maskscore_multimodal.pairs.choose_pair`) unless
`--pair` pins one.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import click
import numpy as np

DIMENSIONS = ("instruction_following", "consistency", "overall")


def ladder_rows(modality: str, trials, ctx, instances: int, seed: int, parts=()) -> list[dict]:
    """One row per built-in instance (of `parts` only, when given): its rungs' scores and the
    pairs out of order."""
    from maskscore_core.edits.instances import make_instances
    from maskscore_core.plugin import manager as plugins
    from maskscore_core.plugin.testing import misordered_pairs

    rows = []
    for instance in make_instances(trials, modality, np.random.default_rng(seed), instances):
        if parts and instance.instruction.part not in parts:
            continue
        candidates = plugins.call("edit", "frame-pair", editor="frame-pair", modality=modality, instance=instance, ctx=ctx)
        scores = plugins.call("score", "render-compare", scorer="render-compare", instance=instance,
                              candidates=candidates, ctx=ctx)  # fmt: skip
        rows.append({
            "key": instance.key, "part": instance.instruction.part, "rungs": [c.rung for c in candidates],
            **{d: [getattr(s, d) for s in scores] for d in DIMENSIONS},
            "out_of_order": misordered_pairs(modality, scores),
        })  # fmt: skip
    return rows


def report_rows(modality: str, seed: int, rows) -> None:
    """One modality's ladders of one seed, printed as soon as they are scored."""
    print(f"\n{modality}, seed {seed}")
    if isinstance(rows, dict):
        print(f"  not scored: {rows['error']}")
        return
    for row in rows:
        rungs = "/".join(str(r) for r in row["rungs"])
        print(f"  {row['part']:<10} rungs {rungs}  {row['key']}")
        for dimension in DIMENSIONS:
            print(f"    {dimension:<22}" + " ".join(f"{v:6.3f}" for v in row[dimension]))
        for wrong in row["out_of_order"]:
            print(f"    OUT OF ORDER {wrong}")


def markdown(figures: dict) -> None:
    """Each modality's ladders as the Markdown table its README shows."""
    for modality, by_seed in figures["modalities"].items():
        print(f"\n{modality}\n")
        print("| seed | part | rungs | instruction_following | consistency | overall | in order |")
        print("|---|---|---|---|---|---|---|")
        for seed, rows in by_seed.items():
            if isinstance(rows, dict):
                print(f"| {seed} | not scored: {rows['error']} | | | | | |")
                continue
            for row in rows:
                cells = [" / ".join(f"{v:.3f}" for v in row[d]) for d in DIMENSIONS]
                verdict = "yes" if not row["out_of_order"] else "no: " + "; ".join(row["out_of_order"])
                print(f"| {seed} | {row['part']} | {', '.join(map(str, row['rungs']))} | " + " | ".join(cells) + f" | {verdict} |")


def report(figures: dict) -> None:
    total = [r for by_seed in figures["modalities"].values() for rows in by_seed.values() if isinstance(rows, list) for r in rows]
    good = sum(not r["out_of_order"] for r in total)
    print(f"{good} of {len(total)} ladders in order on every graded pair ({figures['seconds']:.0f} s)")


@click.command()
@click.option("--modality", "modalities", multiple=True, help="modalities to score (default: every installed one)")
@click.option("--seeds", default="0", show_default=True, help="comma-separated seeds of the built-in source and draws")
@click.option("--instances", default=3, show_default=True, type=click.IntRange(min=1), help="instances per modality and seed")
@click.option("--subjects", default=3, show_default=True, type=click.IntRange(min=2))
@click.option("--views", default=4, show_default=True, type=click.IntRange(min=1))
@click.option("--resolution", default=96, show_default=True, type=click.IntRange(min=16))
@click.option("--part", "parts", multiple=True, help="score only the drawn instances editing these parts")
@click.option("--pair", default=None, help="multimodal only: pin the path pair (e.g. keypoints->depth)")
@click.option("--markdown", "as_markdown", is_flag=True, help="also print each modality's ladders as a Markdown table")
@click.option("--from-json", "from_json", type=click.Path(exists=True, dir_okay=False), default=None,
              help="print the tables of figures written before by --out instead of scoring")
@click.option("--out", "out_path", type=click.Path(dir_okay=False), default=None, help="write the figures as JSON here")
def main(modalities, seeds, instances, subjects, views, resolution, parts, pair, as_markdown, from_json, out_path):
    from maskscore_core.plugin import manager as plugins
    from maskscore_core.plugin.context import Context
    from maskscore_core.metric.render_compare import METRIC_VERSION
    from maskscore_core.trials.anny_source import AnnySourceConfig, generate_trials

    sys.stdout.reconfigure(line_buffering=True)  # each modality's ladders show as they are scored
    if from_json:
        figures = json.loads(Path(from_json).read_text())
        for name, by_seed in figures["modalities"].items():
            for seed, rows in by_seed.items():
                report_rows(name, seed, rows)
        report(figures)
        if as_markdown:
            markdown(figures)
        return
    start = time.perf_counter()
    names = list(modalities) or [getattr(m, "name", m) for m in plugins.modalities()]
    figures = {"views": views, "resolution": resolution, "metric_version": METRIC_VERSION, "modalities": {}}
    config = {"views": views, "resolution": resolution, "frame_resolution": 48}
    if pair:
        config["multimodal_pair"] = pair
    with tempfile.TemporaryDirectory(prefix="maskscore-ladders-") as workdir:
        for seed in (int(s) for s in seeds.split(",")):
            trials = generate_trials(AnnySourceConfig(seed=seed, subjects=subjects, trials_per_subject=2),
                                     Path(workdir) / f"trials-{seed}")  # fmt: skip
            ctx = Context(workdir=Path(workdir), seed=seed, config=config)
            for name in names:
                try:
                    rows = ladder_rows(name, trials, ctx, instances, seed, parts)
                except Exception as err:  # reported, never given scores
                    rows = {"error": f"{type(err).__name__}: {err}"}
                figures["modalities"].setdefault(name, {})[seed] = rows
                report_rows(name, seed, rows)
    figures["seconds"] = time.perf_counter() - start
    print(f"\n{views} views x {resolution} px, metric revision {METRIC_VERSION}")
    report(figures)
    if as_markdown:
        markdown(figures)
    if out_path:
        Path(out_path).parent.mkdir(parents=True, exist_ok=True)
        Path(out_path).write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
