"""MaskScore editor `talker`: Qwen2.5-Omni's talker and Token2Wav (transformers
Qwen2_5OmniForConditionalGeneration) resynthesize the part's span of frame A's audio to say frame
B's words, from weights in a local directory (README.md)."""

from maskscore_core import Editor, hookimpl

from . import editor as _editor
from .model import MODEL_CLASS, found


@hookimpl
def register_editors(register):
    register(Editor(_editor.EDITOR, f"{MODEL_CLASS} (talker + Token2Wav) resynthesizes the part's audio span; {found()}"))


@hookimpl
def edit(editor, modality, instance, ctx):
    return _editor.edit(modality, instance, ctx)
