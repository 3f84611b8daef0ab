"""`maskscore list-plugins`: what is installed, from which distribution, and what failed."""

from __future__ import annotations

import json

import attrs
import click

from maskscore_core.plugin import manager as plugins


@click.command("list-plugins")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def list_plugins_command(as_json: bool) -> None:
    """List plugins with their distribution, version, the kinds and names they register, and
    their hooks; then the plugins that failed to load and the names registered twice."""
    records = plugins.list_plugins()
    if as_json:
        click.echo(json.dumps([attrs.asdict(r) for r in records], indent=2))
        return
    failures = {(f.name, f.distribution) for f in plugins.load_errors()}
    loaded = [r for r in records if (r.name, r.distribution) not in failures]
    header = ("NAME", "DISTRIBUTION", "VERSION", "KIND", "PROVIDES", "HOOKS")
    rows = [(r.name, r.distribution, r.version, r.kind, ",".join(r.provides), ",".join(r.hooks)) for r in loaded]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    for row in (header, *rows):
        click.echo("  ".join(str(x).ljust(w) for x, w in zip(row, widths)).rstrip())
    described = [(kind, name, plugins.lookup(kind, name).obj.description) for kind in ("editor", "scorer")
                 for name in plugins.names(kind)]
    if any(text for _, _, text in described):  # a model plugin names its model class and its weights here
        click.echo("\nEditors and scorers:")
        for kind, name, text in described:
            click.echo(f"  {kind} {name}: {text}")
    failed = [r for r in records if (r.name, r.distribution) in failures]
    if failed:
        click.echo("\nFailed to load (skipped; set MASKSCORE_STRICT_PLUGINS=1 to make this fatal):")
        for r in failed:
            click.echo(f"  {r.name} ({r.distribution}): {r.error}")
    clashes = plugins.duplicates()
    if clashes:
        click.echo("\nNames registered twice (neither plugin answers for them):")
        for message in clashes:
            click.echo(f"  {message}")
