"""The video modality: clips of ANNY frames, PNG + frames.json folders, rows, bad input."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from maskscore_core import plugins, schemas
from maskscore_core.records import Asset, BodyState, EditInstance, EditInstruction, Subject, Target
from maskscore_core.reference_mesh import get_reference_mesh
from maskscore_core.testing import check_modality_plugin_alone

MODALITY = "video"
LADDER_INSTANCES = 2


def test_works_alone_and_not_without_it(monkeypatch):
    """Installed alone it provides video and `maskscore list-plugins` shows it; not loaded, nothing answers."""
    check_modality_plugin_alone(MODALITY, "maskscore-video", monkeypatch)


def _state(jaw: float) -> BodyState:
    from maskscore_core.body import get_body_model

    expression = np.zeros(52)
    expression[get_body_model().action_index("jawOpen")] = jaw
    return BodyState(phenotype={"age": 0.4}, expression=expression)


def _clip_target(label: str, jaws, transcript="turn on the lights") -> Target:
    return Target(label, Subject("s1", {"age": 0.4}), tuple(_state(j) for j in jaws), transcript, fps=10.0)


def _instance() -> EditInstance:
    return EditInstance(
        key="unit-video-0001",
        instruction=EditInstruction("transition the mouth from frame A to frame B", "mouth", "temporal_edit", MODALITY),
        a=_clip_target("a", [0.0, 0.1, 0.0, 0.1, 0.0]),
        b=_clip_target("b", [0.0, 0.4, 0.8, 0.4, 0.0], "play some music"),
    )


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

    with pytest.raises(ValueError, match="does not exist"):
        read("nope")
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
    from maskscore_core import parts

    mask = plugins.call("mask_part", MODALITY, modality=MODALITY, part="mouth", ctx=ctx)
    np.testing.assert_array_equal(mask["vertex_ids"], parts.part_vertex_ids("mouth"))
    assert "jawOpen" in mask["actions"]


def test_reward_row_validates_against_the_schema(ctx, tmp_path):
    instance = _instance()
    input_value = _write(ctx, tmp_path, "a")
    candidates = [_write(ctx, tmp_path, "b")]
    rows = [
        plugins.call("reward_row", MODALITY, modality=MODALITY, instance=instance, input_value=input_value,
                     candidate_values=candidates, scores=[0.75], dimension=dimension, root=tmp_path, ctx=ctx)
        for dimension in ("instruction_following", "consistency", "overall")
    ]  # fmt: skip
    table = schemas.to_table("VideoEditReward", rows)
    assert table.column("aligned_audio").to_pylist()[0] == "assets/a/audio.wav"
    assert (tmp_path / "assets/a/audio.wav").is_file()
    with pytest.raises(ValueError, match="2 scores for 1"):
        plugins.call("reward_row", MODALITY, modality=MODALITY, instance=instance, input_value=input_value,
                     candidate_values=candidates, scores=[0.1, 0.2], dimension="overall", root=tmp_path, ctx=ctx)  # fmt: skip


def test_other_modalities_are_not_answered(ctx):
    assert plugins.get_plugin_manager().hook.encode(modality="speech", target=_instance().a, ctx=ctx) is None


def _ladder_scores(instance, ctx):
    """Overall scores of the frame-pair editor's five rungs under the built-in render-compare."""
    candidates = plugins.call("edit", "frame-pair", editor="frame-pair", modality=MODALITY, instance=instance, ctx=ctx)
    assert [c.rung for c in candidates] == [1, 2, 3, 4, 5]
    scores = plugins.call("score", "render-compare", scorer="render-compare", instance=instance, candidates=candidates, ctx=ctx)
    return [s.overall for s in scores]


@pytest.fixture(scope="module")
def built_in_trials(tmp_path_factory):
    from maskscore_core.trials import anny_source

    config = anny_source.AnnySourceConfig(seed=0, subjects=3, trials_per_subject=2)
    return anny_source.generate_trials(config, tmp_path_factory.mktemp("trials"))


def test_ladder_is_recovered_on_built_in_trials(ctx, built_in_trials):
    """rung 1 > 2 > 3 > 4 > 5 on overall for the first instances (a neck and a mouth edit)."""
    from maskscore_core.edits import make_instances

    for instance in make_instances(built_in_trials, MODALITY, np.random.default_rng(0), LADDER_INSTANCES):
        overall = _ladder_scores(instance, ctx)
        assert all(better > worse for better, worse in zip(overall, overall[1:])), (instance.key, overall)
