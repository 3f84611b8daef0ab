"""The wan-vace editor on diffusers' real WanVACEPipeline, with tiny random weights the test builds,
saves with save_pretrained and hands the plugin as a local directory (issue 15: a, 4, 5)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from maskscore_core.plugin import manager as plugins
from maskscore_core.plugin.context import Context
from maskscore_core.plugin.records import BodyState, EditInstance, EditInstruction, Subject, Target

pytestmark = pytest.mark.maskscore_plugins("maskscore-wan-vace", "maskscore-image", "maskscore-face-landmarks", "maskscore-video")

RESOLUTION = 288  # the landmark detector needs the face >= 60 px wide (about 65 px here)


def save_tiny_wan_vace(path):
    """diffusers' own fast-test sizes of Wan-VACE, a 2-layer UMT5 and a word-level tokenizer."""
    import torch
    from diffusers import AutoencoderKLWan, FlowMatchEulerDiscreteScheduler, WanVACEPipeline, WanVACETransformer3DModel
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, UMT5Config, UMT5EncoderModel

    torch.manual_seed(0)
    vocab = {"<pad>": 0, "</s>": 1, "<unk>": 2}
    for word in "edit the mouth face neck in picture to match frame b".split():
        vocab.setdefault(word, len(vocab))
    words = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    words.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=words, pad_token="<pad>", eos_token="</s>", unk_token="<unk>")
    text_encoder = UMT5EncoderModel(UMT5Config(vocab_size=64, d_model=32, d_kv=8, d_ff=37, num_layers=2, num_heads=4,
                                               relative_attention_num_buckets=8))
    vae = AutoencoderKLWan(base_dim=3, z_dim=16, dim_mult=[1, 1, 1, 1], num_res_blocks=1, temperal_downsample=[False, True, True])
    transformer = WanVACETransformer3DModel(
        patch_size=(1, 2, 2), num_attention_heads=2, attention_head_dim=12, in_channels=16, out_channels=16, text_dim=32,
        freq_dim=256, ffn_dim=32, num_layers=3, cross_attn_norm=True, qk_norm="rms_norm_across_heads", rope_max_seq_len=32,
        vace_layers=[0, 2], vace_in_channels=96,
    )
    pipe = WanVACEPipeline(tokenizer=tokenizer, text_encoder=text_encoder.eval(), vae=vae.eval(),
                           scheduler=FlowMatchEulerDiscreteScheduler(shift=7.0), transformer=transformer.eval())
    pipe.save_pretrained(str(path))
    return pipe


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = tmp_path_factory.mktemp("wan-vace-weights")
    return path, save_tiny_wan_vace(path)


def _instance(part="mouth") -> EditInstance:
    from maskscore_core.body.anny_model import get_body_model

    expression = np.zeros(52)
    expression[get_body_model().action_index("jawOpen")] = 0.6
    subject = Subject("s1", {})
    return EditInstance(
        key="wan-0001",
        instruction=EditInstruction(f"edit the {part} in the picture to match frame B", part, "expression_change", "image"),
        a=Target("frame A", subject, (BodyState(),), "hello there"),
        b=Target("frame B", subject, (BodyState(expression=expression),), "hello there"),
    )


def _ctx(tmp_path, **options) -> Context:
    return Context(workdir=tmp_path, seed=0, config={"views": 4, "resolution": 96, "image_resolution": RESOLUTION,
                                                     "editor_options": {"steps": 2, "candidates": 2, **options}})


def _edit(ctx, part="mouth"):
    return plugins.call("edit", "wan-vace", editor="wan-vace", modality="image", instance=_instance(part), ctx=ctx)


def test_loading_code_round_trips_the_saved_weights(tiny):
    from maskscore_wan_vace import pipeline

    path, built = tiny
    loaded = pipeline.load(path)
    for name in ("transformer", "vae", "text_encoder"):
        a, b = getattr(built, name).state_dict(), getattr(loaded, name).state_dict()
        assert a.keys() == b.keys()
        assert all(np.array_equal(a[k].numpy(), b[k].numpy()) for k in a), name
    assert type(loaded.transformer).__name__ == "WanVACETransformer3DModel" and not loaded.transformer.training
    frame = np.random.default_rng(0).integers(0, 256, (32, 32, 3), dtype=np.uint8)
    mask = np.zeros((1, 32, 32), bool)
    mask[0, 8:20, 10:24] = True
    first, second = (pipeline.repaint(loaded, [frame], mask, "edit the mouth", 7, 1, 1.0)[0] for _ in range(2))
    assert np.array_equal(first, second)  # one seed, one picture
    assert np.array_equal(first[~mask[0]], frame[~mask[0]]) and not np.array_equal(first[mask[0]], frame[mask[0]])


def test_weights_are_asked_for_and_an_incomplete_directory_names_the_missing_file(tiny, tmp_path, monkeypatch):
    from maskscore_wan_vace.weights import ENV, WeightsError

    monkeypatch.delenv(ENV, raising=False)
    with pytest.raises(WeightsError, match="--editor-option weights=DIR or set MASKSCORE_WAN_VACE_WEIGHTS"):
        _edit(_ctx(tmp_path))
    broken = tmp_path / "broken"
    shutil.copytree(tiny[0], broken)
    (broken / "transformer" / "config.json").unlink()
    with pytest.raises(WeightsError, match=r"broken/transformer/config.json is missing") as err:
        _edit(_ctx(tmp_path, weights=str(broken)))
    assert "\n" not in str(err.value)
    (broken / "model_index.json").unlink()
    monkeypatch.setenv(ENV, str(broken))  # the environment variable is the other way to point at weights
    with pytest.raises(WeightsError, match=r"broken/model_index.json is missing"):
        _edit(_ctx(tmp_path))


def test_an_output_without_a_face_is_a_recorded_decode_failure(tiny, tmp_path):
    from maskscore_wan_vace.editor import EditError

    ctx = _ctx(tmp_path, weights=str(tiny[0]), grow=RESOLUTION)  # the whole picture is repainted: noise, no face
    with pytest.raises(EditError, match="none of the 2 outputs for wan-0001 decodes: .*face") as err:
        _edit(ctx, part="face")
    assert "\n" not in str(err.value)
    record = json.loads((tmp_path / "editor-outputs" / "wan-0001.json").read_text())
    assert [c["decoded"] for c in record["candidates"]] == [False, False]
    assert all("face" in c["reason"] for c in record["candidates"])


def test_build_bench_with_the_editor_tags_rows_with_it_and_its_config(tiny, tmp_path):
    """`maskscore build bench --editor wan-vace` on one instance (seed 1: a mouth edit): the candidates are the model's
    pictures, scored by render-compare; the card names the editor and its options."""
    from click.testing import CliRunner

    from maskscore_core.cli import main

    out = tmp_path / "bench"
    args = ["build", "bench", "--out", str(out), "--rows", "3", "--seed", "1", "--subjects", "24", "--modalities", "image", "--views", "2",
            "--resolution", "64", "--editor", "wan-vace", "--editor-option", f"weights={tiny[0]}",
            "--editor-option", "steps=1", "--editor-option", "candidates=2", "--quiet"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    card = (out / "README.md").read_text()
    assert "wan-vace" in card and "editor_options" in card
    (record_path,) = (out / "editor-outputs").glob("*.json")
    record = json.loads(record_path.read_text())
    assert record["editor"] == "wan-vace" and record["config"]["steps"] == 1
    from maskscore_core.dataset import reader

    rows = [row for _, row in reader.iter_rows(out)]
    assert len(rows) == 3 and {row["dimension"] for row in rows} == {"instruction_following", "consistency", "overall"}
    decoded = sum(c["decoded"] for c in record["candidates"])
    assert decoded >= 1 and all(len(row["output_images"]) == decoded == len(row["scores"]) for row in rows)
    assert all(0.0 <= x <= 1.0 for row in rows for x in row["scores"])

    # The written pictures: frame A's pixels outside the part's mask, the model's inside.
    from maskscore_image.representation import read
    from maskscore_wan_vace.editor import part_pixels

    instance = reader.load_instance(out, rows[0]["key"])
    source = read(out / rows[0]["input_image"])
    mask = part_pixels("image", instance, source.shape[0], Context(workdir=tmp_path, seed=1), 3)
    for path in rows[0]["output_images"]:
        picture = read(out / path)
        assert np.array_equal(picture[~mask], source[~mask])
        assert not np.array_equal(picture[mask], source[mask])


def test_list_plugins_shows_the_model_class_and_whether_weights_were_found(tiny, monkeypatch):
    from click.testing import CliRunner

    from maskscore_core.cli import main
    from maskscore_wan_vace.weights import ENV

    monkeypatch.delenv(ENV, raising=False)
    plugins.reset()
    listed = CliRunner().invoke(main, ["list-plugins"]).output
    assert "editor wan-vace: diffusers.WanVACEPipeline" in listed and "no weights" in listed
    monkeypatch.setenv(ENV, str(tiny[0]))
    plugins.reset()
    listed = CliRunner().invoke(main, ["list-plugins"]).output
    assert f"weights found at {tiny[0]}" in listed


def test_a_video_clip_is_repainted_inside_the_part_on_every_frame(tiny, tmp_path):
    """Frame A's clip drawn as a pixel clip (5 frames), the mouth repainted on each, composited,
    decoded by the video modality's pixel path and scored."""
    from maskscore_core.body.anny_model import get_body_model
    from maskscore_video.pixels import PixelClip

    from maskscore_wan_vace.editor import video_frames

    expression = np.zeros(52)
    expression[get_body_model().action_index("jawOpen")] = 0.6
    subject = Subject("s1", {})
    instance = EditInstance(
        key="wan-video-0001",
        instruction=EditInstruction("edit the mouth to match frame B", "mouth", "expression_change", "video"),
        a=Target("frame A", subject, (BodyState(),) * 6, "hello there"),
        b=Target("frame B", subject, (BodyState(expression=expression),) * 6, "hello there"),
    )
    ctx = Context(workdir=tmp_path, seed=0, config={"views": 2, "resolution": 64, "editor_options": {
        "weights": str(tiny[0]), "steps": 1, "candidates": 1, "frames": 5, "size": 288}})
    candidates = plugins.call("edit", "wan-vace", editor="wan-vace", modality="video", instance=instance, ctx=ctx)
    record = json.loads((tmp_path / "editor-outputs" / "wan-video-0001.json").read_text())
    assert record["config"]["frames"] == 5 and [c["decoded"] for c in record["candidates"]] == [True]
    frames, mask, fps, names = video_frames(instance, {"frames": 5, "size": 288, "grow": 3})
    assert len(frames) == 5 and mask.shape == (5, 288, 288) and mask.any(axis=(1, 2)).all()
    for candidate in candidates:
        clip = candidate.asset.data
        assert isinstance(clip, PixelClip) and len(clip.frames) == 5
        for made, source, inside in zip(clip.frames, frames, mask):
            assert np.array_equal(made[~inside], source[~inside]) and not np.array_equal(made[inside], source[inside])
    (score,) = plugins.call("score", "render-compare", scorer="render-compare", instance=instance, candidates=candidates, ctx=ctx)
    assert 0.0 <= score.overall <= 1.0
