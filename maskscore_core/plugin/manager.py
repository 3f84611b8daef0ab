"""The plugin manager and the registry: who provides which modality, editor, scorer and source.

Plugins are the core's built-ins plus entry points of group `maskscore`, loaded once. Each one
registers named objects (`register_modalities(register)` ...; `maskscore_core.plugin.registration`),
and the core calls an operation hook (`extract`, `edit`, `decode_to_mesh`, `mask_part`,
`score`) only on the plugin that registered the name asked for: an implementation never
answers for a name it did not register.

A plugin that fails to import, to register, or implements a hook no spec defines is recorded in
`load_errors()` naming its distribution, and skipped: one broken third-party package must not
take every command down. Two plugins registering one name make that name an error naming both
distributions. `MASKSCORE_STRICT_PLUGINS=1` turns every such failure into an exception.
`MASKSCORE_LOAD_PLUGINS=dist-a,dist-b` loads only the named distributions ("" loads none).

Operation hooks run one at a time in a process (`serialized`), whichever thread calls them, so
a plugin never has to be thread-safe. The one exception is the `score` call of a scorer that
registers `rows_in_flight` > 1: the dataset builder then scores that many rows at once on
threads, and the scorer's own plugin calls (decoding the candidates) still run one at a time.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import threading
import traceback
from typing import Any

import attrs
import pluggy

from maskscore_core import limits, vocab

from maskscore_core.plugin import context, hookspecs

from maskscore_core.plugin import registration
from maskscore_core.plugin.records import PluginInfo

ENTRY_POINT_GROUP = "maskscore"

# Modules of maskscore_core that register as plugins, exactly like third-party ones.
BUILTIN_MODULES = (
    "maskscore_core.builtins.frame_pair_editor",
    "maskscore_core.builtins.render_compare_scorer",
    "maskscore_core.builtins.latent_scorer",
    "maskscore_core.builtins.anny_source",
    "maskscore_core.builtins.speakingfaces_source",
)

# Which kind of registered name each operation hook is dispatched on, and the argument holding it.
HOOK_KIND = {
    "extract": ("source", "source"),
    "edit": ("editor", "editor"),
    "decode_to_mesh": ("modality", "asset"),
    "mask_part": ("modality", "modality"),
    "score": ("scorer", "scorer"),
    "train": ("trainer", "trainer"),
}
# Modality methods `call` also reaches by name (their names when they were hooks), so that an
# error they raise names the distribution too: name -> (argument holding the modality, method).
MODALITY_METHODS = {
    "encode": ("modality", "encode"),
    "decode_reference": ("modality", "decode_reference"),
    "write_asset": ("asset", "write"),
    "read_asset": ("modality", "read"),
    "reward_row": ("modality", "row"),
}
REGISTER_HOOKS = {
    "modality": "register_modalities",
    "editor": "register_editors",
    "scorer": "register_scorers",
    "source": "register_sources",
    "trainer": "register_trainers",
}


class PluginLoadError(RuntimeError):
    """Raised in strict mode when a plugin cannot be loaded."""


class NoPluginError(LookupError):
    """No installed plugin answers a hook for the name asked for."""


class DuplicateNameError(NoPluginError):
    """Two plugins registered one name; neither answers for it."""


class UnknownModalityError(vocab.VocabularyError, NoPluginError):
    """A modality name no installed plugin registered."""


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


@attrs.frozen
class Registration:
    """One registered name: the object, and the plugin (and distribution) that registered it."""

    kind: str
    name: str
    obj: Any
    plugin: str
    distribution: str
    version: str

    def origin(self) -> str:
        if self.distribution == "?":  # registered at run time (BuildConfig.plugin_modules, tests)
            return f"plugin {self.plugin!r} (no distribution)"
        return f"{self.distribution} {self.version} (plugin {self.plugin!r})"


_lock = threading.RLock()
_manager: pluggy.PluginManager | None = None
_origins: dict[str, tuple[str, str]] = {}  # plugin name -> (distribution, version)
_failures: list[LoadFailure] = []
_registry: dict[tuple[str, str], Registration] = {}
_duplicates: dict[tuple[str, str], list[Registration]] = {}
_collected: dict[str, list[Registration]] = {}  # plugin name -> what it registered
_hooks = threading.RLock()  # held around every operation hook call (`serialized`)
_held = threading.local()  # how deep this thread is inside `serialized`


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


def _fail(name: str, dist: str, version: str, err: BaseException, what: str = "failed to load") -> None:
    message = f"{type(err).__name__}: {err}"
    if _strict():
        raise PluginLoadError(f"plugin {name!r} from {dist} {version} {what}: {message}") from err
    _failures.append(LoadFailure(name=name, distribution=dist, version=version, error=message))
    if os.environ.get("MASKSCORE_DEBUG_PLUGINS"):
        traceback.print_exception(err)


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
        _fail(name, dist, version, err)


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
        _sync(pm)
        return pm


def reset() -> None:
    """Forget the loaded plugins (tests use this after changing the environment)."""
    global _manager
    with _lock:
        _manager = None
        _origins.clear()
        _failures.clear()
        _registry.clear()
        _duplicates.clear()
        _collected.clear()


# ---------------------------------------------------------------------------------------------
# The registry.


def _own_impl(pm: pluggy.PluginManager, hook: str, plugin_name: str):
    caller = getattr(pm.hook, hook, None)
    if caller is None:
        return None
    return next((i for i in caller.get_hookimpls() if i.plugin_name == plugin_name), None)


def _invoke(impl, kwargs: dict):
    """Call one plugin's implementation with the arguments it names (pluggy's convention)."""
    return impl.function(*[kwargs[name] for name in impl.argnames])


def _collect(pm: pluggy.PluginManager, plugin_name: str) -> list[Registration]:
    """What one plugin registers through its register_* hooks."""
    dist, version = _origins.get(plugin_name, ("?", "?"))
    found: list[Registration] = []
    for kind, hook in REGISTER_HOOKS.items():
        impl = _own_impl(pm, hook, plugin_name)
        if impl is None:
            continue

        def register(obj, kind=kind):
            expected = registration.KINDS[kind]
            if not isinstance(obj, expected):
                raise registration.RegistrationError(
                    f"{REGISTER_HOOKS[kind]} must register {expected.__name__} objects, got {type(obj).__name__}"
                )
            obj.check()
            found.append(Registration(kind, obj.name, obj, plugin_name, dist, version))

        _invoke(impl, {"register": register})
    names = [(r.kind, r.name) for r in found]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise registration.RegistrationError(f"registers {repeated[0][0]} {repeated[0][1]!r} twice")
    return found


def _sync(pm: pluggy.PluginManager) -> None:
    """Bring the registry up to date with the manager's plugins (some are registered late)."""
    with _lock:
        current = {name for name, plugin in pm.list_name_plugin() if plugin is not None}
        if set(_collected) == current:
            return
        for name, plugin in pm.list_name_plugin():
            if plugin is None or name in _collected:
                continue
            _origins.setdefault(name, ("?", "?"))
            try:
                _collected[name] = _collect(pm, name)
            except Exception as err:  # noqa: BLE001 - a registration's failure is the plugin's, reported
                pm.unregister(name=name)
                dist, version = _origins.pop(name)
                _fail(name, dist, version, err, "failed to register")
                continue
        for name in set(_collected) - current:
            del _collected[name]
        _registry.clear()
        _duplicates.clear()
        for name, plugin in pm.list_name_plugin():
            for reg in _collected.get(name, ()):
                ident = (reg.kind, reg.name)
                if ident in _duplicates:
                    _duplicates[ident].append(reg)
                elif ident in _registry:
                    _duplicates[ident] = [_registry.pop(ident), reg]
                else:
                    _registry[ident] = reg
        if _strict() and _duplicates:
            raise PluginLoadError(_duplicate_message(*next(iter(_duplicates.items()))))


def _duplicate_message(ident: tuple[str, str], regs: list[Registration]) -> str:
    kind, name = ident
    return f"{kind} {name!r} is registered by more than one plugin: " + " and ".join(r.origin() for r in regs)


def _registrations() -> dict[tuple[str, str], Registration]:
    _sync(get_plugin_manager())
    return _registry


def lookup(kind: str, name: str) -> Registration:
    """Who registered `name` as a `kind`; NoPluginError (or DuplicateNameError) otherwise."""
    registry = _registrations()
    if (kind, name) in _duplicates:
        raise DuplicateNameError(_duplicate_message((kind, name), _duplicates[(kind, name)]))
    if (kind, name) not in registry:
        available = ", ".join(names(kind)) or "none"
        if kind == "modality":
            raise UnknownModalityError(f"unknown modality {name!r}; expected one of: {available}")
        raise NoPluginError(f"no installed plugin provides the {kind} {name!r}; installed {kind}s: {available}")
    return registry[(kind, name)]


def names(kind: str) -> tuple[str, ...]:
    """Every registered name of `kind`; modalities in their `order`, the rest sorted."""
    regs = [r for (k, _), r in _registrations().items() if k == kind]
    if kind == "modality":
        return tuple(r.name for r in sorted(regs, key=lambda r: _modality_sort_key(r.obj)))
    return tuple(sorted(r.name for r in regs))


def _modality_sort_key(obj) -> tuple:
    return (obj.order is None, obj.order if obj.order is not None else 0, obj.name)


def modality(name: str) -> registration.Modality:
    """The registered Modality object named `name`."""
    return lookup("modality", name).obj


def modalities() -> tuple[registration.Modality, ...]:
    """Every registered modality, in `names("modality")` order."""
    return tuple(modality(n) for n in names("modality"))


def modality_names() -> tuple[str, ...]:
    return names("modality")


def check_modality(name: str) -> str:
    """`name`, if a plugin registered it as a modality; UnknownModalityError otherwise."""
    lookup("modality", name)
    return name


def duplicates() -> list[str]:
    """One message per name that more than one plugin registered."""
    _registrations()
    return [_duplicate_message(ident, regs) for ident, regs in sorted(_duplicates.items())]


# ---------------------------------------------------------------------------------------------
# Calls.


def _name_of(hook: str, kwargs: dict) -> tuple[str, str]:
    if hook in MODALITY_METHODS:
        kind, argument = "modality", MODALITY_METHODS[hook][0]
    elif hook in HOOK_KIND:
        kind, argument = HOOK_KIND[hook]
    else:
        raise ValueError(f"{hook!r} is no operation hook; expected one of: {', '.join([*HOOK_KIND, *MODALITY_METHODS])}")
    value = kwargs[argument]
    return kind, (value.modality if argument == "asset" else value)


def serialized():
    """Context manager: this thread alone runs operation hooks until it leaves (re-entrant).
    `call` takes it around every hook; a scorer with `rows_in_flight` > 1 takes it around its
    own plugin calls and whatever else of its work is not thread-safe."""
    return _Serialized()


class _Serialized:
    def __enter__(self):
        _hooks.acquire()
        _held.depth = getattr(_held, "depth", 0) + 1

    def __exit__(self, *exc):
        _held.depth -= 1
        _hooks.release()


def serialized_here() -> bool:
    """Whether this thread is inside `serialized` (a hook call): work it hands to other threads
    must not wait on it for another hook call, or both would wait for ever."""
    return getattr(_held, "depth", 0) > 0


def rows_in_flight(scorer: str) -> int:
    """How many rows' `score` calls of `scorer` may run at once (its `Scorer.rows_in_flight`)."""
    return lookup("scorer", scorer).obj.rows_in_flight


def call(hook: str, what: str | None = None, **kwargs):
    """Call `hook` on the plugin that registered the name it is asked about (the `source`,
    `editor`, `scorer`, `modality` argument, or `asset.modality`); `what` is unused (older
    callers name it). A `MODALITY_METHODS` name calls that method of the registered Modality.

    Raises NoPluginError when no plugin registered that name, or when its plugin does not
    implement the hook or returns nothing. An exception raised by the plugin passes through with
    a note naming the hook, the plugin and its distribution (`describe_error`).
    """
    pm = get_plugin_manager()
    kind, name = _name_of(hook, kwargs)
    try:
        reg = lookup(kind, name)
    except UnknownModalityError:
        raise NoPluginError(f"no installed plugin answers {hook!r} for {name!r}; installed modalities: "
                            f"{', '.join(names('modality')) or 'none'}") from None  # fmt: skip
    except DuplicateNameError:
        raise
    except NoPluginError:
        raise NoPluginError(f"no installed plugin answers {hook!r} for {name!r}; installed {kind}s: "
                            f"{', '.join(names(kind)) or 'none'}") from None  # fmt: skip
    if hook in MODALITY_METHODS:
        method = getattr(reg.obj, MODALITY_METHODS[hook][1])
        run = lambda: method(**{k: v for k, v in kwargs.items() if k != "modality"})  # noqa: E731
    else:
        impl = _own_impl(pm, hook, reg.plugin)
        if impl is None:
            raise NoPluginError(f"{reg.origin()} registers the {kind} {name!r} but does not implement {hook!r}")
        run = lambda: _invoke(impl, kwargs)  # noqa: E731
    concurrent = hook == "score" and kind == "scorer" and getattr(reg.obj, "rows_in_flight", 1) > 1
    try:
        if concurrent:  # the scorer serializes its own plugin calls
            result = run()
        else:
            with serialized():
                result = run()
    except Exception as err:
        note = f"raised by {hook!r} of {reg.origin()} for the {kind} {name!r}"
        if note not in getattr(err, "__notes__", ()):
            err.add_note(note)
        raise
    if result is None:
        raise NoPluginError(f"{hook!r} of {reg.origin()} returned nothing for the {kind} {name!r}")
    return result


def option_classes() -> dict[type, str]:
    """Every options class in use -> who declares it: the core's, then each registered object's
    `options` (the attrs class of the `ctx.config` keys it reads), in registry order."""
    found: dict[type, str] = {context.CoreOptions: "the core"}
    for reg in _registrations().values():
        cls = getattr(reg.obj, "options", None)
        if cls is not None:
            found.setdefault(cls, f"{reg.kind} {reg.name!r} ({reg.origin()})")
    return found


def check_run_config(config) -> context.RunConfig:
    """`config` as a RunConfig whose every plugin setting an installed plugin (or the core)
    declares, each valid for its options class; LimitError naming the first that is not."""
    config = context.RunConfig.of(config)
    classes = option_classes()
    known = {f.name for cls in classes for f in attrs.fields(cls)} | set(context.CORE_KEYS)
    for key in config.extras:
        if key not in known:
            raise limits.LimitError(
                f"run config {key!r} is not a setting of the core or of an installed plugin; settings: {', '.join(sorted(known))}"
            )
    for cls in classes:
        config.options(cls)
    return config


def describe_error(err: BaseException) -> str:
    """`Type: message`, plus the plugin that raised it when the error came out of a hook."""
    text = f"{type(err).__name__}: {err}"
    notes = [n for n in getattr(err, "__notes__", ()) if n.startswith("raised by ")]
    return f"{text} ({notes[0]})" if notes else text


# ---------------------------------------------------------------------------------------------
# Listing.


def load_errors() -> list[LoadFailure]:
    _registrations()
    return list(_failures)


def plugin_info(name: str) -> PluginInfo:
    """What the plugin `name` registered, as (kind, provided names)."""
    pm = get_plugin_manager()
    _sync(pm)
    if name not in _collected:
        raise NoPluginError(f"plugin {name!r} is not registered")
    regs = _collected[name]
    kinds = sorted({r.kind for r in regs})
    if not kinds:
        raise NoPluginError(f"plugin {name!r} registers nothing")
    if len(kinds) > 1:
        raise NoPluginError(f"plugin {name!r} registers several kinds ({', '.join(kinds)}); use list_plugins()")
    return PluginInfo(kinds[0], tuple(r.name for r in regs))


def list_plugins() -> list[PluginRecord]:
    """Every registered plugin and every failed one, sorted by name."""
    pm = get_plugin_manager()
    _sync(pm)
    records = []
    for name, plugin in pm.list_name_plugin():
        if plugin is None:
            continue
        dist, version = _origins.get(name, ("?", "?"))
        hooks = tuple(sorted(caller.name for caller in pm.get_hookcallers(plugin) or ()))
        regs = _collected.get(name, [])
        kind = ",".join(sorted({r.kind for r in regs})) or "-"
        clashes = [_duplicate_message((r.kind, r.name), _duplicates[(r.kind, r.name)]) for r in regs
                   if (r.kind, r.name) in _duplicates]  # fmt: skip
        records.append(PluginRecord(name, dist, version, kind, tuple(r.name for r in regs), hooks, "; ".join(clashes) or None))
    for failure in _failures:
        records.append(PluginRecord(failure.name, failure.distribution, failure.version, "?", (), (), failure.error))
    return sorted(records, key=lambda r: (r.name, r.distribution))


def providers(kind: str) -> dict[str, str]:
    """Map each registered name of `kind` (e.g. every modality) to the plugin registering it."""
    return {name: lookup(kind, name).plugin for name in sorted(names(kind))}
