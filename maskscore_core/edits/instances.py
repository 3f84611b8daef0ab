"""Edit instances: frame pairs A -> B of one subject where the target part really changed.

The design (docs/design.md, "Edits are frame pairs"): the edit is always "edit the {part} to
match frame B"; frame A is the input, frame B the target, both of one subject. `make_instances` picks such pairs from trials and
writes the instruction with the modality's template and a task type consistent with the part.

A part "really differs" between two body states when at least one of these holds
(`part_change`), each measured only on the part (actions and bones from `maskscore_core.body.parts`):

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

Which (part, task type) each modality produces is its registered `Modality.task_table`
(docs/trials.md shows them); this module gives the parts of those tables that modalities share.
"""

from __future__ import annotations

import re

import numpy as np

from maskscore_core import vocab

from maskscore_core.body import accessories
from maskscore_core.plugin.registration import tasks_of
from maskscore_core.plugin.records import BodyState, EditInstance, EditInstruction, Target, Trial
from maskscore_core.body import parts
from maskscore_core.metric import appearance
from maskscore_core.plugin import manager as plugins

ACTION_DELTA = 0.3
BONE_DELTA_RAD = 0.05
SCALE_DELTA = 0.1
# Appearance thresholds (colours in [0, 1]): a part's albedo differs by ALBEDO_DELTA in some
# channel; the light on it turns by LIGHT_ANGLE_DELTA_RAD (about 9 degrees) or its intensity or
# ambient term changes by LIGHT_LEVEL_DELTA; the backdrop differs by BACKGROUND_DELTA in a channel.
ALBEDO_DELTA = 0.04
LIGHT_ANGLE_DELTA_RAD = 0.15
LIGHT_LEVEL_DELTA = 0.15
BACKGROUND_DELTA = 0.1
REST_POSE_MAX_RAD = 0.02
HEAD_CARRIER_BONES: tuple[str, ...] = ("Neck1", "Neck2", "Head")

# Appearance task types name the kind of change; the backdrop is anchored on the Region part
# the row names (the whole backdrop is compared, docs/metric.md).
APPEARANCE_TEMPLATES: dict[str, str] = {
    "lighting_change": "relight the {part} to match frame B",
    "skin_tone": "change the skin tone of the {part} to match frame B",
    "background_change": "change the background behind the {part} to match frame B",
}

# Task type per part, the table a modality that shows every part starts from. "part" marks
# accessory parts, whose task type (part_add, part_remove, part_replace) depends on what frames A
# and B wear.
STATIC_TASKS: dict[str, str] = {
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
# The parts motion task types edit.
MOTION_PARTS: tuple[str, ...] = ("mouth", "face", "eyebrow", "irides", "neck")
# ANNY's eyes are sockets: a gaze (irides) edit leaves a depth map unchanged and moves surface
# keypoints on the socket by a fraction of a millimetre, so those modalities take this table.
WITHOUT_GAZE: dict[str, str] = {part: task for part, task in STATIC_TASKS.items() if part != "irides"}
# Appearance task types (the design's lighting_change and skin_tone on Surface parts,
# background_change on Region parts) for the modalities whose representation carries a look
# (`with_appearance`). A part's first task type is its geometric one (what an edit of the part is
# when no task type is asked); the appearance ones are made when asked for
# (`make_instances(task_types=...)`) and A and B differ in that look (`appearance_change`). The
# iris takes no skin tone (it has no skin). Add them only to parts the modality already edits
# geometrically: a part whose first type is an appearance one would be made from a geometric
# change by undirected draws, and would join the pool rung 4 picks its wrong part from
# (`ladder.wrong_part`).
APPEARANCE_TASK_TYPES: tuple[str, ...] = ("lighting_change", "skin_tone", "background_change")
APPEARANCE_PARTS: dict[str, tuple[str, ...]] = {
    "lighting_change": ("face", "mouth", "eyebrow", "irides", "nose"),
    "skin_tone": ("face", "mouth", "eyebrow", "nose"),
    "background_change": ("front hair", "back hair", "ears", "neck"),
}


def with_appearance(table: dict[str, str]) -> dict[str, str | tuple[str, ...]]:
    """The table with each part's appearance task types after its geometric one."""
    out: dict[str, str | tuple[str, ...]] = {}
    for part, task in table.items():
        extra = tuple(t for t in APPEARANCE_TASK_TYPES if part in APPEARANCE_PARTS[t])
        out[part] = (task, *extra) if extra else task
    return out




def task_table(modality: str) -> dict[str, str | tuple[str, ...]]:
    """The registered modality's part -> task type(s) table."""
    return dict(_modality(modality).task_table)


def is_sequence(modality: str) -> bool:
    """Whether an edit of `modality` pairs two clips (True) or two frames."""
    return bool(_modality(modality).sequence)


def _modality(name: str):
    return plugins.modality(name)

MAX_ATTEMPTS_PER_INSTANCE = 200


class EditError(ValueError):
    """Edit instances that cannot be made from the given trials (too few subjects, trials, ...)."""


def task_types(modality: str) -> tuple[str, ...]:
    """Every task type `modality` can produce, in vocab order."""
    return _modality(modality).task_types()


def check_part_for(modality: str, part: str) -> str:
    """The part, if `modality` edits it; a clear error otherwise."""
    vocab.check_part(part)
    table = task_table(modality)
    if part not in table:
        raise EditError(f"the {modality} modality does not edit the {part!r} part; it edits: {', '.join(table)}")
    return part


# ---------------------------------------------------------------------------------------------
# How much a part changes between two states.


def _part_actions_and_bones(part: str, shown: tuple[str, ...] | None = None) -> tuple[list[int], list[int]]:
    """Indices of the part's facial actions (those in `shown` alone where given: the actions a
    modality can show, `Modality.shown_actions`) and SOMA bones (empty for accessory parts)."""
    from maskscore_core.body.anny_model import get_body_model

    vocab.check_part(part)
    if part in vocab.ACCESSORY_PARTS:
        return [], []
    body = get_body_model()
    actions = [body.action_index(name) for name in parts.part_actions(part) if shown is None or name in shown]
    bones = [body.bone_index(name) for name in parts.part_bones(part)]
    return actions, bones


def part_change(part: str, a: BodyState, b: BodyState, shown: tuple[str, ...] | None = None) -> float:
    """How strongly `part` changes from a to b, in units of its threshold (>= 1: it differs);
    `shown`: on those facial actions only (`Modality.shown_actions`)."""
    if part in vocab.ACCESSORY_PARTS:
        slot = accessories.slot_for_part(part)
        scale = abs(a.part_scale.get(part, 1.0) - b.part_scale.get(part, 1.0)) / SCALE_DELTA
        return max(float(accessories.worn(a.accessories, slot) != accessories.worn(b.accessories, slot)), scale)
    actions, bones = _part_actions_and_bones(part, shown)
    strength = abs(a.part_scale.get(part, 1.0) - b.part_scale.get(part, 1.0)) / SCALE_DELTA
    if actions:
        strength = max(strength, float(np.abs(a.expression[actions] - b.expression[actions]).max()) / ACTION_DELTA)
    if bones:
        turn = np.linalg.norm(a.pose[bones] - b.pose[bones], axis=1).max()
        strength = max(strength, float(turn) / BONE_DELTA_RAD)
    return strength


def _appearance_features(task: str, part: str, states: list[BodyState]) -> tuple[np.ndarray, np.ndarray]:
    """(N, K) what `task` compares of each state's look on `part`, each column already divided
    by its threshold, and (N,) whether the state has a look at all."""
    has = np.array([s.appearance is not None for s in states])
    rows = []
    for state in states:
        look = state.appearance
        if look is None:
            rows.append(np.zeros(5 if task == "lighting_change" else 3))
        elif task == "skin_tone":
            rows.append(appearance.part_albedo(look, part) / ALBEDO_DELTA)
        elif task == "background_change":
            rows.append(np.asarray(look.background) / BACKGROUND_DELTA)
        else:
            light = appearance.part_light(look, part)
            direction = np.asarray(light.direction) / np.linalg.norm(light.direction)
            rows.append(np.array([*direction, light.intensity / LIGHT_LEVEL_DELTA, light.ambient / LIGHT_LEVEL_DELTA]))
    return np.stack(rows), has


def _pairwise_appearance_change(task: str, part: str, states: list[BodyState]) -> np.ndarray:
    """(N, N) appearance_change between every two states (the same numbers, vectorised)."""
    if task not in APPEARANCE_TASK_TYPES:
        raise EditError(f"{task!r} is not an appearance task type; those are {', '.join(APPEARANCE_TASK_TYPES)}")
    vocab.check_part(part)
    features, has = _appearance_features(task, part, states)
    both = has[:, None] & has[None, :]
    if task == "lighting_change":
        cosine = np.clip(features[:, :3] @ features[:, :3].T, -1.0, 1.0)
        angle = np.arccos(cosine) / LIGHT_ANGLE_DELTA_RAD
        levels = np.abs(features[:, None, 3:] - features[None, :, 3:]).max(axis=2)
        strength = np.maximum(angle, levels)
    else:
        strength = np.abs(features[:, None] - features[None, :]).max(axis=2)
    return np.where(both, strength, 0.0)


def appearance_change(task: str, part: str, a: BodyState, b: BodyState) -> float:
    """How strongly the look `task` edits changes on `part` from a to b, in units of its
    threshold (>= 1: it differs): the part's albedo (skin_tone), the light on it
    (lighting_change: angle and intensity / ambient), the backdrop (background_change). 0 when
    either state has no appearance."""
    return float(_pairwise_appearance_change(task, part, [a, b])[0, 1])


def _pairwise_change(part: str, states: list[BodyState], shown: tuple[str, ...] | None = None) -> np.ndarray:
    """(N, N) part_change between every two states, vectorised (the same numbers as part_change);
    `shown`: on those facial actions only (`_part_actions_and_bones`)."""
    n = len(states)
    scale = np.array([s.part_scale.get(part, 1.0) for s in states])
    strength = np.abs(scale[:, None] - scale[None, :]) / SCALE_DELTA
    if part in vocab.ACCESSORY_PARTS:
        slot = accessories.slot_for_part(part)
        worn = [accessories.worn(s.accessories, slot) for s in states]
        differs = np.array([[worn[i] != worn[j] for j in range(n)] for i in range(n)], dtype=float)
        return np.maximum(strength, differs)
    actions, bones = _part_actions_and_bones(part, shown)
    if actions:
        acts = np.stack([s.expression[actions] for s in states])
        strength = np.maximum(strength, np.abs(acts[:, None] - acts[None, :]).max(axis=2) / ACTION_DELTA)
    if bones:
        rot = np.stack([s.pose[bones] for s in states])
        turn = np.linalg.norm(rot[:, None] - rot[None, :], axis=3).max(axis=2)
        strength = np.maximum(strength, turn / BONE_DELTA_RAD)
    return strength


def _pairwise_rest_calmer(part: str, states: list[BodyState], shown: tuple[str, ...] | None = None) -> np.ndarray:
    """(N, N) bool: every facial action the edit does not ask for changes less than the part's
    own do. Not asked for: the actions outside the part, and where the modality shows only some
    (`shown`), also the part's actions it does not show: a change the modality's candidates
    cannot carry (a lip press under a picture's smile) would otherwise be graded as noise.

    Only for parts that have actions."""
    actions, _ = _part_actions_and_bones(part, shown)
    n = len(states)
    asked = set(actions)  # the part's actions, the shown ones alone where `shown` is given
    rest = [i for i in range(len(parts.FACIAL_ACTION_NAMES)) if i not in asked]
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
    from maskscore_core.body.anny_model import get_body_model

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


def instruction_text(modality: str, part: str, phrase: str = "", task: str | None = None) -> str:
    """The modality's template; appearance task types have their own wording (the modality's
    template says what to match, not what kind of change it is)."""
    registered = _modality(modality)
    if task in APPEARANCE_TEMPLATES:
        return APPEARANCE_TEMPLATES[task].format(part=part)
    return registered.instruction(part, phrase)


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


_tasks_of = tasks_of


def _parts_for_task(modality: str, task: str) -> list[str]:
    """The parts whose edit in `modality` is of type `task`; a clear error when there are none."""
    vocab.check_task_type(task)
    table = task_table(modality)
    found = [part for part, value in table.items() if task in _tasks_of(value)]
    if not found:
        raise EditError(
            f"the {modality} modality cannot produce task type {task!r}; it produces: {', '.join(task_types(modality))}"
        )
    return found


def _task_of(modality: str, part: str, a: BodyState, b: BodyState, requested: str | None) -> str:
    """The task type of editing `part` from a to b: the requested one, checked, or the table's."""
    tasks = _tasks_of(task_table(modality)[part])
    task = accessory_task(part, a, b) if part in vocab.ACCESSORY_PARTS else tasks[0]
    if requested is None:
        return task
    if requested not in tasks or (part in vocab.ACCESSORY_PARTS and task != requested):
        raise EditError(f"a {modality} edit of the {part} from these frames is {task!r}, not the requested {requested!r}")
    return requested


def _static_pairs(part: str, trials: list[Trial], task: str | None = None,
                  shown: tuple[str, ...] | None = None) -> tuple[list[tuple[int, int]], np.ndarray]:  # fmt: skip
    """Every (trial, frame) of one subject, and the index pairs where the part differs (the
    stronger half of them: part change at least the median of the qualifying pairs). For an
    accessory part and a requested task type, only pairs of that type (added, removed, replaced)
    qualify, before the median is taken. `shown`: the facial actions the modality can show
    (`Modality.shown_actions`); the part's change is counted on those, and every other action
    must change less (`_pairwise_rest_calmer`)."""
    index = [(t, f) for t, trial in enumerate(trials) for f in range(len(trial.frames))]
    states = [trials[t].frames[f].state for t, f in index]
    if task in APPEARANCE_TASK_TYPES:
        return index, _appearance_pairs(task, part, states)
    strength = _pairwise_change(part, states, shown)
    ok = strength >= 1.0
    if part != "neck":
        ok &= _pairwise_head_turn(states) <= REST_POSE_MAX_RAD
    if part not in vocab.ACCESSORY_PARTS:
        worn = [s.accessories for s in states]
        ok &= np.array([[wa == wb for wb in worn] for wa in worn])
    elif task is not None:
        slot = accessories.slot_for_part(part)
        worn = [accessories.worn(s.accessories, slot) for s in states]
        ok &= np.array([[wa != wb and _transition(wa, wb) == task for wb in worn] for wa in worn])
    ok &= _pairwise_rest_calmer(part, states, shown)
    np.fill_diagonal(ok, False)
    if ok.any():
        ok &= strength >= np.median(strength[ok])
    return index, np.argwhere(ok)


def _appearance_pairs(task: str, part: str, states: list[BodyState]) -> np.ndarray:
    """Index pairs whose look differs for `task` on `part` (the stronger half of them). No rule
    on the rest: the edit's reference is frame A with only B's look carried over
    (`ladder.ideal_edit`), so nothing else B differs in is asked of a candidate."""
    strength = _pairwise_appearance_change(task, part, states)
    ok = strength >= 1.0
    np.fill_diagonal(ok, False)
    if ok.any():
        ok &= strength >= np.median(strength[ok])
    return np.argwhere(ok)


def _transition(worn_a, worn_b) -> str:
    """part_add, part_remove or part_replace for two different things worn in one slot."""
    return "part_add" if worn_a is None else "part_remove" if worn_b is None else "part_replace"


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


def _sequence_appearance_change(task: str, part: str, a: Trial, b: Trial) -> float:
    """The look's change between two clips (`appearance_change`), frame by frame after
    resampling B to A's length: the largest."""
    rows = np.round(np.linspace(0, len(b.frames) - 1, len(a.frames))).astype(int)
    return max(appearance_change(task, part, fa.state, b.frames[r].state) for fa, r in zip(a.frames, rows))


def _sequence_pair_ok(modality: str, part: str, task: str | None, a: Trial, b: Trial) -> bool:
    """Two clips of one subject make a `modality` edit of `part` (of type `task`, if asked).
    An appearance task type needs the clips to differ in that look (no rule on the rest, as for
    single frames: the reference is clip A with only B's look carried over)."""
    if _modality(modality).pairs_by == "words":
        return a.transcript != b.transcript
    if task in APPEARANCE_TASK_TYPES:
        return _sequence_appearance_change(task, part, a, b) >= 1.0
    first_a, first_b = a.frames[0].state, b.frames[0].state
    if part in vocab.ACCESSORY_PARTS:
        slot = accessories.slot_for_part(part)
        worn_a, worn_b = accessories.worn(first_a.accessories, slot), accessories.worn(first_b.accessories, slot)
        if worn_a == worn_b or (task is not None and _transition(worn_a, worn_b) != task):
            return False
    elif first_a.accessories != first_b.accessories:
        return False
    return _sequence_change(part, a, b) >= 1.0


def _edit_key(modality: str, trial_a: Trial, fa: int | None, trial_b: Trial, fb: int | None, part: str) -> str:
    """The edit's own key: modality, the two clips (and frames, for single-frame modalities), part."""
    if fa is None:
        return f"{modality}-{trial_a.trial_id}-{trial_b.trial_id}-{_slug(part)}"
    return f"{modality}-{trial_a.trial_id}-f{fa:04d}-{trial_b.trial_id}-f{fb:04d}-{_slug(part)}"


def _task_pairs(modality: str, task: str, subject_id: str, part: str, grouped, cache) -> list[tuple]:
    """Every (trial a, frame a, trial b, frame b) of one subject that gives a `task` edit of
    `part` (frames None for sequence modalities); cached in `cache`."""
    ident = (subject_id, part, task)
    if ident not in cache:
        subject_trials = grouped[subject_id]
        if is_sequence(modality):
            n = len(subject_trials)
            cache[ident] = [(ta, None, tb, None) for ta in range(n) for tb in range(n)
                            if ta != tb and _sequence_pair_ok(modality, part, task, subject_trials[ta], subject_trials[tb])]
        else:
            index, pairs = _static_pairs(part, subject_trials, task, _modality(modality).shown_actions)
            cache[ident] = [(*index[int(i)], *index[int(j)]) for i, j in pairs]
    return cache[ident]


def _draw_task(modality: str, task: str, grouped, eligible, cache, keys: set[str], rng):
    """An unused `task` edit, (subject, part, ta, fa, tb, fb), or None when none is left.

    (subject, part) are visited in a random order and the first with an unused pair is taken
    (so it is uniform among those that have one), then a pair uniformly among its unused ones.
    Pairs are computed lazily: a large source costs only the subjects visited."""
    combos = [(sid, part) for sid in eligible for part in _parts_for_task(modality, task)]
    for c in rng.permutation(len(combos)):
        subject_id, part = combos[int(c)]
        pairs = _task_pairs(modality, task, subject_id, part, grouped, cache)
        if not pairs:
            continue
        subject_trials = grouped[subject_id]

        def used(p):
            return _edit_key(modality, subject_trials[p[0]], p[1], subject_trials[p[2]], p[3], part) in keys

        pick = pairs[int(rng.integers(len(pairs)))]
        if used(pick):
            unused = [p for p in pairs if not used(p)]
            if not unused:
                continue
            pick = unused[int(rng.integers(len(unused)))]
        return (subject_id, part, *pick)
    return None


def _draw_any(modality, grouped, eligible, parts_list, pair_cache, rng):
    """One attempt at an edit of any part (drawn uniformly): (subject, part, ta, fa, tb, fb) or None."""
    part = parts_list[int(rng.integers(len(parts_list)))]
    subject_id = eligible[int(rng.integers(len(eligible)))]
    subject_trials = grouped[subject_id]
    if is_sequence(modality):
        ta, tb = rng.choice(len(subject_trials), size=2, replace=False)
        if not _sequence_pair_ok(modality, part, None, subject_trials[int(ta)], subject_trials[int(tb)]):
            return None
        return subject_id, part, int(ta), None, int(tb), None
    if (subject_id, part, None) not in pair_cache:
        pair_cache[subject_id, part, None] = _static_pairs(part, subject_trials, shown=_modality(modality).shown_actions)
    pair = _static_pair(*pair_cache[subject_id, part, None], rng)
    return None if pair is None else (subject_id, part, *pair)


def make_instances(
    trials: list[Trial], modality: str, rng: np.random.Generator, count: int, task_types: list[str] | None = None
) -> list[EditInstance]:
    """`count` distinct edit instances of `modality` drawn from `trials` with `rng`.

    `task_types`, when given (one per instance, as a build's plan asks), fixes each instance's
    task type: its part is drawn among the parts of that type, then a frame pair (or clip pair)
    of that type among every subject's; a task type the modality or the trials cannot produce
    is an EditError naming it, never replaced by another. Without it, the part is drawn
    uniformly and the task type follows it.

    Raises EditError when the trials cannot give that many (fewer than two subjects, no subject
    with two clips for a sequence modality, or too few distinct pairs where a part changes).
    """
    table = task_table(modality)
    if count < 0:
        raise EditError(f"count must be >= 0, got {count}")
    requested = None if task_types is None else list(task_types)
    if requested is not None:
        if len(requested) != count:
            raise EditError(f"asked for {count} {modality} instances but gave {len(requested)} task types")
        for task in dict.fromkeys(requested):
            _parts_for_task(modality, task)
    grouped = _by_subject(list(trials))
    if len(grouped) < 2:
        raise EditError(f"edit instances need trials of at least two subjects (wrong-subject rung); got {len(grouped)}")
    sequence = is_sequence(modality)
    eligible = [sid for sid, ts in grouped.items() if len(ts) >= (2 if sequence else 1)]
    if not eligible:
        raise EditError(f"{modality} edits pair two clips of one subject; no subject has two trials")
    parts_list = list(table)
    instances: list[EditInstance] = []
    keys: set[str] = set()
    pair_cache: dict[tuple, object] = {}
    trial_count = sum(len(t) for t in grouped.values())
    for n in range(count):
        wanted = None if requested is None else requested[n]
        if wanted is None:
            for _attempt in range(MAX_ATTEMPTS_PER_INSTANCE):
                drawn = _draw_any(modality, grouped, eligible, parts_list, pair_cache, rng)
                if drawn is not None:
                    subject_id, part, ta, fa, tb, fb = drawn
                    key = _edit_key(modality, grouped[subject_id][ta], fa, grouped[subject_id][tb], fb, part)
                    if key not in keys:
                        break
            else:
                raise EditError(
                    f"found only {len(instances)} of {count} distinct {modality} edit instances in"
                    f" {trial_count} trials of {len(grouped)} subjects; add trials or ask for fewer"
                )
        else:
            drawn = _draw_task(modality, wanted, grouped, eligible, pair_cache, keys, rng)
            if drawn is None:
                if not any(pair_cache[sid, part, wanted] for sid in eligible for part in _parts_for_task(modality, wanted)):
                    raise EditError(
                        f"no {modality} edit of task type {wanted!r} (parts: {', '.join(_parts_for_task(modality, wanted))})"
                        f" can be made from {trial_count} trials of {len(grouped)} subjects:"
                        " no subject has a frame pair of that type; add subjects or trials"
                    )
                raise EditError(
                    f"found only {len(instances)} of {count} distinct {modality} edit instances ({requested.count(wanted)}"
                    f" of task type {wanted!r}) in {trial_count} trials of {len(grouped)} subjects; add trials or ask for fewer"
                )
            subject_id, part, ta, fa, tb, fb = drawn
            key = _edit_key(modality, grouped[subject_id][ta], fa, grouped[subject_id][tb], fb, part)
        trial_a, trial_b = grouped[subject_id][ta], grouped[subject_id][tb]
        a = _target("frame A", trial_a, fa)
        b = _target("frame B", trial_b, fb)
        task = _task_of(modality, part, a.state, b.state, wanted)
        other_trial, fo = _pick_other(subject_id, fa, grouped, rng)
        instruction = EditInstruction(
            text=instruction_text(modality, part, trial_b.transcript, task), part=part, task_type=task, modality=modality
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
    return instances
