"""Lip-sync as face bone rotation agreement: how closely two facial-action sequences move the
SOMA face bones (Jaw, LeftEye, RightEye) the same way. No lip-sync model is involved.

Actions -> bone rotations (`face_bone_rotations`), with documented angles per unit action:
- Jaw: pitch about +x by JAW_OPEN_RAD * jawOpen (0.35 rad at jawOpen 1; +x rotation swings
  the chin down, as the body faces +Z with Y up) and yaw about +y by JAW_SIDE_RAD *
  (jawLeft - jawRight) (the body's left is +X). jawForward is a translation of the jaw, which a
  rotation cannot carry; it is compared in the mouth-action term instead.
- Eyes: pitch EYE_PITCH_RAD * (eyeLookDown - eyeLookUp) about +x and yaw EYE_YAW_RAD * (outward -
  inward) about +y, where outward is +X for the left eye and -X for the right one.
Each bone's rotation is yaw @ pitch.

`distance(a, b)`: both sequences are first time-normalised to the longer length by linear
interpolation over normalised time [0, 1] (clips of different speaking rates compare shape, not
speed). Then: the mean over frames and bones of the angle between corresponding rotations
(radians), plus MOUTH_WEIGHT times the mean absolute difference of the mouth actions (`MOUTH_ACTIONS`:
every mouth*, plus jawForward and tongueOut), which catches lip shapes that move no bone. 0 for
identical sequences, symmetric in a and b.
"""

from __future__ import annotations

import functools

import numpy as np

from maskscore_core.speech.errors import SpeechError
from maskscore_core.speech.visemes import action_names

FACE_BONES: tuple[str, ...] = ("Jaw", "LeftEye", "RightEye")
JAW_OPEN_RAD = 0.35
JAW_SIDE_RAD = 0.12
EYE_PITCH_RAD = 0.44
EYE_YAW_RAD = 0.52
MOUTH_WEIGHT = 0.35  # a full unit of mouth-action difference weighs like a full jaw opening


def _rx(angle: np.ndarray) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    one, zero = np.ones_like(angle), np.zeros_like(angle)
    return np.stack([one, zero, zero, zero, c, -s, zero, s, c], axis=-1).reshape(*angle.shape, 3, 3)


def _ry(angle: np.ndarray) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    one, zero = np.ones_like(angle), np.zeros_like(angle)
    return np.stack([c, zero, s, zero, one, zero, -s, zero, c], axis=-1).reshape(*angle.shape, 3, 3)


@functools.cache
def _index() -> dict[str, int]:
    return {name: i for i, name in enumerate(action_names())}


@functools.cache
def mouth_action_indices() -> np.ndarray:
    names = action_names()
    return np.array([i for i, n in enumerate(names) if n.startswith("mouth") or n in ("jawForward", "tongueOut")])


def check_activations(activations, what: str = "activations") -> np.ndarray:
    """A (T, 52) finite float array, or a SpeechError naming what is wrong."""
    arr = np.asarray(activations, dtype=np.float64)
    width = len(action_names())
    if arr.ndim != 2 or arr.shape[1] != width or arr.shape[0] < 1:
        raise SpeechError(f"{what} must have shape (T, {width}) with T >= 1, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise SpeechError(f"{what} hold NaN or infinite values")
    return arr


def face_bone_angles(activations) -> np.ndarray:
    """(T, 3 bones, 2) pitch and yaw in radians of Jaw, LeftEye, RightEye."""
    acts = check_activations(activations)
    i = _index()

    def a(name: str) -> np.ndarray:
        return acts[:, i[name]]

    jaw = (JAW_OPEN_RAD * a("jawOpen"), JAW_SIDE_RAD * (a("jawLeft") - a("jawRight")))
    left = (
        EYE_PITCH_RAD * (a("eyeLookDownLeft") - a("eyeLookUpLeft")),
        EYE_YAW_RAD * (a("eyeLookOutLeft") - a("eyeLookInLeft")),
    )
    right = (
        EYE_PITCH_RAD * (a("eyeLookDownRight") - a("eyeLookUpRight")),
        EYE_YAW_RAD * (a("eyeLookInRight") - a("eyeLookOutRight")),
    )
    return np.stack([np.stack(jaw, -1), np.stack(left, -1), np.stack(right, -1)], axis=1)


def face_bone_rotations(activations) -> np.ndarray:
    """(T, 3, 3, 3) local rotations of the SOMA face bones FACE_BONES for each frame."""
    angles = face_bone_angles(activations)
    return _ry(angles[..., 1]) @ _rx(angles[..., 0])


def time_normalise(activations: np.ndarray, length: int) -> np.ndarray:
    """Resample a (T, 52) sequence to `length` frames by linear interpolation over [0, 1]."""
    count = activations.shape[0]
    if count == length:
        return activations
    source = np.linspace(0.0, 1.0, count) if count > 1 else np.zeros(1)
    target = np.linspace(0.0, 1.0, length)
    if count == 1:
        return np.repeat(activations, length, axis=0)
    return np.stack([np.interp(target, source, activations[:, j]) for j in range(activations.shape[1])], axis=1)


def rotation_angles(rot_a: np.ndarray, rot_b: np.ndarray) -> np.ndarray:
    """Angle (radians) of the relative rotation between matching rotation matrices.

    Uses |A - B|_F = 2 sqrt(2) sin(angle / 2), which is exact at 0 and precise for small angles
    (arccos of the trace loses half the digits there).
    """
    chord = np.linalg.norm(rot_a - rot_b, axis=(-2, -1)) / (2.0 * np.sqrt(2.0))
    return 2.0 * np.arcsin(np.clip(chord, 0.0, 1.0))


def distance(acts_a, acts_b, *, mouth_weight: float = MOUTH_WEIGHT) -> float:
    """Face bone rotation disagreement between two (T, 52) sequences (radians; 0 = identical)."""
    a = check_activations(acts_a, "first activations")
    b = check_activations(acts_b, "second activations")
    length = max(a.shape[0], b.shape[0])
    a, b = time_normalise(a, length), time_normalise(b, length)
    bone_term = float(rotation_angles(face_bone_rotations(a), face_bone_rotations(b)).mean())
    mouth = mouth_action_indices()
    mouth_term = float(np.abs(a[:, mouth] - b[:, mouth]).mean())
    return bone_term + mouth_weight * mouth_term
