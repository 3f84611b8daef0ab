"""Built-in scorer `latent-l2`: the baseline the design warns against, scoring in parameter space.

Each candidate is reduced to the body parameters that generated it (SOMA pose, translation, the
52 facial actions, phenotype, regional scales, worn accessories, and its look where it has one;
averaged over frames for clips) and compared by plain L2 distance: instruction_following =
1 / (1 + |c - B|), consistency = 1 / (1 + |c - A|), overall = their mean. Nothing is decoded or
rendered, so what the user would see plays no part: a small parameter change with a large
visible effect (or the reverse) is misjudged. `maskscore eval` reports it beside render-compare
to show the difference.

"B" is frame B itself for the geometric task types, and frame B's look carried onto frame A
(`ladder.ideal_edit`, what render-compare measures instruction_following against) for the
appearance task types (`edits.APPEARANCE_TASK_TYPES`). Why the two: a geometric pair is chosen
so that the rest of B stays close to A (`edits`: head bones, accessories, calmer actions), so B
stands for the asked edit; an appearance pair has no rule on the rest, and B's look changed on
every part (a tan, the room light), so against B itself B's colour put on the asked part is no
nearer than on another part: on built-in edits of all three types rung 1 then scored at or
below rung 4 on overall (docs/datasets.md, "The latent baseline"). Not the ideal for every type: the ladder is
built in parameter space towards exactly that reference, so the baseline would then order every
ladder's instruction_following perfectly by construction (docs/datasets.md), which would say nothing about the metric.

The look (`records.Appearance`) enters as its parameters resolved per region (`look_vector`):
for every part of `appearance.PART_PRECEDENCE` and the skin outside them, the albedo and the
light on it (unit direction, intensity, ambient), then the backdrop colour; resolved, so that a
look written two ways (a part's own light equal to the global one) is one vector. It is counted
only when the candidate and both references carry a look, as render-compare's `appearance_l1`.

With only the part's parameters moving, a candidate at distance d from A and D - d from B
scores (1/(1+d) + 1/(1+D-d))/2, which is higher the more unevenly D is split: one more way
parameter distance misjudges an edit (docs/datasets.md has what it does on built-in edits).

A candidate's parameters come from `asset.meta["states"]` / `asset.meta["state"]` when the
modality plugin keeps them, otherwise from its ladder rung (`ladder.build_ladder`, deterministic
from the instance). A candidate with neither (a model output) cannot be scored: it raises.
"""

from __future__ import annotations

import numpy as np

from maskscore_core import Scorer, hookimpl
from maskscore_core.plugin.records import Appearance, BodyState, CandidateScore
from maskscore_core.edits.instances import APPEARANCE_TASK_TYPES
from maskscore_core.edits.ladder import build_ladder, ideal_edit
from maskscore_core.metric import appearance

NAME = "latent-l2"


class LatentScoreError(ValueError):
    """A candidate whose body parameters are unknown."""


@hookimpl
def register_scorers(register):
    register(Scorer(NAME, "distance to the ideal edit in ANNY parameter space"))


def _vector(states, phenotype_keys, scale_keys, accessory_names) -> np.ndarray:
    rows = []
    for state in states:
        rows.append(np.concatenate([
            state.pose.reshape(-1),
            state.translation,
            state.expression,
            [state.phenotype.get(k, 0.5) for k in phenotype_keys],
            [state.part_scale.get(k, 1.0) for k in scale_keys],
            [1.0 if name in state.accessories else 0.0 for name in accessory_names],
        ]))
    return np.mean(rows, axis=0)


def parameter_vectors(groups: list[tuple[BodyState, ...]]) -> list[np.ndarray]:
    """One body parameter vector per group of states, on a layout shared by all groups."""
    every = [s for group in groups for s in group]
    phenotype_keys = sorted({k for s in every for k in s.phenotype})
    scale_keys = sorted({k for s in every for k in s.part_scale})
    accessory_names = sorted({a for s in every for a in s.accessories})
    return [_vector(group, phenotype_keys, scale_keys, accessory_names) for group in groups]


def look_vector(look: Appearance) -> np.ndarray:
    """The look's parameters per region (module docstring): albedo (3), light direction (3, unit),
    intensity and ambient for each part of appearance.PART_PRECEDENCE and the skin, then the
    backdrop colour (3). Not the oral cavity's: its colour is fixed and its light the mouth's, so
    it is no parameter of a look."""
    rows = []
    for region in (*appearance.PART_PRECEDENCE, None):
        if region == appearance.ORAL_CAVITY:
            continue
        light = appearance.part_light(look, region)
        direction = np.asarray(light.direction, dtype=np.float64)
        rows.append(np.concatenate([
            appearance.part_albedo(look, region), direction / np.linalg.norm(direction), [light.intensity, light.ambient],
        ]))  # fmt: skip
    rows.append(np.asarray(look.background, dtype=np.float64))
    return np.concatenate(rows)


def look_vectors(groups: list[tuple[BodyState, ...]], labels: list[str]) -> list[np.ndarray | None]:
    """Per group, its look vector averaged over frames, or None when no frame carries a look; a
    group where some frames carry one and others not is refused (it has no one parameter set)."""
    out = []
    for group, label in zip(groups, labels):
        looks = [s.appearance for s in group]
        if all(look is None for look in looks):
            out.append(None)
        elif any(look is None for look in looks):
            raise LatentScoreError(f"{NAME}: {label} has frames with a look (BodyState.appearance) and frames without")
        else:
            out.append(np.mean([look_vector(look) for look in looks], axis=0))
    return out


def candidate_states(candidate, instance, ladder_cache: dict) -> tuple[BodyState, ...]:
    meta = candidate.asset.meta or {}
    if meta.get("states"):
        return tuple(meta["states"])
    if meta.get("state") is not None:
        return (meta["state"],)
    if candidate.rung is not None:
        if "ladder" not in ladder_cache:
            ladder_cache["ladder"] = {t.rung: t for t in build_ladder(instance)}
        target = ladder_cache["ladder"].get(candidate.rung)
        if target is not None:
            return tuple(target.states)
    raise LatentScoreError(
        f"{NAME}: candidate {candidate.label!r} of {instance.key} carries no body state (asset.meta 'state') and"
        " no ladder rung; parameter-space scoring needs the parameters that generated it"
    )


def reference_b(instance):
    """What instruction_following is measured against (module docstring): frame B, or for the
    appearance task types frame B's look carried onto frame A."""
    return ideal_edit(instance) if instance.instruction.task_type in APPEARANCE_TASK_TYPES else instance.b


@hookimpl
def score(scorer, instance, candidates, ctx):
    cache: dict = {}
    groups = [tuple(instance.a.states), tuple(reference_b(instance).states)]
    groups += [candidate_states(c, instance, cache) for c in candidates]
    labels = ["frame A", "frame B", *(f"candidate {c.label!r}" for c in candidates)]
    bodies, looks = parameter_vectors(groups), look_vectors(groups, labels)
    (a, a_look), (b, b_look) = (bodies[0], looks[0]), (bodies[1], looks[1])
    scores = []
    for body, look in zip(bodies[2:], looks[2:]):
        to_b, to_a = np.sum((body - b) ** 2), np.sum((body - a) ** 2)
        if look is not None and a_look is not None and b_look is not None:
            to_b, to_a = to_b + np.sum((look - b_look) ** 2), to_a + np.sum((look - a_look) ** 2)
        to_b, to_a = float(np.sqrt(to_b)), float(np.sqrt(to_a))
        follow, keep = 1.0 / (1.0 + to_b), 1.0 / (1.0 + to_a)
        scores.append(CandidateScore(follow, keep, 0.5 * (follow + keep), {"latent_l2_to_b": to_b, "latent_l2_to_a": to_a}))
    return scores
