"""MaskScore editor `pixal3d` (README.md): Pixal3D turns frame A's picture into a mesh. It runs
only where its package, CUDA and weights exist; elsewhere `edit` fails with one line naming the
first thing missing. Its meshes have their own topology, which the metric cannot score yet
(issue 15, item 2), so even where everything exists the edit stops with that reason."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from maskscore_core import Editor, hookimpl

EDITOR = "pixal3d"
ENV = "MASKSCORE_PIXAL3D_WEIGHTS"
MODEL_CLASS = "pixal3d.Pixal3DImageTo3DPipeline"
PACKAGES = ("pixal3d", "natten", "flex_gemm", "o_voxel")  # none on PyPI


class Pixal3DUnavailable(RuntimeError):
    """A prerequisite of Pixal3D is missing here."""


def missing(ctx=None) -> str | None:
    """The first missing prerequisite, as one line, or None when all exist."""
    for package in PACKAGES:
        if importlib.util.find_spec(package) is None:
            return f"pixal3d needs the Python package {package!r} (not on PyPI; see plugins/maskscore-pixal3d/README.md)"
    import torch

    if not torch.cuda.is_available():
        return "pixal3d needs a CUDA GPU (torch.cuda.is_available() is False)"
    options = dict((ctx.config if ctx is not None else {}).get("editor_options", {}) or {})
    weights = options.get("weights") or os.environ.get(ENV)
    if not weights:
        return f"pixal3d needs local weights: pass --editor-option weights=DIR or set {ENV}"
    if not (Path(weights) / "pipeline.json").is_file() and not (Path(weights) / "model_index.json").is_file():
        return f"pixal3d weights: {Path(weights) / 'pipeline.json'} is missing"
    return None


@hookimpl
def register_editors(register):
    status = missing() or "package, CUDA and weights found"
    register(Editor(EDITOR, f"{MODEL_CLASS} turns a picture into a mesh of its own topology; {status}"))


@hookimpl
def edit(editor, modality, instance, ctx):
    reason = missing(ctx)
    if reason:
        raise Pixal3DUnavailable(reason)
    raise Pixal3DUnavailable("pixal3d meshes have their own topology, which the metric cannot score yet (issue 15, item 2)")
