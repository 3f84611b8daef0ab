"""Checks a modality plugin's own tests share: it works installed alone, and without it the
core answers nothing for its modality. Third-party modality plugins can call it too."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from . import plugins
from .cli import main

MODALITY_HOOKS = frozenset(
    {"decode_reference", "decode_to_mesh", "encode", "mask_part", "plugin_info", "read_asset", "reward_row", "write_asset"}
)


def _listed() -> dict[str, dict]:
    result = CliRunner().invoke(main, ["list-plugins", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    return {row["name"]: row for row in rows}


def check_modality_plugin_alone(modality: str, distribution: str, monkeypatch, target=None, ctx=None) -> None:
    """With only `distribution` loaded (MASKSCORE_LOAD_PLUGINS, set by the plugin's conftest), its
    modality is provided by it alone and `maskscore list-plugins` shows it with every modality hook;
    with nothing loaded, `list-plugins` no longer shows it and its hooks raise NoPluginError
    (`encode` too, when a `target` is given)."""
    records = {r.name: r for r in plugins.list_plugins() if r.error is None}
    assert records[modality].distribution == distribution
    assert plugins.providers("modality") == {modality: modality}
    row = _listed()[modality]
    assert row["distribution"] == distribution and row["error"] is None
    assert set(row["hooks"]) == MODALITY_HOOKS

    monkeypatch.setenv("MASKSCORE_LOAD_PLUGINS", "")  # the core alone: as if the plugin were uninstalled
    plugins.reset()
    assert modality not in plugins.providers("modality")
    assert modality not in _listed()
    with pytest.raises(plugins.NoPluginError, match=f"'mask_part' for '{modality}'"):
        plugins.call("mask_part", modality, modality=modality, part="mouth", ctx=ctx)
    if target is not None:
        with pytest.raises(plugins.NoPluginError, match=f"'encode' for '{modality}'"):
            plugins.call("encode", modality, modality=modality, target=target, ctx=ctx)
