"""The multimodal modality: pair choice, cross-path decoding, folders, rows, bad input."""

from __future__ import annotations

import collections
import json

import attrs
import numpy as np
import pytest

from maskscore_core.plugin import manager as plugins

from maskscore_core.dataset import schemas
from maskscore_core.plugin.contract import ModalityContract
from maskscore_core.plugin.testing import face_state, misordered_pairs, unit_instance
from maskscore_multimodal.pairs import OUTPUT_PATHS, Pair, choose_pair, eligible_pairs

MODALITY = "multimodal"
# The derivation-path plugins candidates are realised through load beside it.
pytestmark = pytest.mark.maskscore_plugins(*(f"maskscore-{m}" for m in ("depth", "keypoints", "pose", "speech", "text", "video")))


def _instance(key="unit-mm-0001", b_transcript="play some music"):
    return unit_instance(
        MODALITY, "match the mouth across modalities to frame B", "cross_modal_compose",
        [face_state(jawOpen=j) for j in (0.0, 0.2, 0.0)], [face_state(jawOpen=j) for j in (0.0, 0.5, 0.7)],
        key=key, transcripts=("turn on the lights", b_transcript),
    )  # fmt: skip


class TestMultimodalContract(ModalityContract):
    """Loaded alone (no path plugins) it lists and encodes; the round trip goes keypoints -> depth;
    the ladder uses each instance's own (key-chosen) pair."""

    modality = MODALITY
    stores_written_values = False  # the first input column names the source modality (check_rows)
    bad_files = (
        ("nope", {}, "does not exist"),
        ("f", {"f": None}, "no manifest.json"),
        ("g", {"g/manifest.json": b"{not json"}, "not valid JSON"),
    )
    ladder_instances = 2
    ladder_seed = 0
    round_trip_config = {"multimodal_pair": "keypoints->depth"}
    stores_written_values = False  # its first input column names the input path (check_rows checks the values)

    def unit_instance(self):
        return _instance()

    def check_rows(self, table, values, instance, ctx):
        pair = str(choose_pair(instance, ctx))
        assert table.column("input_modality").to_pylist() == [pair.split("->")[0]] * 3
        assert table.column("output_modality").to_pylist() == [pair.split("->")[1]] * 3
        assert table.column("input_data").to_pylist() == ["assets/input"] * 3


def _pinned(ctx, pair: str):
    return attrs.evolve(ctx, config={**ctx.config, "multimodal_pair": pair})


def test_pairs_are_deterministic_from_the_key_and_cover_the_paths(ctx):
    keys = [f"k{i:03d}" for i in range(300)]
    first = [choose_pair(_instance(k), ctx) for k in keys]
    assert first == [choose_pair(_instance(k), ctx) for k in keys]
    counts = collections.Counter(first)
    assert set(counts) == set(eligible_pairs("mouth")) and len(counts) == 12
    # Speech and text carry only what is said: references only, never candidates, and only of the mouth.
    assert all(p.output not in ("speech", "text", "pose") for p in eligible_pairs("mouth"))
    assert all(p.input != "pose" for p in eligible_pairs("mouth"))  # a pose carries the jaw, not the lips
    # Each path only for parts it carries: gaze only through pose and video, brows not through pose.
    assert eligible_pairs("irides") == [Pair("pose", "video")]
    assert all("pose" not in (p.input, p.output) for p in eligible_pairs("eyebrow")) and len(eligible_pairs("eyebrow")) == 6
    # A depth map cannot follow the head a neck edit turns: no depth output for the neck.
    assert len(eligible_pairs("neck")) == 6 and {p.output for p in eligible_pairs("neck")} == {"keypoints", "video"}
    # Nor for the face, whose only wrong part (rung 4) is the neck: a turn a depth map cannot follow either.
    assert len(eligible_pairs("face")) == 4 and {p.output for p in eligible_pairs("face")} == {"keypoints", "video"}
    same_words = _instance(b_transcript="turn on the lights")
    assert _pinned(ctx, "pose->video").config["multimodal_pair"] == "pose->video"
    assert choose_pair(same_words, _pinned(ctx, "pose->video")) == Pair("pose", "video")
    for bad in ("pose", "pose->pose", "pose->mesh", "pose->smell", "pose->text", "video->pose"):
        with pytest.raises(ValueError):
            choose_pair(same_words, _pinned(ctx, bad))


def test_candidates_decode_through_the_output_path_references_through_the_input(ctx):
    ctx = _pinned(ctx, "text->video")
    instance = _instance()
    asset = plugins.call("encode", MODALITY, modality=MODALITY, target=instance.b, ctx=ctx)
    decoded = plugins.call("decode_to_mesh", MODALITY, asset=asset, instance=instance, ctx=ctx)
    video = plugins.call("encode", "video", modality="video", target=instance.b, ctx=ctx)
    direct = plugins.call("decode_to_mesh", "video", asset=video, instance=instance, ctx=ctx)
    np.testing.assert_array_equal(decoded.vertices, direct.vertices)
    assert len(decoded.frames) == len(direct.frames)
    # A spoken input gives frame B's mouth as its clip moves it, on frame A's body, not its words
    # re-decoded: frames A and B of one clip say the same words.
    from maskscore_core.body.anny_model import get_body_model
    from maskscore_core.speech.spoken_mesh import spoken_columns

    ref = plugins.call("decode_reference", MODALITY, modality=MODALITY, instance=instance, which="b", ctx=ctx)
    spoken = spoken_columns()
    expected = np.stack([s.expression for s in instance.b.states])[:, spoken]
    np.testing.assert_array_equal(ref.activations[: len(instance.b.states), spoken], expected)
    assert ref.activations[:, get_body_model().action_index("jawOpen")].max() == 0.7
    same_words = _instance(b_transcript="turn on the lights")  # A's words: the mouth still differs
    ref_a, ref_b = (plugins.call("decode_reference", MODALITY, modality=MODALITY, instance=same_words, which=w, ctx=ctx)
                    for w in "ab")  # fmt: skip
    assert np.abs(ref_a.activations - ref_b.activations).max() > 0.5


def test_folders_round_trip_and_rows_name_realised_files(ctx, tmp_path):
    ctx = _pinned(ctx, "speech->keypoints")
    instance = _instance()
    values = {}
    for target in (instance.a, instance.b):
        asset = plugins.call("encode", MODALITY, modality=MODALITY, target=target, ctx=ctx)
        values[target.label] = plugins.call(
            "write_asset", MODALITY, asset=asset, directory=tmp_path / "assets", name=target.label, ctx=ctx
        )
    assert values == {"a": "assets/a", "b": "assets/b"}
    rows = [
        plugins.call("reward_row", MODALITY, modality=MODALITY, instance=instance, input_value=values["a"],
                     candidate_values=[values["b"]], scores=[0.7], dimension=dimension, root=tmp_path, ctx=ctx)
        for dimension in ("instruction_following", "consistency", "overall")
    ]  # fmt: skip
    table = schemas.to_table("MultimodalEditReward", rows)
    assert table.column("input_modality").to_pylist()[0] == "speech"
    assert table.column("output_modality").to_pylist()[0] == "keypoints"
    assert (tmp_path / "assets/a/speech.wav").is_file()
    manifest = json.loads((tmp_path / "assets/b/manifest.json").read_text())
    assert manifest["modality"] == "keypoints" and len(manifest["value"]) % 3 == 0 and len(manifest["value"]) > 300
    back = plugins.call("read_asset", MODALITY, modality=MODALITY, value="assets/b", root=tmp_path, ctx=ctx)
    assert back.data.realised.modality == "keypoints" and back.data.target == instance.b
    from_disk = plugins.call("decode_to_mesh", MODALITY, asset=back, instance=instance, ctx=ctx)
    in_memory = plugins.call(
        "decode_to_mesh", MODALITY, asset=plugins.call("encode", MODALITY, modality=MODALITY, target=instance.b, ctx=ctx),
        instance=instance, ctx=ctx,
    )  # fmt: skip
    np.testing.assert_allclose(from_disk.vertices, in_memory.vertices, atol=1e-9)


def test_bad_folders_and_parts_are_named(ctx, tmp_path):
    def read(value):
        return plugins.call("read_asset", MODALITY, modality=MODALITY, value=value, root=tmp_path, ctx=ctx)

    asset = plugins.call("encode", MODALITY, modality=MODALITY, target=_instance().b, ctx=ctx)
    plugins.call("write_asset", MODALITY, asset=asset, directory=tmp_path, name="g", ctx=ctx)
    target = json.loads((tmp_path / "g/target.json").read_text())
    target["states"][0]["translation"] = [0.0, float("nan"), 0.0]
    (tmp_path / "g/target.json").write_text(json.dumps(target))
    with pytest.raises(ValueError, match="not a valid target.*NaN"):
        read("g")
    with pytest.raises(ValueError, match="unknown part"):
        plugins.call("mask_part", MODALITY, modality=MODALITY, part="antenna", ctx=ctx)


def test_a_missing_path_plugin_is_named(ctx, monkeypatch):
    monkeypatch.setenv("MASKSCORE_LOAD_PLUGINS", "maskscore-multimodal")
    plugins.reset()
    assert plugins.providers("modality") == {MODALITY: MODALITY}
    instance = _instance()
    asset = plugins.call("encode", MODALITY, modality=MODALITY, target=instance.b, ctx=_pinned(ctx, "pose->video"))
    with pytest.raises(plugins.NoPluginError, match="unknown modality '(pose|video)'"):
        plugins.call("decode_to_mesh", MODALITY, asset=asset, instance=instance, ctx=_pinned(ctx, "pose->video"))


def _ladder_scores(instance, ctx):
    """The frame-pair editor's five rungs scored by the built-in render-compare."""
    candidates = plugins.call("edit", "frame-pair", editor="frame-pair", modality=MODALITY, instance=instance, ctx=ctx)
    assert [c.rung for c in candidates] == [1, 2, 3, 4, 5]
    return plugins.call("score", "render-compare", scorer="render-compare", instance=instance, candidates=candidates, ctx=ctx)


def _instances(built_in_trials, count):
    from maskscore_core.edits.instances import make_instances

    return make_instances(built_in_trials, MODALITY, np.random.default_rng(0), count)


LADDER_PARTS = ("mouth", "face", "eyebrow", "irides", "neck")


@pytest.mark.slow
@pytest.mark.parametrize("part", LADDER_PARTS)
def test_ladder_is_strict_through_every_path_pair(ctx, built_in_trials, part):
    """Frame A and B through one path, candidates through another: rung 1 > 2 > 3 > 4 > 5 on
    overall and 1 > 2 > 3 > {4, 5} on instruction_following, through every eligible pair, on the
    first built-in instance editing `part` (README.md, "Ladder by path pair")."""
    instance = next(i for i in _instances(built_in_trials, 12) if i.instruction.part == part)
    out_of_order = {}
    for pair in eligible_pairs(part):
        scores = _ladder_scores(instance, _pinned(ctx, str(pair)))
        misordered = misordered_pairs(MODALITY, scores, ("instruction_following", "overall"))
        if misordered:
            out_of_order[str(pair)] = misordered
    assert out_of_order == {}, instance.key
