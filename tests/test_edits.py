"""Edit instances: same-subject pairs where the part really differs, valid instructions and task types."""

from __future__ import annotations

import numpy as np
import pytest

from maskscore_core import vocab

from maskscore_core.edits import instances as edits

from maskscore_core.body import parts

from maskscore_core.plugin import manager as plugins
from maskscore_core.body.anny_model import get_body_model
from maskscore_core.plugin.records import BodyState, Frame, Subject, Trial


def _state(actions=None, bones=None, accessories=(), part_scale=None, phenotype=None):
    body = get_body_model()
    expression = np.zeros(52)
    for name, value in (actions or {}).items():
        expression[body.action_index(name)] = value
    pose = np.zeros((78, 3))
    for name, value in (bones or {}).items():
        pose[body.bone_index(name)] = value
    return BodyState(
        phenotype=phenotype or {},
        pose=pose,
        expression=expression,
        accessories=accessories,
        part_scale=part_scale or {},
    )


def _trial(subject, index, transcript, states):
    frames = [Frame(i, i / 25, s) for i, s in enumerate(states)]
    return Trial(f"{subject.subject_id}-t{index:03d}", "test", subject, transcript, 25.0, frames)


def hand_trials():
    """Two subjects. Subject 0: trial 1 swaps the hat for glasses (add and remove), trial 2 keeps
    the hat and scales the ears; jaw, brows, gaze, sneer and neck move within trials. Subject 1
    replaces its earrings between its trials."""
    s0 = Subject("s0", {"gender": 0.1}, "en-us", ("hat_tall",))
    s1 = Subject("s1", {"gender": 0.9}, "en-us+f3", ("earrings_hoop",))
    neck = {"Neck1": [0.0, 0.0, 0.0]}
    t00 = _trial(
        s0,
        0,
        "turn on the lights",
        [
            _state({"jawOpen": 0.0}, neck, ("hat_tall",)),
            _state({"jawOpen": 0.6, "browInnerUp": 0.5}, {"Neck1": [0.1, 0, 0]}, ("hat_tall",)),
            _state({"jawOpen": 0.1, "noseSneerLeft": 0.5}, neck, ("hat_tall",)),
        ],
    )
    t01 = _trial(
        s0,
        1,
        "play some music",
        [
            _state({"jawOpen": 0.2}, neck, ("glasses_round",)),
            _state({"jawOpen": 0.7, "eyeLookUpLeft": 0.5}, neck, ("glasses_round",)),
        ],
    )
    t02 = _trial(
        s0,
        2,
        "open the door",
        [
            _state({"jawOpen": 0.5, "browInnerUp": 0.1}, neck, ("hat_tall",), {"ears": 1.2}),
            _state({"jawOpen": 0.0, "eyeLookUpLeft": 0.5}, neck, ("hat_tall",), {"ears": 1.2}),
        ],
    )
    t10 = _trial(s1, 0, "what time is it", [_state({"jawOpen": 0.3}, neck, ("earrings_hoop",))] * 2)
    t11 = _trial(s1, 1, "call my mother", [_state({"jawOpen": 0.0}, neck, ("earrings_stud",))] * 3)
    return [t00, t01, t02, t10, t11]


@pytest.fixture(scope="module")
def trials():
    return hand_trials()


@pytest.mark.parametrize("modality", plugins.modality_names())
def test_instances_are_valid_same_subject_pairs(trials, modality):
    instances = edits.make_instances(trials, modality, np.random.default_rng(0), 4)
    assert len(instances) == 4
    assert len({i.key for i in instances}) == 4
    for inst in instances:
        part, task = inst.instruction.part, inst.instruction.task_type
        assert inst.instruction.modality == modality
        assert inst.a.subject == inst.b.subject
        assert inst.other is not None and inst.other.subject != inst.a.subject
        assert inst.trial_a.startswith(inst.a.subject.subject_id) and inst.trial_b.startswith(inst.b.subject.subject_id)
        # every target of the row is framed for the row's part, the ladder's rungs too
        from maskscore_core.edits.ladder import build_ladder

        assert inst.a.framed_part == inst.b.framed_part == inst.other.framed_part == part
        assert all(rung.framed_part == part for rung in build_ladder(inst))
        # the task type is the table's, and its group edits this part (docs/design.md's table)
        assert task in edits.task_types(modality)
        assert part in vocab.GROUP_PARTS[vocab.task_group(task)]
        if edits.is_sequence(modality):
            assert inst.trial_a != inst.trial_b
            assert len(inst.a.states) > 1 and len(inst.b.states) > 1
        else:
            assert len(inst.a.states) == len(inst.b.states) == 1
            assert edits.part_change(part, inst.a.state, inst.b.state) >= 1.0
            # and in what the modality can show (`Modality.shown_actions`)
            assert edits.part_change(part, inst.a.state, inst.b.state, plugins.modality(modality).shown_actions) >= 1.0
        if modality in ("speech", "text"):
            assert inst.a.transcript != inst.b.transcript
        expected = plugins.modality(modality).template.format(part=part, phrase=inst.b.transcript)
        assert inst.instruction.text == expected


def test_a_modality_draws_only_edits_it_can_show():
    """With `shown_actions`, a frame pair is an edit of a part only where those actions change,
    and every action the modality does not show, inside the part or out of it, changes less: a
    face edit made of gaze alone is no edit for a modality that cannot show gaze, nor is a jaw
    opening under a larger lip press. A name that is no facial action is refused at registration."""
    from maskscore_core.plugin.modality_kit import FileModality
    from maskscore_core.plugin.registration import Column, RegistrationError

    subject = Subject("s0", {}, "en-us", ())
    frames = [_state(), _state({"eyeLookUpLeft": 0.8, "eyeLookUpRight": 0.8}), _state({"jawOpen": 0.6})]
    trial = [_trial(subject, 0, "hello", frames)]
    shown = ("jawOpen", "mouthClose", "eyeBlinkLeft", "eyeBlinkRight")
    _, every = edits._static_pairs("face", trial)
    _, seen = edits._static_pairs("face", trial, shown=shown)
    pairs = lambda found: {tuple(sorted(map(int, p))) for p in found}  # noqa: E731
    assert (0, 1) in pairs(every)  # gaze alone: a face edit where everything shows
    assert (0, 1) not in pairs(seen) and (0, 2) in pairs(seen)
    assert edits.part_change("face", frames[0], frames[1]) >= 1.0 > edits.part_change("face", frames[0], frames[1], shown)
    # the jaw opens by 0.6 under a lip press of 0.7 the modality cannot show: a face edit where
    # everything shows, none here
    pressed = [_trial(subject, 0, "hello", [_state(), _state({"jawOpen": 0.6, "mouthPressLeft": 0.7, "mouthPressRight": 0.7})])]
    assert pairs(edits._static_pairs("face", pressed)[1]) == {(0, 1)}
    assert not len(edits._static_pairs("face", pressed, shown=shown)[1])
    # the mouth's pair (1, 2) changes gaze (not the mouth's) as much as the jaw: the rest is not
    # calmer, shown or not
    assert (1, 2) not in pairs(edits._static_pairs("mouth", trial, shown=shown)[1])
    assert (1, 2) not in pairs(edits._static_pairs("mouth", trial)[1])

    class Picture(FileModality):
        encode = write_file = read_file = None

    declared = dict(name="picture", table="PictureEditReward", template="edit the {part}", task_table={"mouth": "expression_change"},
                    candidate_column=Column("output_pictures", "list<string>"), suffixes=(".png",))  # fmt: skip
    Picture(**declared, shown_actions=("jawOpen",)).check()
    with pytest.raises(RegistrationError, match="shown_actions .*eyeRoll"):
        Picture(**declared, shown_actions=("jawOpen", "eyeRoll")).check()


def test_template_wording():
    assert edits.instruction_text("mesh", "mouth") == "edit the mouth to match frame B"
    assert edits.instruction_text("text", "mouth", "play jazz") == "change the command to play jazz"
    assert edits.instruction_text("speech", "mouth", "play jazz") == "resynthesize the mouth to say play jazz"
    assert edits.instruction_text("pose", "eyebrow") == "repose the eyebrow to frame B's expression"


def test_thresholds():
    a = _state({"jawOpen": 0.1})
    assert edits.part_change("mouth", a, _state({"jawOpen": 0.39})) < 1.0
    assert edits.part_change("mouth", a, _state({"jawOpen": 0.41})) >= 1.0
    assert edits.part_change("eyebrow", a, _state({"jawOpen": 0.9})) == 0.0
    assert edits.part_change("ears", a, _state(part_scale={"ears": 1.11})) >= 1.0
    assert edits.part_change("ears", a, _state(part_scale={"ears": 1.05})) < 1.0
    assert edits.part_change("eyewear", a, _state(accessories=("glasses_round",))) >= 1.0


def test_accessory_task_types_follow_what_is_worn():
    hat, glasses = _state(accessories=("hat_tall",)), _state(accessories=("glasses_round",))
    assert edits.accessory_task("eyewear", hat, glasses) == "part_add"
    assert edits.accessory_task("headwear", hat, glasses) == "part_remove"
    assert edits.accessory_task("eyewear", glasses, _state(accessories=("glasses_square",))) == "part_replace"
    with pytest.raises(edits.EditError, match="wear the same eyewear"):
        edits.accessory_task("eyewear", glasses, glasses)


def test_all_part_tasks_and_regions_appear(trials):
    instances = edits.make_instances(trials, "mesh", np.random.default_rng(1), 40)
    tasks = {i.instruction.task_type for i in instances}
    assert {
        "part_add",
        "part_remove",
        "part_replace",
        "expression_change",
        "surface_edit",
        "depth_edit",
        "region_extract",
    } <= tasks
    # the hand trials carry no appearance, and undirected draws give each part its geometric task
    # type: the appearance task types come only when asked for (tests/test_appearance_ladder.py)
    assert set(edits.task_types("mesh")) - set(edits.APPEARANCE_TASK_TYPES) == tasks


def test_the_rest_keeps_head_placement_and_accessories(trials):
    for inst in edits.make_instances(trials, "keypoints", np.random.default_rng(2), 30):
        if inst.instruction.part != "neck":
            assert edits.head_turn(inst.a.state, inst.b.state) <= edits.REST_POSE_MAX_RAD
        if inst.instruction.part not in vocab.ACCESSORY_PARTS:
            assert inst.a.state.accessories == inst.b.state.accessories
        own = (
            set(parts.part_actions(inst.instruction.part))
            if inst.instruction.part in vocab.ACTIVE_FACE_PARTS
            else set()
        )
        if own and len(own) < 52:
            body = get_body_model()
            own_ids = [body.action_index(n) for n in own]
            rest_ids = [i for i in range(52) if i not in own_ids]
            delta = np.abs(inst.a.state.expression - inst.b.state.expression)
            assert delta[rest_ids].max() < delta[own_ids].max()
    for inst in edits.make_instances(trials, "video", np.random.default_rng(2), 4):
        assert inst.a.state.accessories == inst.b.state.accessories


def test_same_rng_same_instances(trials):
    first = edits.make_instances(trials, "depth", np.random.default_rng(5), 6)
    second = edits.make_instances(trials, "depth", np.random.default_rng(5), 6)
    assert first == second


def test_errors_are_specific(trials):
    with pytest.raises(vocab.VocabularyError, match="unknown modality 'smell'"):
        edits.make_instances(trials, "smell", np.random.default_rng(0), 1)
    with pytest.raises(edits.EditError, match="at least two subjects"):
        edits.make_instances(trials[:3], "mesh", np.random.default_rng(0), 1)
    with pytest.raises(edits.EditError, match="found only 8 of 9 distinct speech"):
        edits.make_instances(trials, "speech", np.random.default_rng(0), 9)
    with pytest.raises(edits.EditError, match="no subject has two trials"):
        edits.make_instances([trials[0], trials[3]], "video", np.random.default_rng(0), 1)
    with pytest.raises(edits.EditError, match="does not edit the 'ears' part"):
        edits.check_part_for("pose", "ears")
    with pytest.raises(vocab.VocabularyError, match="unknown part 'elbow'"):
        edits.part_change("elbow", trials[0].frames[0].state, trials[0].frames[1].state)


def test_generated_trials_give_real_differences(tmp_path):
    """On the built-in source: mesh pairs meet the stated threshold and visibly move the mesh."""
    from maskscore_core.trials.anny_source import AnnySourceConfig, generate_trials

    trials = generate_trials(AnnySourceConfig(seed=3, subjects=2, trials_per_subject=1, max_words=4), tmp_path)
    instances = edits.make_instances(trials, "mesh", np.random.default_rng(0), 6)
    body = get_body_model()
    for inst in instances:
        assert edits.part_change(inst.instruction.part, inst.a.state, inst.b.state) >= 1.0
        verts = body.vertices([inst.a.state, inst.b.state])
        if inst.instruction.task_type != "depth_edit":
            assert np.linalg.norm(verts[0] - verts[1], axis=1).max() > 0.002
