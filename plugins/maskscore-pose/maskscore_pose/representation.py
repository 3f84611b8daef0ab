"""The pose modality's representation: SOMA bone rotations [78x3] + root translation t [3].

The same 237 floats as `BodyState.pose_vector()` (and Kimodo-SOMA output). A pose holds bones
only. The part of the expression a bone can carry (jaw opening and side, eye gaze) is encoded in
the face bones Jaw, LeftEye and RightEye (`face_bones`). Decoding reads those back into actions,
then runs ANNY's forward kinematics and skinning with everything a pose cannot carry (the
subject's phenotype, frame A's other facial actions, accessories, part scales) taken from frame A
of the edit, so the score sees exactly what the bones changed, through the render (docs/design.md:
no rotation geodesic as the score).
"""

from __future__ import annotations

import attrs
import numpy as np

from maskscore_core.plugin.records import SOMA_BONES, Asset, BodyState, Decoded, EditInstance, Target
from maskscore_core.body.reference_mesh import get_reference_mesh

from . import face_bones

MODALITY = "pose"
POSE_LENGTH = SOMA_BONES * 3 + 3

# How this modality's rungs rank (`dataset.protocol`): a pose carries no identity (no phenotype),
# so every candidate is decoded on frame A's body and rung 5 ("wrong subject") would be only
# another subject's bones there: another pose, which moves the asked part too, in no known
# direction (the other subject's jaw or gaze can be nearer frame B's than rung 3's is), so it is
# not known to rank below rungs 3 and 4. Rung 5 is dropped; rungs 1-4 keep the design's levels.
LADDER_LEVELS = {
    "instruction_following": {1: 0, 2: 1, 3: 2, 4: 3},
    "consistency": {1: 0, 2: 0, 3: 0, 4: 1},
    "overall": {1: 0, 2: 1, 3: 2, 4: 3},
    "dropped": {5: "a pose carries no identity (no phenotype): decoded on frame A's body, another subject's"
                   " bones are only another pose, which moves the asked part too, in no known direction"
                   " (it can come nearer frame B's than the partial edit), so it is no wrong-subject candidate"},
}


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
    """The bones of the target's representative frame, face bones carrying jaw and gaze."""
    from maskscore_core.body.anny_model import get_body_model

    state = target.state
    pose = face_bones.to_bones(state.pose, state.expression, get_body_model())
    vector = np.concatenate([pose.reshape(-1), state.translation])
    return Asset(modality=MODALITY, data=vector, meta={"label": target.label})


def apply_to_frame_a(vector: np.ndarray, instance: EditInstance) -> BodyState:
    """Frame A's body state with its bones replaced by `vector` (face bones read into actions)."""
    from maskscore_core.body.anny_model import get_body_model

    vector = check(vector)
    pose, expression = face_bones.to_actions(vector[:-3].reshape(SOMA_BONES, 3), instance.a.state.expression, get_body_model())
    return attrs.evolve(instance.a.state, pose=pose, translation=vector[-3:], expression=expression)


def decode(asset: Asset, instance: EditInstance) -> Decoded:
    """FK + skinning of the pose on frame A's body: the reference mesh's vertices."""
    state = apply_to_frame_a(check(asset.data, what=f"pose {asset.path or asset.meta.get('label', '')}".strip()), instance)
    return Decoded(vertices=get_reference_mesh().vertices([state])[0])


def mask(part: str) -> dict:
    """The part's bones (its SOMA bones and the face bones carrying its actions), their indices
    in the pose vector, and the part's facial actions (those no bone carries come from frame A)."""
    from maskscore_core.body import parts
    from maskscore_core.body.anny_model import get_body_model

    body = get_body_model()
    actions = tuple(parts.part_actions(part))
    bones = tuple(dict.fromkeys((*parts.part_bones(part), *face_bones.bones_for_actions(actions))))
    indices = np.array([3 * body.bone_index(b) + k for b in bones for k in range(3)], dtype=np.int64)
    return {"bones": bones, "indices": indices, "actions": actions}
