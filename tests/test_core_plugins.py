"""The plugin manager: entry points, listing, and broken plugins reported rather than fatal."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest
from click.testing import CliRunner

from maskscore_core.plugin import manager as plugins
from maskscore_core.cli import main

MODALITIES = ("depth", "keypoints", "mesh", "multimodal", "pose", "speech", "text", "video")


def _fake_distribution(site, dist, module, source, version="1.0"):
    """Lay out an installed distribution (dist-info + module) that importlib.metadata finds."""
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(f"[maskscore]\n{module.removeprefix('maskscore_')} = {module}\n")
    (site / f"{module}.py").write_text(textwrap.dedent(source))


@pytest.fixture
def fake_site(tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    yield site
    for name in [m for m in sys.modules if m.startswith("maskscore_fake")]:
        del sys.modules[name]


def test_modality_plugins_come_from_their_own_distributions():
    records = {r.name: r for r in plugins.list_plugins()}
    for modality in MODALITIES:
        record = records[modality]
        assert record.distribution == f"maskscore-{modality}"
        assert record.kind == "modality" and record.provides == (modality,)
        assert record.version == "0.1.0" and record.error is None
        assert record.hooks == ("decode_to_mesh", "mask_part", "register_modalities")
    assert sorted(plugins.providers("modality")) == sorted(MODALITIES)


def test_list_plugins_json_is_sorted_and_stable():
    runner = CliRunner()
    first = runner.invoke(main, ["list-plugins", "--json"])
    assert first.exit_code == 0, first.output
    rows = json.loads(first.output)
    assert [r["name"] for r in rows] == sorted(r["name"] for r in rows)
    assert set(rows[0]) == {"name", "distribution", "version", "kind", "provides", "hooks", "error"}
    plugins.reset()
    assert runner.invoke(main, ["list-plugins", "--json"]).output == first.output


def test_load_plugins_variable_limits_distributions(monkeypatch):
    monkeypatch.setenv("MASKSCORE_LOAD_PLUGINS", "maskscore-speech")
    plugins.reset()
    names = {r.name for r in plugins.list_plugins() if r.distribution != "maskscore"}
    assert names == {"speech"}
    monkeypatch.setenv("MASKSCORE_LOAD_PLUGINS", "")
    plugins.reset()
    assert {r.distribution for r in plugins.list_plugins()} <= {"maskscore"}


def test_a_plugin_that_fails_to_import_is_reported_and_skipped(fake_site, monkeypatch):
    _fake_distribution(fake_site, "maskscore-fake-broken", "maskscore_fake_broken", "raise RuntimeError('boom at import')\n")
    monkeypatch.setenv("MASKSCORE_LOAD_PLUGINS", "maskscore-fake-broken,maskscore-mesh")
    plugins.reset()
    failures = [f for f in plugins.load_errors() if f.distribution != "maskscore"]
    assert [(f.name, f.distribution) for f in failures] == [("fake_broken", "maskscore-fake-broken")]
    assert "RuntimeError: boom at import" in failures[0].error
    assert "mesh" in plugins.providers("modality")  # everything else still works

    result = CliRunner().invoke(main, ["list-plugins"])
    assert result.exit_code == 0
    assert "fake_broken (maskscore-fake-broken): RuntimeError: boom at import" in result.output
    assert "maskscore-mesh" in result.output


def test_strict_mode_makes_a_broken_plugin_fatal(fake_site, monkeypatch):
    _fake_distribution(fake_site, "maskscore-fake-broken", "maskscore_fake_broken", "raise RuntimeError('boom')\n")
    monkeypatch.setenv("MASKSCORE_LOAD_PLUGINS", "maskscore-fake-broken")
    monkeypatch.setenv("MASKSCORE_STRICT_PLUGINS", "1")
    plugins.reset()
    with pytest.raises(plugins.PluginLoadError, match="'fake_broken' from maskscore-fake-broken 1.0 failed to load"):
        plugins.get_plugin_manager()


def test_a_hookimpl_without_a_hookspec_is_a_load_error(fake_site, monkeypatch):
    source = """
        from maskscore_core import Editor, hookimpl

        @hookimpl
        def register_editors(register):
            register(Editor("typo"))

        @hookimpl
        def decode_to_mseh(asset, instance, ctx):
            return None
    """
    _fake_distribution(fake_site, "maskscore-fake-typo", "maskscore_fake_typo", source)
    monkeypatch.setenv("MASKSCORE_LOAD_PLUGINS", "maskscore-fake-typo")
    plugins.reset()
    (failure,) = [f for f in plugins.load_errors() if f.distribution != "maskscore"]
    assert failure.name == "fake_typo" and "decode_to_mseh" in failure.error
    assert plugins.get_plugin_manager().get_plugin("fake_typo") is None


def test_a_working_third_party_plugin_is_listed_with_its_hooks(fake_site, monkeypatch):
    source = """
        from maskscore_core import Scorer, hookimpl

        @hookimpl
        def register_scorers(register):
            register(Scorer("constant-test"))

        @hookimpl
        def score(scorer, instance, candidates, ctx):
            return ["answered"]
    """
    _fake_distribution(fake_site, "maskscore-fake-scorer", "maskscore_fake_scorer", source, version="2.3")
    monkeypatch.setenv("MASKSCORE_LOAD_PLUGINS", "maskscore-fake-scorer")
    plugins.reset()
    (record,) = [r for r in plugins.list_plugins() if r.name == "fake_scorer"]
    assert (record.distribution, record.version, record.kind) == ("maskscore-fake-scorer", "2.3", "scorer")
    assert record.hooks == ("register_scorers", "score")
    assert plugins.call("score", "constant-test", scorer="constant-test", instance=None, candidates=[], ctx=None) == [
        "answered"
    ]
    with pytest.raises(plugins.NoPluginError, match="no installed plugin answers 'score' for 'nobody'"):
        plugins.call("score", "nobody", scorer="nobody", instance=None, candidates=[], ctx=None)
