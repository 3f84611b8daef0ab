"""`maskscore demo`: the README's main job, end to end on the built-in source.

Builds a small bench (a few rows per modality, all eight modalities), grades the raw metric
(render-compare) and the parameter-space baseline (latent-l2) on it, and writes the side-by-side
report (report.md, report.json) and a contact sheet of one row (sheet.png) under --out.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from maskscore_core import vocab

from maskscore_core.plugin import manager as plugins
from maskscore_core.dataset import evaluate, report
from maskscore_core.dataset.atomic import write_text
from maskscore_core.dataset.contact_sheet import draw_sheet
from maskscore_core.dataset.plan import BuildConfig
from maskscore_core.dataset.reader import iter_rows
from maskscore_core.dataset.runner import run_build
from maskscore_core.cli import options
from maskscore_core.cli.eval_command import check_no_failures

SCORERS = ("render-compare", "latent-l2")


@click.command("demo")
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option("--instances-per-modality", type=options.INSTANCES, default=1, show_default=True,
              help="Edit instances per modality (three bench rows each).")
@click.option("--seed", type=options.SEED, default=0, show_default=True)
@click.option("--subjects", type=options.SUBJECTS, default=24, show_default=True,
              help="Subjects drawn by the source; about a fifth are held out for the bench.")
@click.option("--views", type=options.VIEWS, default=4, show_default=True)
@click.option("--resolution", type=options.RESOLUTION, default=64, show_default=True)
@click.option("--workers", type=options.WORKERS, default=1, show_default=True)
@click.option("--quiet", is_flag=True)
def demo_command(out, instances_per_modality, seed, subjects, views, resolution, workers, quiet):
    """Build a small bench, grade render-compare and latent-l2 on it, write report and contact sheet."""
    options.check_render_size(views, resolution)
    out = Path(out)
    rows = instances_per_modality * len(plugins.modality_names()) * len(vocab.DIMENSIONS)
    config = BuildConfig(split="bench", out=out / "bench", rows=rows, seed=seed, subjects=subjects, views=views,
                         resolution=resolution, workers=workers, shard_size=instances_per_modality)
    summary = run_build(config, progress=not quiet)
    click.echo(f"bench: {summary.rows} rows in {config.out} (sha256 {summary.card['content_sha256'][:16]})")
    reports = []
    for name in SCORERS:
        scorer = evaluate.ScorerConfig(name=name, version=evaluate.scorer_version(name), views=views,
                                       resolution=resolution, seed=seed)
        reports.append(evaluate.evaluate(config.out, scorer, out / "results.jsonl", progress=not quiet))
    write_text(out / "report.json", json.dumps(reports, indent=2, sort_keys=True) + "\n")
    page = report.markdown(reports)
    write_text(out / "report.md", page)
    key = next(row["key"] for modality, row in iter_rows(config.out, ["mesh"]))
    sheet = draw_sheet(config.out, key, out / "sheet.png")
    click.echo(page)
    click.echo(f"report: {out / 'report.md'}; contact sheet of {key}: {sheet}")
    check_no_failures(reports)
