"""The reward model: an MLP from a candidate's features to the three dimensions in [0, 1]."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from maskscore_core import checkpoints

from . import features

KIND = "reward-model"
# Logits are kept within +-LOGIT_BOUND (a tanh): a float64 sigmoid is exactly 1.0 from a logit of
# about 37 on, so unbounded logits tied the near-1 consistencies the pairwise loss had ordered.
LOGIT_BOUND = 30.0


class RewardNet(nn.Module):
    def __init__(self, width: int = 256, depth: int = 2, size: int = features.SIZE):
        super().__init__()
        self.config = {"width": width, "depth": depth, "size": size, "modality": features.MODALITY,
                       "parts": list(features.PARTS), "logit_bound": LOGIT_BOUND}
        layers, inputs = [], size
        for _ in range(depth):
            layers += [nn.Linear(inputs, width), nn.SiLU()]
            inputs = width
        layers.append(nn.Linear(inputs, 3))
        self.net = nn.Sequential(*layers)

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        return LOGIT_BOUND * torch.tanh(self.net(x) / LOGIT_BOUND)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(N, 3) instruction_following, consistency, overall in (0, 1)."""
        return torch.sigmoid(self.logits(x))


def save(model: RewardNet, directory: Path, extra: dict | None = None) -> None:
    checkpoints.save(directory, KIND, {"model": model.config, **(extra or {})}, model.state_dict())


def load(directory: Path) -> tuple[RewardNet, dict]:
    config, tensors = checkpoints.load(directory, KIND)
    shape = config.get("model")
    wanted = {"size": features.SIZE, "modality": features.MODALITY, "parts": list(features.PARTS),
              "logit_bound": LOGIT_BOUND}
    if not isinstance(shape, dict) or any(shape.get(k) != v for k, v in wanted.items()):
        raise checkpoints.CheckpointError(
            f"reward-model checkpoint {directory} was trained on other features ({shape!r}); retrain it with this version"
        )
    model = RewardNet(int(shape["width"]), int(shape["depth"]))
    checkpoints.load_into(model, tensors, Path(directory))
    model.eval()
    return model, config
