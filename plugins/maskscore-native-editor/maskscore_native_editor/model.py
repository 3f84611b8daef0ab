"""The masked rectified-flow denoiser: an MLP predicting the flow's velocity on a part.

Input, all in normalised units (each value minus its training mean, over its training spread):
the noisy state x_t, frame A with the part hidden (its old values are not the answer), the mask, the instruction's target (frame B's values on the
part, zero elsewhere), a flag saying whether the target is given (it is dropped in a share of
training steps so the model also learns the part from the rest of the body), and the flow time
t in sinusoidal features. Output: the velocity for every value; only the part's are used.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
from torch import nn

from maskscore_core import checkpoints

from .params import DIM

KIND = "native-flow-editor"
TIME_FEATURES = 16


def time_features(t: torch.Tensor) -> torch.Tensor:
    """(B, TIME_FEATURES) sin/cos of t at geometric frequencies."""
    freqs = torch.exp(torch.linspace(0.0, math.log(64.0), TIME_FEATURES // 2, dtype=t.dtype))
    angles = t[:, None] * freqs[None, :] * math.pi
    return torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)


class Denoiser(nn.Module):
    def __init__(self, width: int = 512, depth: int = 3, dim: int = DIM):
        super().__init__()
        self.config = {"width": width, "depth": depth, "dim": dim}
        layers, size = [], 4 * dim + 1 + TIME_FEATURES
        for _ in range(depth):
            layers += [nn.Linear(size, width), nn.SiLU()]
            size = width
        layers.append(nn.Linear(size, dim))
        self.net = nn.Sequential(*layers)
        nn.init.zeros_(self.net[-1].weight)
        nn.init.zeros_(self.net[-1].bias)
        self.register_buffer("mean", torch.zeros(dim))
        self.register_buffer("scale", torch.ones(dim))

    def normalise(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) / self.scale

    def denormalise(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.scale + self.mean

    def inputs(self, a, mask, target, given=None) -> tuple:
        """(a, mask, target, given) in the model's units from raw float tensors."""
        if given is None:
            given = torch.ones(a.shape[0], 1, dtype=a.dtype)
        return self.normalise(a), mask, self.normalise(target) * mask, given

    def forward(self, x_t, t, a, mask, target, given):
        """Velocity (B, dim); every tensor normalised but mask, given (B, 1) and t (B,)."""
        return self.net(torch.cat([x_t, a * (1 - mask), mask, target * mask * given, given, time_features(t)], dim=1))


def save(model: Denoiser, directory: Path, extra: dict | None = None) -> None:
    checkpoints.save(directory, KIND, {"model": model.config, **(extra or {})}, model.state_dict())


def load(directory: Path) -> tuple[Denoiser, dict]:
    """The denoiser of a checkpoint directory, and its config; CheckpointError when unusable."""
    config, tensors = checkpoints.load(directory, KIND)
    shape = config.get("model")
    if not isinstance(shape, dict) or shape.get("dim") != DIM:
        raise checkpoints.CheckpointError(f"checkpoint {directory} is for {shape!r}, this editor needs dim {DIM}")
    model = Denoiser(int(shape["width"]), int(shape["depth"]), DIM)
    checkpoints.load_into(model, tensors, Path(directory))
    model.eval()
    return model, config
