"""The run context handed to every hook: configuration, a work directory, shared heavy objects.

Heavy objects (the ANNY body model, the Mitsuba scene, LPIPS) are built once per run and
shared by every plugin through `ctx.shared(name, factory)`, so a plugin never pays for them twice.
`ctx.config` is a `RunConfig`: the settings the core itself reads are typed fields, checked when
set; a plugin's own settings ride in `extras`, and the plugin reads them typed through the attrs
class its registered object declares as `options` (`ctx.config.options(VideoOptions)`);
`plugin.manager.check_run_config` refuses a key no installed plugin declares.
"""

from __future__ import annotations

import math
import threading
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any, Callable

import attrs

from maskscore_core import limits

_SHARED_LOCK = threading.RLock()  # `Context.shared`: a factory may ask for another shared object


def _count(low: int, high: int):
    def check(_instance, attribute, value):
        if isinstance(value, bool) or not isinstance(value, int):
            raise limits.LimitError(f"run config {attribute.name!r} must be an integer, got {value!r}")
        limits.check_range(attribute.name, value, low, high)

    return check


def _temperature(_instance, attribute, value):
    if not (isinstance(value, (int, float)) and math.isfinite(value) and 0.0 <= value <= limits.MAX_TEMPERATURE):
        raise limits.LimitError(f"run config 'temperature' must be a number in [0, {limits.MAX_TEMPERATURE}], got {value!r}")


def _optional_text(_instance, attribute, value):
    if value is not None and not (isinstance(value, str) and value):
        raise limits.LimitError(f"run config {attribute.name!r} must be a non-empty string or None, got {value!r}")


@attrs.define
class RunConfig(MutableMapping):
    """What a run's hooks read. The fields are the settings the core reads (the scorer's cameras,
    where a dataset's files go, the scorer's weights and sampling temperature); `extras` holds
    what a plugin reads for itself (`video_frames`, `multimodal_pair`, ...).

    It also reads and writes as a mapping (`ctx.config.get("views", 8)`, `{**ctx.config, ...}`);
    a field set to None (`dataset_root` by default) is absent from it.
    """

    views: int = attrs.field(default=8, validator=_count(limits.MIN_VIEWS, limits.MAX_VIEWS), on_setattr=attrs.setters.validate)
    resolution: int = attrs.field(default=256, validator=_count(limits.MIN_RESOLUTION, limits.MAX_RESOLUTION),
                                  on_setattr=attrs.setters.validate)  # fmt: skip
    dataset_root: str | None = attrs.field(default=None, converter=attrs.converters.optional(str), validator=_optional_text,
                                           on_setattr=[attrs.setters.convert, attrs.setters.validate])  # fmt: skip
    weights: str = attrs.field(default="default", validator=_optional_text, on_setattr=attrs.setters.validate)
    temperature: float = attrs.field(default=0.0, validator=_temperature, on_setattr=attrs.setters.validate)
    extras: dict[str, Any] = attrs.field(factory=dict)

    @classmethod
    def of(cls, value) -> RunConfig:
        """A RunConfig from a dict (known keys to fields, the rest to extras) or a RunConfig."""
        if isinstance(value, RunConfig):
            return value
        if value is None:
            return cls()
        if not isinstance(value, dict):
            raise TypeError(f"a run config is a dict or a RunConfig, got {type(value).__name__}")
        known = {k: v for k, v in value.items() if k in _FIELDS}
        return cls(**known, extras={k: v for k, v in value.items() if k not in _FIELDS})

    def __getitem__(self, key: str) -> Any:
        if key in _FIELDS:
            value = getattr(self, key)
            if value is None:
                raise KeyError(key)
            return value
        return self.extras[key]

    def __setitem__(self, key: str, value: Any) -> None:
        if key in _FIELDS:
            setattr(self, key, value)
        else:
            self.extras[key] = value

    def __delitem__(self, key: str) -> None:
        if key in _FIELDS:
            raise KeyError(f"{key!r} is a field of the run config; set it instead of deleting it")
        del self.extras[key]

    def __iter__(self):
        yield from (f for f in _FIELDS if getattr(self, f) is not None)
        yield from self.extras

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def options(self, cls: type) -> Any:
        """The plugin settings `cls` declares (an attrs class, one field a key, defaults for
        absent keys), read from `extras` and checked by its validators; LimitError in one line."""
        given = {f.name: self.extras[f.name] for f in attrs.fields(cls) if f.name in self.extras}
        try:
            return cls(**given)
        except (TypeError, ValueError) as err:
            raise limits.LimitError(f"run config {', '.join(sorted(given)) or '(defaults)'}: {err}") from None


_FIELDS = tuple(f.name for f in attrs.fields(RunConfig) if f.name != "extras")


def setting(default, check: Callable[[Any], bool], expected: str, convert: Callable[[Any], Any] | None = None):
    """One field of a plugin's options class: `convert` (e.g. int) then `check`; a value that
    fails either is refused naming the key and what it must be."""

    def validate(_instance, attribute, value):
        if not check(value):
            raise ValueError(f"{attribute.name!r} must be {expected}, got {value!r}")

    def converter(value):
        try:
            return convert(value) if convert is not None else value
        except (TypeError, ValueError):
            return value  # left for `validate` to name

    return attrs.field(default=default, converter=converter, validator=validate)


# Keys the core sets that are no Python names (so no options field): what each is.
CORE_KEYS = {"pass": "the index of a scoring pass (dataset.scorer_config.hook_config)"}


@attrs.frozen
class CoreOptions:
    """The plugin settings the core reads for every plugin of a kind."""

    # `--editor-option NAME=VALUE`: a model editor's own options (`model_editors.options`).
    editor_options: dict = setting(attrs.Factory(dict), lambda v: isinstance(v, dict), "a mapping of option names to values")
    # Set by the render-compare scorer for candidates given as pixels (`Modality.pixel_size`): the
    # frame size at which the references are read back through pixels too.
    pixel_references: int | None = setting(None, lambda v: v is None or (isinstance(v, int) and v > 0),
                                           "a positive whole number of pixels", lambda v: v if v is None else int(v))  # fmt: skip


@attrs.define
class Context:
    workdir: Path = attrs.field(converter=Path, factory=lambda: Path.cwd() / "out")
    seed: int = 0
    config: RunConfig = attrs.field(factory=RunConfig, converter=RunConfig.of)
    _shared: dict[str, Any] = attrs.field(factory=dict, repr=False)

    def shared(self, name: str, factory: Callable[[], Any]) -> Any:
        """The run-wide object `name`, made by `factory` on first use (once, whichever threads ask)."""
        with _SHARED_LOCK:
            if name not in self._shared:
                self._shared[name] = factory()
            return self._shared[name]
