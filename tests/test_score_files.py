"""`maskscore score` on files of any installed modality: read by the modality that claims their
suffix (or `--modality`), decoded by its plugin, scored by render-and-compare; JSON on stdout."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from maskscore_core.plugin import manager as plugins
from maskscore_core.cli import main
from maskscore_core.plugin.testing import face_state, small_context, speaking_instance, unit_instance

SMALL = ["--views", "2", "--resolution", "32"]


def _write(modality, instance, tmp_path):
    """Frames A and B of `instance` written as files by `modality`'s own writer: (a, b) paths."""
    ctx = small_context(tmp_path, views=2, resolution=32)
    m = plugins.modality(modality)
    return [tmp_path / m.write(m.encode(t, ctx), tmp_path, t.label, ctx) for t in (instance.a, instance.b)]


def _score(*args):
    result = CliRunner().invoke(main, ["score", *SMALL, *map(str, args)])
    return result, (json.loads(result.stdout) if result.exit_code == 0 else None)


def _check_b_beats_a(report, modality):
    """Candidates [frame B, frame A]: B is the ideal edit (frame B itself), A keeps everything
    as it was (frame A itself), each up to float rounding."""
    assert report["modality"] == modality and report["part"] == "mouth"
    b, a = report["candidates"]
    assert b["instruction_following"] > a["instruction_following"]
    assert b["instruction_following"] == pytest.approx(1.0, abs=1e-6) and a["consistency"] == pytest.approx(1.0, abs=1e-6)
    assert all(0.0 <= c[k] <= 1.0 for c in (a, b) for k in ("instruction_following", "consistency", "overall"))


@pytest.mark.parametrize("modality", ["speech", "text"])
def test_spoken_files_are_scored_through_their_plugin(modality, tmp_path):
    a, b = _write(modality, speaking_instance(modality, "say play some music", key="cli"), tmp_path)
    assert a.suffix == b.suffix == plugins.modality(modality).suffixes[0]
    result, report = _score("--frame-a", a, "--frame-b", b, "--part", "mouth", b, a)  # modality from the suffix
    assert result.exit_code == 0, result.output
    _check_b_beats_a(report, modality)
    if modality == "text":  # named, the modality reads the same files to the same bytes
        again, _ = _score("--modality", modality, "--frame-a", a, "--frame-b", b, "--part", "mouth", b, a)
        assert again.stdout == result.stdout


def test_depth_maps_are_scored_against_mesh_frames(tmp_path):
    instance = unit_instance("depth", "reconstruct the mouth depth", "depth_edit", face_state(), face_state(jawOpen=0.9))
    a, b = _write("depth", instance, tmp_path)
    meshes = _write("mesh", unit_instance("mesh", "edit the mouth", "expression_change", face_state(), face_state(jawOpen=0.9)),
                    tmp_path / "meshes")  # fmt: skip
    result, report = _score("--frame-a", meshes[0], "--frame-b", meshes[1], "--part", "mouth", b, a)
    assert result.exit_code == 0, result.output
    _check_b_beats_a(report, "depth")
    # Depth maps as frames have no mesh to take the part's pixels from: one line says what to give.
    result, _ = _score("--frame-a", a, "--frame-b", b, "--part", "mouth", b)
    assert result.exit_code == 1
    assert "decodes to no mesh" in result.output and "give --frame-a and --frame-b as meshes" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_unknown_file_types_and_modalities_are_one_line(tmp_path):
    odd = tmp_path / "capture.xyz"
    odd.write_text("1 2 3\n")
    result, _ = _score("--frame-a", odd, "--frame-b", odd, "--part", "mouth", odd)
    assert result.exit_code == 1 and "no installed modality reads this kind of file" in result.output
    assert len(result.output.strip().splitlines()) == 1
    result, _ = _score("--modality", "smell", "--frame-a", odd, "--frame-b", odd, "--part", "mouth", odd)
    assert result.exit_code == 2 and "unknown modality 'smell'" in result.output


def _numbers_file(modality, instance, tmp_path, suffix):
    """Frames A and B as the numbers their table holds, in an .npz (one array named after the
    modality) or a plain .json list."""
    import numpy as np

    ctx = small_context(tmp_path, views=2, resolution=32)
    m = plugins.modality(modality)
    tmp_path.mkdir(parents=True, exist_ok=True)
    paths = []
    for target in (instance.a, instance.b):
        values = m.write(m.encode(target, ctx), tmp_path, target.label, ctx)
        path = tmp_path / f"{modality}-{target.label}{suffix}"
        np.savez(path, **{modality: np.asarray(values)}) if suffix == ".npz" else path.write_text(json.dumps(values))
        paths.append(path)
    return paths


def test_clips_and_numbers_are_scored_through_their_plugin(tmp_path):
    """A video clip folder is recognised by its frames.json; a pose .npz by its array's name; a
    plain .json list of keypoints needs --modality."""
    clips = [face_state(jawOpen=j) for j in (0.0, 0.1, 0.0)], [face_state(jawOpen=j) for j in (0.0, 0.8, 0.4)]
    a, b = _write("video", unit_instance("video", "transition the mouth", "temporal_edit", *clips, fps=10.0), tmp_path / "video")
    result, report = _score("--frame-a", a, "--frame-b", b, "--part", "mouth", b, a)
    assert result.exit_code == 0, result.output
    _check_b_beats_a(report, "video")

    a, b = _numbers_file("pose", unit_instance("pose", "repose the mouth", "pose_change", face_state(), face_state(jawOpen=0.8)),
                         tmp_path / "pose", ".npz")  # fmt: skip
    result, report = _score("--frame-a", a, "--frame-b", b, "--part", "mouth", b, a)
    assert result.exit_code == 0, result.output
    _check_b_beats_a(report, "pose")

    instance = unit_instance("keypoints", "refit the mouth landmarks", "expression_change", face_state(), face_state(jawOpen=0.8))
    a, b = _numbers_file("keypoints", instance, tmp_path / "keypoints", ".json")
    result, _ = _score("--frame-a", a, "--frame-b", b, "--part", "mouth", b, a)
    assert result.exit_code == 1 and "all read this kind of file; choose one with --modality" in result.output
    result, report = _score("--modality", "keypoints", "--frame-a", a, "--frame-b", b, "--part", "mouth", b, a)
    assert result.exit_code == 0, result.output
    _check_b_beats_a(report, "keypoints")
