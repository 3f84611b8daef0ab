"""Built-in editor plugin `frame-pair`: the ladder rungs of an instance, encoded in a modality.

The design's candidates (docs/design.md, "The ladder") are graded executions of the edit built from real frames (maskscore_core.
ladder: every rung its modality makes); each rung's Target is encoded by the registered modality
(`Modality.encode`), so the editor works for every modality, including third-party ones.
"""

from __future__ import annotations

from maskscore_core import Editor, hookimpl
from maskscore_core.plugin.records import Candidate
from maskscore_core.edits.ladder import build_ladder
from maskscore_core.plugin import manager as plugins

NAME = "frame-pair"


@hookimpl
def register_editors(register):
    register(Editor(NAME, "the ladder rungs of an instance (those its modality makes), from real frames"))


@hookimpl
def edit(editor, modality, instance, ctx):
    candidates = []
    for target in build_ladder(instance):
        asset = plugins.modality(modality).encode(target, ctx)
        candidates.append(Candidate(label=target.label, asset=asset, rung=target.rung))
    return candidates
