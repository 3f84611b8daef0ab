"""The example editor edits in any installed modality, deterministically, and a stronger
transfer of frame B's part scores higher on instruction_following."""

from __future__ import annotations

import numpy as np
import pytest

from maskscore_core.plugin import manager as plugins
from maskscore_core.body.anny_model import get_body_model
from maskscore_core.plugin.records import BodyState, EditInstance, EditInstruction, Subject, Target


def _instance() -> EditInstance:
    body = get_body_model()
    subject = Subject("s1", {"age": 0.4})
    expression = np.zeros(52)
    expression[body.action_index("jawOpen")] = 0.9
    return EditInstance(
        key="example-0001",
        instruction=EditInstruction("edit the mouth to match frame B", "mouth", "expression_change", "mesh"),
        a=Target("frame A", subject, (BodyState(phenotype={"age": 0.4}),)),
        b=Target("frame B", subject, (BodyState(phenotype={"age": 0.4}, expression=expression),)),
    )


def _edit(ctx):
    return plugins.call("edit", "part-transfer", editor="part-transfer", modality="mesh", instance=_instance(), ctx=ctx)


def test_the_core_asks_it_only_for_its_name(ctx):
    assert plugins.lookup("editor", "part-transfer").plugin == "example_editor"
    with pytest.raises(plugins.NoPluginError, match="someone-else"):
        plugins.call("edit", "someone-else", editor="someone-else", modality="mesh", instance=_instance(), ctx=ctx)
    info = plugins.plugin_info("example_editor")
    assert info.kind == "editor" and info.provides == ("part-transfer",)


def test_candidates_are_deterministic_mesh_assets(ctx):
    first, second = _edit(ctx), _edit(ctx)
    assert [c.label for c in first] == ["part-transfer x1", "part-transfer x0.6", "part-transfer x0.3"]
    assert all(c.asset.modality == "mesh" and c.rung is None for c in first)
    for a, b in zip(first, second):
        assert np.array_equal(np.asarray(a.asset.data), np.asarray(b.asset.data))


def test_stronger_transfer_follows_the_instruction_better(ctx):
    instance = _instance()
    candidates = plugins.call("edit", "part-transfer", editor="part-transfer", modality="mesh", instance=instance, ctx=ctx)
    scores = plugins.call("score", "render-compare", scorer="render-compare", instance=instance, candidates=candidates, ctx=ctx)
    following = [s.instruction_following for s in scores]
    assert following[0] > following[1] > following[2], following
