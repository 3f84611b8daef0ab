"""One built-in trial: a subject speaking one command, as audio plus per-frame body states.

The audio is espeak-ng speaking the transcript in the subject's voice; pocketsphinx aligns the
transcript to that audio, and the phone timings drive the mouth (visemes, from
`speech.activations_from_phones`). On top of speech, each clip gets the motion a face shows
while talking, all drawn from the trial's own random generator (so deterministic from the seed):

- blinks: both eyes, 0.2 s each, the first 0.3-1.2 s in, then every 1.5-3.5 s;
- brows: a raise (browInnerUp, browOuterUp*) following a half-wave of 0.3-0.8 Hz, peak 0.4-0.8;
- gaze: the eyes jump to a new target every 0.4-1.0 s (eyeLook* actions up to 0.6);
- expression: one smile (mouthSmile*, cheekSquint*) and one nose sneer (noseSneer*) per clip,
  each a smooth bump of 0.5-1.0 s peaking at 0.4-0.9;
- head and neck: slow yaw, pitch and roll (sinusoids of 0.2-0.6 Hz, yaw up to 0.15 rad, pitch
  up to 0.10, roll up to 0.06), shared 40/30/30 between the Neck1, Neck2 and Head bones.

The arms are lowered from ANNY's T-pose by ARM_DROP_RAD (72 degrees) about each upper arm's
local z axis (LeftArm -z, RightArm +z), so head-centred side views do not catch a hand.

Each trial has a look, constant within the clip (`LOOKS`): "usual" (the subject's usual
accessories, no regional deformation), "accessories" (one or two accessory slots changed:
`subjects.changed_accessories`; the Part group of task types) or "regions" (usual accessories,
and one to three of the hair regions and the ears scaled by 1 +/- (0.10..0.25) through
`BodyState.part_scale`; the Region group). A trial changes one thing at a time so that a pair
of trials differing in the part to edit does not also differ in what covers it (a new hat over
a rescaled fringe). The appearance (skin, light, backdrop) is the caller's, constant within the
clip (`trials.appearances`: it changes between trials, as between recording sessions).
"""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np

from maskscore_core import speech
from maskscore_core.speech.alignment import forget_previous_utterances
from maskscore_core.body.anny_model import get_body_model
from maskscore_core.plugin.records import FACIAL_ACTIONS, SOMA_BONES, Appearance, BodyState, Frame, Subject, Trial
from maskscore_core.trials.subjects import changed_accessories

ARM_DROP_RAD = 1.25
REGION_PARTS: tuple[str, ...] = ("front hair", "back hair", "ears")
LOOKS: tuple[str, ...] = ("usual", "accessories", "regions")
HEAD_SHARES: dict[str, float] = {"Neck1": 0.4, "Neck2": 0.3, "Head": 0.3}


class ClipError(ValueError):
    """A clip that cannot be made (audio too short for one frame, bad fps, ...)."""


def wav_duration_s(path: Path) -> float:
    with wave.open(str(path), "rb") as handle:
        return handle.getnframes() / handle.getframerate()


def _bump(t: np.ndarray, centre: float, width: float) -> np.ndarray:
    """A smooth bump (raised cosine) of total width `width` centred at `centre`, peak 1."""
    x = np.clip((t - centre) / (width / 2), -1.0, 1.0)
    return 0.5 * (1 + np.cos(np.pi * x))


def _set(acts: np.ndarray, names: dict[str, int], action: str, values: np.ndarray) -> None:
    acts[:, names[action]] = np.maximum(acts[:, names[action]], values)


def face_motion(times: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """(T, 52) facial actions for blinks, brows, gaze and expression (everything but speech)."""
    body = get_body_model()
    names = {name: i for i, name in enumerate(body.action_names)}
    acts = np.zeros((len(times), FACIAL_ACTIONS))
    duration = float(times[-1]) if len(times) else 0.0

    blink_at = rng.uniform(0.3, 1.2)
    while blink_at < duration + 0.1:
        blink = np.clip(1 - np.abs(times - blink_at) / 0.1, 0.0, 1.0)
        _set(acts, names, "eyeBlinkLeft", blink)
        _set(acts, names, "eyeBlinkRight", blink)
        blink_at += rng.uniform(1.5, 3.5)

    peak, freq, phase = rng.uniform(0.4, 0.8), rng.uniform(0.3, 0.8), rng.uniform(0, 2 * np.pi)
    brow = peak * np.maximum(0.0, np.sin(2 * np.pi * freq * times + phase))
    for action, share in (("browInnerUp", 1.0), ("browOuterUpLeft", 0.7), ("browOuterUpRight", 0.7)):
        _set(acts, names, action, share * brow)

    start = 0.0
    while start <= duration:
        stop = start + rng.uniform(0.4, 1.0)
        look_h, look_v = rng.uniform(-0.6, 0.6, size=2)
        span = (times >= start) & (times < stop)
        horizontal = ("eyeLookOutLeft", "eyeLookInRight") if look_h > 0 else ("eyeLookInLeft", "eyeLookOutRight")
        vertical = ("eyeLookUpLeft", "eyeLookUpRight") if look_v > 0 else ("eyeLookDownLeft", "eyeLookDownRight")
        for action in horizontal:
            acts[span, names[action]] = abs(look_h)
        for action in vertical:
            acts[span, names[action]] = abs(look_v)
        start = stop

    smile = rng.uniform(0.4, 0.9) * _bump(times, rng.uniform(0.2, 0.8) * duration, rng.uniform(0.5, 1.0))
    for action in ("mouthSmileLeft", "mouthSmileRight", "cheekSquintLeft", "cheekSquintRight"):
        _set(acts, names, action, smile)
    sneer = rng.uniform(0.4, 0.9) * _bump(times, rng.uniform(0.2, 0.8) * duration, rng.uniform(0.5, 1.0))
    for action in ("noseSneerLeft", "noseSneerRight"):
        _set(acts, names, action, sneer)
    return acts


def body_motion(times: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """(T, 78, 3) SOMA axis-angle poses: lowered arms plus slow head and neck motion."""
    body = get_body_model()
    poses = np.zeros((len(times), SOMA_BONES, 3))
    poses[:, body.bone_index("LeftArm"), 2] = -ARM_DROP_RAD
    poses[:, body.bone_index("RightArm"), 2] = ARM_DROP_RAD
    # SOMA neck and head bones: local x is up (yaw), local y forward (roll), local z left (pitch).
    angles = np.zeros((len(times), 3))
    for axis, limit in ((0, 0.15), (1, 0.06), (2, 0.10)):
        amplitude, freq, phase = rng.uniform(0.4, 1.0) * limit, rng.uniform(0.2, 0.6), rng.uniform(0, 2 * np.pi)
        angles[:, axis] = amplitude * np.sin(2 * np.pi * freq * times + phase)
    for bone, share in HEAD_SHARES.items():
        poses[:, body.bone_index(bone)] = share * angles
    return poses


def changed_regions(rng: np.random.Generator) -> dict[str, float]:
    """One to three of REGION_PARTS scaled by 1 +/- (0.10..0.25), for a "regions" trial."""
    chosen = set(rng.choice(REGION_PARTS, size=int(rng.integers(1, len(REGION_PARTS) + 1)), replace=False).tolist())
    scales = {}
    for part in REGION_PARTS:
        if part in chosen:
            scales[part] = round(1.0 + rng.uniform(0.10, 0.25) * (1 if rng.random() < 0.5 else -1), 3)
    return scales


def make_trial(
    subject: Subject,
    trial_index: int,
    transcript: str,
    fps: float,
    rng: np.random.Generator,
    workdir: Path,
    *,
    look: str = "usual",
    source: str = "anny",
    appearance: Appearance | None = None,
) -> Trial:
    """Speak, align and animate one clip; writes `workdir/audio/<trial_id>.wav`. `appearance`
    (skin, light, backdrop; `trials.appearances`) is the clip's, on every frame."""
    if not fps > 0:
        raise ClipError(f"fps must be positive, got {fps}")
    if look not in LOOKS:
        raise ClipError(f"unknown look {look!r}; expected one of {LOOKS}")
    trial_id = f"{subject.subject_id}-t{trial_index:03d}"
    wav_path = Path(workdir) / "audio" / f"{trial_id}.wav"
    speech.synthesize(transcript, subject.voice, wav_path)
    duration = wav_duration_s(wav_path)
    forget_previous_utterances()  # a trial must not depend on the trials made before it
    phones = speech.align(wav_path, transcript)
    visemes = np.asarray(speech.activations_from_phones(phones, fps, duration), dtype=np.float64)
    if visemes.ndim != 2 or visemes.shape[1] != FACIAL_ACTIONS or len(visemes) < 2:
        raise ClipError(
            f"{wav_path}: speech gave activations of shape {visemes.shape}; need (T >= 2, {FACIAL_ACTIONS})"
        )
    times = np.arange(len(visemes)) / fps
    expression = np.clip(np.maximum(visemes, face_motion(times, rng)), 0.0, 1.0)
    poses = body_motion(times, rng)
    worn = changed_accessories(subject, rng) if look == "accessories" else tuple(sorted(subject.accessories))
    scales = changed_regions(rng) if look == "regions" else {}
    frames = tuple(
        Frame(
            index=i,
            time_s=round(float(times[i]), 6),
            state=BodyState(
                phenotype=dict(subject.phenotype),
                pose=poses[i],
                expression=expression[i],
                accessories=worn,
                part_scale=dict(scales),
                appearance=appearance,
            ),
        )
        for i in range(len(times))
    )
    return Trial(
        trial_id=trial_id,
        source=source,
        subject=subject,
        transcript=transcript,
        fps=float(fps),
        frames=frames,
        audio_path=str(wav_path),
        extras={"duration_s": f"{duration:.6f}", "look": look, "phones": " ".join(p.phone for p in phones)},
    )
