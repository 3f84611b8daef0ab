"""The ARKit modality: Live Link Face CSVs, their mapping onto ANNY, and the core's contract."""

from __future__ import annotations

import numpy as np
import pytest

from maskscore_core.plugin import manager as plugins
from maskscore_core.plugin.contract import ModalityContract
from maskscore_core.plugin.records import Asset
from maskscore_core.plugin.testing import face_state, unit_instance
from maskscore_arkit.capture import BLENDSHAPES, HEADER, ArkitError, Capture, read_capture, write_capture

MODALITY = "arkit"
GOOD_ROW = "00:00:00:00.000,61," + ",".join(["0.25"] * 52 + ["0.1"] * 9)


def _instance():
    return unit_instance(
        MODALITY, "retarget the mouth of the face capture to frame B", "temporal_edit",
        [face_state(jawOpen=j) for j in (0.0, 0.1, 0.0, 0.1, 0.0)], [face_state(jawOpen=j) for j in (0.0, 0.4, 0.8, 0.4, 0.0)],
        key="unit-arkit-0001", fps=10.0,
    )  # fmt: skip


def _csv(header=HEADER, rows=(GOOD_ROW,)) -> bytes:
    return ("\n".join([",".join(header), *rows]) + "\n").encode()


def _with(column: str, value: str) -> bytes:
    cells = GOOD_ROW.split(",")
    cells[HEADER.index(column)] = value
    return _csv(rows=(",".join(cells),))


class TestArkitContract(ModalityContract):
    modality = MODALITY
    bad_files = (
        ("nope.csv", {}, "does not exist"),
        ("empty.csv", {"empty.csv": b""}, "is empty"),
        ("header.csv", {"header.csv": _csv(rows=())}, "holds no frames"),
        ("short.csv", {"short.csv": _csv(header=HEADER[:-2], rows=(GOOD_ROW.rsplit(",", 2)[0],))},
         "missing 2 Live Link Face column.*RightEyePitch, RightEyeRoll"),
        ("nan.csv", {"nan.csv": _with("JawOpen", "nan")}, "row 2: JawOpen is NaN or infinite"),
        ("big.csv", {"big.csv": _with("MouthSmileLeft", "1.5")}, r"row 2: MouthSmileLeft = 1.5 is outside \[0, 1\]"),
        ("angle.csv", {"angle.csv": _with("HeadYaw", "7")}, "row 2: HeadYaw = 7 is outside"),
        ("word.csv", {"word.csv": _with("BrowInnerUp", "high")}, "row 2: BrowInnerUp 'high' is not a number"),
        ("count.csv", {"count.csv": _with("BlendShapeCount", "51")}, "BlendShapeCount is '51'"),
        ("time.csv", {"time.csv": _with("Timecode", "noon")}, "Timecode 'noon' is not HH:MM:SS:FF"),
        ("capture.txt", {"capture.txt": _csv()}, r"is not a \.csv file"),
    )
    ladder_instances = 2
    ladder_seed = 0

    unit_instance = staticmethod(_instance)


def test_the_header_is_live_link_faces():
    assert len(BLENDSHAPES) == 52 and len(set(BLENDSHAPES)) == 52
    assert HEADER[:3] == ("Timecode", "BlendShapeCount", "EyeBlinkLeft") and HEADER[-1] == "RightEyeRoll"
    assert HEADER[2 + 52 : 2 + 52 + 3] == ("HeadYaw", "HeadPitch", "HeadRoll") and len(HEADER) == 2 + 61
    from maskscore_core.body.anny_model import get_body_model
    from maskscore_arkit.face import action_name

    assert sorted(action_name(b) for b in BLENDSHAPES) == sorted(get_body_model().action_names)


def test_csv_round_trip_is_exact_and_columns_are_found_by_name(tmp_path):
    rng = np.random.default_rng(0)
    capture = Capture(rng.random((30, 52)), rng.uniform(-0.5, 0.5, (30, 3)), rng.uniform(-0.3, 0.3, (30, 6)), fps=25.0)
    write_capture(capture, tmp_path / "a.csv")
    back = read_capture(tmp_path / "a.csv")
    for name in ("blendshapes", "head", "eyes"):
        np.testing.assert_array_equal(getattr(back, name), getattr(capture, name))
    assert back.fps == 25.0  # the timecodes roll over after frame 24
    lines = (tmp_path / "a.csv").read_text().splitlines()
    assert lines[1].startswith("00:00:00:00.000,61,") and lines[26].startswith("00:00:01:00.000,61,")
    # The same columns in another order read the same.
    order = list(range(len(HEADER)))[::-1]
    rows = [",".join(line.split(",")[i] for i in order) for line in lines]
    (tmp_path / "b.csv").write_text("\n".join(rows) + "\n")
    np.testing.assert_array_equal(read_capture(tmp_path / "b.csv").blendshapes, capture.blendshapes)


def test_blendshapes_and_head_reach_the_mesh(ctx):
    """jawOpen opens the jaw on the mesh; a head yaw turns the head and not the legs."""
    from maskscore_core.body.anny_model import get_body_model
    from maskscore_arkit.face import states_on_body

    body = get_body_model()
    instance = _instance()
    rest = Capture(np.zeros((1, 52)), np.zeros((1, 3)), np.zeros((1, 6)))
    jaw = Capture(np.eye(52)[[BLENDSHAPES.index("JawOpen")]] * 0.8, np.zeros((1, 3)), np.zeros((1, 6)))
    turned = Capture(np.zeros((1, 52)), np.array([[0.5, 0.0, 0.0]]), np.zeros((1, 6)))
    state = states_on_body(jaw, instance.a.states)[0]
    assert state.expression[body.action_index("jawOpen")] == 0.8 and state.phenotype == {"age": 0.4}

    def mesh(capture):
        return plugins.call("decode_to_mesh", MODALITY, asset=Asset(MODALITY, capture), instance=instance, ctx=ctx).vertices

    moved_jaw = np.linalg.norm(mesh(jaw) - mesh(rest), axis=1)
    moved_head = np.linalg.norm(mesh(turned) - mesh(rest), axis=1)
    head_ids = plugins.call("mask_part", MODALITY, modality=MODALITY, part="mouth", ctx=ctx).region
    assert moved_jaw[head_ids].max() > 0.005 and moved_head.max() > 0.02
    feet = mesh(rest)[:, 1] < np.percentile(mesh(rest)[:, 1], 5)
    assert moved_head[feet].max() < 1e-9  # the head turns on the neck; the body stays


def test_encode_then_decode_keeps_the_head_and_the_actions(ctx):
    """A state's head orientation (through the neck) and actions survive capture and decoding."""
    import attrs

    from maskscore_core.body.anny_model import get_body_model
    from maskscore_arkit.face import capture_of_states, states_on_body

    body = get_body_model()
    pose = np.zeros((78, 3))
    pose[body.bone_index("Neck1")] = [0.1, 0.2, 0.0]
    pose[body.bone_index("Head")] = [0.0, 0.3, 0.1]
    state = attrs.evolve(face_state(jawOpen=0.6, browInnerUp=0.4), pose=pose)
    back = states_on_body(capture_of_states([state], 25.0), [state])[0]
    np.testing.assert_allclose(back.pose, pose, atol=1e-12)
    np.testing.assert_array_equal(back.expression, state.expression)


def test_parts_without_actions_or_head_are_refused(ctx):
    from maskscore_core.body.parts import PartError

    assert plugins.call("mask_part", MODALITY, modality=MODALITY, part="neck", ctx=ctx).native["head"]
    with pytest.raises(PartError, match="neither"):
        plugins.call("mask_part", MODALITY, modality=MODALITY, part="ears", ctx=ctx)


def test_a_capture_with_no_frames_is_refused():
    with pytest.raises(ArkitError, match="at least one frame"):
        Capture(np.zeros((0, 52)), np.zeros((0, 3)), np.zeros((0, 6)))


def test_maskscore_score_reads_captures_by_their_suffix(tmp_path):
    """`maskscore score` recognises .csv captures as arkit: frame B's capture is the ideal edit."""
    import json

    from click.testing import CliRunner

    from maskscore_core.cli import main
    from maskscore_core.plugin.testing import small_context

    ctx = small_context(tmp_path, views=2, resolution=32)
    m = plugins.modality(MODALITY)
    instance = _instance()
    a, b = (tmp_path / m.write(m.encode(t, ctx), tmp_path, t.label, ctx) for t in (instance.a, instance.b))
    args = ["score", "--views", "2", "--resolution", "32", "--frame-a", str(a), "--frame-b", str(b), "--part", "mouth", str(b), str(a)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["modality"] == MODALITY
    best, same_as_a = report["candidates"]
    assert best["instruction_following"] > same_as_a["instruction_following"]
    assert same_as_a["consistency"] == pytest.approx(1.0, abs=1e-6)
