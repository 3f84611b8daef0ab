"""The `maskscore` command line. Each subcommand lives in its own module of this package."""

from __future__ import annotations

import click

from .plugins_command import list_plugins_command


@click.group()
@click.version_option(package_name="maskscore")
def main() -> None:
    """MaskScore: self-supervised multimodal edit scoring through the ANNY mesh."""


main.add_command(list_plugins_command)
