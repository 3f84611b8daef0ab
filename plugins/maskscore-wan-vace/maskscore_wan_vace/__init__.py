"""MaskScore editor `wan-vace`: Wan-VACE (diffusers WanVACEPipeline) repaints the part's pixels
of the image modality's frames, from weights in a local directory (README.md)."""

from maskscore_core import Editor, hookimpl

from . import editor as _editor
from .pipeline import MODEL_CLASS
from .weights import found


@hookimpl
def register_editors(register):
    register(Editor(_editor.EDITOR, f"{MODEL_CLASS} repaints the part's pixels of a picture; {found()}"))


@hookimpl
def edit(editor, modality, instance, ctx):
    return _editor.edit(modality, instance, ctx)
