"""`maskscore list-plugins`: what is installed, from which distribution, and what failed."""

from __future__ import annotations

import json

import attrs
import click

from .. import plugins
from .output import noise_to_stderr


@click.command("list-plugins")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def list_plugins_command(as_json: bool) -> None:
    """List registered plugins with their version, kind, what they provide and their hooks."""
    with noise_to_stderr():  # a plugin that prints while loading cannot spoil the JSON
        records = plugins.list_plugins()
    if as_json:
        click.echo(json.dumps([attrs.asdict(r) for r in records], indent=2))
        return
    header = ("NAME", "DISTRIBUTION", "VERSION", "KIND", "PROVIDES", "HOOKS")
    rows = [
        (r.name, r.distribution, r.version, r.kind, ",".join(r.provides), ",".join(h for h in r.hooks if h != "plugin_info"))
        for r in records
        if r.error is None
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    for row in (header, *rows):
        click.echo("  ".join(str(x).ljust(w) for x, w in zip(row, widths)).rstrip())
    failed = [r for r in records if r.error is not None]
    if failed:
        click.echo("\nFailed to load (skipped; set MASKSCORE_STRICT_PLUGINS=1 to make this fatal):")
        for r in failed:
            click.echo(f"  {r.name} ({r.distribution}): {r.error}")
