"""Records round-trip through cattrs, and reject malformed values with clear errors."""

from __future__ import annotations

import json

import attrs
import numpy as np
import pytest

from maskscore_core import vocab

from maskscore_core.plugin import records
from maskscore_core.plugin.records import converter


def _instance() -> records.EditInstance:
    subject = records.Subject("s01", {"gender": 0.2, "age": 0.6}, voice="en-gb", accessories=("glasses_round",))
    expression = np.zeros(records.FACIAL_ACTIONS)
    expression[24] = 0.8
    state_a = records.BodyState(phenotype=dict(subject.phenotype))
    state_b = records.BodyState(phenotype=dict(subject.phenotype), expression=expression, part_scale={"ears": 1.1})
    return records.EditInstance(
        key="s01-t00-f003-f017",
        instruction=records.EditInstruction("edit the mouth to match frame B", "mouth", "expression_change", "mesh"),
        a=records.Target("frame A", subject, (state_a,), transcript="turn on the lights"),
        b=records.Target("frame B", subject, (state_b,), transcript="turn on the lights"),
        trial_a="s01-t00",
        trial_b="s01-t00",
    )


def test_edit_instance_round_trips_through_json():
    instance = _instance()
    text = json.dumps(converter.unstructure(instance), sort_keys=True)
    back = converter.structure(json.loads(text), records.EditInstance)
    assert back == instance
    assert back.b.state.expression[24] == pytest.approx(0.8)
    assert back.b.state.part_scale == {"ears": 1.1}


def test_a_target_seen_through_another_camera_round_trips_and_an_own_one_is_written_as_before():
    """`framed_on` is written only where it is set, so instance sidecars keep their bytes."""
    instance = _instance()
    assert "framed_on" not in converter.unstructure(instance.a)
    assert instance.a.framing_phenotype == instance.a.state.phenotype
    seen = attrs.evolve(instance.a, framed_on={"age": 0.1})
    data = converter.unstructure(seen)
    assert data["framed_on"] == {"age": 0.1}
    back = converter.structure(json.loads(json.dumps(data)), records.Target)
    assert back == seen and back.framing_phenotype == {"age": 0.1}


def test_a_target_framed_for_its_part_round_trips_and_editors_keep_the_camera():
    """`framed_part` (the row's part, whose zoom frames render-space views) is set by the row on
    every target it holds, and follows the row to another part; written only where it is set;
    an unknown part is refused; `with_states` keeps the camera of the target it edits."""
    instance = _instance()
    assert (instance.a.framed_part, instance.b.framed_part) == ("mouth", "mouth")
    bare = attrs.evolve(instance.a, framed_part=None)
    assert "framed_part" not in converter.unstructure(bare)
    brow = attrs.evolve(instance, instruction=attrs.evolve(instance.instruction, part="eyebrow"))
    assert (brow.a.framed_part, brow.b.framed_part) == ("eyebrow", "eyebrow")
    assert attrs.evolve(instance, a=attrs.evolve(bare, framed_part="neck")).a.framed_part == "mouth"
    framed = attrs.evolve(instance.a, framed_on={"age": 0.1}, framed_part="irides")
    data = converter.unstructure(framed)
    assert data["framed_part"] == "irides"
    assert converter.structure(json.loads(json.dumps(data)), records.Target) == framed
    with pytest.raises(ValueError, match="unknown part 'iris'"):
        attrs.evolve(instance.a, framed_part="iris")
    edited = framed.with_states("out", (records.BodyState(),))
    assert (edited.label, edited.rung, edited.framed_on, edited.framed_part) == ("out", None, {"age": 0.1}, "irides")
    assert edited.transcript == framed.transcript and framed.with_states("x", (), "hi").transcript == "hi"


def test_edit_instance_names_its_reference_frames():
    instance = _instance()
    assert instance.frame("a") is instance.a and instance.frame("b") is instance.b
    with pytest.raises(ValueError, match="'a' or 'b', got 'c'"):
        instance.frame("c")


def test_trial_round_trips():
    frame = records.Frame(0, 0.0, records.BodyState())
    trial = records.Trial("t", "anny", records.Subject("s", {}), "hello", 25.0, (frame,), audio_path="a.wav")
    assert converter.structure(converter.unstructure(trial), records.Trial) == trial


def test_candidate_score_round_trips():
    score = records.CandidateScore(0.9, 0.8, 0.85, {"if.lpips": 0.1})
    assert converter.structure(converter.unstructure(score), records.CandidateScore) == score
    assert score.dimension("overall") == 0.85


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"pose": np.zeros((77, 3))}, "shape"),
        ({"translation": [0.0, np.nan, 0.0]}, "NaN"),
        ({"expression": np.full(52, np.inf)}, "NaN or infinite"),
    ],
)
def test_body_state_rejects_malformed_arrays(kwargs, message):
    with pytest.raises(ValueError, match=message):
        records.BodyState(**kwargs)


def test_pose_vector_layout_is_78x3_then_translation():
    pose = np.arange(78 * 3, dtype=float).reshape(78, 3) / 1000
    state = records.BodyState(pose=pose, translation=[1.0, 2.0, 3.0])
    vector = state.pose_vector()
    assert len(vector) == 78 * 3 + 3
    assert vector[:3] == pytest.approx([0.0, 0.001, 0.002])
    assert vector[-3:] == [1.0, 2.0, 3.0]


def test_instruction_rejects_unknown_vocabulary():
    with pytest.raises(vocab.VocabularyError, match="unknown part 'moustache'"):
        records.EditInstruction("x", "moustache", "expression_change", "mesh")
    with pytest.raises(vocab.VocabularyError, match="unknown task type"):
        records.EditInstruction("x", "mouth", "subject-add", "mesh")
    with pytest.raises(vocab.VocabularyError, match="unknown modality"):
        records.EditInstruction("x", "mouth", "expression_change", "smell")


def test_vocabularies_match_the_design():
    assert len(vocab.PARTS) == 23 and len(set(vocab.PARTS)) == 23
    assert len(vocab.ACTIVE_FACE_PARTS) == 11 and set(vocab.ACTIVE_FACE_PARTS) <= set(vocab.PARTS)
    # The design says "13 task types" but its table names 14 (3 + 4 + 3 + 4); we keep every name
    # the table gives (docs/architecture.md, 'Vocabularies').
    assert len(vocab.TASK_TYPES) == 14 and len(set(vocab.TASK_TYPES)) == 14 and len(vocab.TASK_GROUPS) == 4
    assert vocab.task_group("speech_edit") == "motion"
    assert vocab.DIMENSIONS == ("instruction_following", "consistency", "overall")
    for parts in vocab.GROUP_PARTS.values():
        assert set(parts) <= set(vocab.PARTS)


def test_a_failed_structure_is_named_by_its_innermost_error():
    from maskscore_core.plugin.records import BodyState, converter, structure_error

    with pytest.raises(Exception) as err:
        converter.structure({"expression": "not numbers"}, BodyState)
    message = structure_error(err.value)
    assert "\n" not in message and not message.startswith(("ClassValidationError", "ExceptionGroup"))
