"""`maskscore show ROW_KEY`: a contact sheet of one bench row."""

from __future__ import annotations

from pathlib import Path

import click

from maskscore_core.dataset.contact_sheet import UnknownKeyError, draw_sheet
from maskscore_core.cli import options


@click.command("show")
@click.argument("row_key")
@click.option("--bench", "bench", required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False, path_type=Path), help="PNG to write.")
@click.option("--size", type=options.TILE, default=192, show_default=True, help="Tile size in pixels.")
def show_command(row_key, bench, out, size):
    """Draw frame A, frame B and every candidate of ROW_KEY with their scores and the part mask."""
    try:
        click.echo(draw_sheet(bench, row_key, out, resolution=size))
    except UnknownKeyError as err:
        raise click.BadParameter(str(err), param_hint="ROW_KEY") from None
