"""An example third-party editor: `part-transfer`.

It edits like an imperfect model would: it moves frame A's target-part facial actions towards
frame B's with a few strengths and a little seeded noise, then has the registered modality
encode each result, so it works in every modality that is installed. Copy this package to
start your own editor; docs/plugins.md walks through it.
"""

from __future__ import annotations

import hashlib

import attrs
import numpy as np

from maskscore_core import Editor, hookimpl

from maskscore_core.plugin import manager as plugins
from maskscore_core.body.anny_model import get_body_model
from maskscore_core.body.parts import part_actions
from maskscore_core.plugin.records import Candidate

EDITOR = "part-transfer"
STRENGTHS = (1.0, 0.6, 0.3)
NOISE = 0.05  # standard deviation added to each moved action, before clipping to [0, 1]


@hookimpl
def register_editors(register):
    register(Editor(EDITOR, "moves frame A's part towards frame B's with a few strengths and seeded noise"))


def _rng(key: str) -> np.random.Generator:
    """A generator seeded from the instance key, so the same instance gets the same edit."""
    return np.random.default_rng(int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "little"))


def transfer(instance, strength: float, rng: np.random.Generator):
    """Frame A's state with the part's actions moved `strength` of the way to frame B's."""
    body = get_body_model()
    ids = [body.action_index(name) for name in part_actions(instance.instruction.part)]
    a, b = instance.a.state, instance.b.state
    expression = a.expression.copy()
    moved = a.expression[ids] + strength * (b.expression[ids] - a.expression[ids])
    expression[ids] = np.clip(moved + rng.normal(0.0, NOISE, len(ids)), 0.0, 1.0)
    return attrs.evolve(a, expression=expression)


@hookimpl
def edit(editor, modality, instance, ctx):
    rng = _rng(instance.key)
    candidates = []
    for strength in STRENGTHS:
        label = f"{EDITOR} x{strength:g}"
        target = instance.a.with_states(label, (transfer(instance, strength, rng),), instance.b.transcript)
        asset = plugins.modality(modality).encode(target, ctx)
        candidates.append(Candidate(label=label, asset=asset, rung=None))
    return candidates
