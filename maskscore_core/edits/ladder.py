"""The five-rung candidate ladder of docs/design.md, built in body-state (and transcript) space.

| rung | candidate                               | how                                              |
|------|-----------------------------------------|--------------------------------------------------|
| 1    | frame B's representation for the part  | A with the part's values taken from B            |
| 2    | interpolation between A and B           | the part moved INTERPOLATION_T (0.5) of the way  |
| 3    | partial edit (wrong severity)           | the part moved PARTIAL_T (0.2) of the way        |
| 4    | wrong part edited                       | another part the modality edits that shares no   |
|      |                                         | action, bone or slot with it, its region apart if|
|      |                                         | one is (the neck only when nothing else is left):|
|      |                                         | B's values there when B really changes it, else  |
|      |                                         | its stock edit                                   |
| 5    | wrong subject                           | `instance.other`: another subject's frame/clip,  |
|      |                                         | seen through frame A's camera (`framed_on`)      |

Rung 4 is always a real edit of another part (`wrong_part`, `stock_edit`): frame pairs are drawn
so that the rest changes less than the part, so B's values on another part are often A's own,
and a part the modality cannot show (a pose has no brows) would leave the candidate equal to
frame A: a rung that "does nothing" instead of "edits the wrong part". A modality that edits no
other part (speech and text move only the mouth) makes no rung 4: its ladder levels drop it
(`dataset.protocol`), and `build_ladder` makes the rungs they keep.

"The part's values" are its facial actions and SOMA bones (`parts.part_actions`,
`parts.part_bones`), its regional scale (`BodyState.part_scale`) and, for accessory parts, the
worn accessory; for the appearance task types (lighting_change, skin_tone, background_change)
they are the part's look instead: its albedo, the light on it, or the backdrop colour
(`apply_look`; shape stays A's), and rung 4 makes the change asked for the part on the largest
part of its group that shares no vertex with it (`wrong_look_part`, `misapply_look`). Actions,
bone axis-angles, scales, colours and lights are interpolated linearly. A worn
accessory cannot be half there, so for accessory parts the in-between rungs use its size as the
proxy: an added accessory appears at scale t, a removed one stays at scale 1 - t, a replaced one
is A's at scale 1 - t for t < 0.5 and B's at scale t from 0.5 on.

Clips (video, speech, text) are edited frame by frame after resampling one clip to the other's
length (nearest frame by relative time): onto B's timeline when the part is the mouth (the words
change, so the timing is B's), onto A's otherwise. When the mouth of a clip is edited the
transcript follows a phrase ladder: B's phrase (1); the time mix at PHRASE_INTERPOLATION_T (2:
B's words for the first two thirds of B's spoken duration, then A's for the last third of A's,
`mix_phrase`); the time mix at PHRASE_PARTIAL_T (3: a third of B's words); A's phrase with
another part changed (4); the other subject's phrase and voice (5). The phrase mixes are spaced
evenly rather than at 0.5 and 0.2: a mix is cut at word boundaries, and a fifth of a 4-6 word
command is often one short word whose mouth shapes are A's own ("when" for "will"), which left
rung 3 indistinguishable from A's words.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from maskscore_core import vocab

from maskscore_core.body import accessories
from maskscore_core.edits.instances import APPEARANCE_PARTS, APPEARANCE_TASK_TYPES, is_sequence, part_change, task_table
from maskscore_core.plugin.records import Appearance, BodyState, EditInstance, Light, Target
from maskscore_core.body import parts
from maskscore_core.dataset.protocol import levels_for, rungs_of
from maskscore_core.edits import instances as edits
from maskscore_core.metric import appearance

INTERPOLATION_T = 0.5
PARTIAL_T = 0.2
PHRASE_INTERPOLATION_T = 2 / 3  # share of B's words in rung 2 of a phrase ladder
PHRASE_PARTIAL_T = 1 / 3  # and in rung 3


class LadderError(ValueError):
    """An instance the ladder cannot be built for (unknown or inactive part, no other subject)."""


def _check_part(part: str) -> str:
    vocab.check_part(part)
    if part not in vocab.ACTIVE_FACE_PARTS and part not in vocab.ACCESSORY_PARTS:
        raise LadderError(
            f"part {part!r} is not edited by the built-in data; parts: "
            f"{', '.join(vocab.ACTIVE_FACE_PARTS + vocab.ACCESSORY_PARTS)}"
        )
    return part


def _part_indices(part: str) -> tuple[list[int], list[int]]:
    from maskscore_core.body.anny_model import get_body_model

    if part in vocab.ACCESSORY_PARTS:
        return [], []
    body = get_body_model()
    return (
        [body.action_index(name) for name in parts.part_actions(part)],
        [body.bone_index(name) for name in parts.part_bones(part)],
    )


def _with_scale(scales: dict[str, float], part: str, value: float) -> dict[str, float]:
    out = {k: v for k, v in scales.items() if k != part}
    if value != 1.0:
        out[part] = float(value)
    return dict(sorted(out.items()))


def _accessory_step(a: BodyState, b: BodyState, part: str, t: float) -> tuple[tuple[str, ...], float]:
    """What is worn in the part's slot, and at which scale, t of the way from A to B."""
    slot = accessories.slot_for_part(part)
    worn_a, worn_b = accessories.worn(a.accessories, slot), accessories.worn(b.accessories, slot)
    scale_a, scale_b = a.part_scale.get(part, 1.0), b.part_scale.get(part, 1.0)
    if t >= 1.0:
        wear, scale = worn_b, scale_b
    elif worn_a == worn_b:
        wear, scale = worn_a, scale_a + t * (scale_b - scale_a)
    elif worn_a is None:
        wear, scale = worn_b, t * scale_b
    elif worn_b is None or t < 0.5:
        wear, scale = worn_a, (1 - t) * scale_a
    else:
        wear, scale = worn_b, t * scale_b
    others = tuple(name for name in a.accessories if accessories.slot_of(name) != slot)
    return tuple(sorted(others + ((wear,) if wear else ()))), scale


def apply_part(a: BodyState, b: BodyState, part: str, t: float) -> BodyState:
    """A's state with `part` moved fraction t of the way to B's (t = 1: B's part on A)."""
    _check_part(part)
    if part in vocab.ACCESSORY_PARTS:
        worn, scale = _accessory_step(a, b, part, t)
        return attrs.evolve(a, accessories=worn, part_scale=_with_scale(a.part_scale, part, scale))
    actions, bones = _part_indices(part)
    expression = a.expression.copy()
    expression[actions] = a.expression[actions] + t * (b.expression[actions] - a.expression[actions])
    pose = a.pose.copy()
    pose[bones] = a.pose[bones] + t * (b.pose[bones] - a.pose[bones])
    if t >= 1.0:  # exactly B's values, not a rounding of them
        expression[actions] = b.expression[actions]
        pose[bones] = b.pose[bones]
    scale_a, scale_b = a.part_scale.get(part, 1.0), b.part_scale.get(part, 1.0)
    scale = scale_b if t >= 1.0 else scale_a + t * (scale_b - scale_a)
    return attrs.evolve(a, expression=expression, pose=pose, part_scale=_with_scale(a.part_scale, part, scale))


def _mix(a, b, t: float) -> tuple[float, ...]:
    """Linear interpolation of two tuples of numbers; exactly b at t >= 1."""
    if t >= 1.0:
        return tuple(float(x) for x in b)
    return tuple(float(x + t * (y - x)) for x, y in zip(a, b))


def _mix_light(a: Light, b: Light, t: float) -> Light:
    """A light t of the way from a to b: direction, intensity and ambient interpolated linearly
    (directions as given; shading normalises them). Exactly b at t >= 1."""
    if t >= 1.0:
        return b
    direction = _mix(a.direction, b.direction, t)
    if math.hypot(*direction) < 1e-6:  # opposite directions half way: keep a's side
        direction = a.direction
    return Light(direction, *_mix((a.intensity, a.ambient), (b.intensity, b.ambient), t))


def _looks(a: BodyState, b: BodyState, task: str) -> tuple[Appearance, Appearance]:
    if a.appearance is None or b.appearance is None:
        which = "frame A" if a.appearance is None else "frame B"
        raise LadderError(f"a {task} edit needs both frames to carry an appearance; {which} has none")
    return a.appearance, b.appearance


def apply_look(a: BodyState, b: BodyState, part: str, t: float, task: str) -> BodyState:
    """A's state with the look `task` edits moved fraction t of the way to B's: the part's albedo
    (skin_tone), the light on the part (lighting_change, set as the part's own light), or the
    backdrop colour (background_change). Shape and everything else stay A's."""
    _check_part(part)
    look_a, look_b = _looks(a, b, task)
    if task == "skin_tone":
        colour = _mix(appearance.part_albedo(look_a, part), appearance.part_albedo(look_b, part), t)
        look = attrs.evolve(look_a, albedo={**look_a.albedo, part: colour})
    elif task == "lighting_change":
        light = _mix_light(appearance.part_light(look_a, part), appearance.part_light(look_b, part), t)
        look = attrs.evolve(look_a, part_light={**look_a.part_light, part: light})
    elif task == "background_change":
        look = attrs.evolve(look_a, background=_mix(look_a.background, look_b.background, t))
    else:
        raise LadderError(f"{task!r} is not an appearance task type; those are {', '.join(APPEARANCE_TASK_TYPES)}")
    return attrs.evolve(a, appearance=look)


def wrong_look_part(part: str, task: str) -> str:
    """The part rung 4 of an appearance edit changes instead: among the parts of the task's group
    that share no vertex with `part` (else among every active face part), the largest (most
    vertices; vocab order on ties), so the wrong change is plainly visible."""
    own = set(parts.part_vertex_ids(_check_part(part)).tolist())
    for pool in (APPEARANCE_PARTS[task], vocab.ACTIVE_FACE_PARTS):
        candidates = [p for p in vocab.PARTS if p in pool and p != part]
        candidates = [p for p in candidates if not own & set(parts.part_vertex_ids(p).tolist())]
        if candidates:
            return max(candidates, key=lambda p: (len(parts.part_vertex_ids(p)), -vocab.PARTS.index(p)))
    raise LadderError(f"no part shares no vertex with {part!r}; cannot build the wrong-part rung")


def misapply_look(a: BodyState, b: BodyState, part: str, wrong: str, task: str) -> BodyState:
    """Rung 4 of an appearance edit: the change asked for `part` made on `wrong` instead. B's
    albedo of the part becomes wrong's albedo (skin_tone), B's light on the part lights wrong
    (lighting_change), B's backdrop colour paints wrong (background_change); A keeps the rest."""
    look_a, look_b = _looks(a, b, task)
    if task == "skin_tone":
        look = attrs.evolve(look_a, albedo={**look_a.albedo, wrong: appearance.part_albedo(look_b, part)})
    elif task == "lighting_change":
        look = attrs.evolve(look_a, part_light={**look_a.part_light, wrong: appearance.part_light(look_b, part)})
    else:
        look = attrs.evolve(look_a, albedo={**look_a.albedo, wrong: look_b.background})
    return attrs.evolve(a, appearance=look)


def _footprint(part: str) -> set[str]:
    """What editing `part` touches: its actions, bones, accessory slot, and the part itself."""
    if part in vocab.ACCESSORY_PARTS:
        return {f"slot:{accessories.slot_for_part(part)}", f"part:{part}"}
    return (
        {f"action:{n}" for n in parts.part_actions(part)}
        | {f"bone:{n}" for n in parts.part_bones(part)}
        | {f"part:{part}"}
    )


class NoWrongPart(LadderError):
    """The modality edits no part that shares nothing with the edited one: rung 4 cannot be made
    (its ladder levels must drop it, `dataset.protocol`)."""


def _apart(part: str, other: str) -> bool:
    """Whether editing `other` leaves `part`'s comparison region alone: their regions (each part
    with what its own actions deform, `parts.region_vertex_ids`) share no vertex. A sneer moves
    the brows' region, so a nose edit would partly do an eyebrow edit's work."""
    return not np.intersect1d(parts.region_vertex_ids(part), parts.region_vertex_ids(other)).size


def wrong_part_pool(part: str, modality: str) -> list[str]:
    """The parts rung 4 of a `part` edit in `modality` may edit, whatever frames A and B are
    (`wrong_part` picks one by what B changes): [] when there is none."""
    _check_part(part)
    target = _footprint(part)
    pool = [p for p in vocab.PARTS if p in task_table(modality) and p != part and not (_footprint(p) & target)]
    pool = [p for p in pool if p != "neck"] or pool
    return [p for p in pool if _apart(part, p)] or pool


def wrong_part(part: str, modality: str, a: BodyState, b: BodyState) -> tuple[str, bool]:
    """The part rung 4 edits instead, and whether it takes B's values there (else `stock_edit`).

    Only parts the modality itself edits (its task table: what its representation can show)
    that share nothing with `part`, those whose comparison region is apart from the part's first
    (`_apart`); the neck only when nothing else is left (its bones carry the head, so every other
    part with it). Among those, the one changing most from A to B (vocab order on ties) takes B's
    values where it really changes (`part_change` >= 1), else its stock edit, so rung 4 is always
    a real edit. NoWrongPart when the modality edits no such part."""
    pool = wrong_part_pool(part, modality)
    if not pool:
        raise NoWrongPart(f"the {modality} modality edits no part that shares nothing with the {part!r}:"
                          " rung 4 (wrong part) cannot be made; its ladder levels must drop it")
    changes = [part_change(p, a, b) for p in pool]
    best = max(changes)
    return pool[changes.index(best)], best >= 1.0


# The stock edit of a part (rung 4 where B does not change the wrong part): for parts moved by
# facial actions, these actions (a gaze up, a jaw opening, a brow raise, a sneer; a part's own
# opposing actions moved together would cancel) move by STOCK_STEPS x ACTION_DELTA towards the
# farther end of [0, 1]; a regional scale changes by STOCK_STEPS x SCALE_DELTA; an accessory slot
# toggles (removed, or its first variant put on): twice each threshold, plainly an edit, within
# what the trials do. Bones (the neck's two) turn together by STOCK_STEPS x BONE_DELTA_RAD about
# their local up axis, shared evenly: each at its threshold, about the head turn the trials' clips
# reach (a larger turn swings the whole head and scored below another subject's pose).
STOCK_STEPS = 2.0
STOCK_ACTIONS: dict[str, tuple[str, ...]] = {
    "irides": ("eyeLookUpLeft", "eyeLookUpRight"),
    "mouth": ("jawOpen",),
    "eyebrow": ("browInnerUp", "browOuterUpLeft", "browOuterUpRight"),
    "nose": ("noseSneerLeft", "noseSneerRight"),
    "face": ("jawOpen", "browInnerUp"),
    "eyewhite": ("eyeWideLeft", "eyeWideRight"),
    "eyelash": ("eyeBlinkLeft", "eyeBlinkRight"),
}


def stock_edit(a: BodyState, part: str) -> BodyState:
    """A's state with `part` edited by a fixed, deterministic amount (see STOCK_ACTIONS)."""
    from maskscore_core.body.anny_model import get_body_model

    _check_part(part)
    if part in vocab.ACCESSORY_PARTS:
        slot = accessories.slot_for_part(part)
        others = tuple(n for n in a.accessories if accessories.slot_of(n) != slot)
        worn = () if accessories.worn(a.accessories, slot) else (next(iter(sorted(accessories.VARIANTS[slot]))),)
        return attrs.evolve(a, accessories=tuple(sorted(others + worn)), part_scale=_with_scale(a.part_scale, part, 1.0))
    body = get_body_model()
    expression, pose = a.expression.copy(), a.pose.copy()
    scale = a.part_scale.get(part, 1.0)
    if part in STOCK_ACTIONS:
        step = STOCK_STEPS * edits.ACTION_DELTA
        for i in (body.action_index(name) for name in STOCK_ACTIONS[part]):
            expression[i] = min(1.0, expression[i] + step) if expression[i] < 0.5 else max(0.0, expression[i] - step)
    elif parts.part_bones(part):
        bones = parts.part_bones(part)
        for name in bones:  # SOMA's local x is up: a turn, shared evenly by the part's bones
            pose[body.bone_index(name), 0] += STOCK_STEPS * edits.BONE_DELTA_RAD / len(bones)
    else:  # a region (hair, ears): its scale is its edit
        step = STOCK_STEPS * edits.SCALE_DELTA
        scale = scale + step if scale <= 1.0 else scale - step
    return attrs.evolve(a, expression=expression, pose=pose, part_scale=_with_scale(a.part_scale, part, scale))


def mix_phrase(phrase_a: str, phrase_b: str, t: float) -> str:
    """The utterance t of the way from A's to B's in time: B's words for the first fraction t of
    B's spoken duration, then A's words for the last fraction 1 - t of A's.

    Mouth motion is compared in time, so this is what "interpolation" means for what is said: the
    mix moves the mouth as B does for a share t of the time and as A does for the rest. Cuts fall
    on the word boundary nearest to t of each phrase's duration (default phone durations,
    `speech.phonemes.word_boundaries_s`), so t = 1 gives B's phrase and t = 0 A's; for 0 < t < 1
    the mix keeps at least one of B's words and one of A's (it is an edit, and not all of it).
    Neighbouring values of t can give the same words when a phrase has few word boundaries.
    """
    from maskscore_core.speech.phonemes import word_boundaries_s

    if not 0.0 <= t <= 1.0:
        raise LadderError(f"a phrase mix needs 0 <= t <= 1, got {t}")
    words_a, words_b = phrase_a.split(), phrase_b.split()
    if t >= 1.0:
        return " ".join(words_b)
    if t <= 0.0:
        return " ".join(words_a)

    def cut(phrase: str, count: int, share: float) -> int:
        """How many of the phrase's first words end nearest to `share` of its duration."""
        ends = [0.0] + word_boundaries_s(phrase)
        target = share * ends[-1]
        return min(range(1, count), key=lambda k: (abs(ends[k] - target), k)) if count > 1 else count

    k_b = cut(phrase_b, len(words_b), t)
    k_a = cut(phrase_a, len(words_a), t)
    return " ".join(words_b[:k_b] + words_a[k_a:])


def _resample(states: tuple[BodyState, ...], length: int) -> list[BodyState]:
    rows = np.round(np.linspace(0, len(states) - 1, length)).astype(int)
    return [states[r] for r in rows]


def _rung_maker(instance: EditInstance):
    """(part, rung(number, label, edit_part, t, transcript) -> Target, the four phrases, the
    fractions t of rungs 2 and 3). t None: the part's `stock_edit` instead of B's values."""
    part = _check_part(instance.instruction.part)
    modality = instance.instruction.modality
    a, b = instance.a, instance.b
    task = instance.instruction.task_type
    sequence = is_sequence(modality) and (len(a.states) > 1 or len(b.states) > 1)
    # A clip's mouth edit changes what is said (B's timeline and words); a look edit of the mouth
    # (its colour or light) keeps clip A's speech.
    phrase_ladder = sequence and part == "mouth" and task not in APPEARANCE_TASK_TYPES
    if sequence:
        length = len(b.states) if phrase_ladder else len(a.states)
        states_a, states_b = _resample(a.states, length), _resample(b.states, length)
    else:
        states_a, states_b = [a.state], [b.state]

    def change(sa: BodyState, sb: BodyState, edit_part: str, t: float | None) -> BodyState:
        if t is None:  # rung 4 where B leaves the wrong part as it is
            return stock_edit(sa, edit_part)
        if task not in APPEARANCE_TASK_TYPES:
            return apply_part(sa, sb, edit_part, t)
        if edit_part == part:
            return apply_look(sa, sb, part, t, task)
        return misapply_look(sa, sb, part, edit_part, task)

    def rung(number: int, label: str, edit_part: str, t: float | None, transcript: str) -> Target:
        states = [change(sa, sb, edit_part, t) for sa, sb in zip(states_a, states_b)]
        fps = b.fps if phrase_ladder else a.fps
        return Target(label=label, subject=a.subject, states=states, transcript=transcript, fps=fps, rung=number,
                      framed_on=a.framed_on, framed_part=a.framed_part)  # fmt: skip

    if phrase_ladder:
        phrases = [
            b.transcript,
            mix_phrase(a.transcript, b.transcript, PHRASE_INTERPOLATION_T),
            mix_phrase(a.transcript, b.transcript, PHRASE_PARTIAL_T),
            a.transcript,
        ]
    else:
        phrases = [a.transcript] * 4
    # The in-between rungs' fractions: a clip's mouth edit moves its body states as far as its words.
    steps = (PHRASE_INTERPOLATION_T, PHRASE_PARTIAL_T) if phrase_ladder else (INTERPOLATION_T, PARTIAL_T)
    return part, rung, phrases, steps


def ideal_edit(instance: EditInstance) -> Target:
    """Frame B's part carried onto frame A: exactly what the instruction asks for (rung 1).

    The render-compare scorer measures instruction_following against it, so that whatever else
    differs between frames A and B (a blink, a slight head motion) is not asked of a candidate.
    """
    part, rung, phrases, _steps = _rung_maker(instance)
    return rung(1, "frame B's part on frame A", part, 1.0, phrases[0])


def edit_fraction(instance: EditInstance, t: float) -> Target:
    """Frame A with the part moved a fraction t of the way to frame B's (t = 1: `ideal_edit`,
    t = 0: frame A's part); a clip's mouth edit also says the words mixed at t, as rungs 2 and 3
    do. benchmarks/bench_calibration.py sweeps t."""
    part, rung, phrases, _steps = _rung_maker(instance)
    if phrases[0] == phrases[3] or t <= 0 or t >= 1:  # the same words all along, or either end's
        phrase = phrases[0] if t >= 1 else phrases[3]
    else:
        phrase = mix_phrase(instance.a.transcript, instance.b.transcript, t)
    return rung(None, f"{part} {t:g} of the way to frame B", part, t, phrase)


def ladder_rungs(modality: str) -> list[int]:
    """The rungs `modality` makes: all five but those its ladder levels drop (`dataset.protocol`)."""
    return rungs_of(levels_for(modality))


def build_ladder(instance: EditInstance, rungs: list[int] | None = None) -> list[Target]:
    """The rung Targets of `instance`, best first: `rungs` (default: those its modality makes,
    `ladder_rungs`) of rung 1 .. rung 5."""
    if instance.other is None:
        raise LadderError(f"instance {instance.key!r} has no other subject; the wrong-subject rung needs one")
    modality = instance.instruction.modality
    rungs = ladder_rungs(modality) if rungs is None else list(rungs)
    part, rung, phrases, steps = _rung_maker(instance)
    makers = {
        1: lambda: rung(1, "rung 1: frame B's part", part, 1.0, phrases[0]),
        2: lambda: rung(2, "rung 2: interpolation", part, steps[0], phrases[1]),
        3: lambda: rung(3, "rung 3: partial edit", part, steps[1], phrases[2]),
        4: lambda: _wrong_part_rung(instance, rung, phrases[3]),
        # seen through frame A's camera, as an editor's output is (`Target.framed_on`)
        5: lambda: attrs.evolve(instance.other, label="rung 5: wrong subject", rung=5,
                                framed_on=dict(instance.a.framing_phenotype)),  # fmt: skip
    }
    unknown = [r for r in rungs if r not in makers]
    if unknown:
        raise LadderError(f"rungs {unknown} are not on the ladder (1-5)")
    return [makers[r]() for r in sorted(rungs)]


def _wrong_part_rung(instance: EditInstance, rung, transcript: str) -> Target:
    """Rung 4: the asked change made on another part (appearance task types: `wrong_look_part`),
    or B's values on another part, or that part's stock edit (`wrong_part`)."""
    part, task = instance.instruction.part, instance.instruction.task_type
    if task in APPEARANCE_TASK_TYPES:
        wrong = wrong_look_part(part, task)
        return rung(4, f"rung 4: wrong part ({wrong})", wrong, 1.0, transcript)
    wrong, from_b = wrong_part(part, instance.instruction.modality, instance.a.state, instance.b.state)
    if from_b:
        return rung(4, f"rung 4: wrong part ({wrong})", wrong, 1.0, transcript)
    return rung(4, f"rung 4: wrong part, stock edit ({wrong})", wrong, None, transcript)
