"""The appearance task types (lighting_change, skin_tone, background_change) on video: clip
pairs that differ in the look, the ladder scored on shaded frames, rows, and clips whose look
changes within the clip refused."""

from __future__ import annotations

import itertools

import attrs
import numpy as np
import pytest

from maskscore_core import vocab

from maskscore_core.edits import instances as edits

from maskscore_core.plugin import manager as plugins

from maskscore_core.dataset import schemas
from maskscore_core.plugin.context import Context
from maskscore_core.plugin.registration import tasks_of
from maskscore_core.plugin.records import Appearance, Asset, BodyState, EditInstance, EditInstruction, Subject, Target

MODALITY = "video"


@pytest.fixture(scope="module")
def trials(tmp_path_factory):
    from maskscore_core.trials.anny_source import AnnySourceConfig, generate_trials

    config = AnnySourceConfig(seed=0, subjects=2, trials_per_subject=2, max_words=3, fps=10)  # short clips
    return generate_trials(config, tmp_path_factory.mktemp("trials"))


@pytest.fixture
def small_ctx(tmp_path):
    """4 views of 64 px, 3 sampled frames, 32 px PNG frames: cheap on shared cores."""
    return Context(workdir=tmp_path, seed=0, config={"views": 4, "resolution": 64, "video_frames": 3, "frame_resolution": 32})


def test_video_lists_the_appearance_task_types_on_the_parts_it_edits():
    assert set(edits.APPEARANCE_TASK_TYPES) <= set(edits.task_types(MODALITY))
    table = edits.task_table(MODALITY)
    assert sorted(table) == sorted(("mouth", "face", "eyebrow", "irides", "neck"))
    for part, value in table.items():
        tasks = tasks_of(value)
        assert tasks[0] == "temporal_edit", part  # what an undirected draw gives
        for task in tasks[1:]:
            assert part in edits.APPEARANCE_PARTS[task] and part in vocab.GROUP_PARTS[vocab.task_group(task)]


def _with_look_of(trial, look):
    frames = [attrs.evolve(f, state=attrs.evolve(f.state, appearance=look)) for f in trial.frames]
    return attrs.evolve(trial, frames=frames)


@pytest.mark.parametrize("task, part", [("lighting_change", "face"), ("skin_tone", "mouth"), ("background_change", "neck")])
def test_clip_pairs_of_an_appearance_type_need_the_look_to_differ(trials, task, part):
    a, b = trials[0], trials[1]
    assert a.subject.subject_id == b.subject.subject_id
    assert edits._sequence_pair_ok(MODALITY, part, task, a, b)
    same_look = _with_look_of(b, a.frames[0].state.appearance)
    assert not edits._sequence_pair_ok(MODALITY, part, task, a, same_look)
    if part != "neck":  # the face moves between the clips: the geometric rule alone would accept them
        assert edits._sequence_change(part, a, same_look) >= 1.0


@pytest.mark.slow
@pytest.mark.parametrize("task", edits.APPEARANCE_TASK_TYPES)
def test_ladder_is_recovered_on_built_in_trials(trials, small_ctx, tmp_path, task):
    """rung 1 > 2 > 3 > 4 > 5 on overall for a video edit of one look; rungs 1-4 share clip A's
    motion, so the order comes from the shaded frames; the rows validate against the schema."""
    (instance,) = edits.make_instances(trials, MODALITY, np.random.default_rng(1), 1, [task])
    part = instance.instruction.part
    assert instance.instruction.task_type == task and part in edits.APPEARANCE_PARTS[task]
    assert instance.instruction.text == edits.APPEARANCE_TEMPLATES[task].format(part=part)
    assert all(edits.appearance_change(task, part, a, instance.b.states[0]) >= 1.0 for a in instance.a.states)

    candidates = plugins.call("edit", "frame-pair", editor="frame-pair", modality=MODALITY, instance=instance, ctx=small_ctx)
    assert [c.rung for c in candidates] == [1, 2, 3, 4, 5]

    def motion(candidate):
        return [attrs.evolve(s, appearance=None) for s in candidate.asset.data.states]

    assert motion(candidates[0]) == motion(candidates[1]) == motion(candidates[2]) == motion(candidates[3])
    scores = plugins.call("score", "render-compare", scorer="render-compare", instance=instance, candidates=candidates,
                          ctx=small_ctx)  # fmt: skip
    overall = [s.overall for s in scores]
    assert all(a > b for a, b in itertools.pairwise(overall)), f"{instance.key} ({task}, {part}): {overall}"
    assert scores[0].instruction_following == pytest.approx(1.0)
    assert all("if.appearance_l1" in s.distances and "cons.appearance_l1" in s.distances for s in scores)

    def write(target_or_asset, name):
        asset = target_or_asset
        if not isinstance(asset, Asset):
            asset = plugins.call("encode", MODALITY, modality=MODALITY, target=target_or_asset, ctx=small_ctx)
        return plugins.call("write_asset", MODALITY, asset=asset, directory=tmp_path / "assets", name=name, ctx=small_ctx)

    input_value = write(instance.a, "a")
    values = [write(c.asset, f"rung{c.rung}") for c in candidates]
    rows = [
        plugins.call("reward_row", MODALITY, modality=MODALITY, instance=instance, input_value=input_value,
                     candidate_values=values, scores=[getattr(s, dimension) for s in scores], dimension=dimension,
                     root=tmp_path, ctx=small_ctx)
        for dimension in vocab.DIMENSIONS
    ]  # fmt: skip
    table = schemas.to_table("VideoEditReward", rows)
    assert table.column("task_type").to_pylist() == [task] * 3
    back = plugins.call("read_asset", MODALITY, modality=MODALITY, value=values[0], root=tmp_path, ctx=small_ctx)
    assert back.data.states == candidates[0].asset.data.states  # the look round-trips through frames.json
    decoded = plugins.call("decode_to_mesh", MODALITY, asset=back, instance=instance, ctx=small_ctx)
    assert decoded.appearance == candidates[0].asset.data.states[0].appearance


def test_a_clip_whose_look_changes_within_it_is_refused(small_ctx):
    subject = Subject("s1", {"age": 0.4})
    looks = [Appearance(), Appearance(), Appearance(background=(0.6, 0.2, 0.2))]
    target = Target("relit midway", subject, tuple(BodyState(appearance=look) for look in looks), fps=10.0)
    instance = EditInstance(
        key="unit-video-look",
        instruction=EditInstruction("relight the face to match frame B", "face", "lighting_change", MODALITY),
        a=target, b=target,
    )  # fmt: skip
    asset = plugins.call("encode", MODALITY, modality=MODALITY, target=target, ctx=small_ctx)
    with pytest.raises(ValueError, match="frame 2 of the clip has another look"):
        plugins.call("decode_to_mesh", MODALITY, asset=asset, instance=instance, ctx=small_ctx)
