"""Ladder levels: a modality may drop a rung it cannot make (with the reason), rung 1 stays alone
at the top on instruction_following and overall, rows hold the rungs kept, and every pair of
rungs counts toward the all-pairs tie rate whether it is graded or not."""

from __future__ import annotations

import pytest

from maskscore_core.dataset import protocol
from maskscore_core.dataset.metrics import grade_row, summarize_dimension
from maskscore_core.plugin.records import CandidateScore
from maskscore_core.plugin.testing import misordered_pairs

WITHOUT_4 = {
    "instruction_following": {1: 0, 2: 1, 3: 2, 5: 3},
    "consistency": {1: 0, 2: 0, 3: 0, 5: 1},
    "overall": {1: 0, 2: 1, 3: 2, 5: 3},
    "dropped": {4: "moves only the mouth"},
}


def test_a_dropped_rung_is_left_out_with_its_reason():
    as_json = {d: {str(r): v for r, v in t.items()} for d, t in WITHOUT_4.items()}  # as a card stores it
    assert protocol.check_levels(as_json, "json") == WITHOUT_4
    assert protocol.rungs_of(WITHOUT_4) == [1, 2, 3, 5]
    assert protocol.rungs_of(protocol.EXPECTED_LEVEL) == protocol.rungs_of(None) == [1, 2, 3, 4, 5]
    assert protocol.graded_pairs("consistency", [1, 2, 3, 5], WITHOUT_4) == [(0, 3), (1, 3), (2, 3)]
    with pytest.raises(protocol.ProtocolError, match=r"not on the ladder graded here \(rungs \[1, 2, 3, 5\]\)"):
        protocol.graded_pairs("overall", [1, 2, 3, 4, 5], WITHOUT_4)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"dropped": {4: ""}}, "dropped rung 4 needs a reason"),
        ({"dropped": {1: "no edit"}}, "only rungs 2-5 can be dropped"),
        ({"dropped": {3: "why"}}, r"levels must map rungs \[1, 2, 4, 5\]"),  # rung 3 still graded
        ({"dropped": None, "overall": {1: 0, 2: 1, 3: 2, 5: 3}}, r"levels must map rungs \[1, 2, 3, 4, 5\]"),
        ({"overall": {1: 0, 2: 0, 3: 1, 5: 2}}, "rung 1 must be alone at level 0 on overall"),
        ({"instruction_following": {1: 0, 2: 1, 3: 0, 5: 3}}, "rung 1 must be alone at level 0 on instruction_following"),
        ({"consistency": {1: 1, 2: 1, 3: 1, 5: 2}}, "rung 1 must be alone at level 0 on consistency"),
    ],
)
def test_bad_levels_are_refused(change, message):
    table = {**WITHOUT_4, **change}
    if table.get("dropped") is None:
        table.pop("dropped")
    with pytest.raises(protocol.ProtocolError, match=message):
        protocol.check_levels(table, "the toy plugin")


def test_rung_one_may_tie_on_consistency_only():
    """Every faithful edit leaves the rest as frame A has it: rungs 1-3 tie on consistency."""
    assert protocol.check_levels(protocol.EXPECTED_LEVEL, "design")["consistency"][2] == 0


def test_all_pairs_tie_rate_counts_ungraded_pairs():
    """Rungs 4 and 5 are level on instruction_following (no graded pair), but a scorer giving
    them one score ties them: the all-pairs tie rate shows it, the graded tie rate does not."""
    row = grade_row("mesh", "expression_change", "instruction_following", "k", [0.9, 0.5, 0.3, 0.1, 0.1], [1, 2, 3, 4, 5])
    assert (row.pairs, row.correct, row.ties) == (9, 9, 0)
    assert (row.all_pairs, row.all_ties) == (10, 1)
    short = grade_row("speech", "speech_edit", "instruction_following", "s", [0.9, 0.5, 0.5, 0.1], [1, 2, 3, 5], WITHOUT_4)
    assert (short.pairs, short.correct, short.ties, short.all_pairs, short.all_ties) == (6, 5, 1, 6, 1)
    figures = summarize_dimension([row, short], seed=0, resamples=10)
    assert figures["tie_rate"] == pytest.approx(1 / 15)
    assert figures["tie_rate_all_pairs"] == pytest.approx(2 / 16)


def test_misordered_pairs_reads_the_modality_ladder():
    """Speech rows hold rungs 1, 2, 3, 5; a tie of rung 1 with another rung on overall is named."""

    def scores(*overall):
        return [CandidateScore(o, 0.9 if r < 3 else 0.5, o) for r, o in enumerate(overall)]

    assert misordered_pairs("speech", scores(0.9, 0.7, 0.5, 0.1)) == []
    assert misordered_pairs("speech", scores(0.9, 0.9, 0.5, 0.1), ["overall"]) == ["overall: rung 1 0.9000 <= rung 2 0.9000"]
    assert misordered_pairs("speech", scores(0.9, 0.7, 0.5, 0.3, 0.1)) == ["5 scores for the speech ladder's rungs [1, 2, 3, 5]"]
    assert misordered_pairs("mesh", scores(0.9, 0.7, 0.5, 0.3, 0.1), ["overall"]) == []
