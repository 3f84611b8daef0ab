"""The build's plan: every (modality, task type) the task tables allow, in the stated
proportions, read from the tables when the plan is made; and the instance maker making exactly
the task types the plan asks for, or a clear error naming the one it cannot make."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from maskscore_core import vocab

from maskscore_core.edits import instances as edits

from maskscore_core.plugin import manager as plugins
from maskscore_core.dataset import plan
from maskscore_core.dataset.plan import BuildConfig
from maskscore_core.dataset.splits import SPLITS

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))
from test_edits import hand_trials  # noqa: E402


@pytest.mark.parametrize("split", SPLITS)
def test_default_plan_has_every_task_type_of_every_modality_in_equal_shares(split):
    config = BuildConfig(split=split, out="/unused")
    per_modality = plan.instances_per_modality(config)
    planned = plan.planned_instances(config)
    assert sum(per_modality.values()) == -(-config.total_rows // config.rows_per_instance)
    assert max(per_modality.values()) - min(per_modality.values()) <= 1
    for modality in plugins.modality_names():
        tasks = edits.task_types(modality)
        # every (modality, task type) the tables allow, and nothing else
        assert list(planned[modality]) == list(tasks)
        # the stated rule: equal shares, the remainder to the first task types in vocabulary order
        base, remainder = divmod(per_modality[modality], len(tasks))
        assert [planned[modality][t] for t in tasks] == [base + (i < remainder) for i in range(len(tasks))]
    everything = {t for m in plugins.modality_names() for t in edits.task_types(m)}
    assert {t for tasks in planned.values() for t in tasks} == everything
    # the shards carry exactly the planned slots, in order
    shards = plan.shard_plan(config)
    for modality in plugins.modality_names():
        slots = [t for s in shards if s.modality == modality for t in s.task_types]
        assert tuple(slots) == plan.task_slots(modality, per_modality[modality])


def test_a_task_type_added_to_a_table_is_planned_without_other_changes(monkeypatch):
    config = BuildConfig(split="bench", out="/unused", rows=48, modalities=("speech",))
    assert plan.planned_instances(config) == {"speech": {"speech_edit": 16}}
    monkeypatch.setattr(plugins.modality("speech"), "task_table", {"mouth": "speech_edit", "face": "lighting_change"})
    assert plan.planned_instances(config) == {"speech": {"lighting_change": 8, "speech_edit": 8}}
    assert config.content_config()["task_types"] == {"speech": ["lighting_change", "speech_edit"]}


def test_small_plans_interleave_task_types_within_shards():
    tasks = edits.task_types("mesh")  # part_add, part_remove, part_replace, expression_change, ...
    slots = len(tasks) + 1
    config = BuildConfig(split="bench", out="/unused", rows=3 * slots, modalities=("mesh",), shard_size=3)
    shards = plan.shard_plan(config)
    assert [len(s.task_types) for s in shards] == [3] * (slots // 3) + ([slots % 3] if slots % 3 else [])
    assert [t for s in shards for t in s.task_types] == [*tasks, tasks[0]]
    assert shards[0].task_types == ("part_add", "part_remove", "part_replace")


@pytest.fixture(scope="module")
def trials():
    return hand_trials()


def test_instances_have_exactly_the_requested_task_types(trials):
    wanted = ["part_add", "part_remove", "part_replace", "depth_edit", "expression_change", "region_extract",
              "surface_edit", "part_add"]
    instances = edits.make_instances(trials, "mesh", np.random.default_rng(0), len(wanted), task_types=wanted)
    assert [i.instruction.task_type for i in instances] == wanted
    for inst in instances:
        part, task = inst.instruction.part, inst.instruction.task_type
        assert task in edits.task_types("mesh") and part in vocab.GROUP_PARTS[vocab.task_group(task)]
        assert edits.part_change(part, inst.a.state, inst.b.state) >= 1.0
        if part in vocab.ACCESSORY_PARTS:
            assert edits.accessory_task(part, inst.a.state, inst.b.state) == task
    again = edits.make_instances(trials, "mesh", np.random.default_rng(0), len(wanted), task_types=wanted)
    assert again == instances


def test_a_task_type_that_cannot_be_made_is_an_error_naming_it(trials):
    with pytest.raises(edits.EditError, match="the mesh modality cannot produce task type 'pose_change'"):
        edits.make_instances(trials, "mesh", np.random.default_rng(0), 1, task_types=["pose_change"])
    # subjects 0 and 1 in their first trials only: nothing worn changes, so no part_add pair exists
    same_look = [t for t in trials if t.trial_id in ("s0-t000", "s1-t000")]
    with pytest.raises(edits.EditError, match="no mesh edit of task type 'part_add'"):
        edits.make_instances(same_look, "mesh", np.random.default_rng(0), 2, task_types=["expression_change", "part_add"])
    # every distinct clip pair is used before the maker gives up, and then it says how far it got
    eight = edits.make_instances(trials, "speech", np.random.default_rng(0), 8, task_types=["speech_edit"] * 8)
    assert len({i.key for i in eight}) == 8
    with pytest.raises(edits.EditError, match=r"found only 8 of 9 distinct speech edit instances \(9 of task type 'speech_edit'\)"):
        edits.make_instances(trials, "speech", np.random.default_rng(0), 9, task_types=["speech_edit"] * 9)
    with pytest.raises(edits.EditError, match="gave 1 task types"):
        edits.make_instances(trials, "mesh", np.random.default_rng(0), 2, task_types=["part_add"])
    with pytest.raises(vocab.VocabularyError, match="unknown task type 'recolor'"):
        edits.make_instances(trials, "mesh", np.random.default_rng(0), 1, task_types=["recolor"])
