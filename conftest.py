"""Test-wide settings: only the project's own plugin distributions load, never a user's."""

from __future__ import annotations

import os

import pytest

PROJECT_PLUGINS = ",".join(
    f"maskscore-{name}" for name in ("mesh", "pose", "keypoints", "depth", "video", "speech", "text", "multimodal")
)
os.environ["MASKSCORE_LOAD_PLUGINS"] = PROJECT_PLUGINS
os.environ.pop("MASKSCORE_STRICT_PLUGINS", None)
os.environ.setdefault("DRJIT_LIBLLVM_PATH", "/usr/lib/x86_64-linux-gnu/libLLVM.so.19.1")


@pytest.fixture(autouse=True)
def _fresh_plugin_manager(monkeypatch):
    """Each test sees a plugin manager built from the environment it sets."""
    from maskscore_core import plugins

    monkeypatch.setenv("MASKSCORE_LOAD_PLUGINS", PROJECT_PLUGINS)
    plugins.reset()
    yield
    plugins.reset()
