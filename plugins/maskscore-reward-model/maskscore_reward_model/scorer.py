"""The `reward-model` scorer: a trained checkpoint scoring pose candidates in one batch.

The checkpoint is `ctx.config["weights"]` (`maskscore eval --weights DIR`, the reward server's
--weights) unless that is "default", else MASKSCORE_REWARD_MODEL. Without one, or for a
candidate it cannot read, it raises: never a made-up score.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np
import torch

from maskscore_core.plugin.records import CandidateScore

from . import features
from .model import load

ENV = "MASKSCORE_REWARD_MODEL"


class RewardModelError(ValueError):
    """No checkpoint to score with."""


def checkpoint_dir(ctx) -> Path:
    weights = ((getattr(ctx, "config", None) or {}).get("weights")) or "default"
    if weights == "default":
        weights = os.environ.get(ENV)
    if not weights:
        raise RewardModelError(f"reward-model needs a checkpoint: --weights DIR or {ENV}=DIR (from `maskscore train reward`)")
    return Path(weights)


@functools.lru_cache(maxsize=4)
def _cached(path: str, stamp: float):
    return load(Path(path))[0]


def model_at(directory: Path):
    config = Path(directory) / "config.json"
    return _cached(str(Path(directory).resolve()), config.stat().st_mtime if config.exists() else 0.0)


def predict(model, refs: features.References, poses: np.ndarray) -> np.ndarray:
    """(N, 3) predictions for N poses of one instance, on one thread: a few small products,
    which torch's thread pool only slows down (on two busy cores, by orders of magnitude)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.no_grad():
            return model(torch.as_tensor(features.features(refs, poses))).double().numpy()
    finally:
        torch.set_num_threads(previous)


def score(instance, candidates, ctx) -> list[CandidateScore]:
    if not candidates:
        return []
    model = model_at(checkpoint_dir(ctx))
    wrong = sorted({c.asset.modality for c in candidates} - {features.MODALITY})
    if wrong:
        raise features.FeatureError(f"the reward model scores {features.MODALITY} candidates; got {', '.join(wrong)}")
    poses = np.stack([features.pose_of(c.asset.data, f"candidate {c.label!r}") for c in candidates])
    values = predict(model, features.references(instance, ctx), poses)
    return [CandidateScore(float(v[0]), float(v[1]), float(v[2]), {}) for v in values]
