"""The latent-l2 baseline scorer: parameter-space distances to frame B (for appearance edits,
frame B's look on frame A) and to frame A, the look's parameters counted, and clear errors
without parameters."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from maskscore_core.edits import instances as edits

from maskscore_core.plugin import manager as plugins
from maskscore_core.builtins import latent_scorer
from maskscore_core.plugin.context import Context
from maskscore_core.plugin.records import Appearance, Asset, BodyState, Candidate, EditInstance, EditInstruction, Light, Subject, Target


def _action(name: str) -> int:
    from maskscore_core.body.anny_model import get_body_model

    return get_body_model().action_index(name)


def _state(jaw: float, age: float = 0.5, brow: float = 0.0) -> BodyState:
    expression = np.zeros(52)
    expression[_action("jawOpen")] = jaw
    expression[_action("browInnerUp")] = brow
    return BodyState(phenotype={"age": age}, expression=expression)


def _instance() -> EditInstance:
    subject = Subject("s1", {"age": 0.5})
    return EditInstance(
        key="k", instruction=EditInstruction("edit the mouth to match frame B", "mouth", "expression_change", "mesh"),
        a=Target("frame A", subject, (_state(0.0),)), b=Target("frame B", subject, (_state(1.0),)),
    )  # fmt: skip


def _score(instance, candidates, tmp_path):
    return plugins.call("score", "latent-l2", scorer="latent-l2", instance=instance, candidates=candidates,
                        ctx=Context(workdir=tmp_path))  # fmt: skip


def test_scores_follow_parameter_distance_to_b_and_a(tmp_path):
    states = [_state(1.0), _state(0.5), _state(0.0), _state(0.2, age=0.9), _state(1.0, brow=0.6)]
    candidates = [Candidate(f"c{i}", Asset("mesh", None, meta={"state": s}), None) for i, s in enumerate(states)]
    scores = _score(_instance(), candidates, tmp_path)
    follow = [s.instruction_following for s in scores]
    keep = [s.consistency for s in scores]
    assert follow[0] == pytest.approx(1.0) and keep[2] == pytest.approx(1.0)
    assert follow[0] > follow[1] > follow[2]
    assert keep[2] > keep[1] > keep[0]
    assert scores[3].distances["latent_l2_to_a"] == pytest.approx(np.hypot(0.2, 0.4))
    assert scores[4].distances["latent_l2_to_b"] == pytest.approx(0.6)  # the brows, not asked, cost
    assert all(s.overall == pytest.approx((s.instruction_following + s.consistency) / 2) for s in scores)


def test_a_candidate_without_parameters_is_refused(tmp_path):
    candidate = Candidate("model output", Asset("mesh", np.zeros((3, 3))), None)
    with pytest.raises(latent_scorer.LatentScoreError, match="carries no body state"):
        _score(_instance(), [candidate], tmp_path)


def test_other_scorer_names_are_not_answered():
    """The core asks latent-l2's implementation only for the name it registered."""
    from maskscore_core.plugin import manager as plugins

    assert plugins.lookup("scorer", latent_scorer.NAME).plugin == "latent_scorer"
    assert plugins.lookup("scorer", "render-compare").plugin == "render_compare_scorer"
    with pytest.raises(plugins.NoPluginError, match="latent-l3"):
        plugins.call("score", "latent-l3", scorer="latent-l3", instance=None, candidates=[], ctx=None)


def test_the_look_vector_is_the_resolved_look():
    from maskscore_core.metric import appearance

    look = Appearance(skin=(0.5, 0.4, 0.3), light=Light((0.0, 0.0, 2.0), 0.9, 0.2), background=(0.1, 0.2, 0.3))
    # the face's own light equal to the global one (direction of another length) is the same look
    same = attrs.evolve(look, part_light={"face": Light((0.0, 0.0, 1.0), 0.9, 0.2)})
    np.testing.assert_array_equal(latent_scorer.look_vector(look), latent_scorer.look_vector(same))
    regions = len(appearance.PART_PRECEDENCE)  # the parts but the oral cavity (no look parameter), and the skin
    vector = latent_scorer.look_vector(look)
    assert vector.shape == (regions * 8 + 3,)
    np.testing.assert_array_equal(vector[-3:], look.background)
    skin = vector[(regions - 1) * 8 : regions * 8]  # the body outside every part
    np.testing.assert_allclose(skin, [0.5, 0.4, 0.3, 0.0, 0.0, 1.0, 0.9, 0.2])
    tanned = attrs.evolve(look, albedo={"mouth": (0.9, 0.1, 0.1)})
    assert np.count_nonzero(latent_scorer.look_vector(tanned) - vector) == 3  # the mouth's albedo only


def test_a_clip_with_and_without_a_look_is_refused(tmp_path):
    instance = _instance()
    states = (BodyState(appearance=Appearance()), BodyState())
    candidate = Candidate("half lit", Asset("video", None, meta={"states": states}), None)
    with pytest.raises(latent_scorer.LatentScoreError, match="frames with a look .* and frames without"):
        _score(instance, [candidate], tmp_path)


@pytest.fixture(scope="module")
def trials(tmp_path_factory):
    from maskscore_core.trials.anny_source import AnnySourceConfig, generate_trials

    config = AnnySourceConfig(seed=0, subjects=2, trials_per_subject=2, max_words=3, fps=10)
    return generate_trials(config, tmp_path_factory.mktemp("trials"))


@pytest.mark.parametrize("modality", ["mesh", "video"])
@pytest.mark.parametrize("task", edits.APPEARANCE_TASK_TYPES)
def test_the_look_separates_the_right_part_from_the_wrong_one(trials, tmp_path, modality, task):
    """On built-in appearance edits rungs 1-4 share frame A's body, so only the look's parameters
    can order them: rung 1 (B's look on the part) scores strictly above rung 4 (on another part);
    with the looks removed the two tie, which is what the baseline did before it counted them."""
    from maskscore_core.edits.ladder import build_ladder

    (instance,) = edits.make_instances(trials, modality, np.random.default_rng(1), 1, [task])
    candidates = [Candidate(t.label, Asset(modality, None, meta={"states": t.states}), t.rung) for t in build_ladder(instance)]
    scores = _score(instance, candidates, tmp_path)
    overall = [s.overall for s in scores]
    assert scores[0].instruction_following == pytest.approx(1.0)
    assert overall[0] == max(overall) and overall[0] > overall[3], (instance.key, overall)

    def without_look(states):
        return tuple(attrs.evolve(s, appearance=None) for s in states)

    bare = [attrs.evolve(c, asset=Asset(modality, None, meta={"states": without_look(c.asset.meta["states"])})) for c in candidates]
    bare_scores = _score(instance, bare, tmp_path)
    assert bare_scores[0].overall == pytest.approx(bare_scores[3].overall)
    # the same vectors against frame B itself: rung 1 no better than rung 4 (B's look changed on
    # every part), which is why appearance edits are measured against B's look on frame A
    groups = [tuple(instance.a.states), tuple(instance.b.states), *(c.asset.meta["states"] for c in candidates)]
    bodies, looks = latent_scorer.parameter_vectors(groups), latent_scorer.look_vectors(groups, ["-"] * len(groups))

    def overall_against_b(i):
        to_b = np.sqrt(np.sum((bodies[i] - bodies[1]) ** 2) + np.sum((looks[i] - looks[1]) ** 2))
        to_a = np.sqrt(np.sum((bodies[i] - bodies[0]) ** 2) + np.sum((looks[i] - looks[0]) ** 2))
        return (1 / (1 + to_b) + 1 / (1 + to_a)) / 2

    assert overall_against_b(2) <= overall_against_b(5) + 1e-12
