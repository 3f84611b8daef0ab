"""Subjects of the built-in ANNY source: phenotypes, voices and accessories drawn from a seed.

Subjects are drawn uniformly from a box of ANNY's phenotype space that keeps them adult and
ordinary (`PHENOTYPE_RANGES`), by rejection sampling so that every two subjects are at least
`min_distance` apart (Euclidean distance on the six phenotype values, each in [0, 1]). That
gap is what makes the ladder's "wrong subject" rung a visibly different person.

Voices are dealt without replacement (`next_voice`): a subject speaks in a voice no earlier
subject in the round has, preferably one the speaker matcher tells from theirs, and of its sex
(ANNY's gender runs from 0, male, to 1, female). Only once every voice is taken does a new round
start, so subjects share voices only when there are more subjects than voices (speech tells
subjects apart only by voice).

`Subject.accessories` is the subject's usual look: each slot (glasses, hat, earrings, scarf)
worn with probability 1/2, in a random variant. Trials wear it, except trials whose look change
is the accessories (`changed_accessories`, see `trials.clips`), so two trials of one subject can
differ by an accessory added, removed or replaced (the Part group of task types).
"""

from __future__ import annotations

import numpy as np

from maskscore_core.body import accessories
from maskscore_core.plugin.records import Subject
from maskscore_core.speech.synthesis import CONFUSABLE_VOICES, FEMALE_VOICES, MALE_VOICES, VOICES

# Phenotype box (ANNY labels, values in [0, 1]): adults (age 0.45..0.9 is about 22..70 years),
# no extreme bodies.
PHENOTYPE_RANGES: dict[str, tuple[float, float]] = {
    "gender": (0.0, 1.0),
    "age": (0.45, 0.9),
    "muscle": (0.2, 0.8),
    "weight": (0.2, 0.8),
    "height": (0.25, 0.75),
    "proportions": (0.25, 0.75),
}
DEFAULT_MIN_DISTANCE = 0.3
MAX_DRAWS_PER_SUBJECT = 1000


class SubjectError(ValueError):
    """Subjects that cannot be drawn as asked (too many for the required distance, bad count)."""


def phenotype_vector(phenotype: dict[str, float]) -> np.ndarray:
    """The phenotype as a vector in PHENOTYPE_RANGES' label order (ANNY's default 0.5 if missing)."""
    return np.array([float(phenotype.get(label, 0.5)) for label in PHENOTYPE_RANGES])


def phenotype_distance(a: Subject, b: Subject) -> float:
    return float(np.linalg.norm(phenotype_vector(a.phenotype) - phenotype_vector(b.phenotype)))


def next_voice(rng: np.random.Generator, female: bool, taken: list[str]) -> str:
    """The voice of the next subject, given the voices of the subjects before it (`taken`).

    Drawn among the voices not taken in the current round (rounds of len(VOICES) subjects), so
    while there are no more subjects than voices no two subjects share one. Preferred, in order:
    a voice of the subject's sex that the speaker matcher tells from every voice in the round (not
    in CONFUSABLE_VOICES with one of them), such a voice of the other sex, then a voice of the
    subject's sex, then any: telling the wrong subject apart (ladder rung 5) comes before a voice
    that matches the body's sex."""
    in_round = set(taken[len(taken) - len(taken) % len(VOICES) :])
    own, other = (FEMALE_VOICES, MALE_VOICES) if female else (MALE_VOICES, FEMALE_VOICES)

    def apart(voice: str) -> bool:
        return all(frozenset({voice, t}) not in CONFUSABLE_VOICES for t in in_round)

    for pool, needs_apart in ((own, True), (other, True), (own, False), (other, False)):
        choices = [voice for voice in pool if voice not in in_round and (apart(voice) or not needs_apart)]
        if choices:
            return choices[int(rng.integers(len(choices)))]
    raise AssertionError("a round holds len(VOICES) subjects, so a voice is always free")


def draw_subjects(rng: np.random.Generator, count: int, min_distance: float = DEFAULT_MIN_DISTANCE) -> list[Subject]:
    """`count` subjects, every two at least `min_distance` apart in phenotype space.

    Subjects are drawn one after another, so asking for more subjects keeps the first ones."""
    if count < 1:
        raise SubjectError(f"need at least one subject, got {count}")
    low = np.array([r[0] for r in PHENOTYPE_RANGES.values()])
    high = np.array([r[1] for r in PHENOTYPE_RANGES.values()])
    chosen: list[np.ndarray] = []
    subjects: list[Subject] = []
    for index in range(count):
        for _ in range(MAX_DRAWS_PER_SUBJECT):
            candidate = np.round(rng.uniform(low, high), 4)
            if all(np.linalg.norm(candidate - other) >= min_distance for other in chosen):
                break
        else:
            raise SubjectError(
                f"could not place subject {index + 1} of {count} at least {min_distance} away from the others"
                f" after {MAX_DRAWS_PER_SUBJECT} draws; ask for fewer subjects or a smaller min_distance"
            )
        chosen.append(candidate)
        phenotype = {label: float(value) for label, value in zip(PHENOTYPE_RANGES, candidate)}
        voice = next_voice(rng, phenotype["gender"] > 0.5, [s.voice for s in subjects])
        usual = []
        for variants in accessories.VARIANTS.values():
            names = sorted(variants)
            pick = int(rng.integers(2 * len(names)))  # half the draws: not worn
            if pick < len(names):
                usual.append(names[pick])
        subjects.append(
            Subject(subject_id=f"anny-s{index:03d}", phenotype=phenotype, voice=voice, accessories=tuple(sorted(usual)))
        )
    return subjects


def changed_accessories(subject: Subject, rng: np.random.Generator) -> tuple[str, ...]:
    """The usual look with one or two slots changed (each to absent, or to another variant, or put
    on when absent), for a trial whose look change is the accessories."""
    slots = sorted(accessories.VARIANTS)
    changed = set(rng.choice(slots, size=int(rng.integers(1, 3)), replace=False).tolist())
    worn = []
    for slot in slots:
        current = accessories.worn(subject.accessories, slot)
        if slot in changed:
            states = [None, *sorted(accessories.VARIANTS[slot])]
            states.remove(current)
            current = states[int(rng.integers(len(states)))]
        if current is not None:
            worn.append(current)
    return tuple(sorted(worn))
