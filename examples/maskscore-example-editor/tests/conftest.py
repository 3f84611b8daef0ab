"""Run the example's tests from a source checkout: the package is registered by hand when it is
not installed, and only the mesh modality loads beside it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


@pytest.fixture(autouse=True)
def _example_and_mesh_only(monkeypatch):
    import maskscore_example_editor
    from maskscore_core.plugin import manager as plugins

    monkeypatch.setenv("MASKSCORE_LOAD_PLUGINS", "maskscore-mesh,maskscore-example-editor")
    plugins.reset()
    pm = plugins.get_plugin_manager()
    if not pm.is_registered(maskscore_example_editor) and pm.get_plugin("example_editor") is None:
        pm.register(maskscore_example_editor, name="example_editor")
    yield
    plugins.reset()


@pytest.fixture
def ctx(tmp_path):
    from maskscore_core.plugin.context import Context

    return Context(workdir=tmp_path, seed=0, config={"views": 4, "resolution": 96})
