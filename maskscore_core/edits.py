"""Edit instances: frame pairs A -> B of one subject where the target part really changed.

Seed 000: "the edit is always: edit the {part} to match frame B. Frame A is the input, frame B
is the target, both from the same subject." `make_instances` picks such pairs from trials and
writes the instruction with the modality's template and a task type consistent with the part.

A part "really differs" between two body states when at least one of these holds
(`part_change`), each measured only on the part (actions and bones from `maskscore_core.parts`):

- a facial action of the part moves by at least ACTION_DELTA (0.3, actions are in [0, 1]);
- a bone of the part rotates by at least BONE_DELTA_RAD (0.05 rad, about 3 degrees);
- its regional scale (`BodyState.part_scale`) changes by at least SCALE_DELTA (0.1);
- for an accessory part: the worn accessory differs (added, removed or replaced).

The rest may differ, but less, and not in what decides where and whether the part is seen:
- unless the part is the neck (whose bones carry the head), the neck and head bones
  (HEAD_CARRIER_BONES) of A and B differ by at most REST_POSE_MAX_RAD (0.02 rad, ~1 degree);
- unless the part is an accessory, A and B wear the same accessories;
- for parts moved by facial actions, the actions outside the part change less than its own.
Otherwise a rigid head motion or a hat put on would dominate every render of the part, and
frame B's part applied to A would not look like B. (Video pairs two clips: only the accessories rule applies; speech and text pair
two clips whose words differ, and no rule on the rest applies.)

Among the frame pairs that qualify, the stronger half (part change at least their median) is
drawn from, so the edit is clearly visible. Single-frame modalities (mesh, depth, keypoints,
pose, multimodal) pair two frames of one subject (from one trial or two). Sequence modalities (video, speech, text) pair two clips (trials) of one
subject; their Targets hold every frame. The wrong-subject target (`other`) is the same frame
index (the whole clip, for sequences) of another subject's trial.

Which (part, task type) each modality produces is `TASK_TABLE`; docs/trials.md shows it.
"""

from __future__ import annotations

import re

import numpy as np

from . import accessories, vocab
from .records import BodyState, EditInstance, EditInstruction, Target, Trial

ACTION_DELTA = 0.3
BONE_DELTA_RAD = 0.05
SCALE_DELTA = 0.1
REST_POSE_MAX_RAD = 0.02
HEAD_CARRIER_BONES: tuple[str, ...] = ("Neck1", "Neck2", "Head")

# Instruction templates of seed 000, one per modality.
TEMPLATES: dict[str, str] = {
    "text": "change the command to {phrase}",
    "mesh": "edit the {part} to match frame B",
    "speech": "resynthesize the {part} to say {phrase}",
    "multimodal": "match the {part} across modalities to frame B",
    "keypoints": "refit the {part} landmarks to frame B",
    "depth": "reconstruct the {part} depth to match frame B",
    "video": "transition the {part} from frame A to frame B",
    "pose": "repose the {part} to frame B's expression",
}

SEQUENCE_MODALITIES: tuple[str, ...] = ("video", "speech", "text")

# Task type per (modality, part). "part" marks accessory parts, whose task type (part_add,
# part_remove, part_replace) depends on what frames A and B wear.
_STATIC_TASKS = {
    **{part: "part" for part in vocab.ACCESSORY_PARTS},
    "mouth": "expression_change",
    "face": "expression_change",
    "eyebrow": "expression_change",
    "nose": "surface_edit",
    "irides": "surface_edit",
    "front hair": "depth_edit",
    "back hair": "depth_edit",
    "ears": "depth_edit",
    "neck": "region_extract",
}
_MOTION_PARTS = ("mouth", "face", "eyebrow", "irides", "neck")
# A modality only gets parts its representation can show: ANNY's eyes are sockets, so a gaze
# (irides) edit leaves the depth map unchanged and moves surface keypoints on the socket by a
# fraction of a millimetre; no SOMA bone carries the brows, so a pose cannot express an eyebrow
# edit; keypoints are landmarks on the body's surface, and an accessory added, removed or resized
# is carried by them only roughly (its in-between rungs came out unordered), so keypoints get
# body parts only.
_WITHOUT_GAZE = {part: task for part, task in _STATIC_TASKS.items() if part != "irides"}
TASK_TABLE: dict[str, dict[str, str]] = {
    "mesh": dict(_STATIC_TASKS),
    "depth": dict(_WITHOUT_GAZE),
    "keypoints": {part: task for part, task in _WITHOUT_GAZE.items() if part not in vocab.ACCESSORY_PARTS},
    "pose": {part: "pose_change" for part in _MOTION_PARTS if part != "eyebrow"},
    "multimodal": {part: "cross_modal_compose" for part in _MOTION_PARTS},
    "video": {part: "temporal_edit" for part in _MOTION_PARTS},
    "speech": {"mouth": "speech_edit"},
    "text": {"mouth": "speech_edit"},
}

MAX_ATTEMPTS_PER_INSTANCE = 200


class EditError(ValueError):
    """Edit instances that cannot be made from the given trials (too few subjects, trials, ...)."""


def task_types(modality: str) -> tuple[str, ...]:
    """Every task type `modality` can produce, in vocab order."""
    table = TASK_TABLE[vocab.check_modality(modality)]
    found = set()
    for task in table.values():
        found.update(vocab.TASK_GROUPS["part"] if task == "part" else (task,))
    return tuple(t for t in vocab.TASK_TYPES if t in found)


def check_part_for(modality: str, part: str) -> str:
    """The part, if `modality` edits it; a clear error otherwise."""
    vocab.check_part(part)
    table = TASK_TABLE[vocab.check_modality(modality)]
    if part not in table:
        raise EditError(f"the {modality} modality does not edit the {part!r} part; it edits: {', '.join(table)}")
    return part


# ---------------------------------------------------------------------------------------------
# How much a part changes between two states.


def _part_actions_and_bones(part: str) -> tuple[list[int], list[int]]:
    """Indices of the part's facial actions and SOMA bones (empty for accessory parts)."""
    from . import parts
    from .body import get_body_model

    vocab.check_part(part)
    if part in vocab.ACCESSORY_PARTS:
        return [], []
    body = get_body_model()
    actions = [body.action_index(name) for name in parts.part_actions(part)]
    bones = [body.bone_index(name) for name in parts.part_bones(part)]
    return actions, bones


def part_change(part: str, a: BodyState, b: BodyState) -> float:
    """How strongly `part` changes from a to b, in units of its threshold (>= 1: it differs)."""
    if part in vocab.ACCESSORY_PARTS:
        slot = accessories.slot_for_part(part)
        scale = abs(a.part_scale.get(part, 1.0) - b.part_scale.get(part, 1.0)) / SCALE_DELTA
        return max(float(accessories.worn(a.accessories, slot) != accessories.worn(b.accessories, slot)), scale)
    actions, bones = _part_actions_and_bones(part)
    strength = abs(a.part_scale.get(part, 1.0) - b.part_scale.get(part, 1.0)) / SCALE_DELTA
    if actions:
        strength = max(strength, float(np.abs(a.expression[actions] - b.expression[actions]).max()) / ACTION_DELTA)
    if bones:
        turn = np.linalg.norm(a.pose[bones] - b.pose[bones], axis=1).max()
        strength = max(strength, float(turn) / BONE_DELTA_RAD)
    return strength


def _pairwise_change(part: str, states: list[BodyState]) -> np.ndarray:
    """(N, N) part_change between every two states, vectorised (the same numbers as part_change)."""
    n = len(states)
    scale = np.array([s.part_scale.get(part, 1.0) for s in states])
    strength = np.abs(scale[:, None] - scale[None, :]) / SCALE_DELTA
    if part in vocab.ACCESSORY_PARTS:
        slot = accessories.slot_for_part(part)
        worn = [accessories.worn(s.accessories, slot) for s in states]
        differs = np.array([[worn[i] != worn[j] for j in range(n)] for i in range(n)], dtype=float)
        return np.maximum(strength, differs)
    actions, bones = _part_actions_and_bones(part)
    if actions:
        acts = np.stack([s.expression[actions] for s in states])
        strength = np.maximum(strength, np.abs(acts[:, None] - acts[None, :]).max(axis=2) / ACTION_DELTA)
    if bones:
        rot = np.stack([s.pose[bones] for s in states])
        turn = np.linalg.norm(rot[:, None] - rot[None, :], axis=3).max(axis=2)
        strength = np.maximum(strength, turn / BONE_DELTA_RAD)
    return strength


def _pairwise_rest_calmer(part: str, states: list[BodyState]) -> np.ndarray:
    """(N, N) bool: the facial actions outside the part change less than the part's own do.

    Only for parts that have actions (the rest is measured on the actions the part lacks)."""
    actions, _ = _part_actions_and_bones(part)
    n = len(states)
    rest = [i for i in range(states[0].expression.shape[0]) if i not in set(actions)]
    if not actions or not rest:
        return np.ones((n, n), dtype=bool)
    expr = np.stack([s.expression for s in states])
    own = np.abs(expr[:, None, actions] - expr[None, :, actions]).max(axis=2)
    other = np.abs(expr[:, None, rest] - expr[None, :, rest]).max(axis=2)
    return other < own


def head_turn(a: BodyState, b: BodyState) -> float:
    """Largest rotation difference (rad, axis-angle distance) of the bones that carry the head."""
    return float(_pairwise_head_turn([a, b])[0, 1])


def _pairwise_head_turn(states: list[BodyState]) -> np.ndarray:
    from .body import get_body_model

    body = get_body_model()
    bones = [body.bone_index(name) for name in HEAD_CARRIER_BONES]
    rot = np.stack([s.pose[bones] for s in states])
    return np.linalg.norm(rot[:, None] - rot[None, :], axis=3).max(axis=2)


def accessory_task(part: str, a: BodyState, b: BodyState) -> str:
    """part_add, part_remove or part_replace, from what A and B wear in the part's slot."""
    slot = accessories.slot_for_part(part)
    worn_a, worn_b = accessories.worn(a.accessories, slot), accessories.worn(b.accessories, slot)
    if worn_a == worn_b:
        raise EditError(f"frames A and B wear the same {part} ({worn_a}); there is no part edit")
    if worn_a is None:
        return "part_add"
    if worn_b is None:
        return "part_remove"
    return "part_replace"


# ---------------------------------------------------------------------------------------------
# Instances.


def instruction_text(modality: str, part: str, phrase: str = "") -> str:
    return TEMPLATES[vocab.check_modality(modality)].format(part=part, phrase=phrase)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _target(label: str, trial: Trial, frame_index: int | None) -> Target:
    """A Target of one frame of a trial, or of the whole clip when frame_index is None."""
    states = [f.state for f in trial.frames] if frame_index is None else [trial.frames[frame_index].state]
    return Target(label=label, subject=trial.subject, states=states, transcript=trial.transcript, fps=trial.fps)


def _by_subject(trials: list[Trial]) -> dict[str, list[Trial]]:
    grouped: dict[str, list[Trial]] = {}
    for trial in sorted(trials, key=lambda t: t.trial_id):
        if not trial.frames:
            raise EditError(f"trial {trial.trial_id!r} has no frames")
        grouped.setdefault(trial.subject.subject_id, []).append(trial)
    return dict(sorted(grouped.items()))


def _pick_other(subject_id: str, frame_index: int | None, grouped, rng) -> tuple[Trial, int | None]:
    """A trial of another subject, and the frame at the same index (clamped to its length)."""
    others = [sid for sid in grouped if sid != subject_id]
    their_trials = grouped[others[int(rng.integers(len(others)))]]
    trial = their_trials[int(rng.integers(len(their_trials)))]
    if frame_index is None:
        return trial, None
    return trial, min(frame_index, len(trial.frames) - 1)


def _static_pairs(part: str, trials: list[Trial]) -> tuple[list[tuple[int, int]], np.ndarray]:
    """Every (trial, frame) of one subject, and the index pairs where the part differs (the
    stronger half of them: part change at least the median of the qualifying pairs)."""
    index = [(t, f) for t, trial in enumerate(trials) for f in range(len(trial.frames))]
    states = [trials[t].frames[f].state for t, f in index]
    strength = _pairwise_change(part, states)
    ok = strength >= 1.0
    if part != "neck":
        ok &= _pairwise_head_turn(states) <= REST_POSE_MAX_RAD
    if part not in vocab.ACCESSORY_PARTS:
        worn = [s.accessories for s in states]
        ok &= np.array([[wa == wb for wb in worn] for wa in worn])
    ok &= _pairwise_rest_calmer(part, states)
    np.fill_diagonal(ok, False)
    if ok.any():
        ok &= strength >= np.median(strength[ok])
    return index, np.argwhere(ok)


def _static_pair(index, pairs, rng) -> tuple[int, int, int, int] | None:
    """(trial a, frame a, trial b, frame b), drawn among the pairs, or None when there are none."""
    if not len(pairs):
        return None
    i, j = pairs[int(rng.integers(len(pairs)))]
    return (*index[i], *index[j])


def _sequence_change(part: str, a: Trial, b: Trial) -> float:
    """The part's change between two clips, frame by frame after resampling B to A's length."""
    rows = np.round(np.linspace(0, len(b.frames) - 1, len(a.frames))).astype(int)
    return max(part_change(part, fa.state, b.frames[r].state) for fa, r in zip(a.frames, rows))


def make_instances(trials: list[Trial], modality: str, rng: np.random.Generator, count: int) -> list[EditInstance]:
    """`count` distinct edit instances of `modality` drawn from `trials` with `rng`.

    Raises EditError when the trials cannot give that many (fewer than two subjects, no subject
    with two clips for a sequence modality, or too few distinct pairs where a part changes).
    """
    table = TASK_TABLE[vocab.check_modality(modality)]
    if count < 0:
        raise EditError(f"count must be >= 0, got {count}")
    grouped = _by_subject(list(trials))
    if len(grouped) < 2:
        raise EditError(f"edit instances need trials of at least two subjects (wrong-subject rung); got {len(grouped)}")
    sequence = modality in SEQUENCE_MODALITIES
    eligible = [sid for sid, ts in grouped.items() if len(ts) >= (2 if sequence else 1)]
    if not eligible:
        raise EditError(f"{modality} edits pair two clips of one subject; no subject has two trials")
    parts_list = list(table)
    instances: list[EditInstance] = []
    keys: set[str] = set()
    pair_cache: dict[tuple[str, str], tuple] = {}
    for _ in range(count):
        for _attempt in range(MAX_ATTEMPTS_PER_INSTANCE):
            part = parts_list[int(rng.integers(len(parts_list)))]
            subject_id = eligible[int(rng.integers(len(eligible)))]
            subject_trials = grouped[subject_id]
            if sequence:
                ta, tb = rng.choice(len(subject_trials), size=2, replace=False)
                trial_a, trial_b = subject_trials[int(ta)], subject_trials[int(tb)]
                if modality == "video":
                    same_look = trial_a.frames[0].state.accessories == trial_b.frames[0].state.accessories
                    if not same_look or _sequence_change(part, trial_a, trial_b) < 1.0:
                        continue
                elif trial_a.transcript == trial_b.transcript:
                    continue
                fa = fb = None
                key = f"{modality}-{trial_a.trial_id}-{trial_b.trial_id}-{_slug(part)}"
            else:
                if (subject_id, part) not in pair_cache:
                    pair_cache[subject_id, part] = _static_pairs(part, subject_trials)
                pair = _static_pair(*pair_cache[subject_id, part], rng)
                if pair is None:
                    continue
                ta, fa, tb, fb = pair
                trial_a, trial_b = subject_trials[ta], subject_trials[tb]
                key = f"{modality}-{trial_a.trial_id}-f{fa:04d}-{trial_b.trial_id}-f{fb:04d}-{_slug(part)}"
            if key in keys:
                continue
            a = _target("frame A", trial_a, fa)
            b = _target("frame B", trial_b, fb)
            task = table[part]
            if task == "part":
                task = accessory_task(part, a.state, b.state)
            other_trial, fo = _pick_other(subject_id, fa, grouped, rng)
            instruction = EditInstruction(
                text=instruction_text(modality, part, trial_b.transcript), part=part, task_type=task, modality=modality
            )
            instances.append(
                EditInstance(
                    key=key,
                    instruction=instruction,
                    a=a,
                    b=b,
                    other=_target("wrong subject", other_trial, fo),
                    trial_a=trial_a.trial_id,
                    trial_b=trial_b.trial_id,
                )
            )
            keys.add(key)
            break
        else:
            raise EditError(
                f"found only {len(instances)} of {count} distinct {modality} edit instances in"
                f" {sum(len(t) for t in grouped.values())} trials of {len(grouped)} subjects; add trials or ask for fewer"
            )
    return instances
