"""Option types every command shares, so that each refuses the same bad values before any work
starts, with click's usage error (exit code 2): counts and sizes within `limits`, and plugin,
modality and part names that exist."""

from __future__ import annotations

import click

from maskscore_core import limits
from maskscore_core.body import parts
from maskscore_core.plugin import manager as plugins

VIEWS = click.IntRange(limits.MIN_VIEWS, limits.MAX_VIEWS)
RESOLUTION = click.IntRange(limits.MIN_RESOLUTION, limits.MAX_RESOLUTION)
NUM_PASS = click.IntRange(1, limits.MAX_NUM_PASS)
TEMPERATURE = click.FloatRange(0.0, limits.MAX_TEMPERATURE)
SEED = click.IntRange(0, limits.MAX_SEED)
ROWS = click.IntRange(1, limits.MAX_ROWS)
SUBJECTS = click.IntRange(1, limits.MAX_SUBJECTS)
WORKERS = click.IntRange(1, limits.MAX_WORKERS)
SHARD_SIZE = click.IntRange(1, limits.MAX_SHARD_SIZE)
INSTANCES = click.IntRange(1, limits.MAX_INSTANCES_PER_MODALITY)
STEPS = click.IntRange(1, limits.MAX_STEPS)
BATCH = click.IntRange(1, limits.MAX_BATCH)
WIDTH = click.IntRange(1, limits.MAX_WIDTH)
DEPTH = click.IntRange(1, limits.MAX_DEPTH)
LEARNING_RATE = click.FloatRange(0.0, limits.MAX_LEARNING_RATE, min_open=True)
KL = click.FloatRange(0.0, limits.MAX_KL)
TILE = click.IntRange(limits.MIN_TILE, limits.MAX_TILE)


class PluginName(click.ParamType):
    """The name of something an installed plugin of `kind` provides (a source, editor or scorer)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.name = kind

    def convert(self, value, param, ctx):
        installed = plugins.providers(self.kind)
        if value not in installed:
            self.fail(f"no installed {self.kind} plugin provides {value!r}; installed {self.kind}s:"
                      f" {', '.join(installed) or 'none'}", param, ctx)
        return value


class ModalityList(click.ParamType):
    """Comma-separated names of installed modalities, each once; converts to a tuple."""

    name = "modalities"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        names = tuple(m.strip() for m in str(value).split(",") if m.strip())
        if not names:
            self.fail(f"no modality named; choose from {', '.join(plugins.modality_names())}", param, ctx)
        for name in names:
            if name not in plugins.modality_names():
                self.fail(f"unknown modality {name!r}; choose from {', '.join(plugins.modality_names())}", param, ctx)
        if len(set(names)) != len(names):
            self.fail(f"a modality is listed twice: {','.join(names)}", param, ctx)
        return names


class Part(click.ParamType):
    """A See-Through part that has a mask on this data (`parts.check_active`)."""

    name = "part"

    def convert(self, value, param, ctx):
        try:
            return parts.check_active(value)
        except parts.PartError as err:
            self.fail(str(err), param, ctx)


def check_render_size(views: int, resolution: int) -> None:
    """Views and resolution together within `limits.MAX_PIXELS` (each alone is checked by its type)."""
    try:
        limits.check_render_size(views, resolution)
    except limits.LimitError as err:
        raise click.UsageError(str(err)) from None
