"""The latent-l2 baseline scorer: parameter-space distances, and a clear error without parameters."""

from __future__ import annotations

import numpy as np
import pytest

from maskscore_core import plugins
from maskscore_core.builtins import latent_scorer
from maskscore_core.context import Context
from maskscore_core.records import Asset, BodyState, Candidate, EditInstance, EditInstruction, Subject, Target


def _state(mouth: float, age: float = 0.5) -> BodyState:
    expression = np.zeros(52)
    expression[0] = mouth
    return BodyState(phenotype={"age": age}, expression=expression)


def _instance() -> EditInstance:
    subject = Subject("s1", {"age": 0.5})
    return EditInstance(
        key="k", instruction=EditInstruction("edit the mouth to match frame B", "mouth", "expression_change", "mesh"),
        a=Target("frame A", subject, (_state(0.0),)), b=Target("frame B", subject, (_state(1.0),)),
    )


def test_scores_follow_parameter_distance_to_b_and_a(tmp_path):
    states = [_state(1.0), _state(0.5), _state(0.0), _state(0.2, age=0.9)]
    candidates = [Candidate(f"c{i}", Asset("mesh", None, meta={"state": s}), None) for i, s in enumerate(states)]
    scores = plugins.call("score", "latent-l2", scorer="latent-l2", instance=_instance(), candidates=candidates,
                          ctx=Context(workdir=tmp_path))
    follow = [s.instruction_following for s in scores]
    keep = [s.consistency for s in scores]
    assert follow[0] == pytest.approx(1.0) and keep[2] == pytest.approx(1.0)
    assert follow[0] > follow[1] > follow[2]
    assert keep[2] > keep[1] > keep[0]
    assert scores[3].distances["latent_l2_to_a"] == pytest.approx(np.hypot(0.2, 0.4))
    assert all(s.overall == pytest.approx((s.instruction_following + s.consistency) / 2) for s in scores)


def test_a_candidate_without_parameters_is_refused(tmp_path):
    candidate = Candidate("model output", Asset("mesh", np.zeros((3, 3))), None)
    with pytest.raises(latent_scorer.LatentScoreError, match="carries no body state"):
        plugins.call("score", "latent-l2", scorer="latent-l2", instance=_instance(), candidates=[candidate],
                     ctx=Context(workdir=tmp_path))


def test_other_scorer_names_are_not_answered():
    assert latent_scorer.score(scorer="render-compare", instance=None, candidates=[], ctx=None) is None
