"""A scorer's full configuration: what decides its answers, so results can be keyed and reused.

The build records the configuration its scorer labelled the rows with (`for_build`), and
`maskscore eval` compares a requested configuration with it: equal configurations give the
same hook calls (`hook_config`), so the bench's stored scores are that scorer's results.
"""

from __future__ import annotations

import hashlib
import json

import attrs

from maskscore_core import limits

from maskscore_core.plugin import manager as plugins

DEFAULT_WEIGHTS = "default"
METRIC_SCORER = "render-compare"  # builtins.render_compare_scorer.NAME


class ScorerConfigError(ValueError):
    """A scorer configuration that cannot be made (unknown scorer, bad pass count)."""


def scorer_version(name: str) -> str:
    """'distribution==version' of the plugin that provides scorer `name`; for the built-in
    render-compare metric also its formulas' revision (`render_compare.METRIC_VERSION`), so
    scores of an older metric are re-scored, never mixed with the new ones."""
    try:
        registered = plugins.lookup("scorer", name)
    except plugins.DuplicateNameError as err:
        raise ScorerConfigError(str(err)) from None
    except plugins.NoPluginError:
        raise ScorerConfigError(
            f"no installed scorer plugin provides {name!r}; installed scorers: {', '.join(plugins.names('scorer'))}"
        ) from None
    version = f"{registered.distribution}=={registered.version}"
    if name == METRIC_SCORER:  # the core's own metric: its formulas change within one core release
        from maskscore_core.metric.render_compare import METRIC_VERSION

        version += f"+metric.{METRIC_VERSION}"
    return version


@attrs.frozen
class ScorerConfig:
    """Everything that decides a scorer's answers; two configs never share cached results."""

    name: str
    version: str
    weights: str = DEFAULT_WEIGHTS
    num_pass: int = 1
    temperature: float = 0.0
    views: int = 8
    resolution: int = 256
    seed: int = 0

    def __attrs_post_init__(self):
        try:  # the command line's bounds (`limits`), for configs the library makes too
            limits.check_range("--num-pass", self.num_pass, 1, limits.MAX_NUM_PASS)
            limits.check_render_size(self.views, self.resolution)
        except limits.LimitError as err:
            raise ScorerConfigError(str(err)) from None

    def as_dict(self) -> dict:
        return attrs.asdict(self)

    @property
    def key(self) -> str:
        return hashlib.sha256(json.dumps(self.as_dict(), sort_keys=True).encode()).hexdigest()[:16]

    def pass_seed(self, pass_index: int) -> int:
        """ctx.seed of pass `pass_index`."""
        return self.seed + pass_index

    def hook_config(self, pass_index: int) -> dict:
        """ctx.config of pass `pass_index` of the `score` hook (build and eval alike)."""
        return hook_config(self.views, self.resolution, self.temperature, self.weights, pass_index)


def hook_config(views: int, resolution: int, temperature: float = 0.0, weights: str = DEFAULT_WEIGHTS,
                pass_index: int = 0) -> dict:
    """ctx.config the `score` hook receives; the build's scoring uses the defaults (one pass)."""
    return {"views": views, "resolution": resolution, "temperature": temperature, "weights": weights, "pass": pass_index}


def for_build(name: str, views: int, resolution: int, seed: int) -> ScorerConfig:
    """The configuration a build scores with: one pass, default weights, temperature 0, the
    build's render size and seed."""
    return ScorerConfig(name=name, version=scorer_version(name), views=views, resolution=resolution, seed=seed)
