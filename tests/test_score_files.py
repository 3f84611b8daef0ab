"""`maskscore score` on files of any installed modality: read by the modality that claims their
suffix (or `--modality`), decoded by its plugin, scored by render-and-compare; JSON on stdout."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from maskscore_core import plugins
from maskscore_core.cli import main
from maskscore_core.testing import face_state, small_context, speaking_instance, unit_instance

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
