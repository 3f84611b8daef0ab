"""Rectified flow on a masked part: the training loss, ODE and SDE sampling, transition log-probs.

Convention of Flow-GRPO: x_t = (1 - t) x_0 + t eps, t = 1 is noise, t = 0 the data; the model
predicts v = eps - x_0. Only the part's values are generated; the rest is frame A at every t.

The SDE step is Flow-GRPO's (Liu et al. 2025, eq. 9, and its `sde_step_with_logprob`): with
dt < 0 and sigma_t = eta sqrt(t / (1 - t)),
  mean = x_t (1 + sigma_t^2 dt / (2t)) + v (1 + sigma_t^2 (1 - t) / (2t)) dt,
  x_{t+dt} = mean + sigma_t sqrt(-dt) noise,
which has the ODE's marginals; at t = 1 sigma uses the next grid time (it is infinite at 1). The
log-probability of a step is the Gaussian's, averaged over the part's values.
"""

from __future__ import annotations

import math

import torch

from .model import Denoiser


def loss(model: Denoiser, x0, a, mask, target, given, t, eps) -> torch.Tensor:
    """Mean squared velocity error on the masked values (normalised inputs)."""
    x_t = mask * ((1 - t[:, None]) * x0 + t[:, None] * eps) + (1 - mask) * a
    v = model(x_t, t, a, mask, target, given)
    return (((v - (eps - x0)) ** 2) * mask).sum() / mask.sum().clamp(min=1.0)


def grid(steps: int) -> torch.Tensor:
    """Times 1 -> 0 in `steps` equal steps (float64)."""
    return torch.linspace(1.0, 0.0, steps + 1, dtype=torch.float64)


def sde_std(times: torch.Tensor, i: int, eta: float) -> float:
    t = float(times[i])
    t_cap = float(times[1]) if t >= 1.0 else t
    return eta * math.sqrt(t / (1.0 - t_cap)) if t > 0 else 0.0


def step_mean(x, v, t: float, dt: float, std: float):
    """The SDE step's mean (eq. 9); with std 0, the Euler step of the ODE."""
    if std == 0.0 or t <= 0:
        return x + v * dt
    return x * (1 + std**2 / (2 * t) * dt) + v * (1 + std**2 * (1 - t) / (2 * t)) * dt


def log_prob(sample, mean, std: float, dt: float, mask) -> torch.Tensor:
    """(B,) mean log-density of `sample` under N(mean, (std sqrt(-dt))^2), over masked values."""
    scale = std * math.sqrt(-dt)
    density = -((sample - mean) ** 2) / (2 * scale**2) - math.log(scale) - 0.5 * math.log(2 * math.pi)
    return (density * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)


@torch.no_grad()
def sample(model: Denoiser, a, mask, target, given, steps: int, eta: float, generator: torch.Generator,
           keep_trajectory: bool = False):
    """Sample the part (normalised units). eta = 0: the ODE (deterministic after the first draw).

    Returns x_0, and with keep_trajectory the list of states [x_1, ..., x_0] and per-step log-probs
    (B, steps), for Flow-GRPO."""
    times = grid(steps)
    x = mask * torch.randn(a.shape, generator=generator, dtype=a.dtype) + (1 - mask) * a
    states, logps = [x], []
    for i in range(steps):
        t, dt = float(times[i]), float(times[i + 1] - times[i])
        v = model(x, torch.full((a.shape[0],), t, dtype=a.dtype), a, mask, target, given)
        std = sde_std(times, i, eta)
        mean = step_mean(x, v, t, dt, std)
        if std > 0 and i < steps - 1:
            noise = torch.randn(a.shape, generator=generator, dtype=a.dtype)
            nxt = mean + std * math.sqrt(-dt) * noise
            logps.append(log_prob(nxt, mean, std, dt, mask))
        else:
            nxt = mean
        x = mask * nxt + (1 - mask) * a
        states.append(x)
    if keep_trajectory:
        return x, states, (torch.stack(logps, dim=1) if logps else None)
    return x
