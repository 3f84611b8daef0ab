"""The talker editor on transformers' real Qwen2_5OmniForConditionalGeneration (thinker, talker,
flow-matching Token2Wav), with tiny random weights the test builds, saves with save_pretrained
and hands the plugin as a local directory (issue 15, item 1: talker).

A random model's audio is not speech, so its candidates must be recorded decode failures; the
path where a decodable output is scored runs known-good audio (espeak-ng saying the phrase in
frame A's voice, standing in for the model's output, not produced by it) through the editor's
own post-processing (resample, splice, check, decode) and the render-compare scorer."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

from maskscore_core.plugin import manager as plugins
from maskscore_core.plugin.context import Context
from maskscore_core.plugin.testing import face_state, tiny_chat_tokenizer, unit_instance

pytestmark = pytest.mark.maskscore_plugins("maskscore-talker", "maskscore-speech")

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|AUDIO|>", "<|IMAGE|>", "<|VIDEO|>", "<|audio_bos|>", "<|audio_eos|>",
           "<|vision_bos|>", "<|vision_eos|>", "<tts_pad>", "<tts_text_bos>", "<tts_text_eod>", "<tts_text_bos_single>", "<unk>"]
CODES = 64  # the tiny talker's codec vocabulary (upstream: 8192 codes plus specials)
BUILT: dict = {}  # the tiny model's weights as built, before saving


def save_tiny_qwen2_5_omni(path: Path) -> dict:
    """A ~0.3M-parameter Qwen2.5-Omni with its talker and Token2Wav (DiT + BigVGAN at upstream's
    upsampling), a character-level tokenizer with Qwen's special tokens, and two random voices."""
    import torch
    from transformers import Qwen2_5OmniConfig, Qwen2_5OmniForConditionalGeneration

    tokenizer, vocab = tiny_chat_tokenizer(SPECIAL)
    ids = {t: vocab[t] for t in SPECIAL}
    tokens = dict(audio_token_index=ids["<|AUDIO|>"], image_token_index=ids["<|IMAGE|>"], video_token_index=ids["<|VIDEO|>"],
                  audio_start_token_id=ids["<|audio_bos|>"], audio_end_token_id=ids["<|audio_eos|>"])
    vision_tokens = dict(vision_start_token_id=ids["<|vision_bos|>"], vision_end_token_id=ids["<|vision_eos|>"])
    rope = {"mrope_section": [1, 1, 2], "rope_type": "default", "type": "default"}
    thinker = dict(
        text_config=dict(vocab_size=128, hidden_size=32, intermediate_size=37, num_hidden_layers=2, num_attention_heads=4,
                         num_key_value_heads=2, max_position_embeddings=1024, rope_scaling=rope),
        vision_config=dict(depth=1, embed_dim=32, hidden_size=32, intermediate_size=32, num_heads=4, patch_size=14,
                           spatial_merge_size=1, out_hidden_size=32, fullatt_block_indexes=[0]),
        audio_config=dict(d_model=32, encoder_attention_heads=4, encoder_ffn_dim=32, encoder_layers=1, num_mel_bins=128,
                          n_window=100, output_dim=32),
        user_token_id=vocab["user"], **tokens, **vision_tokens)
    talker = dict(vocab_size=CODES + 4, tts_codec_pad_token_id=CODES, tts_codec_start_token_id=CODES + 1,
                  tts_codec_end_token_id=CODES + 2, tts_codec_mask_token_id=CODES + 3, tts_text_start_token_id=ids["<tts_text_bos>"],
                  tts_text_end_token_id=ids["<tts_text_eod>"], tts_text_pad_token_id=ids["<tts_pad>"], embedding_size=32,
                  hidden_size=32, intermediate_size=37, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                  head_dim=8, max_position_embeddings=4096, rope_scaling=rope, **tokens, **vision_tokens)
    dit = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, ff_mult=2, emb_dim=16, head_dim=16, repeats=2,
               num_embeds=CODES + 4, mel_dim=80, enc_emb_dim=16, enc_dim=16, enc_channels=[16, 16, 16, 16, 48],
               enc_attention_channels=8, enc_se_channels=8, look_ahead_layers=[1], look_backward_layers=[0], block_size=24,
               max_position_embeddings=4096)
    bigvgan = dict(mel_dim=80, upsample_initial_channel=64, resblock_kernel_sizes=[3], resblock_dilation_sizes=[[1, 3, 5]],
                   upsample_rates=[5, 3, 2, 2, 2, 2], upsample_kernel_sizes=[11, 7, 4, 4, 4, 4])
    config = Qwen2_5OmniConfig(thinker_config=thinker, talker_config=talker, enable_audio_output=True,
                               token2wav_config=dict(dit_config=dit, bigvgan_config=bigvgan))
    torch.manual_seed(0)
    model = Qwen2_5OmniForConditionalGeneration(config).eval()
    model.save_pretrained(str(path))
    tokenizer.save_pretrained(str(path))
    voices = torch.Generator().manual_seed(1)
    torch.save({name: {"cond": torch.randn(16, generator=voices), "ref_mel": torch.randn(60, 80, generator=voices),
                       "bos_token": ids["<tts_text_bos_single>"]} for name in ("Chelsie", "Ethan")}, path / "spk_dict.pt")
    return {k: v.clone() for k, v in model.state_dict().items()}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = tmp_path_factory.mktemp("talker-tiny")
    BUILT.update(save_tiny_qwen2_5_omni(path))
    return path


def _instance(a="turn on the kitchen lights", b="turn off the kitchen lights", key="talk-0001"):
    states = [face_state(jawOpen=j) for j in 0.3 * np.sin(np.linspace(0, 3, 12)) ** 2]
    return unit_instance("speech", f"resynthesize the mouth to say {b}", "speech_edit", states, states, key=key,
                         voice="en-us+klatt3", transcripts=(a, b))


def _ctx(tmp_path, **config) -> Context:
    return Context(workdir=tmp_path, seed=0, config={"views": 2, "resolution": 32, "speech_frames": 2, **config})


def _frame_a(instance, ctx):
    return plugins.modality("speech").encode(instance.a, ctx).data


def test_loading_code_round_trips_the_saved_weights(tiny, tmp_path):
    import torch
    from maskscore_talker.model import Talker, WeightsError, check_complete
    saved = BUILT
    loaded = Talker(tiny)
    assert type(loaded.model).__name__ == "Qwen2_5OmniForConditionalGeneration" and not loaded.model.training
    assert type(loaded.model.token2wav).__name__ == "Qwen2_5OmniToken2WavModel"
    state = loaded.model.state_dict()
    assert set(saved) == set(state) and all(torch.equal(saved[k], state[k]) for k in saved)
    assert loaded.speakers == ["Chelsie", "Ethan"] and loaded.codes_per_s == 50.0
    for name in ("spk_dict.pt", "model.safetensors", "tokenizer_config.json"):
        broken = tmp_path / name
        shutil.copytree(tiny, broken)
        (broken / name).unlink()
        with pytest.raises(WeightsError, match=f"talker weights: {broken / name} is missing$"):
            check_complete(broken)


def test_weights_are_asked_for_and_list_plugins_says_whether_they_were_found(tiny, tmp_path, monkeypatch):
    from click.testing import CliRunner
    from maskscore_core.cli import main
    from maskscore_talker.model import ENV, WeightsError

    monkeypatch.delenv(ENV, raising=False)
    with pytest.raises(WeightsError, match="pass --editor-option weights=DIR or set MASKSCORE_TALKER_WEIGHTS"):
        plugins.call("edit", "talker", editor="talker", modality="speech", instance=_instance(), ctx=_ctx(tmp_path))
    plugins.reset()
    listed = CliRunner().invoke(main, ["list-plugins"]).output
    assert "editor talker: transformers.Qwen2_5OmniForConditionalGeneration" in listed and "no weights" in listed
    monkeypatch.setenv(ENV, str(tiny))
    plugins.reset()
    assert f"weights found at {tiny}" in CliRunner().invoke(main, ["list-plugins"]).output


def test_a_part_speech_cannot_move_is_refused_before_any_model_is_loaded(tmp_path):
    import attrs
    from maskscore_core.body.parts import PartError

    instance = _instance()
    brow = attrs.evolve(instance, instruction=attrs.evolve(instance.instruction, part="eyebrow"))
    with pytest.raises(PartError, match="speech moves only the mouth and jaw; the part 'eyebrow'"):
        plugins.call("edit", "talker", editor="talker", modality="speech", instance=brow, ctx=_ctx(tmp_path))
    with pytest.raises(ValueError, match="talker resynthesizes speech; modality 'text' is not one of speech"):
        plugins.call("edit", "talker", editor="talker", modality="text", instance=instance, ctx=_ctx(tmp_path))


def test_the_span_is_the_words_that_differ_and_the_splice_keeps_frame_a_outside_it(tmp_path):
    from maskscore_talker import span

    instance = _instance()
    samples = _frame_a(instance, _ctx(tmp_path)).samples
    where = span.find(samples, instance.a.transcript, instance.b.transcript)
    assert (where.replaced, where.phrase, where.words, where.first) == ("on", "off", "turn off the kitchen lights", 1)
    assert 0 < where.start < where.end < samples.size
    made = np.full(5000, 1234, dtype=np.int16)
    spliced = span.splice(samples, where, made)
    assert np.array_equal(spliced[:where.start], samples[:where.start])
    assert np.array_equal(spliced[where.start + made.size:], samples[where.end:])
    assert np.array_equal(spliced[where.start:where.start + made.size], made)
    # No shared words: the whole clip; a pure insertion takes in a shared neighbour.
    whole = span.find(samples, instance.a.transcript, "play some music")
    assert (whole.start, whole.end, whole.replaced) == (0, samples.size, "turn on the kitchen lights")
    grown = span.find(samples, instance.a.transcript, "turn on all the kitchen lights")
    assert (grown.replaced, grown.phrase) == ("on", "on all")
    with pytest.raises(span.SpanError, match="already says"):
        span.find(samples, instance.a.transcript, "Turn on the kitchen lights")
    with pytest.raises(span.SpanError, match="the talker returned NaN or infinite samples"):
        span.to_int16(np.array([0.1, np.nan]), 24_000)
    faded = span.to_int16(np.ones(24_000), 24_000)  # 5 ms fades at 24 kHz: 120 samples each
    assert faded[0] == 0 and faded[119] < 32767 and faded[120] == 32767 and faded[-121] == 32767 and faded[-120] < 32767


def test_random_weights_give_audio_that_is_a_recorded_decode_failure(tiny, tmp_path):
    """The tiny random model's talker and Token2Wav run for real; their audio is no speech, so
    no candidate is decoded and the edit stops with one line carrying each reason."""
    from maskscore_talker.editor import EditError

    ctx = _ctx(tmp_path, editor_options={"weights": str(tiny), "candidates": 2, "steps": 2, "max_seconds": 0.4})
    with pytest.raises(EditError) as err:
        plugins.call("edit", "talker", editor="talker", modality="speech", instance=_instance(), ctx=ctx)
    assert "none of the 2 outputs for talk-0001 decodes" in str(err.value) and "\n" not in str(err.value)
    record = json.loads((tmp_path / "editor-outputs" / "talk-0001.json").read_text())
    assert record["editor"] == "talker" and record["config"]["model_class"] == "transformers.Qwen2_5OmniForConditionalGeneration"
    assert (record["config"]["speaker"], record["config"]["phrase"], record["config"]["replaced"]) == ("Ethan", "off", "on")
    assert [c["decoded"] for c in record["candidates"]] == [False, False]
    assert all("NotSaidError: the talker's audio for 'off' is" in c["reason"] for c in record["candidates"])
    assert len({c["seed"] for c in record["candidates"]}) == 2 and all(c["made_s"] > 0 for c in record["candidates"])
    for option, message in ((("speaker", "Nobody"), "speaker 'Nobody' is not in .*spk_dict.pt; it has Chelsie, Ethan"),
                            (("voice", "x"), "talker: unknown editor option 'voice'; options: weights, candidates"),
                            (("steps", "0"), "talker: candidates and steps must be >= 1")):
        ctx = _ctx(tmp_path, editor_options={"weights": str(tiny), "candidates": 1, "steps": 1, option[0]: option[1]})
        with pytest.raises(ValueError, match=message):
            plugins.call("edit", "talker", editor="talker", modality="speech", instance=_instance(), ctx=ctx)


def test_a_loud_random_vocoder_gives_a_buzz_that_is_recorded_as_not_speech_and_passes_repeat(tiny, tmp_path):
    """The same random model with its vocoder's last layer scaled up (still random weights) gives
    loud audio instead of near-silence: a buzz at Token2Wav's frame rate (100 Hz), voiced, which
    pocketsphinx aligns "off" to; recorded as a monotone buzz, not speech. A pass repeats exactly
    with its seed and differs with another."""
    import torch
    from maskscore_talker.editor import EditError
    from maskscore_talker.model import Talker
    from transformers import Qwen2_5OmniForConditionalGeneration

    loud = tmp_path / "loud"
    model = Qwen2_5OmniForConditionalGeneration.from_pretrained(str(tiny), local_files_only=True)
    with torch.no_grad():
        model.token2wav.code2wav_bigvgan_model.conv_post.weight.mul_(1e7)
    model.save_pretrained(str(loud))
    for name in ("spk_dict.pt", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(tiny / name, loud / name)
    talker = Talker(loud)
    first, again, other = (talker.say("off", "Ethan", seed, 1.0, 0.9, 2, 0.5) for seed in (1, 1, 2))
    assert np.array_equal(first, again) and not np.array_equal(first, other)
    assert np.sqrt(np.mean(first ** 2)) > 0.01  # louder than -40 dBFS
    ctx = _ctx(tmp_path, editor_options={"weights": str(loud), "candidates": 1, "steps": 2, "max_seconds": 0.4})
    with pytest.raises(EditError, match="NotSaidError: the talker's audio for 'off' is a monotone buzz at 100 Hz, not speech"):
        plugins.call("edit", "talker", editor="talker", modality="speech", instance=_instance(), ctx=ctx)


def _spoken(text, voice, rate):
    """espeak-ng's `text` in `voice` as float samples at `rate`, its leading and trailing silence cut."""
    from maskscore_core.speech.audio import load_speech_audio, resample
    from maskscore_core.speech.synthesis import synthesize

    with tempfile.TemporaryDirectory() as tmp:
        samples = load_speech_audio(synthesize(text, voice, Path(tmp) / "s.wav"))
    loud = np.nonzero(np.abs(samples) > 300)[0]
    return resample(samples[loud[0]:loud[-1] + 1], 16_000, rate).astype(np.float64) / 32768.0


def test_known_good_audio_through_the_editors_post_processing_is_decoded_and_scored(tmp_path):
    """Not the model's output: espeak-ng saying "off" in frame A's voice at Token2Wav's 24 kHz goes
    through the editor's own resample, splice, check and decode, and render-compare scores it
    above frame A's own audio on instruction following; white noise in its place is recorded."""
    from maskscore_core.plugin import model_editors
    from maskscore_core.plugin.records import Asset, Candidate
    from maskscore_speech.representation import Waveform
    from maskscore_talker import said, span
    from maskscore_talker.editor import candidate
    from maskscore_talker.model import OUTPUT_RATE

    instance, ctx = _instance(), _ctx(tmp_path)
    source = _frame_a(instance, ctx)
    where = span.find(source.samples, instance.a.transcript, instance.b.transcript)
    good = _spoken("off", instance.a.subject.voice, OUTPUT_RATE)
    noise = np.random.default_rng(0).normal(0.0, 0.1, good.size)
    outputs, kept = [], source.samples.size - (where.end - where.start)
    for label, audio in (("espeak-ng off", good), ("white noise", noise)):
        samples, made = candidate(source.samples, where, audio, OUTPUT_RATE)
        assert np.array_equal(samples[:where.start], source.samples[:where.start])
        assert np.array_equal(samples[where.start + made:], source.samples[where.end:])
        outputs.append((label, 0, Waveform(samples, transcript=where.words), {}))
    kept_candidates = model_editors.keep_decodable("talker", instance, ctx, outputs, {},
                                                   verify=lambda w: said.check(w.samples, where, w.samples.size - kept))
    record = json.loads((tmp_path / "editor-outputs" / "talk-0001.json").read_text())
    assert [c["decoded"] for c in record["candidates"]] == [True, False]
    assert "is not voiced" in record["candidates"][1]["reason"]
    assert [c.label for c in kept_candidates] == ["espeak-ng off"]
    frame_a = Candidate(label="frame A", asset=Asset(modality="speech", data=source))
    made, own = plugins.call("score", "render-compare", scorer="render-compare", instance=instance,
                             candidates=[kept_candidates[0], frame_a], ctx=ctx)
    assert all(0.0 <= x <= 1.0 for s in (made, own) for x in (s.instruction_following, s.consistency, s.overall))
    assert made.instruction_following > own.instruction_following


def test_build_bench_with_the_talker_stops_on_the_random_models_outputs_with_their_reasons(tiny, tmp_path):
    """`maskscore build bench --editor talker` on one speech instance (seed 12: two bench subjects
    among two): the tiny model's output is not scored; the build stops with one line carrying the
    reason, exit code 1, and the editor-outputs record of the failed instance is kept in the bench
    directory (the shard's scratch space is not)."""
    from click.testing import CliRunner
    from maskscore_core.cli import main

    out = tmp_path / "bench"
    args = ["build", "bench", "--out", str(out), "--rows", "3", "--seed", "12", "--subjects", "2", "--modalities", "speech",
            "--views", "2", "--resolution", "32", "--editor", "talker", "--editor-option", f"weights={tiny}",
            "--editor-option", "candidates=1", "--editor-option", "steps=1", "--editor-option", "max_seconds=0.3", "--quiet"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1
    (line,) = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert "talker: none of the 1 outputs for speech-00000-0000-speech-" in line
    assert "NotSaidError: the talker's audio for '" in line and "(raised by 'edit' of maskscore-talker" in line
    assert f"editor-output records kept in {out / 'editor-outputs'}" in line
    (record_path,) = (out / "editor-outputs").glob("speech-*.json")
    record = json.loads(record_path.read_text())
    assert record["editor"] == "talker" and [c["decoded"] for c in record["candidates"]] == [False]
    assert "NotSaidError" in record["candidates"][0]["reason"]
    assert not (out / ".partial").exists() and not list(out.glob("data/**/*.parquet"))
