"""Built-in source plugin `anny`: synthetic talking-head trials (maskscore_core.trials.anny_source).

The `extract` hook's config dict maps onto `AnnySourceConfig` (`count` is an alias of
`subjects`); files go under `<ctx.workdir>/sources/anny`. When the config has no seed, the
run's seed (`ctx.seed`) is used.
"""

from __future__ import annotations

from maskscore_core import Source, hookimpl

NAME = "anny"


@hookimpl
def register_sources(register):
    register(Source(NAME, "synthetic talking-head trials of ANNY subjects"))


@hookimpl
def extract(source, config, ctx):
    from maskscore_core.trials.anny_source import AnnySourceConfig, generate_trials

    options = dict(config or {})
    options.setdefault("seed", ctx.seed)
    return generate_trials(AnnySourceConfig.from_dict(options), ctx.workdir / "sources" / NAME)
