"""Where the pipeline's weights are and whether the directory is complete.

Weights come only from a local directory (`--editor-option weights=DIR` or the environment
variable), never from a hub: a build must not depend on the network, and a missing file is
named before anything is loaded.
"""

from __future__ import annotations

import json
from pathlib import Path

from maskscore_core.plugin import model_editors
from maskscore_core.plugin.model_editors import WeightsError

ENV = "MASKSCORE_WAN_VACE_WEIGHTS"
# The files each diffusers component folder needs besides its weights.
CONFIG_FILES = {"scheduler": ("scheduler_config.json",), "tokenizer": ("tokenizer_config.json",)}
MODEL_CONFIG = "config.json"


def options(ctx) -> dict:
    """The editor's options of this run (`--editor-option NAME=VALUE`)."""
    value = (ctx.config if ctx is not None else {}).get("editor_options", {})
    return dict(value or {})


def weights_dir(ctx) -> Path:
    """The weights directory from the run's options, else the environment; WeightsError if neither."""
    return model_editors.weights_dir(options(ctx).get("weights"), ENV, "wan-vace", "Wan-VACE")


def found(ctx=None) -> str:
    """For listings: where the weights are, or why none were found."""
    return model_editors.weights_found(lambda: weights_dir(ctx), check_complete)


def _has_weights(folder: Path) -> bool:
    for index in folder.glob("*.safetensors.index.json"):
        shards = set(json.loads(index.read_text())["weight_map"].values())
        missing = sorted(s for s in shards if not (folder / s).is_file())
        if missing:
            raise WeightsError(f"wan-vace weights: {folder / missing[0]} is missing (listed in {index.name})")
        return True
    return any(folder.glob("*.safetensors")) or any(folder.glob("*.bin"))


def check_complete(path: Path) -> None:
    """Raise WeightsError naming the first file the pipeline would miss."""
    index = path / "model_index.json"
    if not index.is_file():
        raise WeightsError(f"wan-vace weights: {index} is missing")
    try:
        components = json.loads(index.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise WeightsError(f"wan-vace weights: {index} is not JSON ({err})") from None
    for name, spec in sorted(components.items()):
        if name.startswith("_") or not isinstance(spec, list) or spec[0] is None:
            continue
        folder = path / name
        if name == "tokenizer":
            if not (folder / "tokenizer_config.json").is_file():
                raise WeightsError(f"wan-vace weights: {folder / 'tokenizer_config.json'} is missing")
            continue
        for file in CONFIG_FILES.get(name, (MODEL_CONFIG,)):
            if not (folder / file).is_file():
                raise WeightsError(f"wan-vace weights: {folder / file} is missing")
        if name not in CONFIG_FILES and not _has_weights(folder):
            raise WeightsError(f"wan-vace weights: {folder}/diffusion_pytorch_model.safetensors (or model.safetensors) is missing")
