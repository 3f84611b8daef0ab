"""The SpeakingFaces loader on a small fixture in the published layout.

The fixture is built here: ANNY frames rendered by maskscore_core.metric.render (768x512, the visual
stream's size), espeak-ng audio resampled to 44.1 kHz stereo like a webcam microphone, the
commands CSV and subjects table. The landmark-detector slot is filled by a detector that knows
each frame's true ANNY state and returns its projected 68 landmarks (no offline detector exists
here). Bad utterances (missing audio, corrupt audio, a corrupt frame, too few frames) must fail
with an error naming the file while the good ones load.
"""

from __future__ import annotations

import csv
import hashlib
import json
import shutil
import subprocess
import wave
from pathlib import Path

import numpy as np
import pytest

from maskscore_core.plugin import manager as plugins
from maskscore_core.body.anny_model import get_body_model
from maskscore_core.plugin.context import Context
from maskscore_core.plugin.records import BodyState
from maskscore_core.trials import landmark_fit as lf
from maskscore_core.trials import speakingfaces as sf

JAW = (0.0, 0.15, 0.3, 0.45, 0.6, 0.5, 0.35, 0.2, 0.05)  # lower-median opening: frame 2 (0.3)
CAMERA_POSITION = np.array([0.0, 0.57, 0.45])
SUBJECTS = {1: ("Male", "30"), 2: ("Female", "45")}
GOOD = {(1, 101): "turn on the kitchen lights", (2, 205): "what is the weather today"}


def frame_state(subject: int, index: int) -> BodyState:
    body = get_body_model()
    gender, age = SUBJECTS[subject]
    expression = np.zeros(52)
    expression[body.action_index("jawOpen")] = JAW[index]
    expression[body.action_index("browInnerUp")] = 0.2 * subject
    pose = np.zeros((78, 3))
    pose[body.bone_index("Head")] = [0.01 * index, -0.04 + 0.01 * index, 0.0]
    phenotype = sf.subject_phenotype({"gender": gender.lower(), "age": age})
    return BodyState(phenotype=phenotype, pose=pose, expression=expression)


class KnownFramesDetector:
    """The detector slot for the fixture: frame pixels -> the landmarks of the state drawn."""

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        self.table = table

    def detect(self, image: np.ndarray):
        return self.table.get(hashlib.sha256(np.ascontiguousarray(image).tobytes()).hexdigest())


def _ffmpeg(*args: str) -> None:
    import imageio_ffmpeg

    subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-nostdin", "-v", "error", "-y", *args], check=True)


def build_fixture(root: Path) -> dict[str, np.ndarray]:
    import imageio.v3 as iio

    from maskscore_core import speech
    from maskscore_core.body.reference_mesh import get_reference_mesh
    from maskscore_core.metric.render import get_renderer

    (root / "metadata" / "commands").mkdir(parents=True)
    with (root / "metadata" / "subjects.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["Sub_ID", "Split", "Age", "Gender", "Ethnicity", "Acc_Trial_1", "Acc_Trial_2"])
        for s, (gender, age) in SUBJECTS.items():
            writer.writerow([s, "Train", age, gender, "Asian", "None", "None"])
    commands = {1: [(101, GOOD[(1, 101)]), (102, "call mom"), (103, "play some jazz")],
                2: [(205, GOOD[(2, 205)]), (206, "set an alarm"), (207, "stop the music")]}  # fmt: skip
    for s, rows in commands.items():
        with (root / "metadata" / "commands" / f"sub_{s}_trial_1.csv").open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["command_name", "command_id", "pos_id", "transcription", "artifacts"])
            for cmd, text in rows:
                writer.writerow([text, cmd, 1, text, ""])

    table, renderer, mesh = {}, get_renderer(), get_reference_mesh()
    camera = lf.SPEAKINGFACES_CAMERA
    for s in SUBJECTS:
        trial = root / f"sub_{s}_ia" / "trial_1"
        rgb, thr, mic = trial / "rgb_image_cmd", trial / "thr_image_cmd", trial / "mic1_audio_cmd_trim"
        for folder in (rgb, thr, mic):
            folder.mkdir(parents=True)
        good_cmd = 101 if s == 1 else 205
        states = [frame_state(s, i) for i in range(len(JAW))]
        for i, (state, verts) in enumerate(zip(states, mesh.vertices(states))):
            image = renderer.render_rgb(verts, 768, 512, view_index=0)
            table[hashlib.sha256(image.tobytes()).hexdigest()] = lf.project_landmarks(state, camera, CAMERA_POSITION)
            iio.imwrite(rgb / f"{s}_1_2_1_{good_cmd}_{i + 1}_2.png", image)
            iio.imwrite(thr / f"{s}_1_2_1_{good_cmd}_{i + 1}_1.png", image[::2, ::2].mean(axis=2).astype(np.uint8)[:348, :464])
        speech.synthesize(GOOD[(s, good_cmd)], "en-us", trial / "tts.wav")
        _ffmpeg("-i", str(trial / "tts.wav"), "-ar", "44100", "-ac", "2", str(mic / f"{s}_1_2_1_{good_cmd}_1.wav"))
        (trial / "tts.wav").unlink()

    def copy_frames(s: int, src_cmd: int, dst_cmd: int, count: int) -> None:
        folder = root / f"sub_{s}_ia" / "trial_1" / "rgb_image_cmd"
        for i in range(1, count + 1):
            shutil.copy(folder / f"{s}_1_2_1_{src_cmd}_{i}_2.png", folder / f"{s}_1_2_1_{dst_cmd}_{i}_2.png")

    mic1, mic2 = root / "sub_1_ia/trial_1/mic1_audio_cmd_trim", root / "sub_2_ia/trial_1/mic1_audio_cmd_trim"
    copy_frames(1, 101, 102, 3)  # too short
    shutil.copy(mic1 / "1_1_2_1_101_1.wav", mic1 / "1_1_2_1_102_1.wav")
    copy_frames(1, 101, 103, 9)  # audio missing
    copy_frames(2, 205, 206, 9)  # corrupt audio
    (mic2 / "2_1_2_1_206_1.wav").write_bytes(b"RIFF\x00\x00junk, not a wav file at all")
    copy_frames(2, 205, 207, 9)  # a corrupt frame
    shutil.copy(mic2 / "2_1_2_1_205_1.wav", mic2 / "2_1_2_1_207_1.wav")
    (root / "sub_2_ia/trial_1/rgb_image_cmd/2_1_2_1_207_5_2.png").write_bytes(b"\x89PNG\r\n\x1a\n truncated")
    return table


CONFIG = {"fit_stride": 4, "render_views": 2, "render_resolution": 64, "landmark_detector": "known-frames"}


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    root = tmp_path_factory.mktemp("speakingfaces")
    table = build_fixture(root)
    sf.register_landmark_detector("known-frames", lambda: KnownFramesDetector(table))
    try:
        workdir = tmp_path_factory.mktemp("work")
        result = sf.load(root, dict(CONFIG), workdir)
    finally:
        sf.unregister_landmark_detector("known-frames")
    return root, table, result


def test_layout_finds_every_utterance(loaded):
    root, _table, _result = loaded
    keys = [u.key for u in sf.SpeakingFacesLayout(root).utterances()]
    assert keys == [f"sf-001-1-1-{c}" for c in (101, 102, 103)] + [f"sf-002-1-1-{c}" for c in (205, 206, 207)]


def test_good_utterances_load_and_bad_ones_fail_naming_the_file(loaded):
    root, _table, result = loaded
    assert [t.trial_id for t in result.trials] == ["sf-001-1-1-101", "sf-002-1-1-205"]
    failures = {f.key: f for f in result.failures}
    assert sorted(failures) == ["sf-001-1-1-102", "sf-001-1-1-103", "sf-002-1-1-206", "sf-002-1-1-207"]
    assert "has 3 visual frames; at least 8" in failures["sf-001-1-1-102"].error
    assert failures["sf-001-1-1-103"].path.endswith("mic1_audio_cmd_trim/1_1_2_1_103_1.wav")
    assert "audio file not found" in failures["sf-001-1-1-103"].error
    assert failures["sf-002-1-1-206"].path.endswith("2_1_2_1_206_1.wav")
    assert "not a readable audio file" in failures["sf-002-1-1-206"].error
    assert failures["sf-002-1-1-207"].path.endswith("rgb_image_cmd/2_1_2_1_207_5_2.png")


def test_trial_content(loaded):
    _root, _table, result = loaded
    body = get_body_model()
    jaw = body.action_index("jawOpen")
    for trial in result.trials:
        subject = int(trial.trial_id.split("-")[1])
        assert trial.source == "speakingfaces" and trial.fps == sf.FPS
        assert trial.transcript == GOOD[(subject, int(trial.trial_id.split("-")[-1]))]
        assert trial.subject.subject_id == f"sf-{subject:03d}"
        assert trial.subject.phenotype["gender"] == (1.0 if subject == 1 else 0.0)
        # step 1: the median mouth opening is frame 2 (jawOpen 0.3), and the fit recovers it
        assert trial.extras["representative_frame"] == "2"
        assert float(trial.extras["fit_mean_error_px"]) < 0.5
        assert len(trial.frames) == len(JAW)
        assert abs(trial.frames[2].state.expression[jaw] - 0.3) < 0.05
        # key frames (0, 6, 8: stride 4 from frame 2, plus the ends) are fitted warm and track
        # the jaw; the frames between are linear interpolations of their key frames
        fitted = np.array([f.state.expression[jaw] for f in trial.frames])
        keys = [0, 2, 6, 8]
        assert np.abs(fitted[keys] - np.array(JAW)[keys]).max() < 0.1
        np.testing.assert_allclose(fitted[[3, 4, 5]], np.interp([3, 4, 5], keys, fitted[keys]), atol=1e-12)
        # step 4: rendered depth/normals of the fitted mesh
        depth = np.load(trial.extras["render_depth"])
        assert depth.shape == (2, 64, 64) and (depth > 0).any()
        assert np.load(trial.extras["render_normals"]).shape == (2, 64, 64, 3)
        # step 6: 16 kHz mono audio cut to the clip's span
        with wave.open(trial.audio_path) as w:
            assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (16000, 1, 2)
            assert abs(w.getnframes() - round(len(JAW) / sf.FPS * 16000)) <= 2
        # step 7: the frame sequence, and the representative frame as the image
        frames = sorted(Path(trial.extras["video_frames"]).glob("frame_*.png"))
        assert len(frames) == len(JAW) and Path(trial.image_path) == frames[2]
        assert trial.extras["thermal_frames"].endswith("thr_image_cmd")
        assert len(json.loads(Path(trial.extras["landmarks"]).read_text())) == len(JAW)


def test_audio_cut_is_byte_identical(loaded, tmp_path):
    root, _table, _result = loaded
    source = root / "sub_1_ia/trial_1/mic1_audio_cmd_trim/1_1_2_1_101_1.wav"
    a = sf.cut_audio(source, tmp_path / "a.wav", 0.5).read_bytes()
    b = sf.cut_audio(source, tmp_path / "b.wav", 0.5).read_bytes()
    assert a == b


def test_same_input_gives_byte_identical_outputs(loaded, tmp_path):
    root, table, result = loaded
    sf.register_landmark_detector("known-frames", lambda: KnownFramesDetector(table))
    try:
        again = sf.load(root, {**CONFIG, "subjects": [1], "count": 1}, tmp_path)
    finally:
        sf.unregister_landmark_detector("known-frames")
    first, second = result.trials[0], again.trials[0]
    assert first.frames == second.frames and first.transcript == second.transcript
    folder_a = Path(first.audio_path).parent
    folder_b = Path(second.audio_path).parent
    files_a = sorted(p.relative_to(folder_a) for p in folder_a.rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(folder_b) for p in folder_b.rglob("*") if p.is_file())
    assert files_a == files_b and len(files_a) > 10
    for name in files_a:
        assert (folder_a / name).read_bytes() == (folder_b / name).read_bytes(), name


def test_representative_frame_rule():
    marks = lf.face_landmarks()
    opening = [0.4, 0.1, 0.3, 0.2]
    base = np.zeros((68, 2))
    base[[i for i, n in enumerate(marks.names) if n.startswith("eye_right_")], 0] = -50
    base[[i for i, n in enumerate(marks.names) if n.startswith("eye_left_")], 0] = 50
    frames = []
    for value in opening:
        landmarks = base.copy()
        landmarks[marks.names.index("lip_inner_6"), 1] = 100 * value
        frames.append(landmarks)
    assert [round(sf.mouth_opening(f), 6) for f in frames] == opening
    assert sf.representative_index(frames) == 3  # sorted 0.1, 0.2, 0.3, 0.4 -> lower median 0.2


def test_empty_slots_give_clear_errors(loaded, tmp_path, monkeypatch):
    root, _table, _result = loaded
    monkeypatch.setattr(sf, "_installed_detectors", lambda: {})  # as if maskscore-face-landmarks were not installed
    with pytest.raises(sf.SpeakingFacesConfigError, match="landmark detector slot .* is empty.*maskscore-face-landmarks"):
        sf.load(root, {}, tmp_path)
    sf.register_landmark_detector("none", lambda: KnownFramesDetector({}))
    try:
        with pytest.raises(sf.SpeakingFacesConfigError, match="depth estimator slot \\(MoGe-3 metric depth\\) is empty"):
            sf.load(root, {"depth": True}, tmp_path)
    finally:
        sf.unregister_landmark_detector("none")


def test_bad_root_and_options(tmp_path):
    with pytest.raises(sf.SpeakingFacesError, match="root folder not found"):
        sf.SpeakingFacesLayout(tmp_path / "absent")
    with pytest.raises(sf.SpeakingFacesConfigError, match="unknown speakingfaces options \\['colour'\\]"):
        sf.SpeakingFacesConfig.from_dict({"path": str(tmp_path), "colour": 1})
    with pytest.raises(sf.SpeakingFacesConfigError, match="stream must be"):
        sf.SpeakingFacesConfig.from_dict({"path": str(tmp_path), "stream": "thermal"})
    with pytest.raises(sf.SpeakingFacesConfigError, match="needs 'path'"):
        sf.SpeakingFacesConfig.from_dict({})


def test_corrupt_commands_csv_names_the_file(tmp_path):
    path = tmp_path / "sub_1_trial_1.csv"
    path.write_text("foo,bar\n1,2\n")
    with pytest.raises(sf.SpeakingFacesError, match="sub_1_trial_1.csv: expected columns"):
        sf._read_commands(path)


def test_source_plugin_answers_extract(loaded, tmp_path):
    root, _table, _result = loaded
    assert plugins.plugin_info("speakingfaces_source").kind == "source"
    sf.register_landmark_detector("none", lambda: KnownFramesDetector({}))
    try:  # only the utterances that fail before any fit: fast, and the failures file is written
        trials = plugins.call(
            "extract", "speakingfaces", source="speakingfaces",
            config={"path": str(root), "subjects": [1], "count": 3, "fit_stride": 4}, ctx=Context(workdir=tmp_path),
        )  # fmt: skip
    finally:
        sf.unregister_landmark_detector("none")
    assert trials == []  # the detector sees no face in 101; 102 is too short; 103 lacks audio
    report = (tmp_path / "sources/speakingfaces/speakingfaces/failures.json").read_text()
    assert "found no face" in report and "at least 8" in report and "audio file not found" in report


def test_subject_phenotype_from_the_subjects_table():
    assert sf.subject_phenotype({"gender": "female", "age": "25"}) == {"age": 0.5, "gender": 0.0}
    assert sf.subject_phenotype({"gender": "male", "age": "90"}) == {"age": 1.0, "gender": 1.0}
    assert sf.subject_phenotype({"gender": "", "age": "unknown"}) == {}
    assert 0.5 < sf.anny_age(45) < 1.0 and sf.anny_age(11) == 0.1875


def test_installed_face_mesh_detector_is_the_default_and_reads_real_frames(loaded, tmp_path):
    """Step 2 with no detector named: mediapipe Face Mesh (maskscore-face-landmarks) reads the
    rendered frames themselves; its 478 points are kept and the fit uses its anchors."""
    pytest.importorskip("maskscore_face_landmarks")
    from maskscore_face_landmarks import FaceMeshDetector

    assert isinstance(sf.landmark_detector(), FaceMeshDetector)
    root, _table, _result = loaded
    options = {key: value for key, value in CONFIG.items() if key != "landmark_detector"}
    result = sf.load(root, {**options, "subjects": [1], "count": 1, "fit_stride": 8, "render": False}, tmp_path)
    assert not result.failures, result.failures
    (trial,) = result.trials
    rows = json.loads(Path(trial.extras["landmarks"]).read_text())
    assert len(rows) == len(JAW) and all(len(row) == 478 for row in rows)
    assert float(trial.extras["fit_mean_error_px"]) < 5.0


def test_frame_without_a_face_fails_naming_file_and_frame(loaded, tmp_path):
    """A frame where the detector finds no face fails its utterance; the error names the file
    and the frame (a blank frame stands in for it)."""
    pytest.importorskip("maskscore_face_landmarks")
    import imageio.v3 as iio

    root, _table, _result = loaded
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    frame = copy / "sub_1_ia/trial_1/rgb_image_cmd/1_1_2_1_101_3_2.png"
    iio.imwrite(frame, np.full((512, 768, 3), 40, dtype=np.uint8))
    options = {key: value for key, value in CONFIG.items() if key != "landmark_detector"}
    result = sf.load(copy, {**options, "subjects": [1], "count": 1, "render": False}, tmp_path / "work")
    (failure,) = result.failures
    assert failure.path == str(frame) and "frame 2: no face found" in failure.error
