"""What the reward model sees of a candidate: its bones next to frame A's and the asked edit's.

Input is what the pose modality gives (the table's `output_poses` value, 78 x 3 SOMA rotations
+ t), frame A encoded the same way, and the instruction's target as render-compare takes it
(frame B's part carried onto A, `ladder.ideal_edit`, encoded the same way), plus the part named
by the instruction. Nothing else: not the rung, not a label, not the states that generated a
ladder candidate (`asset.meta`), so the model must judge a pose from the pose itself.

Per bone k: |c_k - b_k|, |c_k - a_k| and |a_k - b_k| (the asked change), in units of 0.1 rad;
then the same three for the root translation (in cm), and the part as a one-hot. A candidate that
is not a finite 237-float pose is a FeatureError naming what is wrong.
"""

from __future__ import annotations

import attrs
import numpy as np

from maskscore_core import vocab

from maskscore_core.plugin import manager as plugins
from maskscore_core.plugin.records import SOMA_BONES

MODALITY = "pose"
POSE_LENGTH = SOMA_BONES * 3 + 3
PARTS: tuple[str, ...] = tuple(vocab.ACTIVE_FACE_PARTS)
SIZE = 3 * SOMA_BONES + 3 + len(PARTS)


class FeatureError(ValueError):
    """A candidate or instance the reward model cannot read."""


def pose_of(value, what: str) -> np.ndarray:
    try:
        vector = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise FeatureError(f"{what}: not a list of numbers") from None
    if vector.shape != (POSE_LENGTH,):
        raise FeatureError(f"{what}: expected {POSE_LENGTH} floats (78x3 rotations + t), got shape {vector.shape}")
    if not np.all(np.isfinite(vector)):
        raise FeatureError(f"{what}: holds NaN or infinite values")
    return vector


@attrs.frozen
class References:
    """Frame A and the asked edit, encoded once per instance."""

    a: np.ndarray
    b: np.ndarray
    part: np.ndarray


def references(instance, ctx) -> References:
    from maskscore_core.edits.ladder import ideal_edit

    if instance.instruction.modality != MODALITY:
        raise FeatureError(f"the reward model scores {MODALITY} edits; this instance is a {instance.instruction.modality} edit")
    encode = lambda target: plugins.call("encode", MODALITY, modality=MODALITY, target=target, ctx=ctx).data  # noqa: E731
    part = np.zeros(len(PARTS))
    if instance.instruction.part not in PARTS:
        raise FeatureError(f"part {instance.instruction.part!r} is not one the reward model knows ({', '.join(PARTS)})")
    part[PARTS.index(instance.instruction.part)] = 1.0
    return References(pose_of(encode(instance.a), "frame A"), pose_of(encode(ideal_edit(instance)), "frame B"), part)


def _per_bone(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """(N, 78 + 1): rotation distance per bone in 0.1 rad, then the translation distance in cm."""
    rot = np.linalg.norm((x[:, :-3] - y[:, :-3]).reshape(len(x), SOMA_BONES, 3), axis=2) * 10.0
    return np.concatenate([rot, np.linalg.norm(x[:, -3:] - y[:, -3:], axis=1, keepdims=True) * 100.0], axis=1)


def features(refs: References, poses: np.ndarray) -> np.ndarray:
    """(N, SIZE) float32 features of N candidate poses of one instance."""
    poses = np.atleast_2d(poses)
    count = len(poses)
    a, b = np.broadcast_to(refs.a, poses.shape), np.broadcast_to(refs.b, poses.shape)
    to_b, to_a, asked = _per_bone(poses, b), _per_bone(poses, a), _per_bone(a[:1], b[:1])
    rows = np.concatenate([
        to_b[:, :-1], to_a[:, :-1], np.broadcast_to(asked[:, :-1], (count, SOMA_BONES)),
        to_b[:, -1:], to_a[:, -1:], np.broadcast_to(asked[:, -1:], (count, 1)),
        np.broadcast_to(refs.part, (count, len(PARTS))),
    ], axis=1)  # fmt: skip
    return np.log1p(rows).astype(np.float32)
