"""Stage 2's editor: sample candidate edits of an instance with a trained denoiser.

The checkpoint comes from `ctx.config["native_editor"]`, else the environment variable
MASKSCORE_NATIVE_EDITOR (a directory written by `maskscore train editor` or `train rl`).
Each instance gets `samples` candidates (MASKSCORE_NATIVE_EDITOR_SAMPLES, default 4) drawn with
the SDE at `eta` (MASKSCORE_NATIVE_EDITOR_ETA, default 0.7: the policy RL trains) or the ODE
(eta 0), from a generator seeded by (ctx.seed, the instance key), so a build is reproducible.
The candidates are frame A with the part regenerated, encoded by the modality's own plugin.
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

import numpy as np
import torch

from maskscore_core.plugin import manager as plugins
from maskscore_core.plugin.context import RunConfig
from maskscore_core.plugin.records import Candidate

from . import flow, params
from .options import NativeEditorOptions
from .model import load

ENV_CHECKPOINT = "MASKSCORE_NATIVE_EDITOR"
ENV_SAMPLES = "MASKSCORE_NATIVE_EDITOR_SAMPLES"
ENV_ETA = "MASKSCORE_NATIVE_EDITOR_ETA"
STEPS = 20


class EditorConfigError(ValueError):
    """The editor was asked to run without a checkpoint, or with bad options."""


def _setting(ctx, key: str, env: str, default):
    given = getattr(RunConfig.of(getattr(ctx, "config", None)).options(NativeEditorOptions), key)
    value = given if given is not None else os.environ.get(env, default)
    if value is None:
        raise EditorConfigError(f"native-flow needs a checkpoint: set {env}=DIR (from `maskscore train editor`)")
    return value


@functools.lru_cache(maxsize=4)
def _cached(path: str, stamp: float):
    return load(Path(path))


def load_policy(directory):
    """The denoiser of a checkpoint directory, reloaded when its config file changes."""
    path = Path(directory)
    config = path / "config.json"
    return _cached(str(path.resolve()), config.stat().st_mtime if config.exists() else 0.0)[0]


def instance_seed(key: str, seed: int) -> int:
    return int.from_bytes(hashlib.sha256(f"native-flow\0{seed}\0{key}".encode()).digest()[:8], "big") >> 2


def conditioning(model, instances, repeat: int = 1):
    """Normalised (a, mask, target, given) tensors for instances, each repeated `repeat` times."""
    rows_a, rows_mask, rows_target = [], [], []
    for instance in instances:
        params.check_instance(instance)
        mask = params.part_mask(instance.instruction.part)
        a, b = params.to_vector(instance.a.state), params.to_vector(instance.b.state)
        for _ in range(repeat):
            rows_a.append(a), rows_mask.append(mask), rows_target.append(mask * b)
    as_tensor = lambda rows: torch.as_tensor(np.stack(rows), dtype=torch.float32)  # noqa: E731
    return model.inputs(as_tensor(rows_a), as_tensor(rows_mask), as_tensor(rows_target))


def to_states(model, x, instances, repeat: int = 1) -> list:
    """Body states from normalised samples (rows ordered as `conditioning` made them): the part
    from the sample, every other value frame A's own (exactly, not through float32)."""
    raw = model.denormalise(x).double().numpy()
    states = []
    for i in range(len(raw)):
        instance = instances[i // repeat]
        mask = params.part_mask(instance.instruction.part)
        vector = np.where(mask > 0, raw[i], params.to_vector(instance.a.state))
        states.append(params.to_state(vector, instance.a.state))
    return states


def sample_states(model, instance, count: int, eta: float, seed: int, steps: int = STEPS) -> list:
    a, mask, target, given = conditioning(model, [instance], count)
    generator = torch.Generator().manual_seed(instance_seed(instance.key, seed))
    x = flow.sample(model, a, mask, target, given, steps, eta, generator)
    return to_states(model, x, [instance], count)


def edit(modality: str, instance, ctx) -> list[Candidate]:
    if len(instance.a.states) != 1 or len(instance.b.states) != 1:
        raise params.ParamError(f"the native editor edits single frames; this {modality} instance pairs clips")
    model = load_policy(_setting(ctx, "native_editor", ENV_CHECKPOINT, None))
    try:
        count = int(_setting(ctx, "native_editor_samples", ENV_SAMPLES, 4))
        eta = float(_setting(ctx, "native_editor_eta", ENV_ETA, 0.7))
    except ValueError as err:
        raise EditorConfigError(f"native-flow: bad sample count or eta: {err}") from None
    if count < 1 or eta < 0:
        raise EditorConfigError(f"native-flow: samples must be >= 1 and eta >= 0, got {count} and {eta}")
    with torch.no_grad():
        states = sample_states(model, instance, count, eta, getattr(ctx, "seed", 0))
    candidates = []
    for n, state in enumerate(states):
        label = f"native-flow-{n}"
        target = instance.a.with_states(label, (state,))
        candidates.append(Candidate(label, plugins.call("encode", modality, modality=modality, target=target, ctx=ctx)))
    return candidates
