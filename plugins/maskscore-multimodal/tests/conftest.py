"""The multimodal plugin with the derivation-path plugins it realises candidates through."""

from __future__ import annotations

import os

import pytest

DISTRIBUTION = "maskscore-multimodal"
PATH_DISTRIBUTIONS = tuple(f"maskscore-{m}" for m in ("depth", "keypoints", "pose", "speech", "text", "video"))
os.environ.setdefault("DRJIT_LIBLLVM_PATH", "/usr/lib/x86_64-linux-gnu/libLLVM.so.19.1")


@pytest.fixture(autouse=True)
def _multimodal_and_paths(monkeypatch):
    from maskscore_core import plugins

    monkeypatch.setenv("MASKSCORE_LOAD_PLUGINS", ",".join((DISTRIBUTION, *PATH_DISTRIBUTIONS)))
    monkeypatch.delenv("MASKSCORE_STRICT_PLUGINS", raising=False)
    plugins.reset()
    yield
    plugins.reset()


@pytest.fixture
def ctx(tmp_path):
    """A small run: 4 views of 96 px (and 48 px video frames) keep renders cheap on shared cores."""
    from maskscore_core.context import Context

    return Context(workdir=tmp_path, seed=0, config={"views": 4, "resolution": 96, "frame_resolution": 48})
