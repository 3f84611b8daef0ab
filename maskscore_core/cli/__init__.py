"""The `maskscore` command line. Each subcommand lives in its own module of this package."""

from __future__ import annotations

import importlib

import click

# (module, attribute) of each subcommand, in the order `maskscore --help` lists them.
SUBCOMMANDS = (
    ("plugins_command", "list_plugins_command"),
    ("score_command", "score_command"),
    ("weights_command", "fetch_weights_command"),
    ("build_command", "build_command"),
    ("eval_command", "eval_command"),
    ("show_command", "show_command"),
    ("demo_command", "demo_command"),
)


@click.group()
@click.version_option(package_name="maskscore")
def main() -> None:
    """MaskScore: self-supervised multimodal edit scoring through the ANNY mesh."""


for _module, _attribute in SUBCOMMANDS:
    try:
        _command_module = importlib.import_module(f"{__name__}.{_module}")
    except ModuleNotFoundError as _err:  # a command still being written; see docs/contracts.md
        if _err.name != f"{__name__}.{_module}":
            raise
        continue
    main.add_command(getattr(_command_module, _attribute))
