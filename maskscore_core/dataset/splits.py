"""Which subjects are held out for the bench.

A subject's split is a pure function of (seed, subject id): a hash mapped to [0, 1) and compared
with BENCH_FRACTION. It does not depend on which other subjects exist, so a bench and a training
set built with the same seed can never share a subject, whatever their sizes.
"""

from __future__ import annotations

import hashlib

SPLITS: tuple[str, ...] = ("bench", "reward-train", "rl-train")
SCORED_SPLITS: tuple[str, ...] = ("bench", "reward-train")

# Share of subjects held out for the bench (SpeakingFaces' 142 subjects -> about 28).
BENCH_FRACTION = 0.2


class SplitError(ValueError):
    """An unknown split, or a subject pool with no subject for the split asked for."""


def check_split(split: str) -> str:
    if split not in SPLITS:
        raise SplitError(f"unknown split {split!r}; expected one of: {', '.join(SPLITS)}")
    return split


def subject_pool(subject_id: str, seed: int) -> str:
    """'bench' or 'train': the pool this subject belongs to under `seed`."""
    digest = hashlib.sha256(f"maskscore-split\0{seed}\0{subject_id}".encode()).digest()
    position = int.from_bytes(digest[:8], "big") / 2**64
    return "bench" if position < BENCH_FRACTION else "train"


def pool_for_split(split: str) -> str:
    """The subject pool a split draws from: the bench alone uses the held-out subjects."""
    return "bench" if check_split(split) == "bench" else "train"


def trials_for_split(trials, split: str, seed: int) -> list:
    """The trials whose subject belongs to `split`'s pool, in their original order."""
    pool = pool_for_split(split)
    kept = [t for t in trials if subject_pool(t.subject.subject_id, seed) == pool]
    if not kept:
        subjects = sorted({t.subject.subject_id for t in trials})
        raise SplitError(
            f"no subject of the {len(subjects)} the source gave falls in the {pool} pool for seed {seed}"
            f" ({split} needs one); ask the source for more subjects"
        )
    if len({t.subject.subject_id for t in kept}) < 2:
        raise SplitError(
            f"the {pool} pool for seed {seed} has a single subject; the ladder's wrong-subject rung needs"
            " two: ask the source for more subjects"
        )
    return kept
