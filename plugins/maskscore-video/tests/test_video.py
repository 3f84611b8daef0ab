"""The video modality: clips of ANNY frames, PNG + frames.json folders, rows, bad input."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from maskscore_core.plugin import manager as plugins
from maskscore_core.plugin.contract import ModalityContract
from maskscore_core.plugin.records import Asset
from maskscore_core.body.reference_mesh import get_reference_mesh
from maskscore_core.plugin.testing import face_state, unit_instance

MODALITY = "video"


def _instance():
    return unit_instance(
        MODALITY, "transition the mouth from frame A to frame B", "temporal_edit",
        [face_state(jawOpen=j) for j in (0.0, 0.1, 0.0, 0.1, 0.0)],
        [face_state(jawOpen=j) for j in (0.0, 0.4, 0.8, 0.4, 0.0)],
        key="unit-video-0001", transcripts=("turn on the lights", "play some music"), fps=10.0,
    )  # fmt: skip


class TestVideoContract(ModalityContract):
    """The ladder on the first built-in instances (a neck and a mouth edit)."""

    modality = MODALITY
    bad_files = (("nope", {}, "does not exist"), ("empty", {"empty": None}, "no frames.json"))
    ladder_instances = 2
    ladder_seed = 0

    unit_instance = staticmethod(_instance)

    def check_rows(self, table, values, instance, ctx):
        assert table.column("aligned_audio").to_pylist() == ["assets/input/audio.wav"] * 3
        assert (ctx.workdir / "assets/input/audio.wav").is_file()


def test_decode_gives_sampled_frames_middle_mesh_and_activations(ctx):
    instance = _instance()
    asset = plugins.call("encode", MODALITY, modality=MODALITY, target=instance.b, ctx=ctx)
    decoded = plugins.call("decode_to_mesh", MODALITY, asset=asset, instance=instance, ctx=ctx)
    states = instance.b.states
    assert decoded.activations.shape == (5, 52)
    np.testing.assert_array_equal(decoded.activations, np.stack([s.expression for s in states]))
    reference = get_reference_mesh()
    np.testing.assert_array_equal(decoded.vertices, reference.vertices([states[2]])[0])
    # 4 frames sampled evenly over 5: 0, 1, 3, 4.
    assert len(decoded.frames) == 4
    np.testing.assert_array_equal(decoded.frames[2], reference.vertices([states[3]])[0])
    ref_b = plugins.call("decode_reference", MODALITY, modality=MODALITY, instance=instance, which="b", ctx=ctx)
    np.testing.assert_array_equal(ref_b.vertices, decoded.vertices)
    ref_a = plugins.call("decode_reference", MODALITY, modality=MODALITY, instance=instance, which="a", ctx=ctx)
    assert not np.allclose(ref_a.vertices, decoded.vertices)


def _write(ctx, tmp_path, name="b"):
    instance = _instance()
    asset = plugins.call("encode", MODALITY, modality=MODALITY, target=instance.b, ctx=ctx)
    return plugins.call("write_asset", MODALITY, asset=asset, directory=tmp_path / "assets", name=name, ctx=ctx)


def test_folder_round_trip_is_deterministic(ctx, tmp_path):
    value = _write(ctx, tmp_path)
    assert value == "assets/b"
    folder = tmp_path / value
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["audio.wav", "frame_00000.png", "frame_00001.png", "frame_00002.png", "frame_00003.png",
                     "frame_00004.png", "frames.json"]  # fmt: skip
    _write(ctx, tmp_path, "b2")
    for name in names:
        assert (folder / name).read_bytes() == (tmp_path / "assets/b2" / name).read_bytes(), name
    back = plugins.call("read_asset", MODALITY, modality=MODALITY, value=value, root=tmp_path, ctx=ctx)
    assert back.data.states == _instance().b.states
    assert back.data.fps == 10.0 and back.data.transcript == "play some music"
    # Frames differ: the jaw opens and closes.
    assert (folder / "frame_00000.png").read_bytes() != (folder / "frame_00002.png").read_bytes()


def test_bad_folders_are_named(ctx, tmp_path):
    def read(value):
        return plugins.call("read_asset", MODALITY, modality=MODALITY, value=value, root=tmp_path, ctx=ctx)

    value = _write(ctx, tmp_path)
    folder = tmp_path / value
    broken = tmp_path / "broken"

    def variant(edit):
        if broken.exists():
            shutil.rmtree(broken)
        shutil.copytree(folder, broken)
        edit(broken)
        return "broken"

    with pytest.raises(ValueError, match="frame images"):
        read(variant(lambda f: (f / "frame_00003.png").unlink()))
    with pytest.raises(ValueError, match="no frames.json"):
        read(variant(lambda f: (f / "frames.json").unlink()))
    with pytest.raises(ValueError, match="not valid JSON"):
        read(variant(lambda f: (f / "frames.json").write_text("{frames: oops")))

    def set_frame(field, value):
        def edit(f):
            manifest = json.loads((f / "frames.json").read_text())
            manifest["frames"][1][field] = value
            (f / "frames.json").write_text(json.dumps(manifest))

        return edit

    with pytest.raises(ValueError, match="frame 1 .*NaN"):
        read(variant(set_frame("translation", [0.0, float("nan"), 0.0])))
    with pytest.raises(ValueError, match=r"frame 1 .*shape \(78, 3\)"):
        read(variant(set_frame("pose", [[0.0, 0.0, 0.0]] * 10)))


def test_bad_clips_and_parts_are_rejected(ctx):
    instance = _instance()
    with pytest.raises(ValueError, match="holds a Clip"):
        plugins.call("decode_to_mesh", MODALITY, asset=Asset(MODALITY, np.zeros(3)), instance=instance, ctx=ctx)
    with pytest.raises(ValueError, match="'a' or 'b'"):
        plugins.call("decode_reference", MODALITY, modality=MODALITY, instance=instance, which="c", ctx=ctx)
    with pytest.raises(ValueError, match="unknown part"):
        plugins.call("mask_part", MODALITY, modality=MODALITY, part="antenna", ctx=ctx)


def test_mask_is_part_vertices_and_actions(ctx):
    from maskscore_core.body import parts

    mask = plugins.call("mask_part", MODALITY, modality=MODALITY, part="mouth", ctx=ctx).native
    np.testing.assert_array_equal(mask["vertex_ids"], parts.part_vertex_ids("mouth"))
    assert "jawOpen" in mask["actions"]
