"""Checkpoints and training runs for the trainer plugins (`train` hook): safetensors + JSON.

A checkpoint directory holds
- `config.json`: what the weights are (`kind`, `format`, the model's shape and options); loading
  checks it against what the caller expects, so a reward model is never loaded as an editor;
- `model.safetensors`: the weights (and any tensors the model needs, e.g. normalisation stats);
- while training, `train_state.safetensors`: the model's and optimizer's tensors with the step
  reached and the curve so far (safetensors metadata), written every few steps in one rename, so
  a run killed at any moment (kill -9) resumes from its last save;
- `run.json`: the run's configuration; resuming under another one is refused;
- `curves.png` and `curves.json`: the training curves, next to the weights.

Every file is written to a temporary name and renamed into place, so a kill never leaves a torn
file under the real name. Determinism across a resume comes from the trainers: each step draws
its batch and noise from generators seeded by (seed, step), never from state carried over.
Any missing, unreadable or mismatched file is a `CheckpointError` with a one-line message.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from maskscore_core.dataset.atomic import write_bytes

CONFIG = "config.json"
WEIGHTS = "model.safetensors"
STATE = "train_state.safetensors"
CURVES_PNG = "curves.png"
CURVES_JSON = "curves.json"
FORMAT = 1


class CheckpointError(RuntimeError):
    """A checkpoint that is missing, corrupt, or of another kind or shape than expected."""


def _atomic_tensors(path: Path, tensors: dict) -> None:
    from safetensors.torch import save

    write_bytes(path, save({k: v.detach().contiguous().cpu() for k, v in tensors.items()}))


def _atomic_json(path: Path, value) -> None:
    write_bytes(path, (json.dumps(value, indent=2, sort_keys=True) + "\n").encode())


def save(directory: Path, kind: str, config: dict, tensors: dict) -> None:
    """Write weights and config; the config is written last (a checkpoint is complete once it is)."""
    directory = Path(directory)
    _atomic_tensors(directory / WEIGHTS, tensors)
    _atomic_json(directory / CONFIG, {"kind": kind, "format": FORMAT, **config})


def read_config(directory: Path, kind: str) -> dict:
    """The checkpoint's config, checked to be of `kind`; one-line errors otherwise."""
    directory = Path(directory)
    path = directory / CONFIG
    if not directory.is_dir():
        raise CheckpointError(f"checkpoint {directory} does not exist (train one first)")
    if not path.exists():
        raise CheckpointError(f"checkpoint {directory} has no {CONFIG}: not a finished checkpoint")
    try:
        config = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise CheckpointError(f"checkpoint config {path} is corrupt: {err}") from None
    if not isinstance(config, dict) or config.get("kind") != kind:
        found = config.get("kind") if isinstance(config, dict) else type(config).__name__
        raise CheckpointError(f"checkpoint {directory} holds a {found!r} model, expected {kind!r}")
    if config.get("format") != FORMAT:
        raise CheckpointError(f"checkpoint {directory} has format {config.get('format')!r}, this version reads {FORMAT}")
    return config


def read_tensors(path: Path) -> dict:
    """Tensors of a safetensors file; one-line errors for a missing or corrupt file."""
    from safetensors.torch import load

    path = Path(path)
    if not path.exists():
        raise CheckpointError(f"checkpoint file {path} is missing")
    try:
        return load(path.read_bytes())
    except Exception as err:  # noqa: BLE001 - safetensors raises several types for bad bytes
        raise CheckpointError(f"checkpoint file {path} is corrupt: {type(err).__name__}: {err}") from None


def load(directory: Path, kind: str) -> tuple[dict, dict]:
    """(config, tensors) of a checkpoint of `kind`."""
    config = read_config(directory, kind)
    return config, read_tensors(Path(directory) / WEIGHTS)


def load_into(module, tensors: dict, where: Path) -> None:
    """Load a state dict whose names and shapes must match `module` exactly."""
    expected = {k: tuple(v.shape) for k, v in module.state_dict().items()}
    found = {k: tuple(v.shape) for k, v in tensors.items()}
    if expected != found:
        missing = sorted(set(expected) - set(found))
        extra = sorted(set(found) - set(expected))
        shape = sorted(k for k in set(expected) & set(found) if expected[k] != found[k])
        raise CheckpointError(
            f"checkpoint {where} does not match the model: missing {missing[:3]}, unexpected {extra[:3]},"
            f" other shapes {[(k, found[k], expected[k]) for k in shape[:3]]}"
        )
    module.load_state_dict({k: tensors[k] for k in expected})


# ---------------------------------------------------------------------------------------------
# Resumable training state.


def save_state(directory: Path, step: int, model, optimizer, history: list[dict], scratch: list | None = None) -> None:
    """The model's and the optimizer's tensors, the step reached, the curve so far and the
    trainer's `scratch` (e.g. the losses of a logging window not yet written), in one file (one
    rename): a kill leaves either the previous state or this one, never a mix."""
    from safetensors.torch import save as save_bytes

    tensors = {f"model.{k}": v for k, v in model.state_dict().items()}
    scalars = {}
    for index, state in optimizer.state_dict()["state"].items():
        for name, value in state.items():
            if hasattr(value, "shape"):
                tensors[f"opt.{index}.{name}"] = value
            else:
                scalars[f"{index}.{name}"] = value
    metadata = {"step": str(step), "scalars": json.dumps(scalars), "history": json.dumps(history),
                "scratch": json.dumps(scratch or [])}
    tensors = {k: v.detach().contiguous().cpu() for k, v in tensors.items()}
    write_bytes(Path(directory) / STATE, save_bytes(tensors, metadata=metadata))


def resume_state(directory: Path, model, optimizer) -> tuple[int, list[dict], list] | None:
    """(step, history, scratch) of a saved training state, loaded into `model` and `optimizer`;
    None when there is none (a fresh run)."""
    import torch
    from safetensors import safe_open

    path = Path(directory) / STATE
    if not path.exists():
        return None
    tensors = read_tensors(path)
    try:
        with safe_open(str(path), framework="pt") as handle:
            metadata = handle.metadata() or {}
        step = int(metadata["step"])
        scalars = json.loads(metadata["scalars"])
        history = json.loads(metadata["history"])
        scratch = json.loads(metadata.get("scratch", "[]"))
    except (KeyError, ValueError, TypeError) as err:
        raise CheckpointError(f"training state {path} is corrupt: {type(err).__name__}: {err}") from None
    load_into(model, {k[6:]: v for k, v in tensors.items() if k.startswith("model.")}, path)
    restored: dict[int, dict] = {}
    for key, value in tensors.items():
        if key.startswith("opt."):
            index, _, name = key[4:].partition(".")
            restored.setdefault(int(index), {})[name] = value
    for key, value in scalars.items():
        index, _, name = key.partition(".")
        restored.setdefault(int(index), {})[name] = torch.tensor(float(value)) if name == "step" else value
    state_dict = optimizer.state_dict()
    state_dict["state"] = restored
    try:
        optimizer.load_state_dict(state_dict)
    except (ValueError, KeyError, RuntimeError) as err:
        raise CheckpointError(f"training state {path} does not match this optimizer: {err}") from None
    return step, history, scratch


def clear_state(directory: Path) -> None:
    """Remove the resumable state once a run has finished (the weights stay)."""
    (Path(directory) / STATE).unlink(missing_ok=True)


def check_run_config(directory: Path, run: dict) -> None:
    """Refuse to resume a directory started with another run configuration."""
    path = Path(directory) / "run.json"
    wanted = json.dumps(run, indent=2, sort_keys=True) + "\n"
    if path.exists():
        if path.read_text() != wanted:
            raise CheckpointError(f"{directory} holds a run with another configuration ({path}); use a fresh --out")
        return
    write_bytes(path, wanted.encode())


# ---------------------------------------------------------------------------------------------
# Curves.


def write_curves(directory: Path, history: list[dict], title: str) -> Path:
    """curves.json and curves.png (one panel per metric, against step) next to the checkpoint."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory = Path(directory)
    _atomic_json(directory / CURVES_JSON, history)
    names = sorted({k for row in history for k in row if k != "step"})
    figure, axes = plt.subplots(1, max(1, len(names)), figsize=(4 * max(1, len(names)), 3), squeeze=False)
    for axis, name in zip(axes[0], names):
        points = [(row["step"], row[name]) for row in history if name in row]
        if points:
            axis.plot(*zip(*points), marker="." if len(points) < 30 else None)
        axis.set_title(name)
        axis.set_xlabel("step")
        axis.grid(alpha=0.3)
    figure.suptitle(title)
    figure.tight_layout()
    temp = directory / f".{CURVES_PNG}.tmp-{os.getpid()}.png"
    figure.savefig(temp, dpi=90, metadata={"Software": None})
    plt.close(figure)
    os.replace(temp, directory / CURVES_PNG)
    return directory / CURVES_PNG
