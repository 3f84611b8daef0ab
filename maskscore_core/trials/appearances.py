"""How a subject of the built-in source looks in each of their trials: skin, light, backdrop.

Why per trial: a real subject is recorded in sessions, and between sessions the room light, the
backdrop and the skin (a tan) change while the person does not. So each trial has one
appearance, constant within the clip, and consecutive trials of a subject always differ in all
three, well beyond the edit thresholds of `edits` (the light turns by at least 0.6 rad, the
backdrop moves by 0.2 in a channel, the tan factor by 0.18), so that every subject with two
trials gives lighting_change, skin_tone and background_change edits.

- skin: the subject's base tone, drawn once between a light and a dark skin albedo
  (`LIGHT_SKIN`, `DARK_SKIN`), times a per-trial tan factor; consecutive trials alternate darker
  and lighter (factor 0.95 -/+ 0.12..0.2). Inner facial parts follow the skin through their
  tints (`appearance.PART_TINT`); the eyes do not tan.
- light: one key light in front of the face, alternating left and right of it between
  consecutive trials (yaw 0.3..0.9 rad each side, pitch 0.1..0.7 rad up), intensity 0.65..1.05,
  ambient 0.1..0.3.
- backdrop: a colour uniform in [0.05, 0.9] per channel, redrawn until it differs from the
  previous trial's by at least MIN_BACKDROP_STEP (0.2) in some channel.

Drawn from one generator per subject (the caller's stream), trial after trial, so adding trials
keeps the ones already drawn (prefix-stable) and the same seed gives the same looks.
"""

from __future__ import annotations

import math

import numpy as np

from maskscore_core.plugin.records import Appearance, Light

LIGHT_SKIN = np.array([0.86, 0.68, 0.58])
DARK_SKIN = np.array([0.36, 0.24, 0.18])
MAX_BACKDROP_DRAWS = 1000
# Consecutive backdrops differ by at least this much in some channel: twice the background_change
# threshold (edits.BACKGROUND_DELTA, 0.1).
MIN_BACKDROP_STEP = 0.2


class AppearanceDrawError(RuntimeError):
    """The backdrop could not be drawn apart from the previous one (should not happen)."""


def _light(rng: np.random.Generator, side: float) -> Light:
    yaw = side * rng.uniform(0.3, 0.9)
    pitch = rng.uniform(0.1, 0.7)
    direction = (math.sin(yaw) * math.cos(pitch), math.sin(pitch), math.cos(yaw) * math.cos(pitch))
    return Light(tuple(round(x, 6) for x in direction), round(rng.uniform(0.65, 1.05), 4), round(rng.uniform(0.1, 0.3), 4))


def _backdrop(rng: np.random.Generator, previous: np.ndarray | None) -> np.ndarray:
    for _ in range(MAX_BACKDROP_DRAWS):
        colour = np.round(rng.uniform(0.05, 0.9, size=3), 4)
        if previous is None or np.abs(colour - previous).max() >= MIN_BACKDROP_STEP:
            return colour
    raise AppearanceDrawError(f"no backdrop colour apart from {previous} in {MAX_BACKDROP_DRAWS} draws")


def trial_appearances(rng: np.random.Generator, count: int) -> list[Appearance]:
    """The looks of a subject's first `count` trials (see module docstring)."""
    base = LIGHT_SKIN + rng.uniform(0.0, 1.0) * (DARK_SKIN - LIGHT_SKIN)
    first_side = 1.0 if rng.random() < 0.5 else -1.0
    looks, previous = [], None
    for index in range(count):
        alternate = 1.0 if index % 2 == 0 else -1.0
        tan = 0.95 + alternate * first_side * rng.uniform(0.12, 0.2) * (1 if index else 0.5)
        skin = np.clip(np.round(base * tan, 4), 0.0, 1.0)
        light = _light(rng, alternate * first_side)
        previous = _backdrop(rng, previous)
        looks.append(Appearance(skin=tuple(skin), light=light, background=tuple(previous)))
    return looks
