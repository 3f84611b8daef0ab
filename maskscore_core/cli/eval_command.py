"""`maskscore eval`: grade a scorer on a bench with the EditReward-Bench pair protocol."""

from __future__ import annotations

import json
from pathlib import Path

import click

from maskscore_core.dataset import evaluate, report
from maskscore_core.dataset.atomic import write_text
from maskscore_core.dataset.reader import build_config, render_settings
from maskscore_core.cli import options
from maskscore_core.cli.errors import CommandFailed


@click.command("eval")
@click.option("--bench", "bench", required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--scorer", default="render-compare", show_default=True, type=options.PluginName("scorer"),
              help="Scorer plugin to grade.")
@click.option("--num-pass", type=options.NUM_PASS, default=1, show_default=True, help="Passes averaged per instance (Avg@N).")
@click.option("--temperature", type=options.TEMPERATURE, default=0.0, show_default=True,
              help="Sampling temperature of stochastic scorers.")
@click.option("--weights", default="default", show_default=True, help="Weights identifier handed to the scorer.")
@click.option("--views", type=options.VIEWS, default=None, help="Scorer views (default: the bench's build setting).")
@click.option("--resolution", type=options.RESOLUTION, default=None,
              help="Scorer render size (default: the bench's build setting).")
@click.option("--seed", type=options.SEED, default=None,
              help="Seed of the passes and of the bootstrap (default: the bench's build seed).")
@click.option("--rescore", is_flag=True,
              help="Ignore the bench's stored scores even when they are of this exact configuration: results"
                   " come from the scorer (its cached results for this configuration included).")
@click.option("--out", "out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Result cache (JSONL); default BENCH/eval/results.jsonl. The summary goes next to it.")
@click.option("--quiet", is_flag=True)
def eval_command(bench, scorer, num_pass, temperature, weights, views, resolution, seed, rescore, out, quiet):
    """Grade SCORER on the bench; uses the bench's stored scores when they were made with this
    exact scorer configuration (unless --rescore), and reuses cached results of the same one.
    Exits 1 after the report when the scorer failed on any instance (failures are not cached:
    the next run scores them again)."""
    built = render_settings(bench)
    views = built["views"] if views is None else views
    resolution = built["resolution"] if resolution is None else resolution
    seed = int(build_config(bench)["seed"]) if seed is None else seed
    options.check_render_size(views, resolution)
    config = evaluate.ScorerConfig(
        name=scorer, version=evaluate.scorer_version(scorer), weights=weights, num_pass=num_pass,
        temperature=temperature, views=views, resolution=resolution, seed=seed,
    )
    cache = out or bench / "eval" / "results.jsonl"
    result = evaluate.evaluate(bench, config, cache, progress=not quiet, rescore=rescore)
    stem = cache.with_name(f"{cache.stem}-{scorer}-{config.key}")
    write_text(stem.with_suffix(".json"), json.dumps(result, indent=2, sort_keys=True) + "\n")
    page = report.markdown([result])
    write_text(stem.with_suffix(".md"), page)
    click.echo(page)
    source = "the bench's stored scores (same scorer configuration)" if result["scores_from"] == "bench" else str(cache)
    click.echo(f"results: {source}; summary: {stem.with_suffix('.json')}")
    check_no_failures([result])


def check_no_failures(results: list[dict]) -> None:
    """CommandFailed (exit code 1) summing up the failed instances, when any scorer failed."""
    failed = [(r["scorer"]["name"], r) for r in results if r["failures"]]
    if failed:
        counts = ", ".join(f"{name} failed on {len(r['failures'])} of {r['instances']} instances" for name, r in failed)
        first = failed[0][1]["failures"][0]
        raise CommandFailed(f"{counts} (their pairs count as wrong in the report; first: {first}); failures are not"
                            " cached, so rerunning after fixing the cause scores them again")
