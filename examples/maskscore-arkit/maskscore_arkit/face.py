"""A face capture on the ANNY body, and back.

Blendshapes are ANNY's facial actions under their ARKit names (EyeBlinkLeft is ANNY's
eyeBlinkLeft): a capture frame sets all 52. The head angles are the head's orientation relative
to the chest: yaw about the vertical axis, pitch about the left-right axis, roll about the
front-back axis (intrinsic Y-X-Z in the frames of ANNY's SOMA rig, which is Y-up and faces +z).
On a body they become the Head bone's rotation, with the neck bones (Neck1, Neck2) kept as the
body had them, so the head ends up turned as captured. The eye angles are written from the
gaze actions (eyeLook*) and read only to check them: ANNY turns its eyes by those actions.

A capture reaches the mesh as a video clip does: a fixed number of frames sampled evenly over
the capture are skinned one at a time, with the middle frame as the clip's mesh and the edited
part's activation sequence beside them (maskscore-video's README explains the choice).
"""

from __future__ import annotations

import attrs
import numpy as np
from scipy.spatial.transform import Rotation

from maskscore_core.plugin.records import Decoded

from .capture import BLENDSHAPES, Capture

NECK_BONES = ("Neck1", "Neck2")
HEAD_BONE = "Head"
EULER = "YXZ"  # yaw, pitch, roll
SAMPLED_FRAMES = 4


def action_name(blendshape: str) -> str:
    """ANNY's name of an ARKit blendshape: EyeBlinkLeft -> eyeBlinkLeft."""
    return blendshape[0].lower() + blendshape[1:]


def _columns(body) -> np.ndarray:
    """Index into ANNY's actions of each blendshape, in capture order."""
    return np.array([body.action_index(action_name(name)) for name in BLENDSHAPES])


def _neck(pose: np.ndarray, body) -> Rotation:
    rotation = Rotation.identity()
    for bone in NECK_BONES:
        rotation = rotation * Rotation.from_rotvec(pose[body.bone_index(bone)])
    return rotation


def capture_of_states(states, fps: float) -> Capture:
    """The capture of body states: their actions, the head's orientation through the neck, and
    the gaze actions as eye angles."""
    from maskscore_core.body.anny_model import get_body_model
    from maskscore_core.speech import agreement

    body = get_body_model()
    expression = np.stack([np.asarray(s.expression, dtype=np.float64) for s in states])
    head = np.stack([
        (_neck(s.pose, body) * Rotation.from_rotvec(s.pose[body.bone_index(HEAD_BONE)])).as_euler(EULER) for s in states
    ])  # fmt: skip
    gaze = agreement.face_bone_angles(expression)[:, 1:]  # (T, [left, right], [pitch, yaw])
    zeros = np.zeros(len(states))
    eyes = np.stack([gaze[:, 0, 1], gaze[:, 0, 0], zeros, gaze[:, 1, 1], gaze[:, 1, 0], zeros], axis=1)
    return Capture(np.clip(expression[:, _columns(body)], 0.0, 1.0), head, eyes, float(fps))


def states_on_body(capture: Capture, body_states) -> list:
    """The capture's frames on a body: each frame takes the body state at the same relative time
    (`body_states` resampled to the capture's length) with the capture's actions and head."""
    from maskscore_core.body.anny_model import get_body_model

    body = get_body_model()
    columns = _columns(body)
    frames = len(capture.blendshapes)
    rows = np.round(np.linspace(0, len(body_states) - 1, frames)).astype(int)
    out = []
    for t, row in enumerate(rows):
        base = body_states[row]
        expression = np.zeros(len(body.action_names))
        expression[columns] = capture.blendshapes[t]
        pose = np.array(base.pose, dtype=np.float64, copy=True)
        head = _neck(pose, body).inv() * Rotation.from_euler(EULER, capture.head[t])
        pose[body.bone_index(HEAD_BONE)] = head.as_rotvec()
        out.append(attrs.evolve(base, expression=expression, pose=pose))
    return out


def sample_indices(frame_count: int, count: int) -> list[int]:
    """`count` frame indices evenly spaced over a clip (fewer when the clip is shorter)."""
    return sorted({int(round(x)) for x in np.linspace(0, frame_count - 1, min(count, frame_count))})


def decode_capture(capture: Capture, instance, ctx) -> Decoded:
    """The capture on frame A's body: sampled frames' meshes, the middle frame's mesh, and the
    edited part's actions over the whole capture (None for parts without actions)."""
    from maskscore_core.body import parts
    from maskscore_core.body.anny_model import get_body_model
    from maskscore_core.body.reference_mesh import get_reference_mesh

    states = states_on_body(capture, instance.a.states)
    count = int((ctx.config if ctx is not None else {}).get("arkit_frames", SAMPLED_FRAMES))
    picked = sample_indices(len(states), count)
    reference = get_reference_mesh()
    meshes = [reference.vertices([states[i]])[0] for i in [*picked, len(states) // 2]]
    names = parts.part_actions(instance.instruction.part)
    activations = None
    if names:
        body = get_body_model()
        full = np.stack([s.expression for s in states])
        activations = np.zeros_like(full)
        keep = [body.action_index(n) for n in names]
        activations[:, keep] = full[:, keep]
    return Decoded(vertices=meshes[-1], frames=tuple(meshes[:-1]), activations=activations)
