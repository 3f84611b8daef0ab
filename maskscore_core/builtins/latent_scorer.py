"""Built-in scorer `latent-l2`: the baseline the design warns against, scoring in parameter space.

Each candidate is reduced to the body parameters that generated it (SOMA pose, translation, the
52 facial actions, phenotype, regional scales, worn accessories; averaged over frames for clips)
and compared by plain L2 distance: instruction_following = 1 / (1 + |c - B|), consistency =
1 / (1 + |c - A|), overall = their mean. Nothing is decoded or rendered, so what the user would
see plays no part: a small parameter change with a large visible effect (or the reverse) is
misjudged. `maskscore eval` reports it beside render-compare to show the difference.

A candidate's parameters come from `asset.meta["states"]` / `asset.meta["state"]` when the
modality plugin keeps them, otherwise from its ladder rung (`ladder.build_ladder`, deterministic
from the instance). A candidate with neither (a model output) cannot be scored: it raises.
"""

from __future__ import annotations

import numpy as np

from maskscore_core import hookimpl
from maskscore_core.records import BodyState, CandidateScore, PluginInfo

NAME = "latent-l2"


class LatentScoreError(ValueError):
    """A candidate whose body parameters are unknown."""


@hookimpl
def plugin_info():
    return PluginInfo(kind="scorer", provides=(NAME,))


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
    """One parameter vector per group of states, on a layout shared by all groups."""
    every = [s for group in groups for s in group]
    phenotype_keys = sorted({k for s in every for k in s.phenotype})
    scale_keys = sorted({k for s in every for k in s.part_scale})
    accessory_names = sorted({a for s in every for a in s.accessories})
    return [_vector(group, phenotype_keys, scale_keys, accessory_names) for group in groups]


def candidate_states(candidate, instance, ladder_cache: dict) -> tuple[BodyState, ...]:
    meta = candidate.asset.meta or {}
    if meta.get("states"):
        return tuple(meta["states"])
    if meta.get("state") is not None:
        return (meta["state"],)
    if candidate.rung is not None:
        if "ladder" not in ladder_cache:
            from maskscore_core.ladder import build_ladder

            ladder_cache["ladder"] = {t.rung: t for t in build_ladder(instance)}
        target = ladder_cache["ladder"].get(candidate.rung)
        if target is not None:
            return tuple(target.states)
    raise LatentScoreError(
        f"{NAME}: candidate {candidate.label!r} of {instance.key} carries no body state (asset.meta 'state') and"
        " no ladder rung; parameter-space scoring needs the parameters that generated it"
    )


@hookimpl
def score(scorer, instance, candidates, ctx):
    if scorer != NAME:
        return None
    cache: dict = {}
    groups = [tuple(instance.a.states), tuple(instance.b.states)]
    groups += [candidate_states(c, instance, cache) for c in candidates]
    vectors = parameter_vectors(groups)
    a, b = vectors[0], vectors[1]
    scores = []
    for vector in vectors[2:]:
        to_b, to_a = float(np.linalg.norm(vector - b)), float(np.linalg.norm(vector - a))
        follow, keep = 1.0 / (1.0 + to_b), 1.0 / (1.0 + to_a)
        scores.append(CandidateScore(follow, keep, 0.5 * (follow + keep), {"latent_l2_to_b": to_b, "latent_l2_to_a": to_a}))
    return scores
