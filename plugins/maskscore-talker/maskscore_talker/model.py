"""Qwen2.5-Omni's speech output from a local directory: the talker (codec tokens from the
thinker's hidden states) and Token2Wav (a DiT sampled by an ODE, flow matching, into a mel
spectrogram, then BigVGAN into a 24 kHz waveform).

Weights come only from a local directory (`--editor-option weights=DIR` or
MASKSCORE_TALKER_WEIGHTS), loaded with `local_files_only`; a directory lacking a file is refused
with the file's name before loading. The talker says a given phrase: the thinker's reply is
forced to the phrase's tokens (`prefix_allowed_tokens_fn`), so the talker is conditioned on
exactly those words, as when the model reads its own reply aloud.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from maskscore_core.plugin import model_editors
from maskscore_core.plugin.model_editors import WeightsError

ENV = "MASKSCORE_TALKER_WEIGHTS"
MODEL_CLASS = "transformers.Qwen2_5OmniForConditionalGeneration"
OUTPUT_RATE = 24_000  # Token2Wav's BigVGAN output rate (Qwen2.5-Omni)
SPEAKERS = "spk_dict.pt"  # the voices: speaker embedding, reference mel and text start token each
# The system prompt Qwen2.5-Omni's card requires for speech output.
SYSTEM = ("You are Qwen, a virtual human developed by the Qwen Team, Alibaba Group, capable of perceiving auditory and "
          "visual inputs, as well as generating text and speech.")


def weights_dir(given: str | None) -> Path:
    """`given`, else the environment variable (`model_editors.weights_dir`)."""
    return model_editors.weights_dir(given, ENV, "talker", "Qwen2.5-Omni")


def check_complete(path: Path) -> None:
    """Raise WeightsError naming the first file the model, its voices or its tokenizer would miss."""
    model_editors.check_weight_files(path, "talker", ("config.json", "tokenizer_config.json", SPEAKERS))
    config = json.loads((path / "config.json").read_text())
    if not config.get("enable_audio_output", True):
        raise WeightsError(f"talker weights: {path / 'config.json'} sets enable_audio_output false (no talker)")


def found(path: str | None = None) -> str:
    """For listings: where the weights are, or why none were found."""
    return model_editors.weights_found(lambda: weights_dir(path), check_complete)


class Talker:
    """A loaded Qwen2.5-Omni with its talker and tokenizer; `say` speaks one phrase, seeded."""

    def __init__(self, path: Path) -> None:
        check_complete(path)
        import torch
        from transformers import AutoTokenizer, Qwen2_5OmniForConditionalGeneration

        self.path = path
        self.model = Qwen2_5OmniForConditionalGeneration.from_pretrained(
            str(path), local_files_only=True, dtype=torch.float32).eval()  # fmt: skip
        self.tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        talker = self.model.config.talker_config
        self.eos = [talker.tts_codec_pad_token_id, talker.tts_codec_end_token_id]  # as upstream's generate
        dit, vocoder = self.model.config.token2wav_config.dit_config, self.model.config.token2wav_config.bigvgan_config
        self.codes_per_s = OUTPUT_RATE / (math.prod(vocoder.upsample_rates) * dit.repeats)

    @property
    def speakers(self) -> list[str]:
        return sorted(self.model.speaker_map)

    def prompt(self, phrase: str) -> str:
        return (f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\nSay exactly: {phrase}<|im_end|>\n"
                "<|im_start|>assistant\n")

    def say(self, phrase: str, speaker: str, seed: int, max_s: float, temperature: float, steps: int,
            guidance: float) -> np.ndarray:
        """The phrase spoken by `speaker`: float32 samples at OUTPUT_RATE. The talker samples its
        codes at `temperature` and Token2Wav integrates `steps` ODE steps, both from `seed`."""
        import torch

        if speaker not in self.model.speaker_map:
            raise ValueError(f"talker: speaker {speaker!r} is not in {self.path / SPEAKERS}; it has {', '.join(self.speakers)}")
        inputs = self.tokenizer(self.prompt(phrase), return_tensors="pt")
        reply = self.tokenizer(phrase, add_special_tokens=False)["input_ids"] + [self.tokenizer.convert_tokens_to_ids("<|im_end|>")]
        start = inputs["input_ids"].shape[1]

        def forced(_batch, sequence):
            return [reply[min(sequence.shape[0] - start, len(reply) - 1)]]

        torch.manual_seed(seed)
        with torch.inference_mode():
            _, wav = self.model.generate(
                **inputs, speaker=speaker, thinker_max_new_tokens=len(reply), thinker_do_sample=False,
                thinker_prefix_allowed_tokens_fn=forced, talker_max_new_tokens=max(1, int(max_s * self.codes_per_s)),
                talker_eos_token_id=self.eos, talker_do_sample=temperature > 0, talker_temperature=max(temperature, 1e-5),
                token2wav_num_steps=steps, token2wav_guidance_scale=guidance,
            )
        return wav.reshape(-1).float().numpy()


def load(ctx, path: Path) -> Talker:
    """The run's model for `path`, loaded once per process (`ctx.shared`)."""
    return ctx.shared(f"talker:{path.resolve()}", lambda: Talker(path))
