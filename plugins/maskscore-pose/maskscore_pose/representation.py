"""The pose modality's representation: SOMA bone rotations [78x3] + root translation t [3].

The same 237 floats as `BodyState.pose_vector()` (and Kimodo-SOMA output). A pose holds bones
only: decoding it runs ANNY's forward kinematics and skinning with everything that is not a bone
(the subject's phenotype, frame A's facial actions, accessories, part scales) taken from frame A
of the edit, so the score sees exactly what the bones changed, through the render (seed 000:
no rotation geodesic as the score).
"""

from __future__ import annotations

import attrs
import numpy as np

from maskscore_core.records import SOMA_BONES, Asset, BodyState, Decoded, EditInstance, Target
from maskscore_core.reference_mesh import get_reference_mesh

MODALITY = "pose"
POSE_LENGTH = SOMA_BONES * 3 + 3


class PoseError(ValueError):
    """A pose vector of the wrong length, or holding NaN/infinite values."""


def check(values, what: str = "pose") -> np.ndarray:
    """A float64 (237,) pose vector, or a clear error saying what is wrong with it."""
    try:
        vector = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise PoseError(f"{what}: not a list of numbers ({err})") from err
    if vector.shape != (POSE_LENGTH,):
        raise PoseError(
            f"{what}: expected {POSE_LENGTH} floats (SOMA rotations {SOMA_BONES}x3 + t[3]), got shape {vector.shape}"
        )
    bad = ~np.isfinite(vector)
    if bad.any():
        raise PoseError(f"{what}: {int(bad.sum())} values are NaN or infinite (first at index {int(np.argmax(bad))})")
    return vector


def encode(target: Target) -> Asset:
    """The bones of the target's representative frame."""
    return Asset(modality=MODALITY, data=np.asarray(target.state.pose_vector()), meta={"label": target.label})


def apply_to_frame_a(vector: np.ndarray, instance: EditInstance) -> BodyState:
    """Frame A's body state with its bones replaced by `vector`."""
    vector = check(vector)
    return attrs.evolve(instance.a.state, pose=vector[:-3].reshape(SOMA_BONES, 3), translation=vector[-3:])


def decode(asset: Asset, instance: EditInstance) -> Decoded:
    """FK + skinning of the pose on frame A's body: the reference mesh's vertices."""
    state = apply_to_frame_a(check(asset.data, what=f"pose {asset.path or asset.meta.get('label', '')}".strip()), instance)
    return Decoded(vertices=get_reference_mesh().vertices([state])[0])


def to_column(vector: np.ndarray) -> list[float]:
    """The PoseEditReward column value: the 237 floats as a plain list."""
    return [float(v) for v in check(vector)]


def mask(part: str) -> dict:
    """The part's SOMA bones, their indices in the pose vector, and the facial actions of the
    part (which a pose does not carry: they come from frame A when decoding)."""
    from maskscore_core import parts
    from maskscore_core.body import get_body_model

    body = get_body_model()
    bones = tuple(parts.part_bones(part))
    indices = np.array([3 * body.bone_index(b) + k for b in bones for k in range(3)], dtype=np.int64)
    return {"bones": bones, "indices": indices, "actions": tuple(parts.part_actions(part))}
