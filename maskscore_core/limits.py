"""The bounds every command and config applies to counts and sizes, in one place.

Each command used to check its own options (one took 8 px, another needed 16), and nothing
stopped a size that exhausts memory long after the command started. The command line refuses a
value outside these bounds before any work starts (`cli.options` makes click types of them), and
the configs the library builds (`BuildConfig`) check the same bounds.
"""

from __future__ import annotations

# Scorer cameras. The floor is the smallest render the render-and-compare metric scores: LPIPS's
# AlexNet pools its features three times and fails on renders under 31 pixels across.
MIN_VIEWS, MAX_VIEWS = 1, 64
MIN_RESOLUTION, MAX_RESOLUTION = 32, 1024
# Pixels one candidate renders (views x resolution^2): 16 views at 1024 px, 64 at 512 px. Each
# pixel holds depth, normal and triangle id, several copies of which are alive while scoring.
MAX_PIXELS = 16 * 1024 * 1024

MAX_NUM_PASS = 64
MAX_TEMPERATURE = 100.0
MAX_SEED = 2**31 - 1
MAX_ROWS = 10_000_000
MAX_SUBJECTS = 100_000
MAX_WORKERS = 256
MAX_SHARD_SIZE = 100_000
MAX_INSTANCES_PER_MODALITY = 10_000
MAX_STEPS = 10_000_000  # optimiser steps of a trainer
MAX_BATCH = 65_536  # a trainer's batch, samples per prompt, prompts per step
MAX_WIDTH, MAX_DEPTH = 65_536, 64  # a trainer's MLP
MAX_LEARNING_RATE, MAX_KL = 10.0, 100.0
MIN_TILE, MAX_TILE = 16, 2048  # `maskscore show` contact sheet tiles


class LimitError(ValueError):
    """A count or size outside the bounds above."""


def check_range(name: str, value: int, low: int, high: int) -> int:
    """`value` when low <= value <= high; LimitError naming the option otherwise."""
    if not low <= value <= high:
        raise LimitError(f"{name} must be between {low} and {high}, got {value}")
    return value


def check_render_size(views: int, resolution: int) -> tuple[int, int]:
    """(views, resolution) when each is within its bounds and together they render at most
    MAX_PIXELS per candidate; LimitError saying which bound and what fits otherwise."""
    check_range("--views", views, MIN_VIEWS, MAX_VIEWS)
    check_range("--resolution", resolution, MIN_RESOLUTION, MAX_RESOLUTION)
    if views * resolution * resolution > MAX_PIXELS:
        fits = max(MIN_VIEWS, MAX_PIXELS // (resolution * resolution))
        raise LimitError(
            f"--views {views} at --resolution {resolution} renders {views * resolution * resolution:,} pixels per"
            f" candidate, more than {MAX_PIXELS:,}; use at most {fits} views at this resolution"
        )
    return views, resolution
