"""Only this plugin's distribution loads (plus the core's built-ins): the plugin must work alone."""

from __future__ import annotations

import os

import pytest

DISTRIBUTION = "maskscore-speech"
os.environ.setdefault("DRJIT_LIBLLVM_PATH", "/usr/lib/x86_64-linux-gnu/libLLVM.so.19.1")


@pytest.fixture(autouse=True)
def _only_this_plugin(monkeypatch):
    from maskscore_core.testing import only_distributions

    yield from only_distributions(monkeypatch, DISTRIBUTION)


@pytest.fixture
def ctx(tmp_path):
    """A small run: 4 views of 96 px (and 48 px video frames) keep renders cheap on shared cores."""
    from maskscore_core.testing import small_context

    return small_context(tmp_path, frame_resolution=48)
