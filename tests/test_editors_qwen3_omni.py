"""The qwen3-omni text editor and the OmniScore scorer on transformers' real
Qwen3OmniMoeForConditionalGeneration, with tiny random weights the test builds, saves with
save_pretrained and hands the plugin as a local directory (issue 15: b, 3, 4)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from maskscore_core.plugin import manager as plugins
from maskscore_core.plugin.testing import tiny_chat_tokenizer
from maskscore_core.plugin.context import Context
from maskscore_core.plugin.records import BodyState, Candidate, EditInstance, EditInstruction, Subject, Target

pytestmark = pytest.mark.maskscore_plugins("maskscore-qwen3-omni", "maskscore-text", "maskscore-mesh")

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|image_pad|>", "<|audio_pad|>", "<|video_pad|>",
           "<|vision_start|>", "<|vision_end|>", "<|audio_start|>", "<|audio_end|>", "<unk>"]
CHAT = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% if m['content'] is string %}{{ m['content'] }}{% else %}"
        "{% for c in m['content'] %}{% if c['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
        "{% elif c['type'] == 'audio' %}<|audio_start|><|audio_pad|><|audio_end|>{% else %}{{ c['text'] }}{% endif %}"
        "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
GRADE = '{"instruction_following": 8, "consistency": 6, "overall": 7}'


def save_tiny_qwen3_omni(path):
    """A ~0.2M-parameter Qwen3-Omni (thinker with MoE text model, vision and audio towers; no
    talker), a character-level tokenizer with Qwen's special tokens, and its processor."""
    import torch
    from transformers import (Qwen2VLImageProcessorPil, Qwen2VLVideoProcessor, Qwen3OmniMoeConfig,
                              Qwen3OmniMoeForConditionalGeneration, Qwen3OmniMoeProcessor, WhisperFeatureExtractor)

    tokenizer, vocab = tiny_chat_tokenizer(
        SPECIAL,
        extra_special_tokens={"image_token": "<|image_pad|>", "audio_token": "<|audio_pad|>", "video_token": "<|video_pad|>",
                              "vision_bos_token": "<|vision_start|>", "vision_eos_token": "<|vision_end|>",
                              "audio_bos_token": "<|audio_start|>", "audio_eos_token": "<|audio_end|>"},
    )
    ids = {t: vocab[t] for t in SPECIAL}
    hidden = 320
    text = dict(vocab_size=128, hidden_size=hidden, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, head_dim=8, moe_intermediate_size=16, num_experts=4, num_experts_per_tok=2,
                max_position_embeddings=2048, pad_token_id=ids["<|endoftext|>"], eos_token_id=ids["<|im_end|>"],
                rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 1, 1],
                                 "interleaved": True, "mrope_interleaved": True})
    vision = dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2, patch_size=16, spatial_merge_size=2,
                  temporal_patch_size=2, out_hidden_size=hidden, num_position_embeddings=64, deepstack_visual_indexes=[0])
    audio = dict(num_mel_bins=128, encoder_layers=1, encoder_attention_heads=2, encoder_ffn_dim=64, d_model=32,
                 output_dim=hidden, downsample_hidden_size=32, n_window=50, n_window_infer=100)
    thinker = dict(text_config=text, vision_config=vision, audio_config=audio, image_token_id=ids["<|image_pad|>"],
                   audio_token_id=ids["<|audio_pad|>"], video_token_id=ids["<|video_pad|>"],
                   audio_start_token_id=ids["<|audio_start|>"], vision_start_token_id=ids["<|vision_start|>"],
                   user_token_id=vocab["user"])
    config = Qwen3OmniMoeConfig(thinker_config=thinker, enable_audio_output=False, im_start_token_id=ids["<|im_start|>"],
                                im_end_token_id=ids["<|im_end|>"], user_token_id=vocab["user"],
                                assistant_token_id=vocab["assistant"], system_token_id=vocab["system"])
    torch.manual_seed(0)
    model = Qwen3OmniMoeForConditionalGeneration(config).eval()
    small = dict(patch_size=16, merge_size=2, temporal_patch_size=2, min_pixels=32 * 32, max_pixels=64 * 64)
    processor = Qwen3OmniMoeProcessor(image_processor=Qwen2VLImageProcessorPil(**small), video_processor=Qwen2VLVideoProcessor(**small),
                                      feature_extractor=WhisperFeatureExtractor(feature_size=128), tokenizer=tokenizer, chat_template=CHAT)
    model.save_pretrained(str(path))
    processor.save_pretrained(str(path))


def teach(path, out, pairs):
    """Give the saved tiny model (loaded by the plugin's own code) an output layer that makes it
    reply `reply` to each (content, system, reply) under greedy decoding, and save it to `out`:
    the body stays random; the last layer is fitted to its hidden states (a least-squares fit,
    exact for fewer positions than the hidden size), so a real model answers in the strict format."""
    import shutil

    import torch
    from maskscore_qwen3_omni.model import Omni

    omni = Omni(path)
    thinker = omni.model.thinker
    features, targets = [], []
    captured = []
    hook = thinker.lm_head.register_forward_hook(lambda _m, args, _o: captured.append(args[0].detach()))
    for content, system, reply in pairs:
        inputs = omni.inputs(content, system)
        answer = omni.processor.tokenizer(reply + "<|im_end|>", add_special_tokens=False, return_tensors="pt")["input_ids"]
        ids = torch.cat([inputs["input_ids"], answer], dim=1)
        with torch.no_grad():
            thinker(**{**inputs, "input_ids": ids, "attention_mask": torch.ones_like(ids)}, logits_to_keep=0)
        start = inputs["input_ids"].shape[1] - 1  # the position that predicts the first reply token
        features.append(captured.pop()[0, start:start + answer.shape[1]])
        targets.append(answer[0])
    hook.remove()
    x, y = torch.cat(features).double(), torch.cat(targets)
    assert x.shape[0] < x.shape[1], "more reply positions than hidden units: the fit would not be exact"
    wanted = torch.full((x.shape[0], thinker.lm_head.out_features), -10.0, dtype=torch.float64)
    wanted[torch.arange(len(y)), y] = 10.0
    weight = torch.linalg.lstsq(x, wanted).solution.T  # minimum-norm exact solution
    with torch.no_grad():
        thinker.lm_head.weight.copy_(weight.float())
    omni.model.save_pretrained(str(out))
    for name in path.iterdir():
        if not (out / name.name).exists():
            shutil.copy(name, out / name.name)
    return out


def _instance() -> EditInstance:
    subject = Subject("s1", {})
    return EditInstance(
        key="omni-0001",
        instruction=EditInstruction("change the command to turn off the lights", "mouth", "speech_edit", "text"),
        a=Target("frame A", subject, (BodyState(),) * 3, "turn on the lights"),
        b=Target("frame B", subject, (BodyState(),) * 3, "turn off the lights"),
    )


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    """Random weights, and the same model taught to edit the test's transcript and to grade."""
    from maskscore_qwen3_omni import editor, omniscore
    random_dir = tmp_path_factory.mktemp("omni-random")
    save_tiny_qwen3_omni(random_dir)
    instance = _instance()
    ctx = Context(workdir=tmp_path_factory.mktemp("omni-work"), seed=0, config={"views": 2, "resolution": 64})
    grade_prompt = [("text", f"Instruction: {instance.instruction.text}"), ("text", "Source: turn on the lights"),
                    ("text", "Edited result: turn off the lights"), ("text", omniscore.ASK)]
    assert grade_prompt[1:3] == [*omniscore.content_of(plugins_free_asset("turn on the lights"), instance, ctx, "Source"),
                                 *omniscore.content_of(plugins_free_asset("turn off the lights"), instance, ctx, "Edited result")]
    taught = teach(random_dir, tmp_path_factory.mktemp("omni-taught"), [
        (editor.prompt(instance), editor.SYSTEM, "turn off the lights"),
        (grade_prompt, omniscore.SYSTEM, GRADE),
    ])
    return random_dir, taught


def plugins_free_asset(text):
    from maskscore_core.plugin.records import Asset

    return Asset(modality="text", data=text)


def _ctx(tmp_path, **config) -> Context:
    return Context(workdir=tmp_path, seed=0, config={"views": 2, "resolution": 64, **config})


def test_loading_code_round_trips_the_saved_weights(weights, tmp_path):
    import torch
    from maskscore_qwen3_omni.model import Omni, WeightsError, check_complete
    from transformers import Qwen3OmniMoeForConditionalGeneration

    saved = Qwen3OmniMoeForConditionalGeneration.from_pretrained(str(weights[0])).state_dict()
    loaded = Omni(weights[0])
    assert type(loaded.model).__name__ == "Qwen3OmniMoeForConditionalGeneration" and not loaded.model.training
    assert all(torch.equal(saved[k], v) for k, v in loaded.model.state_dict().items())
    assert type(loaded.processor).__name__ == "Qwen3OmniMoeProcessor"
    import shutil

    broken = tmp_path / "broken"
    shutil.copytree(weights[0], broken)
    (broken / "model.safetensors").unlink()
    with pytest.raises(WeightsError, match=r"broken/model.safetensors is missing"):
        check_complete(broken)


def test_weights_are_asked_for(tmp_path, monkeypatch):
    from maskscore_qwen3_omni.model import ENV, WeightsError

    monkeypatch.delenv(ENV, raising=False)
    with pytest.raises(WeightsError, match="--editor-option weights=DIR or set MASKSCORE_QWEN3_OMNI_WEIGHTS"):
        plugins.call("edit", "qwen3-omni", editor="qwen3-omni", modality="text", instance=_instance(), ctx=_ctx(tmp_path))
    with pytest.raises(WeightsError, match="--weights DIR to maskscore eval or set MASKSCORE_QWEN3_OMNI_WEIGHTS"):
        plugins.call("score", "omniscore", scorer="omniscore", instance=_instance(), candidates=[], ctx=_ctx(tmp_path))


def test_list_plugins_tells_the_editor_and_the_scorer_their_own_way_to_the_weights(weights, monkeypatch):
    """The scorer takes `maskscore eval --weights`, not `--editor-option`; each listing line says
    which applies to it, and both say where the weights were found once they are."""
    from click.testing import CliRunner

    from maskscore_core.cli import main
    from maskscore_qwen3_omni.model import ENV

    monkeypatch.delenv(ENV, raising=False)
    plugins.reset()
    lines = CliRunner().invoke(main, ["list-plugins"]).output.splitlines()
    editor_line = next(line for line in lines if line.strip().startswith("editor qwen3-omni:"))
    scorer_line = next(line for line in lines if line.strip().startswith("scorer omniscore:"))
    assert "--editor-option weights=DIR" in editor_line and "--weights DIR to maskscore eval" not in editor_line
    assert "--weights DIR to maskscore eval" in scorer_line and "--editor-option" not in scorer_line
    monkeypatch.setenv(ENV, str(weights[0]))
    plugins.reset()
    listed = CliRunner().invoke(main, ["list-plugins"]).output
    assert listed.count(f"weights found at {weights[0]}") == 2
    plugins.reset()


def test_the_taught_model_edits_the_transcript_and_its_output_is_decoded(weights, tmp_path):
    ctx = _ctx(tmp_path, editor_options={"weights": str(weights[1]), "candidates": 2, "temperature": 0.0})
    candidates = plugins.call("edit", "qwen3-omni", editor="qwen3-omni", modality="text", instance=_instance(), ctx=ctx)
    assert [c.asset.data for c in candidates] == ["turn off the lights"] * 2
    record = json.loads((tmp_path / "editor-outputs" / "omni-0001.json").read_text())
    assert record["config"]["model_class"] == "transformers.Qwen3OmniMoeForConditionalGeneration"
    assert [c["decoded"] for c in record["candidates"]] == [True, True]


def test_random_weights_give_text_that_is_recorded_when_it_does_not_decode(weights, tmp_path):
    from maskscore_qwen3_omni.editor import EditError

    ctx = _ctx(tmp_path, editor_options={"weights": str(weights[0]), "candidates": 2, "max_new_tokens": 12})
    try:
        candidates = plugins.call("edit", "qwen3-omni", editor="qwen3-omni", modality="text", instance=_instance(), ctx=ctx)
    except EditError as err:
        assert "none of the 2 outputs for omni-0001 decodes" in str(err) and "\n" not in str(err)
        candidates = []
    record = json.loads((tmp_path / "editor-outputs" / "omni-0001.json").read_text())
    assert len(record["candidates"]) == 2
    assert len(candidates) == sum(c["decoded"] for c in record["candidates"])
    assert all(c["reason"] for c in record["candidates"] if not c["decoded"])


def test_omniscore_parses_the_strict_grade_and_averages_passes(weights, tmp_path):
    from maskscore_core.plugin.records import Asset

    candidate = Candidate("c", Asset(modality="text", data="turn off the lights"))
    ctx = _ctx(tmp_path, weights=str(weights[1]), omniscore_passes=2)
    (score,) = plugins.call("score", "omniscore", scorer="omniscore", instance=_instance(), candidates=[candidate], ctx=ctx)
    assert (score.instruction_following, score.consistency, score.overall) == (0.8, 0.6, 0.7)
    assert score.distances["passes"] == 2.0


def test_omniscore_refuses_replies_that_do_not_parse_and_keeps_them(weights, tmp_path):
    from maskscore_core.plugin.records import Asset
    from maskscore_qwen3_omni.omniscore import OmniScoreError

    candidate = Candidate("c", Asset(modality="text", data="turn off the lights"))
    ctx = _ctx(tmp_path, weights=str(weights[0]), temperature=0.7, omniscore_passes=2)
    with pytest.raises(OmniScoreError, match=r"omniscore: 2 replies for omni-0001 do not parse: c pass 0: .*reply \"") as err:
        plugins.call("score", "omniscore", scorer="omniscore", instance=_instance(), candidates=[candidate], ctx=ctx)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("reply, problem", [
    ('{"instruction_following": 8, "consistency": 6}', "keys"),
    ('{"instruction_following": 11, "consistency": 6, "overall": 7}', "outside"),
    ('{"instruction_following": "8", "consistency": 6, "overall": 7}', "not a number"),
    ('Sure! {"instruction_following": 8, "consistency": 6, "overall": 7}', "not JSON"),
    ('{"instruction_following": NaN, "consistency": 6, "overall": 7}', "not a number"),
])
def test_the_grade_is_strict(reply, problem):
    from maskscore_qwen3_omni.omniscore import parse

    with pytest.raises(ValueError, match=problem):
        parse(reply)
    assert parse(GRADE) == {"instruction_following": 0.8, "consistency": 0.6, "overall": 0.7}


def test_geometric_candidates_are_shown_as_renders_of_their_views(weights, tmp_path):
    from maskscore_qwen3_omni.model import Omni
    from maskscore_qwen3_omni.omniscore import content_of

    ctx = _ctx(tmp_path)
    state = BodyState()
    mesh = plugins.modality("mesh").encode(Target("a", Subject("s1", {}), (state,)), ctx)
    content = content_of(mesh, _instance(), ctx, "Edited result")
    pictures = [v for k, v in content if k == "image"]
    assert len(pictures) == 2 and pictures[0].shape == (64, 64, 3) and pictures[0].std() > 10
    inputs = Omni(weights[0]).inputs(content)
    assert inputs["image_grid_thw"].shape[0] == 2


def test_a_mesh_of_its_own_topology_is_shown_with_its_own_triangles(tmp_path):
    """A pixal3d-like candidate (frame A subdivided): its pictures are those of the same body."""
    from maskscore_core.body import remesh
    from maskscore_core.metric.foreign_mesh import ForeignMesh
    from maskscore_core.plugin.records import Asset
    from maskscore_qwen3_omni.omniscore import content_of

    ctx = _ctx(tmp_path)
    mesh = plugins.modality("mesh").encode(Target("a", Subject("s1", {}), (BodyState(),)), ctx)
    remeshed = Asset("mesh", ForeignMesh(*remesh.subdivide(*remesh.body_surface(mesh.data))))
    same = [v for k, v in content_of(mesh, _instance(), ctx, "Edited result") if k == "image"]
    other = [v for k, v in content_of(remeshed, _instance(), ctx, "Edited result") if k == "image"]
    assert len(other) == len(same) == 2
    for a, b in zip(same, other):
        assert (a != b).any() and np.abs(a.astype(float) - b.astype(float)).mean() < 3.0  # shading differs a little


def test_maskscore_eval_grades_omniscore_like_any_scorer(weights, tmp_path):
    """On a one-instance text bench: random weights -> every row a failure carrying the raw
    replies (exit 1, nothing cached); weights taught this bench's prompts -> graded, exit 0."""
    from click.testing import CliRunner

    from maskscore_core.cli import main
    from maskscore_core.dataset import reader
    from maskscore_qwen3_omni import omniscore

    bench = tmp_path / "bench"
    built = CliRunner().invoke(main, ["build", "bench", "--out", str(bench), "--rows", "3", "--seed", "1", "--subjects", "24",
                                      "--modalities", "text", "--views", "2", "--resolution", "64", "--quiet"])
    assert built.exit_code == 0, built.output
    failed = CliRunner().invoke(main, ["eval", "--bench", str(bench), "--scorer", "omniscore", "--weights", str(weights[0]), "--quiet"])
    assert failed.exit_code == 1, failed.output
    assert "do not parse" in failed.output and "reply" in failed.output, failed.output

    (modality, row), = [(m, r) for m, r in reader.iter_rows(bench)][:1]
    instance = reader.load_instance(bench, row["key"])
    ctx = _ctx(tmp_path)
    candidates = reader.load_candidates(bench, modality, row, ctx)
    head = [("text", f"Instruction: {instance.instruction.text}"),
            *omniscore.content_of(plugins.modality(modality).encode(instance.a, ctx), instance, ctx, "Source")]
    pairs = [([*head, *omniscore.content_of(c.asset, instance, ctx, "Edited result"), ("text", omniscore.ASK)], omniscore.SYSTEM, GRADE)
             for c in candidates]
    taught = teach(weights[0], tmp_path / "taught", pairs)
    graded = CliRunner().invoke(main, ["eval", "--bench", str(bench), "--scorer", "omniscore", "--weights", str(taught), "--quiet",
                                       "--out", str(tmp_path / "taught.jsonl")])
    assert graded.exit_code == 0, graded.output
    (result,) = [json.loads(line) for line in (tmp_path / "taught.jsonl").read_text().splitlines()]
    assert result["scores"]["overall"] == [0.7] * len(candidates)


def test_omniscore_draws_meshes_framed_as_the_row_is_scored(tmp_path):
    """OmniScore's pictures of a mesh are framed as render-compare frames the row (frame A's head,
    zoomed for the part): a short subject's face is in the picture, not half out of it."""
    from maskscore_qwen3_omni import omniscore

    from maskscore_core.body.reference_mesh import get_reference_mesh
    from maskscore_core.metric.framing import subject_framing
    from maskscore_core.metric.render import get_renderer
    from maskscore_core.metric.views import ViewConfig

    ctx = Context(workdir=tmp_path, config={"views": 2, "resolution": 64})
    short = {"height": 0.25, "age": 0.45, "gender": 1.0}
    subject = Subject("short", short)
    a = Target("frame A", subject, (BodyState(phenotype=short),))
    instance = EditInstance("k", EditInstruction("edit the mouth to match frame B", "mouth", "expression_change", "mesh"), a, a)
    asset = plugins.call("encode", "mesh", modality="mesh", target=instance.a, ctx=ctx)
    _caption, *images = omniscore.content_of(asset, instance, ctx, "Source")
    vertices = get_reference_mesh().vertices([BodyState(phenotype=short)])[0]
    renderer = get_renderer(ViewConfig(count=2, resolution=64))
    framed = omniscore._shaded(renderer.render(subject_framing(short, "mouth").apply(vertices)))
    unframed = omniscore._shaded(renderer.render(vertices))
    assert [kind for kind, _ in images] == ["image", "image"]
    np.testing.assert_allclose(images[0][1].astype(float), framed[0].astype(float), atol=1)
    assert np.abs(images[0][1].astype(float) - unframed[0].astype(float)).max() > 50
