"""Training data for stage 1: body states of the built-in trials, and masked-part batches.

Self-supervised: a batch row picks a subject, two of its frames A and B and a part; the model
learns to regenerate the part on A given B's part (the instruction's target). In a share of rows
(`drop`) the target is withheld and B is A itself: the part is masked out and reconstructed from
the rest of the body alone. Rows are drawn from a generator seeded by (seed, step), so any step's
batch is the same whether the run was interrupted or not.
"""

from __future__ import annotations


import attrs
import numpy as np
import torch

from maskscore_core.plugin import manager as plugins
from maskscore_core.dataset.splits import trials_for_split

from . import params


class DataError(ValueError):
    """Trials that cannot train the editor (too few subjects or frames)."""


@attrs.frozen
class StateBank:
    """Every frame's parameter vector, and which subject each belongs to."""

    vectors: np.ndarray
    subjects: np.ndarray  # (N,) subject number
    by_subject: tuple[np.ndarray, ...]  # frame rows of each subject

    @classmethod
    def from_trials(cls, trials) -> StateBank:
        rows, owners, names = [], [], {}
        for trial in trials:
            number = names.setdefault(trial.subject.subject_id, len(names))
            for frame in trial.frames:
                rows.append(params.to_vector(frame.state))
                owners.append(number)
        if len(names) < 1 or len(rows) < 2:
            raise DataError(f"the editor needs frames of at least one subject; got {len(rows)} frames")
        owners = np.asarray(owners)
        return cls(np.stack(rows), owners, tuple(np.flatnonzero(owners == n) for n in range(len(names))))


def train_trials(source: str, seed: int, subjects: int, ctx) -> list:
    """The source's trials of the training subjects (the bench's held-out subjects are left out,
    as `maskscore build` leaves them out of reward-train and rl-train for the same seed)."""
    trials = list(plugins.call("extract", source, source=source, config={"seed": seed, "subjects": subjects}, ctx=ctx))
    return trials_for_split(trials, "reward-train", seed)


def normaliser(bank: StateBank, floor: float = 0.02) -> tuple[np.ndarray, np.ndarray]:
    """Mean and spread of each value over the bank (spread at least `floor`: values that never
    move in the data, such as the legs' bones, keep a unit of noise that is small in radians)."""
    return bank.vectors.mean(axis=0), np.maximum(bank.vectors.std(axis=0), floor)


def batch(bank: StateBank, parts: tuple[str, ...], seed: int, step: int, size: int, drop: float) -> dict[str, torch.Tensor]:
    """One training batch (raw units): x0 (the answer), a (frame A), mask, target, given."""
    rng = np.random.default_rng([seed, step])
    subjects = rng.integers(len(bank.by_subject), size=size)
    a_rows = np.array([bank.by_subject[s][rng.integers(len(bank.by_subject[s]))] for s in subjects])
    b_rows = np.array([bank.by_subject[s][rng.integers(len(bank.by_subject[s]))] for s in subjects])
    given = rng.random(size) >= drop
    b_rows = np.where(given, b_rows, a_rows)
    masks = np.stack([params.part_mask(parts[i]) for i in rng.integers(len(parts), size=size)])
    a, b = bank.vectors[a_rows], bank.vectors[b_rows]
    x0 = masks * b + (1 - masks) * a
    return {
        "x0": torch.as_tensor(x0, dtype=torch.float32),
        "a": torch.as_tensor(a, dtype=torch.float32),
        "mask": torch.as_tensor(masks, dtype=torch.float32),
        "target": torch.as_tensor(masks * b, dtype=torch.float32),
        "given": torch.as_tensor(given[:, None], dtype=torch.float32),
        "noise_seed": int(rng.integers(2**62)),
    }


