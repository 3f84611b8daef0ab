"""Every hook in hookspecs.py is called by the core, tested here (`test_hook_<name>`) and
documented in docs/plugins.md (datasette's test_plugin_hooks_have_tests / _are_documented
pattern); and each hook reaches only the plugin that registered the name asked for."""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from click.testing import CliRunner

from maskscore_core.plugin import hookspecs

from maskscore_core.body import parts

from maskscore_core.plugin import manager as plugins
from maskscore_core.cli import main
from maskscore_core.plugin.records import Candidate, PartMask
from maskscore_core.plugin.testing import face_state, small_context, unit_instance

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "maskscore_core"


def hook_names() -> list[str]:
    return sorted(name for name in dir(hookspecs) if hasattr(getattr(hookspecs, name), f"{hookspecs.PROJECT}_spec"))


def core_source() -> str:
    return "\n".join(p.read_text() for p in sorted(CORE.rglob("*.py")) if p.name != "hookspecs.py")


def test_every_hook_is_called_by_the_core():
    source = core_source()
    for name in hook_names():
        if name.startswith("register_"):
            assert name in plugins.REGISTER_HOOKS.values(), f"{name}: the registry never collects it"
        else:
            assert re.search(rf'call\(\s*"{name}"', source), f"{name}: no plugins.call({name!r}, ...) in maskscore_core"


def test_every_hook_has_a_test():
    here = sys.modules[__name__]
    missing = [name for name in hook_names() if not callable(getattr(here, f"test_hook_{name}", None))]
    assert not missing, f"hooks without a test_hook_<name> in {Path(__file__).name}: {missing}"


def test_every_hook_is_documented():
    docs = (ROOT / "docs" / "plugins.md").read_text()
    missing = [name for name in hook_names() if not re.search(rf"^### {name}$", docs, re.M)]
    assert not missing, f"hooks without a '### <name>' section in docs/plugins.md: {missing}"


# -- one test per hook ----------------------------------------------------------------------------

_MODULE = 0


@pytest.fixture
def install(tmp_path, monkeypatch):
    """install(dist, source) lays out an installed distribution whose one module is `source`
    and loads it with the built-ins and the mesh plugin."""
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    loaded: list[str] = ["maskscore-mesh"]
    modules: list[str] = []

    def install_(dist: str, source: str, version: str = "1.0") -> str:
        global _MODULE
        _MODULE += 1
        module = f"maskscore_hooktest_{_MODULE}"
        info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
        (info / "entry_points.txt").write_text(f"[maskscore]\n{module} = {module}\n")
        (site / f"{module}.py").write_text(textwrap.dedent(source))
        loaded.append(dist)
        modules.append(module)
        monkeypatch.setenv("MASKSCORE_LOAD_PLUGINS", ",".join(loaded))
        plugins.reset()
        return module

    yield install_
    for module in modules:
        sys.modules.pop(module, None)


def _instance():
    return unit_instance("mesh", "edit the mouth to match frame B", "expression_change", face_state(), face_state(jawOpen=0.8))


def _registrant(kind: str, names: tuple[str, ...], hook: str, arguments: str, answer: str) -> str:
    classes = {"editor": "Editor", "scorer": "Scorer", "source": "Source", "trainer": "Trainer"}
    register = "".join(f"\n    register({classes[kind]}({n!r}))" for n in names)
    return textwrap.dedent("""
        from maskscore_core import Editor, Scorer, Source, Trainer, hookimpl

        @hookimpl
        def register_{kind}s(register):{register}

        @hookimpl
        def {hook}({arguments}):
            return {answer}
    """).format(kind=kind, register=register, hook=hook, arguments=arguments, answer=answer)


@pytest.mark.parametrize("kind", ["editor", "scorer", "source", "trainer"])
def test_registered_names_belong_to_their_distribution(install, kind):
    hook = {"editor": "edit", "scorer": "score", "source": "extract", "trainer": "train"}[kind]
    install(f"maskscore-fake-{kind}", _registrant(kind, ("one", "two"), hook, "**kwargs", "None"))
    assert {"one", "two"} <= set(plugins.names(kind))
    assert plugins.lookup(kind, "two").distribution == f"maskscore-fake-{kind}"


def test_hook_register_modalities(install):
    source = """
        from maskscore_core import Column, Modality, hookimpl

        class Blob(Modality):
            name = "blob"
            table = "BlobEditReward"
            input_columns = (Column("input_blob", "string", "frame A's blob"),)
            candidate_column = Column("output_blobs", "list<string>", "candidate blobs")
            template = "edit the {part} to match frame B"
            task_table = {"mouth": "expression_change"}
            def encode(self, target, ctx): return "encoded"
            def decode_reference(self, instance, which, ctx): ...
            def write(self, asset, directory, name, ctx): ...
            def read(self, value, root, ctx): ...
            def row(self, *args): ...

        @hookimpl
        def register_modalities(register):
            register(Blob())
    """
    install("maskscore-fake-blob", source)
    blob = plugins.modality("blob")
    assert plugins.lookup("modality", "blob").distribution == "maskscore-fake-blob"
    assert blob.arrow_schema().names == [
        "key", "instruction", "input_blob", "output_blobs", "scores", "task_type", "dimension"]  # fmt: skip
    assert plugins.call("encode", "blob", modality="blob", target=None, ctx=None) == "encoded"
    assert plugins.modality_names()[-1] == "blob"  # after the numbered design modalities


def test_a_malformed_modality_is_a_load_error_naming_its_distribution(install):
    source = """
        from maskscore_core import Column, Modality, hookimpl

        class Bad(Modality):
            name = "bad"
            table = "BadEditReward"
            candidate_column = Column("output_bad", "list<string>")
            template = "edit the {limb}"
            task_table = {"tentacle": "expression_change"}
            def encode(self, target, ctx): ...
            def decode_reference(self, instance, which, ctx): ...
            def write(self, asset, directory, name, ctx): ...
            def read(self, value, root, ctx): ...
            def row(self, *args): ...

        @hookimpl
        def register_modalities(register):
            register(Bad())
    """
    install("maskscore-fake-bad", source)
    (failure,) = [f for f in plugins.load_errors() if f.distribution == "maskscore-fake-bad"]
    assert "RegistrationError" in failure.error and "{part} and {phrase}" in failure.error
    with pytest.raises(plugins.NoPluginError, match="unknown modality 'bad'"):
        plugins.modality("bad")
    assert "mesh" in plugins.modality_names()


def test_hook_register_editors(install):
    install("maskscore-fake-editor", _registrant("editor", ("nudger",), "edit", "editor", "['edited by ' + editor]"))
    assert plugins.lookup("editor", "nudger").distribution == "maskscore-fake-editor"


def test_hook_register_scorers(install):
    install("maskscore-fake-scorer", _registrant("scorer", ("judge",), "score", "scorer", "[scorer]"))
    assert plugins.names("scorer") == ("judge", "latent-l2", "render-compare")


def test_hook_register_sources(install):
    install("maskscore-fake-source", _registrant("source", ("cam",), "extract", "source", "[]"))
    assert plugins.names("source") == ("anny", "cam", "speakingfaces")


def test_hook_register_trainers(install):
    install("maskscore-fake-trainer", _registrant("trainer", ("coach",), "train", "trainer", "{}"))
    assert plugins.names("trainer") == ("coach",)


def test_hook_extract(install):
    install("maskscore-fake-source", _registrant("source", ("cam",), "extract", "source, config", "[source, config['n']]"))
    assert plugins.call("extract", "cam", source="cam", config={"n": 3}, ctx=None) == ["cam", 3]


def test_hook_edit(install):
    install("maskscore-fake-editor", _registrant("editor", ("nudger",), "edit", "editor, modality", "[editor, modality]"))
    assert plugins.call("edit", "nudger", editor="nudger", modality="mesh", instance=None, ctx=None) == ["nudger", "mesh"]


def test_hook_score(install):
    install("maskscore-fake-scorer", _registrant("scorer", ("judge",), "score", "scorer, candidates", "[scorer] * len(candidates)"))
    assert plugins.call("score", "judge", scorer="judge", instance=None, candidates=[1, 2], ctx=None) == ["judge", "judge"]


def test_hook_train(install):
    install("maskscore-fake-trainer", _registrant("trainer", ("coach",), "train", "trainer, options", "{'by': trainer, **options}"))
    assert plugins.call("train", "coach", trainer="coach", options={"steps": 2}, ctx=None) == {"by": "coach", "steps": 2}


def test_hook_decode_to_mesh(tmp_path):
    ctx = small_context(tmp_path)
    instance = _instance()
    asset = plugins.modality("mesh").encode(instance.b, ctx)
    decoded = plugins.call("decode_to_mesh", "mesh", asset=asset, instance=instance, ctx=ctx)
    np.testing.assert_array_equal(decoded.vertices, asset.data)


def test_hook_mask_part(tmp_path):
    ctx = small_context(tmp_path)
    mask = plugins.call("mask_part", "mesh", modality="mesh", part="mouth", ctx=ctx)
    assert isinstance(mask, PartMask)
    np.testing.assert_array_equal(mask.region, parts.region_vertex_ids("mouth"))
    with pytest.raises(parts.PartError):
        plugins.call("mask_part", "mesh", modality="mesh", part="wings", ctx=ctx)


# -- dispatch by name (issue 11.5) ----------------------------------------------------------------

GREEDY = """
    from maskscore_core import Scorer, hookimpl

    @hookimpl
    def register_scorers(register):
        register(Scorer({name!r}))

    @hookimpl
    def score(scorer, instance, candidates, ctx):
        return ["greedy answer from {name}"]  # answers whatever it is asked, never returns None
"""


def test_an_implementation_answers_only_for_the_names_its_plugin_registered(install):
    install("maskscore-fake-greedy", GREEDY.format(name="greedy"))
    install("maskscore-fake-modest", GREEDY.format(name="modest"))
    assert plugins.call("score", "modest", scorer="modest", instance=None, candidates=[], ctx=None) == [
        "greedy answer from modest"]  # fmt: skip
    assert plugins.call("score", "greedy", scorer="greedy", instance=None, candidates=[], ctx=None) == [
        "greedy answer from greedy"]  # fmt: skip
    with pytest.raises(plugins.NoPluginError, match="no installed plugin answers 'score' for 'render-compare-ish'"):
        plugins.call("score", "render-compare-ish", scorer="render-compare-ish", instance=None, candidates=[], ctx=None)


def test_two_plugins_registering_one_name_is_an_error_naming_both(install, monkeypatch):
    install("maskscore-fake-first", GREEDY.format(name="judge"))
    install("maskscore-fake-second", GREEDY.format(name="judge"))
    with pytest.raises(plugins.DuplicateNameError, match="maskscore-fake-first 1.0.*maskscore-fake-second 1.0"):
        plugins.call("score", "judge", scorer="judge", instance=None, candidates=[], ctx=None)
    shown = CliRunner().invoke(main, ["list-plugins"])
    assert shown.exit_code == 0 and "Names registered twice" in shown.output
    assert "scorer 'judge' is registered by more than one plugin: maskscore-fake-first" in shown.output
    listed = {r.distribution: r for r in plugins.list_plugins()}
    assert "registered by more than one plugin" in listed["maskscore-fake-first"].error
    assert "registered by more than one plugin" in listed["maskscore-fake-second"].error
    assert plugins.names("scorer") == ("latent-l2", "render-compare")  # the others still answer
    monkeypatch.setenv("MASKSCORE_STRICT_PLUGINS", "1")
    plugins.reset()
    with pytest.raises(plugins.PluginLoadError, match="scorer 'judge' is registered by more than one plugin"):
        plugins.get_plugin_manager()


def test_a_hook_that_raises_names_its_plugin_and_distribution(install):
    source = """
        from maskscore_core import Scorer, hookimpl

        @hookimpl
        def register_scorers(register):
            register(Scorer("fragile"))

        @hookimpl
        def score(scorer, instance, candidates, ctx):
            raise ZeroDivisionError("a bug in the scorer")
    """
    install("maskscore-fake-fragile", source, version="3.1")
    with pytest.raises(ZeroDivisionError) as caught:
        plugins.call("score", "fragile", scorer="fragile", instance=None, candidates=[], ctx=None)
    line = plugins.describe_error(caught.value)
    assert line.startswith("ZeroDivisionError: a bug in the scorer (raised by 'score' of maskscore-fake-fragile 3.1")
    assert "\n" not in line


BROKEN_REGISTRATION = """
    from maskscore_core import hookimpl

    @hookimpl
    def register_editors(register):
        raise RuntimeError("cannot find my weights")
"""


def test_a_registration_that_raises_is_a_load_error_and_the_rest_works(install, tmp_path):
    module = install("maskscore-fake-broken", BROKEN_REGISTRATION)
    (failure,) = [f for f in plugins.load_errors() if f.distribution == "maskscore-fake-broken"]
    assert failure.name == module and failure.error == "RuntimeError: cannot find my weights"
    assert plugins.get_plugin_manager().get_plugin(module) is None
    shown = CliRunner().invoke(main, ["list-plugins"])
    assert shown.exit_code == 0 and f"{module} (maskscore-fake-broken): RuntimeError: cannot find my weights" in shown.output
    assert plugins.call("mask_part", "mesh", modality="mesh", part="mouth", ctx=small_context(tmp_path)) is not None


def test_a_candidate_of_an_unknown_modality_is_named(tmp_path):
    instance = _instance()
    stray = Candidate("stray", plugins.modality("mesh").encode(instance.a, None))
    object.__setattr__(stray.asset, "modality", "smell")  # as a foreign dataset could hold it
    with pytest.raises(plugins.NoPluginError, match="'decode_to_mesh' for 'smell'"):
        plugins.call("decode_to_mesh", "smell", asset=stray.asset, instance=instance, ctx=small_context(tmp_path))


def test_a_broken_plugin_does_not_stop_a_build(install, tmp_path, monkeypatch):
    install("maskscore-fake-broken", BROKEN_REGISTRATION)
    tests = str(Path(__file__).resolve().parent)
    monkeypatch.syspath_prepend(tests)
    monkeypatch.setenv("PYTHONPATH", tests)
    monkeypatch.setenv("MASKSCORE_LOAD_PLUGINS", "maskscore-fake-broken")  # no modality plugin but the toy's
    plugins.reset()
    from test_build import toy_config

    from maskscore_core.dataset.runner import run_build
    from maskscore_core.dataset.shard import register_plugin_modules

    register_plugin_modules(["test_build_fixtures"])
    summary = run_build(toy_config(tmp_path / "bench", rows=24), progress=False)
    assert summary.rows == 24
    assert [f.distribution for f in plugins.load_errors()] == ["maskscore-fake-broken"]
