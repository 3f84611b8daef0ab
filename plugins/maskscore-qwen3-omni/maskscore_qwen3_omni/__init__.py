"""MaskScore on Qwen3-Omni: the text editor `qwen3-omni` and the scorer `omniscore`, both on
transformers' Qwen3OmniMoeForConditionalGeneration from a local weights directory (README.md)."""

from maskscore_core import Editor, Scorer, hookimpl

from . import editor as _editor
from . import omniscore as _omniscore
from .model import MODEL_CLASS, found


@hookimpl
def register_editors(register):
    register(Editor(_editor.EDITOR, f"{MODEL_CLASS} rewrites the transcript by the instruction; {found(_editor.EDITOR)}"))


@hookimpl
def register_scorers(register):
    description = f"{MODEL_CLASS} grades renders, audio or text as strict JSON, Avg@N; {found(_omniscore.SCORER)}"
    register(Scorer(_omniscore.SCORER, description, options=_omniscore.OmniScoreOptions))


@hookimpl
def edit(editor, modality, instance, ctx):
    return _editor.edit(modality, instance, ctx)


@hookimpl
def score(scorer, instance, candidates, ctx):
    return _omniscore.score(instance, candidates, ctx)
