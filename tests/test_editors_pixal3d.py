"""pixal3d fails with one line naming what is missing here (package, CUDA, weights)."""

from __future__ import annotations

import importlib.util

import pytest

from maskscore_core.plugin import manager as plugins
from maskscore_core.plugin.context import Context

pytestmark = pytest.mark.maskscore_plugins("maskscore-pixal3d")


@pytest.mark.skipif(importlib.util.find_spec("pixal3d") is not None, reason="Pixal3D is installed here")
def test_edit_names_the_missing_package_in_one_line(tmp_path):
    from maskscore_pixal3d import Pixal3DUnavailable

    with pytest.raises(Pixal3DUnavailable, match=r"pixal3d needs the Python package 'pixal3d' \(not on PyPI") as err:
        plugins.call("edit", "pixal3d", editor="pixal3d", modality="mesh", instance=None, ctx=Context(workdir=tmp_path))
    assert "\n" not in str(err.value)
    assert "needs the Python package 'pixal3d'" in plugins.lookup("editor", "pixal3d").obj.description


def test_each_prerequisite_is_named(monkeypatch, tmp_path):
    import maskscore_pixal3d as p

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object())
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert p.missing() == "pixal3d needs a CUDA GPU (torch.cuda.is_available() is False)"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.delenv(p.ENV, raising=False)
    assert "--editor-option weights=DIR or set MASKSCORE_PIXAL3D_WEIGHTS" in p.missing()
    ctx = Context(workdir=tmp_path, config={"editor_options": {"weights": str(tmp_path)}})
    assert p.missing(ctx) == f"pixal3d weights: {tmp_path / 'pipeline.json'} is missing"
    (tmp_path / "pipeline.json").write_text("{}")
    assert p.missing(ctx) is None
