"""`maskscore build bench|reward-train|rl-train`: build one of the three datasets."""

from __future__ import annotations

from pathlib import Path

import click

from maskscore_core.dataset.plan import DEFAULT_SUBJECTS, BuildConfig
from maskscore_core.dataset.runner import run_build
from maskscore_core.dataset.splits import SPLITS
from maskscore_core.cli import options


def _options(pairs: tuple[str, ...], hint: str = "--source-option") -> dict:
    options = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise click.BadParameter(f"expected NAME=VALUE, got {pair!r}", param_hint=hint)
        try:
            options[name] = int(value)
        except ValueError:
            try:
                options[name] = float(value)
            except ValueError:
                options[name] = value
    return options


@click.command("build")
@click.argument("split", type=click.Choice(SPLITS))
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path), help="Dataset directory.")
@click.option("--rows", type=options.ROWS, default=None, help="Rows to build (default: 2890 / 97300 / 110000).")
@click.option("--seed", type=options.SEED, default=0, show_default=True)
@click.option("--source", default="anny", show_default=True, type=options.PluginName("source"),
              help="Trial source plugin (anny, speakingfaces).")
@click.option("--subjects", type=options.SUBJECTS, default=DEFAULT_SUBJECTS, show_default=True, help="Subjects asked of the source.")
@click.option("--source-option", "source_options", multiple=True, help="NAME=VALUE passed to the source (repeatable).")
@click.option("--modalities", default=None, type=options.ModalityList(),
              help="Comma-separated modalities (default: every installed one).")
@click.option("--editor", default="frame-pair", show_default=True, type=options.PluginName("editor"),
              help="Editor plugin making the candidates.")
@click.option("--editor-option", "editor_options", multiple=True,
              help="NAME=VALUE passed to the editor, e.g. weights=DIR (repeatable; recorded in the card).")
@click.option("--scorer", default="render-compare", show_default=True, type=options.PluginName("scorer"),
              help="Scorer plugin labelling them.")
@click.option("--workers", type=options.WORKERS, default=1, show_default=True)
@click.option("--backend", type=click.Choice(("local", "ray")), default="local", show_default=True)
@click.option("--views", type=options.VIEWS, default=8, show_default=True, help="Scorer views per candidate.")
@click.option("--resolution", type=options.RESOLUTION, default=256, show_default=True, help="Scorer render size in pixels.")
@click.option("--shard-size", type=options.SHARD_SIZE, default=None, help="Instances per shard (default 16 / 64 / 512).")
@click.option("--bench", "bench_dir", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="A bench built with the same seed: the leakage gate also checks no subject is shared with it.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def build_command(split, out, rows, seed, source, subjects, source_options, modalities, editor, editor_options, scorer, workers, backend, views,
                  resolution, shard_size, bench_dir, quiet):
    """Build a dataset as Parquet shards plus a card (README.md); resumes an interrupted build."""
    options.check_render_size(views, resolution)
    config = BuildConfig(
        split=split, out=out, rows=rows, seed=seed, source=source, subjects=subjects,
        source_options=_options(source_options), modalities=modalities,
        editor=editor, editor_options=_options(editor_options, "--editor-option"), scorer=scorer, workers=workers, backend=backend, views=views, resolution=resolution, shard_size=shard_size,
    )
    summary = run_build(config, progress=not quiet, bench_dir=bench_dir)
    click.echo(
        f"{summary.rows} rows in {out} ({summary.shards_built} shards built, {summary.shards_resumed} already done"
        + (f", {summary.shards_repaired} damaged shards rebuilt" if summary.shards_repaired else "") + ");"
        f" content sha256 {summary.card['content_sha256']}"
    )
