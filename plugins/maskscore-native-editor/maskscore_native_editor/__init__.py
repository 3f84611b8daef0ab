"""MaskScore's native editor: a small masked rectified-flow denoiser over ANNY's body parameters.

Registers the editor `native-flow` (stage 2: candidates any scorer can score) and the trainers
`native-flow` (stage 1, masked-part reconstruction) and `flow-grpo` (stage 4, RL with a scorer
as the reward). docs/loop.md describes the whole loop.
"""

from maskscore_core import hookimpl
from maskscore_core.plugin.registration import Editor, Trainer

from .options import NativeEditorOptions

EDITOR = "native-flow"


@hookimpl
def register_editors(register):
    register(Editor(EDITOR, "masked rectified-flow denoiser over SOMA pose, facial actions and phenotype",
                    options=NativeEditorOptions))


@hookimpl
def register_trainers(register):
    register(Trainer("native-flow", "stage 1: the native editor by masked-part reconstruction on built-in trials"))
    register(Trainer("flow-grpo", "stage 4: Flow-GRPO fine-tuning of the native editor with a scorer as reward"))


@hookimpl
def edit(editor, modality, instance, ctx):
    from . import editor as native

    return native.edit(modality, instance, ctx)


@hookimpl
def train(trainer, options, ctx):
    if trainer == "flow-grpo":
        from . import grpo

        return grpo.run(options, ctx)
    from . import train_editor

    return train_editor.run(options, ctx)
