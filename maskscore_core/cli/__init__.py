"""The `maskscore` command line. Each subcommand lives in its own module of this package."""

from __future__ import annotations

import click

from maskscore_core.cli.build_command import build_command
from maskscore_core.cli.demo_command import demo_command
from maskscore_core.cli.errors import DEBUG_ENV, MaskScoreGroup
from maskscore_core.cli.eval_command import eval_command
from maskscore_core.cli.loop_command import loop_command
from maskscore_core.cli.plugins_command import list_plugins_command
from maskscore_core.cli.score_command import score_command
from maskscore_core.cli.serve_command import serve_command
from maskscore_core.cli.show_command import show_command
from maskscore_core.cli.train_command import train_command
from maskscore_core.cli.weights_command import fetch_weights_command


@click.group(cls=MaskScoreGroup)
@click.option("--debug", is_flag=True, help=f"Show the traceback of a failure instead of one line (also {DEBUG_ENV}=1).")
@click.version_option(package_name="maskscore")
def main(debug: bool) -> None:
    """MaskScore: self-supervised multimodal edit scoring through the ANNY mesh.

    A failure prints one line and exits 1; a bad option or name exits 2."""


for _command in (
    list_plugins_command,
    score_command,
    fetch_weights_command,
    build_command,
    eval_command,
    show_command,
    demo_command,
    train_command,
    serve_command,
    loop_command,
):
    main.add_command(_command)
