"""The `reward-model` scorer: a trained checkpoint scoring pose candidates in one batch.

The checkpoint is `ctx.config["weights"]` (`maskscore eval --weights DIR`, the reward server's
--weights) unless that is "default", else MASKSCORE_REWARD_MODEL. Without one, or for a
candidate it cannot read, it raises: never a made-up score.

Why it is fast: the MLP runs in numpy from weights read once per checkpoint (torch's per-call
overhead and thread-pool switching cost more than the arithmetic at a few candidates), and an
instance's references (frame A and the asked edit, encoded by the pose plugin, the costly part)
are kept per instance content for the run (`ctx.shared`), so the groups an RL run or a reward
server scores for one prompt, and the three rows of one instance, encode them once.
"""

from __future__ import annotations

import collections
import functools
import hashlib
import os
import threading
from pathlib import Path

import numpy as np

from maskscore_core.plugin.records import CandidateScore

from . import features
from .model import LOGIT_BOUND, load

ENV = "MASKSCORE_REWARD_MODEL"
REFERENCES_KEPT = 4096


class RewardModelError(ValueError):
    """No checkpoint to score with."""


def checkpoint_dir(ctx) -> Path:
    weights = ((getattr(ctx, "config", None) or {}).get("weights")) or "default"
    if weights == "default":
        weights = os.environ.get(ENV)
    if not weights:
        raise RewardModelError(f"reward-model needs a checkpoint: --weights DIR or {ENV}=DIR (from `maskscore train reward`)")
    return Path(weights)


class NumpyNet:
    """The checkpoint's MLP as numpy float32 layers: Linear, SiLU, ..., Linear, bound, sigmoid."""

    def __init__(self, model):
        linears = [m for m in model.net if hasattr(m, "weight")]
        self.layers = [(m.weight.detach().numpy().T.copy(), m.bias.detach().numpy().copy()) for m in linears]

    def logits(self, x: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):  # exp(-x) = inf for very negative x gives SiLU 0, as it should
            for number, (weight, bias) in enumerate(self.layers):
                x = x @ weight + bias
                if number < len(self.layers) - 1:
                    x = x / (1.0 + np.exp(-x))  # SiLU
        return LOGIT_BOUND * np.tanh(x / LOGIT_BOUND)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """(N, 3) float64 scores; the sigmoid in float64 so near-1 consistencies stay ordered."""
        with np.errstate(over="ignore"):
            return 1.0 / (1.0 + np.exp(-self.logits(x).astype(np.float64)))


@functools.lru_cache(maxsize=4)
def _cached(path: str, stamp: int) -> NumpyNet:
    return NumpyNet(load(Path(path))[0])


def model_at(directory: Path) -> NumpyNet:
    """The checkpoint's model, read again when its config.json changes."""
    config = Path(directory) / "config.json"
    try:
        stamp = config.stat().st_mtime_ns
    except OSError:
        stamp = 0  # load() names what is missing
    return _cached(str(directory), stamp)


def predict(model: NumpyNet, refs: features.References, poses: np.ndarray) -> np.ndarray:
    """(N, 3) predictions for N poses of one instance."""
    return model(features.features(refs, poses))


class KeptReferences:
    """The last REFERENCES_KEPT instances' references, by content; one per run (`ctx.shared`)."""

    def __init__(self):
        self.kept: collections.OrderedDict = collections.OrderedDict()
        self.lock = threading.Lock()

    def get(self, instance, ctx) -> features.References:
        digest = instance_digest(instance)
        with self.lock:
            if digest in self.kept:
                self.kept.move_to_end(digest)
                return self.kept[digest]
        refs = features.references(instance, ctx)
        with self.lock:
            self.kept[digest] = refs
            while len(self.kept) > REFERENCES_KEPT:
                self.kept.popitem(last=False)
        return refs



def instance_digest(instance) -> str:
    """What the references depend on: the key, the instruction and both frames' states."""
    instruction = instance.instruction
    digest = hashlib.sha256("\0".join((instance.key, instruction.part, instruction.task_type, instruction.modality,
                                        instruction.text)).encode())
    for target in (instance.a, instance.b):
        for state in target.states:
            for array in (state.pose, state.translation, state.expression):
                digest.update(np.ascontiguousarray(array, dtype=np.float64).tobytes())
    return digest.hexdigest()


def references(instance, ctx) -> features.References:
    """`features.references` of the instance, kept by the run's context (a context without
    shared objects encodes every time)."""
    if not hasattr(ctx, "shared"):
        return features.references(instance, ctx)
    return ctx.shared("reward-model/references", KeptReferences).get(instance, ctx)


def score(instance, candidates, ctx) -> list[CandidateScore]:
    if not candidates:
        return []
    model = model_at(checkpoint_dir(ctx))
    wrong = sorted({c.asset.modality for c in candidates} - {features.MODALITY})
    if wrong:
        raise features.FeatureError(f"the reward model scores {features.MODALITY} candidates; got {', '.join(wrong)}")
    poses = np.stack([features.pose_of(c.asset.data, f"candidate {c.label!r}") for c in candidates])
    values = predict(model, references(instance, ctx), poses)
    return [CandidateScore(float(v[0]), float(v[1]), float(v[2]), {}) for v in values]
