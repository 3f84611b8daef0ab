"""Qwen3-Omni from a local directory, and one chat turn with it.

Weights come only from a local directory (`--editor-option weights=DIR` for the editor,
`maskscore eval --weights DIR` for the scorer, or MASKSCORE_QWEN3_OMNI_WEIGHTS), loaded with
`local_files_only`; a directory lacking a file is refused with the file's name before loading.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from maskscore_core.plugin import model_editors
from maskscore_core.plugin.model_editors import WeightsError

ENV = "MASKSCORE_QWEN3_OMNI_WEIGHTS"
MODEL_CLASS = "transformers.Qwen3OmniMoeForConditionalGeneration"
PROCESSOR_FILES = ("processor_config.json", "preprocessor_config.json")
AUDIO_RATE = 16_000  # what the Whisper feature extractor expects


def weights_dir(given: str | None, what: str) -> Path:
    """`given`, else the environment variable (`model_editors.weights_dir`)."""
    return model_editors.weights_dir(given, ENV, what, "Qwen3-Omni", WAYS[what])


WAYS = {"qwen3-omni": "pass --editor-option weights=DIR", "omniscore": "pass --weights DIR to maskscore eval"}


def check_complete(path: Path) -> None:
    """Raise WeightsError naming the first file the model or its processor would miss."""
    model_editors.check_weight_files(path, "Qwen3-Omni", ("config.json", "tokenizer_config.json"))
    if not any((path / name).is_file() for name in PROCESSOR_FILES):
        raise WeightsError(f"Qwen3-Omni weights: {path / PROCESSOR_FILES[0]} is missing")


def found(what: str, path: str | None = None) -> str:
    """For listings: where `what` (the editor or the scorer) finds the weights, or why none were
    found, with the way to give them that applies to it."""
    return model_editors.weights_found(lambda: weights_dir(path, what), check_complete)


class Omni:
    """A loaded model and processor; `reply` runs one seeded chat turn."""

    def __init__(self, path: Path) -> None:
        check_complete(path)
        import torch
        from transformers import AutoProcessor, Qwen3OmniMoeForConditionalGeneration

        self.path = path
        self.model = Qwen3OmniMoeForConditionalGeneration.from_pretrained(
            str(path), local_files_only=True, dtype=torch.float32).eval()  # fmt: skip
        self.processor = AutoProcessor.from_pretrained(str(path), local_files_only=True)

    def inputs(self, content: list, system: str = ""):
        """The processor's tensors for one user turn. content: items ("text", str), ("image",
        uint8 HxWx3), ("audio", float32 samples at 16 kHz)."""
        from PIL import Image

        parts, images, audios = [], [], []
        for kind, value in content:
            if kind == "text":
                parts.append({"type": "text", "text": value})
            elif kind == "image":
                parts.append({"type": "image"})
                images.append(Image.fromarray(np.asarray(value, dtype=np.uint8)))
            elif kind == "audio":
                parts.append({"type": "audio"})
                audios.append(np.asarray(value, dtype=np.float32))
            else:
                raise ValueError(f"unknown prompt item {kind!r}")
        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": parts}]
        prompt = self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return self.processor(text=[prompt], images=images or None, audio=audios or None, return_tensors="pt")

    def reply(self, content: list, seed: int, temperature: float, max_new_tokens: int, system: str = "") -> str:
        """One chat turn, sampled at `temperature` with `seed` (greedy at 0)."""
        import torch

        inputs = self.inputs(content, system)
        torch.manual_seed(seed)
        sampling = {"do_sample": True, "temperature": float(temperature), "top_p": 1.0} if temperature > 0 else {"do_sample": False}
        with torch.inference_mode():
            out = self.model.generate(**inputs, thinker_max_new_tokens=max_new_tokens, return_audio=False,
                                      thinker_eos_token_id=self.model.config.im_end_token_id, **sampling)
        sequences = out[0] if isinstance(out, tuple) else getattr(out, "sequences", out)
        new = sequences[:, inputs["input_ids"].shape[1]:]
        return self.processor.batch_decode(new, skip_special_tokens=True)[0]


def load(ctx, path: Path) -> Omni:
    """The run's model for `path`, loaded once per process (`ctx.shared`)."""
    return ctx.shared(f"qwen3-omni:{path.resolve()}", lambda: Omni(path))
