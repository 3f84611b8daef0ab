"""The editor's parameter space: one body state as a flat vector, and a part as a mask on it.

Layout (`DIM` = 295 floats): SOMA pose 78 x 3 axis-angle, root translation 3, the 52 facial
actions, the 6 phenotype values (`trials.subjects.PHENOTYPE_RANGES` order). A part's mask covers
its facial actions and the rotations of its own SOMA bones (`maskscore_core.body.parts`), the very
values the frame-pair ladder moves for the part (`ladder.apply_part`). Parts edited by a
regional scale or an accessory, and the appearance task types, are outside this space: the
editor refuses them with `ParamError`.
"""

from __future__ import annotations

import functools

import attrs
import numpy as np

from maskscore_core import vocab
from maskscore_core.plugin.records import FACIAL_ACTIONS, SOMA_BONES, BodyState
from maskscore_core.trials.subjects import PHENOTYPE_RANGES

PHENOTYPE_KEYS: tuple[str, ...] = tuple(PHENOTYPE_RANGES)
POSE = slice(0, SOMA_BONES * 3)
TRANSLATION = slice(SOMA_BONES * 3, SOMA_BONES * 3 + 3)
EXPRESSION = slice(TRANSLATION.stop, TRANSLATION.stop + FACIAL_ACTIONS)
PHENOTYPE = slice(EXPRESSION.stop, EXPRESSION.stop + len(PHENOTYPE_KEYS))
DIM = PHENOTYPE.stop


class ParamError(ValueError):
    """A part or an edit outside the editor's parameter space."""


def to_vector(state: BodyState) -> np.ndarray:
    """(DIM,) float64 vector of one body state."""
    return np.concatenate([
        state.pose.reshape(-1), state.translation, state.expression,
        [float(state.phenotype.get(k, 0.5)) for k in PHENOTYPE_KEYS],
    ])  # fmt: skip


def to_state(vector: np.ndarray, like: BodyState) -> BodyState:
    """`like` (frame A: accessories, scales, look) with pose, translation and actions from
    `vector`; actions are clipped to their range [0, 1]. The phenotype is `like`'s: no part owns
    it, so an edit never changes who the subject is."""
    vector = np.asarray(vector, dtype=np.float64)
    if vector.shape != (DIM,) or not np.all(np.isfinite(vector)):
        raise ParamError(f"expected {DIM} finite floats, got shape {vector.shape}")
    return attrs.evolve(
        like,
        pose=vector[POSE].reshape(SOMA_BONES, 3),
        translation=vector[TRANSLATION],
        expression=np.clip(vector[EXPRESSION], 0.0, 1.0),
    )


@functools.cache
def editable_parts() -> tuple[str, ...]:
    """Active face parts with facial actions or SOMA bones of their own."""
    from maskscore_core.body import parts

    return tuple(p for p in vocab.ACTIVE_FACE_PARTS if parts.part_actions(p) or parts.part_bones(p))


@functools.cache
def part_mask(part: str) -> np.ndarray:
    """(DIM,) float64 0/1 mask of the values that belong to `part` (read-only)."""
    from maskscore_core.body import parts
    from maskscore_core.body.anny_model import get_body_model

    if part not in editable_parts():
        raise ParamError(
            f"the native editor edits parts with facial actions or bones of their own ({', '.join(editable_parts())});"
            f" {part!r} is not one of them"
        )
    body = get_body_model()
    mask = np.zeros(DIM)
    for bone in parts.part_bones(part):
        index = body.bone_index(bone)
        mask[3 * index:3 * index + 3] = 1.0
    for action in parts.part_actions(part):
        mask[EXPRESSION.start + body.action_index(action)] = 1.0
    mask.flags.writeable = False
    return mask


def check_instance(instance) -> None:
    """ParamError unless the instance's edit lives in this space (a part of `editable_parts`, a
    geometric task type)."""
    from maskscore_core.edits.instances import APPEARANCE_TASK_TYPES

    task = instance.instruction.task_type
    if task in APPEARANCE_TASK_TYPES:
        raise ParamError(f"the native editor edits body parameters; {task!r} edits change the look, not the body")
    part_mask(instance.instruction.part)
