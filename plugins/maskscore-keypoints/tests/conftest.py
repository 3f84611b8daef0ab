"""Only this plugin's distribution loads (plus the core's built-ins): the plugin must work alone."""

from __future__ import annotations

import os

import pytest

DISTRIBUTION = "maskscore-keypoints"
os.environ.setdefault("DRJIT_LIBLLVM_PATH", "/usr/lib/x86_64-linux-gnu/libLLVM.so.19.1")


@pytest.fixture(autouse=True)
def _only_this_plugin(monkeypatch):
    from maskscore_core import plugins

    monkeypatch.setenv("MASKSCORE_LOAD_PLUGINS", DISTRIBUTION)
    monkeypatch.delenv("MASKSCORE_STRICT_PLUGINS", raising=False)
    plugins.reset()
    yield
    plugins.reset()


@pytest.fixture
def ctx(tmp_path):
    """A small run: 4 views of 96 px keep the renders cheap on 2 shared cores."""
    from maskscore_core.context import Context

    return Context(workdir=tmp_path, seed=0, config={"views": 4, "resolution": 96})
