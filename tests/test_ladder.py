"""The five-rung ladder: rung 1 is B on the part and A elsewhere, rungs 2-3 in between, rung 4 a
real edit of a disjoint part the modality can show (or no rung 4 where there is none), rung 5
another subject; the phrase ladder for clips; the frame-pair editor."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from maskscore_core.edits import instances as edits

from maskscore_core.edits import ladder

from maskscore_core.body import parts
from maskscore_core.body.anny_model import get_body_model
from maskscore_core.plugin.records import (
    BodyState,
    EditInstance,
    EditInstruction,
    Subject,
    Target,
)

SUBJECT = Subject("s0", {"gender": 0.1}, "en-us", ())
OTHER = Subject("s1", {"gender": 0.9}, "en-us+f3", ())


def _state(actions=None, bones=None, accessories=()):
    body = get_body_model()
    expression = np.zeros(52)
    for name, value in (actions or {}).items():
        expression[body.action_index(name)] = value
    pose = np.zeros((78, 3))
    for name, value in (bones or {}).items():
        pose[body.bone_index(name)] = value
    return BodyState(pose=pose, expression=expression, accessories=accessories)


def _instance(
    part,
    a,
    b,
    modality="mesh",
    task="expression_change",
    other=None,
    a_text="turn on the lights",
    b_text="play some music",
):
    subject = SUBJECT
    other = other or Target("wrong subject", OTHER, [a], "what time is it", 25.0)
    return EditInstance(
        key="k",
        instruction=EditInstruction(edits.instruction_text(modality, part, b_text), part, task, modality),
        a=Target("frame A", subject, [a] if isinstance(a, BodyState) else a, a_text, 25.0),
        b=Target("frame B", subject, [b] if isinstance(b, BodyState) else b, b_text, 25.0),
        other=other,
    )


def _indices(part):
    body = get_body_model()
    return [body.action_index(n) for n in parts.part_actions(part)], [
        body.bone_index(n) for n in parts.part_bones(part)
    ]


A = _state({"jawOpen": 0.1, "browInnerUp": 0.0, "eyeLookUpLeft": 0.2}, {"Neck1": [0.0, 0.0, 0.0]}, ("hat_tall",))
B = _state({"jawOpen": 0.8, "browInnerUp": 0.6, "eyeLookUpLeft": 0.0}, {"Neck1": [0.1, 0.0, 0.0]}, ("glasses_round",))


def test_rungs_of_an_action_part():
    rungs = ladder.build_ladder(_instance("mouth", A, B))
    assert [r.rung for r in rungs] == [1, 2, 3, 4, 5]
    actions, bones = _indices("mouth")
    others = [i for i in range(52) if i not in actions]
    first = rungs[0].state
    assert np.array_equal(first.expression[actions], B.expression[actions])
    assert np.array_equal(first.expression[others], A.expression[others])
    assert np.array_equal(first.pose[bones], B.pose[bones])
    assert first.accessories == A.accessories and first.phenotype == A.phenotype
    jaw = get_body_model().action_index("jawOpen")
    assert rungs[1].state.expression[jaw] == pytest.approx(0.45)
    assert rungs[2].state.expression[jaw] == pytest.approx(0.1 + 0.2 * 0.7)
    # rung 4 edits another part that shares nothing with the mouth, and leaves the mouth as in A
    wrong = rungs[3].label.split("(")[1].rstrip(")")
    assert not set(parts.part_actions(wrong)) & set(parts.part_actions("mouth"))
    assert not set(parts.part_bones(wrong)) & set(parts.part_bones("mouth"))
    assert np.array_equal(rungs[3].state.expression[actions], A.expression[actions])
    assert rungs[3].state != A
    assert rungs[4].subject != rungs[0].subject and rungs[4].rung == 5


def test_rung_one_moves_the_mesh_toward_b_on_the_part():
    rungs = ladder.build_ladder(_instance("mouth", A, B))
    verts = get_body_model().vertices([A, B, rungs[0].state, rungs[1].state, rungs[2].state])
    moved = np.linalg.norm(verts[0] - verts[1], axis=1) > 1e-4
    part_only = get_body_model().vertices([attrs.evolve(A, expression=rungs[0].state.expression)])[0]
    assert np.allclose(verts[2], part_only)
    gaps = [np.abs(verts[k][moved] - verts[1][moved]).mean() for k in (2, 3, 4)]
    assert gaps[0] < gaps[1] < gaps[2]


def test_rungs_of_a_bone_part():
    rungs = ladder.build_ladder(_instance("neck", A, B, task="region_extract"))
    n1 = get_body_model().bone_index("Neck1")
    assert rungs[0].state.pose[n1] == pytest.approx([0.1, 0, 0])
    assert rungs[1].state.pose[n1] == pytest.approx([0.05, 0, 0])
    assert rungs[2].state.pose[n1] == pytest.approx([0.02, 0, 0])
    assert np.array_equal(rungs[0].state.expression, A.expression)


@pytest.mark.parametrize(
    "a_worn, b_worn, expect",
    [
        ((), ("glasses_round",), [("glasses_round", 1.0), ("glasses_round", 0.5), ("glasses_round", 0.2)]),
        (("glasses_round",), (), [(None, 1.0), ("glasses_round", 0.5), ("glasses_round", 0.8)]),
        (
            ("glasses_round",),
            ("glasses_square",),
            [("glasses_square", 1.0), ("glasses_square", 0.5), ("glasses_round", 0.8)],
        ),
    ],
)
def test_accessory_rungs_use_size_as_the_in_between(a_worn, b_worn, expect):
    a = _state({"jawOpen": 0.1}, accessories=a_worn + ("hat_tall",))
    b = _state({"jawOpen": 0.5}, accessories=b_worn)
    rungs = ladder.build_ladder(_instance("eyewear", a, b, task=edits.accessory_task("eyewear", a, b)))
    from maskscore_core.body import accessories

    for target, (worn, scale) in zip(rungs[:3], expect):
        assert accessories.worn(target.state.accessories, "glasses") == worn
        assert target.state.part_scale.get("eyewear", 1.0) == pytest.approx(scale)
        assert "hat_tall" in target.state.accessories  # the other slots stay as in A
        assert np.array_equal(target.state.expression, a.expression)


def test_phrase_ladder_for_clips():
    a_clip = [_state({"jawOpen": 0.1 * i}) for i in range(4)]
    b_clip = [_state({"jawOpen": 0.8 - 0.1 * i}) for i in range(6)]
    other = Target("wrong subject", OTHER, a_clip, "what time is it", 25.0)
    inst = _instance(
        "mouth",
        a_clip,
        b_clip,
        modality="speech",
        task="speech_edit",
        other=other,
        a_text="turn on the kitchen lights",
        b_text="play some jazz music now",
    )
    rungs = ladder.build_ladder(inst)  # speech edits only the mouth: no rung 4
    assert [r.rung for r in rungs] == [1, 2, 3, 5]
    assert [r.transcript for r in rungs] == [
        "play some jazz music now",
        "play some jazz lights",  # two thirds of B's words in time, then the last third of A's
        "play some the kitchen lights",  # one third
        "what time is it",
    ]
    assert [len(r.states) for r in rungs[:3]] == [6, 6, 6]  # B's timeline: the words are B's
    jaw = get_body_model().action_index("jawOpen")
    assert [s.expression[jaw] for s in rungs[0].states] == pytest.approx([s.expression[jaw] for s in b_clip])
    assert rungs[3].subject.voice != rungs[0].subject.voice


def test_non_mouth_clip_keeps_a_timeline_and_words():
    a_clip = [_state({"browInnerUp": 0.0})] * 5
    b_clip = [_state({"browInnerUp": 0.7})] * 3
    inst = _instance("eyebrow", a_clip, b_clip, modality="video", task="temporal_edit")
    rungs = ladder.build_ladder(inst)
    assert all(len(r.states) == 5 and r.transcript == "turn on the lights" for r in rungs[:4])


def test_mix_phrase():
    # Cut by spoken time, not word count: "w" (D AH B AH L Y UW) ends at 0.47 of "w x y z"'s
    # duration, nearer to half than "w x" (0.68); "a b" ends at 0.43 of "a b c d"'s.
    assert ladder.mix_phrase("a b c d", "w x y z", 0.5) == "w c d"
    assert ladder.mix_phrase("a b c d", "w x y z", 1.0) == "w x y z"
    assert ladder.mix_phrase("a b c d", "w x y z", 0.0) == "a b c d"


def test_bad_instances_are_rejected():
    with pytest.raises(ladder.LadderError, match="'tail' is not edited"):
        ladder.apply_part(A, B, "tail", 1.0)
    no_other = attrs.evolve(_instance("mouth", A, B), other=None)
    with pytest.raises(ladder.LadderError, match="no other subject"):
        ladder.build_ladder(no_other)


def test_frame_pair_editor_encodes_five_rungs():
    from maskscore_core.plugin import manager as plugins
    from maskscore_core.plugin.context import Context

    inst = _instance("mouth", A, B)
    candidates = plugins.call("edit", "frame-pair", editor="frame-pair", modality="mesh", instance=inst, ctx=Context())
    assert [c.rung for c in candidates] == [1, 2, 3, 4, 5]
    assert all(c.asset.modality == "mesh" for c in candidates)
    assert candidates[0].label.startswith("rung 1")


# Frames A and B that differ in the edited part only: B's values on any other part are A's own.
ONLY = {
    "mouth": ({"jawOpen": 0.1}, {"jawOpen": 0.8}, None),
    "face": ({"jawOpen": 0.1}, {"jawOpen": 0.8}, None),
    "irides": ({"eyeLookUpLeft": 0.2}, {"eyeLookUpLeft": 0.8}, None),
    "neck": ({}, {}, {"Neck1": [0.1, 0.0, 0.0]}),
}


def _only(part):
    actions_a, actions_b, bones_b = ONLY[part]
    return _state(actions_a), _state(actions_b, bones_b)


@pytest.mark.parametrize(
    "modality, part, task, wrong",
    [
        ("mesh", "mouth", "expression_change", "front hair"),  # every other part level: the first
        ("mesh", "face", "expression_change", "back hair"),  # the face holds every action; the fringe touches it
        ("pose", "mouth", "pose_change", "irides"),  # a pose shows no brows, nose or hair
        ("pose", "face", "pose_change", "neck"),  # nothing else in a pose shares nothing with the face
        ("keypoints", "neck", "region_extract", "front hair"),
        ("video", "irides", "temporal_edit", "eyebrow"),
    ],
)
def test_rung_four_is_a_real_edit_of_a_part_the_modality_shows(modality, part, task, wrong):
    """Where B leaves every other part as A has it, rung 4 is the stock edit of another part the
    modality edits: a real change of that part (twice its threshold; the neck's turn, shared by
    two bones, once), none of the
    edited part, and the modality's own encoding of it differs from frame A's."""
    from maskscore_core.plugin import manager as plugins
    from maskscore_core.plugin.context import Context

    a, b = _only(part)
    instance = _instance(part, a, b, modality=modality, task=task)
    rungs = ladder.build_ladder(instance)
    assert [r.rung for r in rungs] == [1, 2, 3, 4] + ([5] if modality != "pose" else [])  # a pose makes no rung 5
    assert rungs[3].label == f"rung 4: wrong part, stock edit ({wrong})"
    assert wrong in edits.task_table(modality)
    fourth = rungs[3].state
    assert edits.part_change(wrong, a, fourth) == pytest.approx(1.0 if wrong == "neck" else 2.0)
    assert edits.part_change(part, a, fourth) == 0.0
    decoded = []  # frame A and rung 4 through the modality, as the metric sees them
    for target in (instance.a, rungs[3]):
        asset = plugins.modality(modality).encode(target, Context())
        found = plugins.call("decode_to_mesh", asset=asset, instance=instance, ctx=Context())
        arrays = [found.vertices, found.depth, found.activations, *(found.frames or ())]
        decoded.append(np.concatenate([np.ravel(x) for x in arrays if x is not None]))
    assert not np.array_equal(*decoded)


def test_rung_four_takes_b_values_where_b_changes_the_part():
    """B also raises the brows, moves the gaze, takes the hat off and puts glasses on. The
    regions of the brows and the gaze touch the mouth's, so among the parts whose region is apart
    from the mouth's, the one B changes (the hat, first of the two accessory slots) takes B's
    values; on a pose, which shows no accessory, the gaze does, where B moves it enough."""
    rungs = ladder.build_ladder(_instance("mouth", A, B))
    assert rungs[3].label == "rung 4: wrong part (headwear)"
    assert rungs[3].state.accessories == ()  # B's: no hat (and not B's glasses: another slot)
    assert np.array_equal(rungs[3].state.expression, A.expression)
    looking = _state({"jawOpen": 0.8, "eyeLookUpLeft": 0.8})
    posed = ladder.build_ladder(_instance("mouth", A, looking, modality="pose", task="pose_change"))
    assert posed[3].label == "rung 4: wrong part (irides)"
    gaze, _ = _indices("irides")
    assert np.array_equal(posed[3].state.expression[gaze], looking.expression[gaze])


def test_stock_edits_of_every_kind_of_part():
    """Actions move towards the farther end, bones turn, regions scale, accessory slots toggle."""
    body = get_body_model()
    raised = ladder.stock_edit(_state({"browInnerUp": 0.7}), "eyebrow")
    assert raised.expression[body.action_index("browInnerUp")] == pytest.approx(0.1)
    assert raised.expression[body.action_index("browOuterUpLeft")] == pytest.approx(0.6)
    turned = ladder.stock_edit(A, "neck")
    assert turned.pose[body.bone_index("Neck1")] == pytest.approx([edits.BONE_DELTA_RAD, 0, 0])
    assert turned.pose[body.bone_index("Neck2")] == pytest.approx([edits.BONE_DELTA_RAD, 0, 0])
    assert ladder.stock_edit(A, "ears").part_scale == {"ears": pytest.approx(1.2)}
    assert ladder.stock_edit(A, "headwear").accessories == ()  # the hat comes off
    assert ladder.stock_edit(A, "eyewear").accessories == ("glasses_round", "hat_tall")


def test_speech_and_text_make_no_wrong_part_rung():
    """They move only the mouth: their ladder levels drop rung 4, with the reason, and asking
    for it anyway names what is missing."""
    from maskscore_core.dataset import protocol

    for modality, rungs in (("speech", [1, 2, 3, 5]), ("text", [1, 2, 3])):
        levels = protocol.levels_for(modality)
        assert protocol.rungs_of(levels) == ladder.ladder_rungs(modality) == rungs
        assert "only the mouth" in levels["dropped"][4]
        with pytest.raises(ladder.NoWrongPart, match=f"the {modality} modality edits no part"):
            ladder.build_ladder(_instance("mouth", A, B, modality=modality, task="speech_edit"), rungs=[4])
    assert "no voice" in protocol.levels_for("text")["dropped"][5]  # its rung 5 is only other words on A's body
    assert ladder.ladder_rungs("mesh") == [1, 2, 3, 4, 5]


def test_pose_makes_no_wrong_subject_rung():
    """A pose carries no identity, so it is decoded on frame A's body and another subject's bones
    are only another pose: its ladder levels drop rung 5, with the reason, and its ladder is
    rungs 1-4, rung 4 a real edit of another part."""
    from maskscore_core.dataset import protocol

    levels = protocol.levels_for("pose")
    assert protocol.rungs_of(levels) == ladder.ladder_rungs("pose") == [1, 2, 3, 4]
    assert "no identity" in levels["dropped"][5]
    rungs = ladder.build_ladder(_instance("mouth", A, B, modality="pose", task="pose_change"))
    assert [r.rung for r in rungs] == [1, 2, 3, 4]
    assert rungs[3].state.expression.tolist() != A.expression.tolist() or rungs[3].state.pose.tolist() != A.pose.tolist()


def test_wrong_part_pool_is_what_rung_four_draws_from():
    """The parts rung 4 may edit depend on the part and the modality only: the face shares an
    action with every other part a clip edits, so its only wrong part is the neck (why the
    multimodal modality uses no depth output for the face); speech edits nothing but the mouth."""
    assert ladder.wrong_part_pool("face", "video") == ["neck"]
    assert ladder.wrong_part_pool("mouth", "speech") == []
    pool = ladder.wrong_part_pool("mouth", "mesh")
    assert "neck" not in pool and "face" not in pool and pool
    for a, b in ((A, B), _only("mouth")):
        assert ladder.wrong_part("mouth", "mesh", a, b)[0] in pool
