"""The facial actions SOMA bones can carry: jaw opening and sideways jaw (Jaw), eye gaze
(LeftEye, RightEye).

ANNY moves the face with 52 blendshape-like actions; a SOMA pose has only bones. The design asks
pose edits to "repose the {part} to frame B's expression", so the pose modality carries the part
of the expression that is a bone rotation, with the project's one mapping between the two
(`maskscore_core.speech.agreement`: jawOpen pitches the jaw by JAW_OPEN_RAD per unit, and so on):

- `to_bones`: the face bones' rotations become R_bone @ R_actions, R_actions = yaw @ pitch from the
  actions (a rotation the state already had on these bones is kept and composed);
- `to_actions`: the pitch and yaw of each face bone's rotation are read back into the actions
  (a positive angle into one action of an opposing pair, a negative into the other, clipped to
  [0, 1]) and the face bones return to rest, so the mesh is skinned once, by the actions.

The other actions (brows, cheeks, lips, ...) cannot be a bone and come from frame A.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from maskscore_core.speech import agreement

# For each face bone: (positive-pitch action, negative-pitch action, RAD per unit),
# then (positive-yaw action, negative-yaw action, RAD per unit), as in agreement.face_bone_angles.
BONE_ACTIONS: dict[str, tuple[tuple[str, str | None, float], tuple[str, str, float]]] = {
    "Jaw": (("jawOpen", None, agreement.JAW_OPEN_RAD), ("jawLeft", "jawRight", agreement.JAW_SIDE_RAD)),
    "LeftEye": (
        ("eyeLookDownLeft", "eyeLookUpLeft", agreement.EYE_PITCH_RAD),
        ("eyeLookOutLeft", "eyeLookInLeft", agreement.EYE_YAW_RAD),
    ),
    "RightEye": (
        ("eyeLookDownRight", "eyeLookUpRight", agreement.EYE_PITCH_RAD),
        ("eyeLookInRight", "eyeLookOutRight", agreement.EYE_YAW_RAD),
    ),
}


def carried_actions() -> tuple[str, ...]:
    """Every action a face bone carries, in BONE_ACTIONS order."""
    names = []
    for pitch, yaw in BONE_ACTIONS.values():
        names.extend(n for n in (*pitch[:2], *yaw[:2]) if n is not None)
    return tuple(names)


def bones_for_actions(actions) -> tuple[str, ...]:
    """The face bones that carry any of `actions`."""
    wanted = set(actions)
    return tuple(
        bone for bone, (pitch, yaw) in BONE_ACTIONS.items() if wanted & {n for n in (*pitch[:2], *yaw[:2]) if n}
    )


def _yaw_pitch(pitch: float, yaw: float) -> np.ndarray:
    return Rotation.from_euler("YX", [yaw, pitch]).as_matrix()  # intrinsic: yaw @ pitch


def to_bones(pose: np.ndarray, expression: np.ndarray, body) -> np.ndarray:
    """(78, 3) axis-angle pose with the face bones also rotated by the carried actions."""
    angles = agreement.face_bone_angles(expression[None, :])[0]  # (3 bones, [pitch, yaw])
    out = np.array(pose, dtype=np.float64, copy=True)
    for (bone, _), (pitch, yaw) in zip(BONE_ACTIONS.items(), angles):
        index = body.bone_index(bone)
        rotation = Rotation.from_rotvec(out[index]).as_matrix() @ _yaw_pitch(pitch, yaw)
        out[index] = Rotation.from_matrix(rotation).as_rotvec()
    return out


def to_actions(pose: np.ndarray, expression: np.ndarray, body) -> tuple[np.ndarray, np.ndarray]:
    """(pose with the face bones at rest, expression with the carried actions read from them)."""
    pose = np.array(pose, dtype=np.float64, copy=True)
    expression = np.array(expression, dtype=np.float64, copy=True)
    for bone, specs in BONE_ACTIONS.items():
        index = body.bone_index(bone)
        rotation = Rotation.from_rotvec(pose[index]).as_matrix()
        pitch = float(np.arctan2(-rotation[1, 2], rotation[1, 1]))  # R = Ry(yaw) @ Rx(pitch)
        yaw = float(np.arctan2(-rotation[2, 0], rotation[0, 0]))
        for angle, (positive, negative, rad) in zip((pitch, yaw), specs):
            expression[body.action_index(positive)] = np.clip(angle / rad, 0.0, 1.0)
            if negative is not None:
                expression[body.action_index(negative)] = np.clip(-angle / rad, 0.0, 1.0)
        pose[index] = 0.0
    return pose, expression
