"""The appearance task types end to end on the built-in source: mesh instances, the ladder, the
render-compare scores, .glb files carrying the look, and schema-valid reward rows."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from maskscore_core import vocab

from maskscore_core.edits import instances as edits

from maskscore_core.plugin import manager as plugins

from maskscore_core.dataset import reward_tables

from maskscore_core.dataset import schemas
from maskscore_core.plugin.context import Context
from maskscore_core.plugin.records import Appearance, Asset

INSTANCES_PER_TASK = 2


@pytest.fixture(scope="module")
def trials(tmp_path_factory):
    from maskscore_core.trials.anny_source import AnnySourceConfig, generate_trials

    config = AnnySourceConfig(seed=0, subjects=2, trials_per_subject=2, max_words=3)
    return generate_trials(config, tmp_path_factory.mktemp("trials"))


@pytest.fixture
def ctx(tmp_path):
    return Context(workdir=tmp_path, seed=0, config={"views": 4, "resolution": 96})


def test_modalities_without_a_look_never_list_the_appearance_tasks():
    for modality in ("depth", "keypoints", "pose", "speech", "text"):
        assert not set(edits.task_types(modality)) & set(edits.APPEARANCE_TASK_TYPES), modality
    assert set(edits.APPEARANCE_TASK_TYPES) <= set(edits.task_types("mesh"))
    for task, task_parts in edits.APPEARANCE_PARTS.items():
        assert set(task_parts) <= set(vocab.GROUP_PARTS[vocab.task_group(task)]), task


@pytest.mark.slow
@pytest.mark.parametrize("task", edits.APPEARANCE_TASK_TYPES)
def test_ladder_is_recovered_for_appearance_edits(trials, ctx, tmp_path, task):
    """The design's ladder on overall (rung 1 > 2 > 3 > 4 > 5) for mesh edits of one look, and the
    rows of every dimension validate against MeshEditReward."""
    instances = edits.make_instances(trials, "mesh", np.random.default_rng(1), INSTANCES_PER_TASK, [task] * INSTANCES_PER_TASK)
    for instance in instances:
        part = instance.instruction.part
        assert instance.instruction.task_type == task and part in edits.APPEARANCE_PARTS[task]
        assert edits.appearance_change(task, part, instance.a.state, instance.b.state) >= 1.0
        candidates = plugins.call("edit", "frame-pair", editor="frame-pair", modality="mesh", instance=instance, ctx=ctx)
        assert [c.rung for c in candidates] == [1, 2, 3, 4, 5]
        assert all(isinstance(c.asset.meta["appearance"], Appearance) for c in candidates)
        # rungs 1-4 keep frame A's shape: only the look changes
        np.testing.assert_array_equal(candidates[0].asset.data, candidates[3].asset.data)
        scores = plugins.call("score", "render-compare", scorer="render-compare", instance=instance, candidates=candidates, ctx=ctx)
        overall = [s.overall for s in scores]
        assert all(a > b for a, b in itertools.pairwise(overall)), f"{instance.key} ({task}, {part}): {overall}"
        assert scores[0].instruction_following == pytest.approx(1.0)
        assert all("if.appearance_l1" in s.distances for s in scores)

        values = [
            plugins.call("write_asset", "mesh", asset=c.asset, directory=tmp_path / "assets", name=f"{instance.key}-{c.rung}", ctx=ctx)
            for c in candidates
        ]
        input_asset = plugins.call("encode", "mesh", modality="mesh", target=instance.a, ctx=ctx)
        input_value = plugins.call("write_asset", "mesh", asset=input_asset, directory=tmp_path / "assets", name=f"{instance.key}-a", ctx=ctx)
        reward_tables.render_conditioning_image(instance, tmp_path, ctx)  # the dataset stage's part
        rows = [
            plugins.call(
                "reward_row", "mesh", modality="mesh", instance=instance, input_value=input_value, candidate_values=values,
                scores=[getattr(s, dimension) for s in scores], dimension=dimension, root=tmp_path, ctx=ctx,
            )
            for dimension in vocab.DIMENSIONS
        ]  # fmt: skip
        table = schemas.to_table("MeshEditReward", rows)
        assert table.column("task_type").to_pylist() == [task] * 3
        # the written candidates decode to the same look and score the same
        back = [plugins.call("read_asset", "mesh", modality="mesh", value=v, root=tmp_path, ctx=ctx) for v in values]
        assert [b.meta["appearance"] for b in back] == [c.asset.meta["appearance"] for c in candidates]


def test_glb_carries_the_look_and_rejects_disagreeing_colours(ctx, tmp_path):
    import trimesh

    from maskscore_core.plugin.records import BodyState, Light, Subject, Target

    look = Appearance(skin=(0.5, 0.4, 0.3), albedo={"mouth": (0.8, 0.1, 0.1)}, light=Light((0.2, 0.4, 0.9), 1.0, 0.2),
                      background=(0.3, 0.6, 0.9))  # fmt: skip
    target = Target("look", Subject("s", {}), (BodyState(appearance=look),))
    asset = plugins.call("encode", "mesh", modality="mesh", target=target, ctx=ctx)
    value = plugins.call("write_asset", "mesh", asset=asset, directory=tmp_path, name="look", ctx=ctx)
    back = plugins.call("read_asset", "mesh", modality="mesh", value=value, root=tmp_path, ctx=ctx)
    assert back.meta["appearance"] == look
    scene = trimesh.load(tmp_path / value, process=False, maintain_order=True)
    mesh = next(iter(scene.geometry.values()))
    assert mesh.visual.kind == "vertex"  # COLOR_0
    decoded = plugins.call("decode_to_mesh", "mesh", asset=back, instance=None, ctx=ctx)
    assert decoded.appearance == look
    # a file without a look reads back without one
    plain = plugins.call("write_asset", "mesh", asset=Asset("mesh", asset.data), directory=tmp_path, name="plain", ctx=ctx)
    assert plugins.call("read_asset", "mesh", modality="mesh", value=plain, root=tmp_path, ctx=ctx).meta["appearance"] is None
    # colours changed without the record: rejected by name
    colours = np.asarray(mesh.visual.vertex_colors).copy()
    colours[:, 0] = 255 - colours[:, 0]
    mesh.visual.vertex_colors = colours
    (tmp_path / "tampered.glb").write_bytes(trimesh.exchange.gltf.export_glb(scene))
    with pytest.raises(ValueError, match="COLOR_0 vertex colours disagree"):
        plugins.call("read_asset", "mesh", modality="mesh", value="tampered.glb", root=tmp_path, ctx=ctx)
