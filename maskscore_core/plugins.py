"""The plugin manager: built-ins plus entry points of group `maskscore`, loaded once.

A plugin that fails to import, to register, or that implements a hook no spec defines, is
recorded in `load_errors()` and skipped: one broken third-party package must not take every
command down. `MASKSCORE_STRICT_PLUGINS=1` turns such a failure into an exception instead.
`MASKSCORE_LOAD_PLUGINS=dist-a,dist-b` loads only the named distributions ("" loads none).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import threading
import traceback

import attrs
import pluggy

from . import hookspecs
from .records import PluginInfo

ENTRY_POINT_GROUP = "maskscore"

# Modules of maskscore_core that register as plugins, exactly like third-party ones.
BUILTIN_MODULES = (
    "maskscore_core.builtins.frame_pair_editor",
    "maskscore_core.builtins.render_compare_scorer",
    "maskscore_core.builtins.latent_scorer",
    "maskscore_core.builtins.anny_source",
    "maskscore_core.builtins.speakingfaces_source",
)


class PluginLoadError(RuntimeError):
    """Raised in strict mode when a plugin cannot be loaded."""


class NoPluginError(LookupError):
    """No installed plugin answered a hook for the name asked for."""


@attrs.frozen
class LoadFailure:
    name: str
    distribution: str
    version: str
    error: str


@attrs.frozen
class PluginRecord:
    """One row of `maskscore list-plugins`."""

    name: str
    distribution: str
    version: str
    kind: str
    provides: tuple[str, ...]
    hooks: tuple[str, ...]
    error: str | None = None


_lock = threading.Lock()
_manager: pluggy.PluginManager | None = None
_origins: dict[str, tuple[str, str]] = {}  # plugin name -> (distribution, version)
_failures: list[LoadFailure] = []


def _strict() -> bool:
    return os.environ.get("MASKSCORE_STRICT_PLUGINS", "") not in ("", "0")


def _wanted_distributions() -> set[str] | None:
    raw = os.environ.get("MASKSCORE_LOAD_PLUGINS")
    if raw is None:
        return None
    return {name.strip() for name in raw.split(",") if name.strip()}


def _core_version() -> str:
    try:
        return importlib.metadata.version("maskscore")
    except importlib.metadata.PackageNotFoundError:
        return "0+unknown"


def _register(pm: pluggy.PluginManager, load, name: str, dist: str, version: str) -> None:
    """Import and register one plugin; check its hooks; record a failure instead of raising."""
    try:
        module = load()
        pm.register(module, name=name)
        try:
            pm.check_pending()
        except pluggy.PluginValidationError:
            pm.unregister(name=name)
            raise
        _origins[name] = (dist, version)
    except Exception as err:  # noqa: BLE001 - any failure of third-party code is reported
        message = f"{type(err).__name__}: {err}"
        if _strict():
            raise PluginLoadError(f"plugin {name!r} from {dist} {version} failed to load: {message}") from err
        _failures.append(LoadFailure(name=name, distribution=dist, version=version, error=message))
        if os.environ.get("MASKSCORE_DEBUG_PLUGINS"):
            traceback.print_exc()


def get_plugin_manager() -> pluggy.PluginManager:
    """The process-wide plugin manager, created on first use."""
    global _manager
    with _lock:
        if _manager is not None:
            return _manager
        pm = pluggy.PluginManager(hookspecs.PROJECT)
        pm.add_hookspecs(hookspecs)
        core = _core_version()
        for module_name in BUILTIN_MODULES:
            short = module_name.rsplit(".", 1)[1]
            _register(pm, lambda m=module_name: importlib.import_module(m), short, "maskscore", core)
        wanted = _wanted_distributions()
        entry_points = sorted(
            importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: (ep.name, ep.value)
        )
        for ep in entry_points:
            dist = ep.dist.name if ep.dist else "?"
            version = ep.dist.version if ep.dist else "?"
            if wanted is not None and dist not in wanted:
                continue
            if pm.has_plugin(ep.name) or ep.name in {f.name for f in _failures}:
                continue
            _register(pm, ep.load, ep.name, dist, version)
        _manager = pm
        return pm


def reset() -> None:
    """Forget the loaded plugins (tests use this after changing the environment)."""
    global _manager
    with _lock:
        _manager = None
        _origins.clear()
        _failures.clear()


def load_errors() -> list[LoadFailure]:
    get_plugin_manager()
    return list(_failures)


def plugin_info(name: str) -> PluginInfo:
    pm = get_plugin_manager()
    plugin = pm.get_plugin(name)
    if plugin is None or not hasattr(plugin, "plugin_info"):
        raise NoPluginError(f"plugin {name!r} is not registered or does not describe itself")
    return plugin.plugin_info()


def list_plugins() -> list[PluginRecord]:
    """Every registered plugin and every failed one, sorted by name."""
    pm = get_plugin_manager()
    records = []
    for name, plugin in pm.list_name_plugin():
        dist, version = _origins.get(name, ("?", "?"))
        hooks = tuple(sorted(caller.name for caller in pm.get_hookcallers(plugin) or ()))
        info = plugin.plugin_info() if hasattr(plugin, "plugin_info") else PluginInfo("modality", ())
        records.append(PluginRecord(name, dist, version, info.kind, tuple(info.provides), hooks))
    for failure in _failures:
        records.append(PluginRecord(failure.name, failure.distribution, failure.version, "?", (), (), failure.error))
    return sorted(records, key=lambda r: (r.name, r.distribution))


def providers(kind: str) -> dict[str, str]:
    """Map each provided name of `kind` (e.g. every modality) to the plugin providing it."""
    found = {}
    for record in list_plugins():
        if record.kind == kind and record.error is None:
            for provided in record.provides:
                found.setdefault(provided, record.name)
    return dict(sorted(found.items()))


def call(hook: str, what: str, **kwargs):
    """Call a firstresult hook and raise NoPluginError when no plugin answers for `what`."""
    pm = get_plugin_manager()
    result = getattr(pm.hook, hook)(**kwargs)
    if result is None:
        raise NoPluginError(
            f"no installed plugin answers {hook!r} for {what!r}; installed plugins: "
            f"{', '.join(r.name for r in list_plugins() if r.error is None)}"
        )
    return result
