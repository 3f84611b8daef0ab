"""Built-in editor plugin `frame-pair`: the five ladder rungs of an instance, encoded in a modality.

Seed 000's candidates are graded executions of the edit built from real frames (maskscore_core.
ladder); each rung's Target is handed to the modality plugin's `encode` hook, so the editor works
for every modality, including third-party ones.
"""

from __future__ import annotations

from maskscore_core import hookimpl
from maskscore_core.records import Candidate, PluginInfo

NAME = "frame-pair"


@hookimpl
def plugin_info():
    return PluginInfo(kind="editor", provides=(NAME,))


@hookimpl
def edit(editor, modality, instance, ctx):
    if editor != NAME:
        return None
    from maskscore_core import plugins
    from maskscore_core.ladder import build_ladder

    candidates = []
    for target in build_ladder(instance):
        asset = plugins.call("encode", modality, modality=modality, target=target, ctx=ctx)
        candidates.append(Candidate(label=target.label, asset=asset, rung=target.rung))
    return candidates
