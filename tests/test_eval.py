"""The bench evaluation protocol on tiny benches with known answers: pair selection, ties counted
wrong, failures recorded, Avg@N, bootstrap intervals, and the result cache (reuse, no mixing, no
duplicates)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import attrs
import pytest
from click.testing import CliRunner

from maskscore_core import Scorer, hookimpl

from maskscore_core.plugin import manager as plugins
from maskscore_core.dataset import evaluate, protocol, reader
from maskscore_core.dataset.evaluate import EvalError, ResultCache, ScorerConfig
from maskscore_core.dataset.metrics import grade_row
from maskscore_core.dataset.reader import DatasetReadError
from maskscore_core.dataset.runner import run_build
from maskscore_core.dataset.shard import register_plugin_modules
from maskscore_core.plugin.records import CandidateScore

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))
from test_build import toy_config  # noqa: E402
from test_build_fixtures import toy_only  # noqa: E402, F401

pytestmark = pytest.mark.usefixtures("toy_only")

# Scores per rung (1..5) that the fixed scorer gives, and what the protocol must make of them.
FIXED = {
    "instruction_following": [0.9, 0.8, 0.8, 0.1, 0.2],  # 9 pairs: 2=3 is a tie (wrong); 4<5 is not graded
    "consistency": [0.5, 0.6, 0.7, 0.9, 0.1],  # 7 pairs: 1-3 not graded; 4 beats 1-3 (3 wrong)
    "overall": [5.0, 4.0, 3.0, 2.0, 1.0],  # 10 pairs, all right
}
EXPECTED_ACCURACY = {"instruction_following": 8 / 9, "consistency": 4 / 7, "overall": 1.0}
# Speech and text declare their own levels (audio and text move only the mouth): their rows hold
# rungs 1, 2, 3, 5 (rung 4 dropped); instruction_following grades 6 pairs there (2=3 is a tie);
# on consistency speech grades rungs 1-3 above rung 5 (3 pairs, all right), text no pair.
# Pose declares its own levels too (a pose carries no identity): its rows hold rungs 1-4 (rung 5
# dropped); instruction_following grades 6 pairs (2=3 a tie), consistency rungs 1-3 above rung 4
# (3 pairs, all wrong: rung 4 scores 0.9). Text has no voice either, so it drops rung 5 as well:
# rungs 1-3, 3 pairs on instruction_following (2=3 a tie), none on consistency.
EXPECTED_CONSISTENCY = {"speech": 1.0, "text": None, "pose": 0.0}
EXPECTED_SPEECH_IF = 5 / 6
EXPECTED_IF = {"speech": EXPECTED_SPEECH_IF, "pose": EXPECTED_SPEECH_IF, "text": 2 / 3}
EXPECTED_SPEECH_EDIT_IF = (3 * 5 + 3 * 2) / (3 * 6 + 3 * 3)  # speech and text rows pooled


class FixedScorer:
    """A scorer plugin with a known answer; counts its calls to prove cache reuse."""

    def __init__(self):
        self.calls = 0

    @hookimpl
    def register_scorers(self, register):
        register(Scorer("toy-fixed"))

    @hookimpl
    def score(self, scorer, instance, candidates, ctx):
        self.calls += 1
        return [CandidateScore(*(FIXED[d][c.rung - 1] for d in ("instruction_following", "consistency", "overall")))
                for c in candidates]


@pytest.fixture
def bench(tmp_path_factory):
    root = tmp_path_factory.mktemp("eval") / "bench"
    run_build(toy_config(root, rows=72, views=3, resolution=40), progress=False)  # 24 instances, 3 per modality
    return root


@pytest.fixture
def fixed():
    register_plugin_modules(["test_build_fixtures"])
    scorer = FixedScorer()
    plugins.get_plugin_manager().register(scorer, name="toy-fixed")
    return scorer


def test_pairs_follow_the_ladder_and_leave_expected_ties_out():
    assert len(protocol.graded_pairs("instruction_following", [1, 2, 3, 4, 5])) == 9
    assert (3, 4) not in protocol.graded_pairs("instruction_following", [1, 2, 3, 4, 5])
    consistency = protocol.graded_pairs("consistency", [1, 2, 3, 4, 5])
    assert len(consistency) == 7 and not {(0, 1), (0, 2), (1, 2)} & set(consistency)
    assert len(protocol.graded_pairs("overall", [1, 2, 3, 4, 5])) == 10
    with pytest.raises(protocol.ProtocolError, match="not on the ladder graded here"):
        protocol.graded_pairs("overall", [1, 2, 6])


def test_a_modality_may_declare_its_own_levels():
    """Speech and text declare their levels (their representation moves only the mouth, so they
    drop rung 4); the others keep the design's table. Declared tables are checked."""
    assert protocol.levels_for("mesh") == protocol.EXPECTED_LEVEL
    speech, text = protocol.levels_for("speech"), protocol.levels_for("text")
    assert protocol.rungs_of(speech) == [1, 2, 3, 5] and protocol.rungs_of(text) == [1, 2, 3]
    assert protocol.graded_pairs("consistency", [1, 2, 3, 5], speech) == [(0, 3), (1, 3), (2, 3)]
    assert protocol.graded_pairs("consistency", [1, 2, 3], text) == []
    good = {d: {str(r): lv for r, lv in t.items()} for d, t in protocol.EXPECTED_LEVEL.items()}
    assert protocol.check_levels(good, "json") == protocol.EXPECTED_LEVEL  # JSON's string keys are read back
    with pytest.raises(protocol.ProtocolError, match="exactly the dimensions"):
        protocol.check_levels({"overall": protocol.EXPECTED_LEVEL["overall"]}, "partial")
    with pytest.raises(protocol.ProtocolError, match="rung 1 must be alone"):
        protocol.check_levels({**protocol.EXPECTED_LEVEL, "overall": {1: 0, 2: 0, 3: 1, 4: 2, 5: 3}}, "tied top")
    with pytest.raises(protocol.ProtocolError, match=r"rungs \[1, 2, 3, 4, 5\] to integers"):
        protocol.check_levels({**protocol.EXPECTED_LEVEL, "overall": {1: 0, 2: 1, 3: 2, 4: 3}}, "no rung 5")


def test_a_tie_is_wrong_and_counted():
    row = grade_row("mesh", "part_add", "overall", "k", [1.0, 1.0, 0.5, 0.2, 0.1], [1, 2, 3, 4, 5])
    assert (row.pairs, row.correct, row.ties) == (10, 9, 1)
    assert not row.best_hit  # two candidates share the top score
    failed = grade_row("mesh", "part_add", "overall", "k", None, [1, 2, 3, 4, 5])
    assert failed.failed and failed.correct == 0 and failed.pairs == 10


def test_known_answer_per_dimension(bench, fixed, tmp_path):
    config = ScorerConfig(name="toy-fixed", version="test")
    report = evaluate.evaluate(bench, config, tmp_path / "results.jsonl", resamples=200)
    assert report["instances"] == 24
    recorded = reader.build_config(bench)["ladder_levels"]  # the labels travel with the bench
    assert recorded["text"]["consistency"] == {str(r): 0 for r in (1, 2, 3)}
    assert "only the mouth" in recorded["text"]["dropped"]["4"]
    card = (bench / "README.md").read_text()  # the card says which rungs each modality's rows hold, and why
    assert "- mesh: rungs 1, 2, 3, 4, 5\n" in card
    assert "- speech: rungs 1, 2, 3, 5; rung 4 dropped: speech moves only the mouth" in card
    assert "- pose: rungs 1, 2, 3, 4; rung 5 dropped: a pose carries no identity" in card
    assert protocol.check_levels(recorded["mesh"], "mesh") == protocol.EXPECTED_LEVEL
    for dimension, accuracy in EXPECTED_ACCURACY.items():
        figures = report["dimensions"][dimension]
        assert figures["rows"] == 24 and figures["failed_rows"] == 0
        for modality, found in figures["modalities"].items():
            expected = EXPECTED_CONSISTENCY.get(modality, accuracy) if dimension == "consistency" else accuracy
            if dimension == "instruction_following" and modality in EXPECTED_IF:
                expected = EXPECTED_IF[modality]
            assert found["value"] == (None if expected is None else pytest.approx(expected)), (dimension, modality)
        if dimension == "instruction_following":  # speech, pose rows grade 6 pairs, text 3, the others 9
            tasks = {t: f["value"] for t, f in figures["task_types"].items()}
            assert tasks.pop("speech_edit") == pytest.approx(EXPECTED_SPEECH_EDIT_IF)
            assert tasks.pop("pose_change") == pytest.approx(EXPECTED_SPEECH_IF)
            assert tasks and all(v == pytest.approx(accuracy) for v in tasks.values())
            expected = (EXPECTED_SPEECH_EDIT_IF + EXPECTED_SPEECH_IF + accuracy * len(tasks)) / (len(tasks) + 2)
            assert figures["accuracy"]["value"] == pytest.approx(expected)
        if dimension == "overall":  # the same answer on every row
            assert figures["accuracy"]["value"] == pytest.approx(accuracy)
            for group in figures["groups"].values():
                assert group["value"] == pytest.approx(accuracy)
            assert figures["accuracy"]["ci95"] == pytest.approx([accuracy, accuracy])
    # 15 rows of 9 graded pairs, 6 speech/pose rows of 6 and 3 text rows of 3, one tie (rungs 2
    # and 3) in each; of all rung pairs (10, 6 and 3 a row) the same ties
    assert report["dimensions"]["instruction_following"]["tie_rate"] == pytest.approx(24 / 180)
    assert report["dimensions"]["instruction_following"]["tie_rate_all_pairs"] == pytest.approx(24 / 195)
    assert report["dimensions"]["overall"]["kendall_tau"] == pytest.approx(1.0)  # the right order everywhere
    assert report["dimensions"]["instruction_following"]["best_of_n"] == 1.0
    assert report["dimensions"]["consistency"]["best_of_n"] == 0.0  # rung 4 scored highest
    dimensions = report["dimensions"]
    assert report["mean_accuracy"] == pytest.approx(sum(dimensions[d]["accuracy"]["value"] for d in dimensions) / 3)


def test_constant_scores_are_all_ties_hence_all_wrong(bench, fixed, tmp_path):
    report = evaluate.evaluate(bench, ScorerConfig(name="toy-constant", version="test"), tmp_path / "r.jsonl", resamples=50)
    for figures in report["dimensions"].values():
        assert figures["accuracy"]["value"] == 0.0 and figures["tie_rate"] == 1.0


def test_bootstrap_interval_contains_the_point_estimate(bench, fixed, tmp_path):
    report = evaluate.evaluate(bench, ScorerConfig(name="toy-score", version="test", seed=7), tmp_path / "r.jsonl")
    for figures in report["dimensions"].values():
        low, high = figures["accuracy"]["ci95"]
        assert low <= figures["accuracy"]["value"] <= high
        assert low < high  # the toy scorer is not uniformly right, so rows differ
    again = evaluate.evaluate(bench, ScorerConfig(name="toy-score", version="test", seed=7), tmp_path / "r.jsonl")
    assert again == report  # seeded bootstrap: same figures


def test_failures_are_reported_never_scored_never_cached(bench, fixed, tmp_path):
    cache = tmp_path / "r.jsonl"
    report = evaluate.evaluate(bench, ScorerConfig(name="toy-broken", version="test"), cache, resamples=50)
    lines = [json.loads(line) for line in cache.read_text().splitlines()]
    assert lines and all("scores" in r and "error" not in r for r in lines)  # only the instances it scored
    broken = report["failures"]
    assert broken and all("cannot score part_add" in f for f in broken)
    assert all("raised by 'score' of plugin 'test_build_fixtures'" in f for f in broken)  # who failed
    assert len(broken) + len(lines) == report["instances"] == 24
    assert report["dimensions"]["overall"]["failed_rows"] == len(broken)


class FlakyScorer:
    """Fails on every instance until `fixed` is set: a cause that goes away between runs."""

    def __init__(self):
        self.fixed = False
        self.calls = 0

    @hookimpl
    def register_scorers(self, register):
        register(Scorer("toy-flaky"))

    @hookimpl
    def score(self, scorer, instance, candidates, ctx):
        self.calls += 1
        if not self.fixed:
            raise RuntimeError("toy-flaky is out of order")
        return [CandidateScore(*(FIXED[d][c.rung - 1] for d in ("instruction_following", "consistency", "overall")))
                for c in candidates]


def test_failures_are_retried_by_the_next_run_and_an_old_error_line_is_no_result(bench, fixed, tmp_path):
    flaky = FlakyScorer()
    plugins.get_plugin_manager().register(flaky, name="toy-flaky")
    config, cache = ScorerConfig(name="toy-flaky", version="test"), tmp_path / "r.jsonl"
    failed = evaluate.evaluate(bench, config, cache, resamples=20)
    assert len(failed["failures"]) == 24 and failed["dimensions"]["overall"]["accuracy"]["value"] == 0.0
    assert not cache.exists() or not cache.read_text()  # nothing cached
    # an error line as older versions cached it is skipped, not served as a result
    first = next(reader.iter_rows(bench))
    cache.write_text(json.dumps({"config_key": config.key, "modality": first[0], "key": first[1]["key"],
                                 "error": "RuntimeError: old"}) + "\n")
    flaky.fixed, flaky.calls = True, 0
    healed = evaluate.evaluate(bench, config, cache, resamples=20)
    assert flaky.calls == 24 and healed["failures"] == []
    assert healed["dimensions"]["overall"]["accuracy"]["value"] == 1.0
    flaky.calls = 0
    assert evaluate.evaluate(bench, config, cache, resamples=20) == healed and flaky.calls == 0  # now cached


def test_eval_command_exits_1_with_a_summary_when_rows_failed(bench, fixed, tmp_path):
    from maskscore_core.cli import main

    result = CliRunner().invoke(main, ["eval", "--bench", str(bench), "--scorer", "toy-broken", "--out",
                                       str(tmp_path / "r.jsonl"), "--quiet"])
    assert result.exit_code == 1, result.output
    assert "## overall" in result.stdout  # the report is printed all the same
    assert result.stderr.startswith("Error: toy-broken failed on ") and "of 24 instances" in result.stderr
    assert "cannot score part_add" in result.stderr and len(result.stderr.splitlines()) == 1


def test_cache_is_reused_never_mixed_never_duplicated(bench, fixed, tmp_path):
    cache = tmp_path / "results.jsonl"
    first = evaluate.evaluate(bench, ScorerConfig(name="toy-fixed", version="test"), cache, resamples=20)
    assert fixed.calls == 24
    text = cache.read_text()
    second = evaluate.evaluate(bench, ScorerConfig(name="toy-fixed", version="test"), cache, resamples=20)
    assert fixed.calls == 24 and cache.read_text() == text and second == first
    # another configuration: its own lines, appended; the first configuration's lines untouched
    evaluate.evaluate(bench, ScorerConfig(name="toy-fixed", version="test", temperature=0.7), cache, resamples=20)
    assert fixed.calls == 48
    assert cache.read_text().startswith(text)
    records = [json.loads(line) for line in cache.read_text().splitlines()]
    idents = [(r["config_key"], r["modality"], r["key"]) for r in records]
    assert len(idents) == len(set(idents)) == 48
    assert {r["config"]["temperature"] for r in records} == {0.0, 0.7}
    # a line torn by a killed run is dropped and redone, not duplicated
    cache.write_text(text[: len(text) - 20])
    evaluate.evaluate(bench, ScorerConfig(name="toy-fixed", version="test"), cache, resamples=20)
    assert cache.read_text() == text and fixed.calls == 49


def test_avg_at_n_averages_seeded_passes(bench, fixed, tmp_path):
    config = ScorerConfig(name="toy-noisy", version="test", num_pass=3, temperature=1.0, seed=11)
    results = evaluate.score_bench(bench, config, ResultCache(tmp_path / "n.jsonl"))
    singles = [evaluate.score_bench(bench, ScorerConfig(name="toy-noisy", version="test", temperature=1.0, seed=11 + n),
                                    ResultCache(tmp_path / f"s{n}.jsonl")) for n in range(3)]
    for ident, record in results.items():
        expected = [sum(s[ident]["scores"]["overall"][i] for s in singles) / 3 for i in range(len(record["scores"]["overall"]))]
        assert record["scores"]["overall"] == pytest.approx(expected)
    with pytest.raises(evaluate.ScorerConfigError, match="--num-pass"):
        ScorerConfig(name="toy-noisy", version="test", num_pass=0)


def test_eval_command_writes_results_and_summary(bench, fixed, tmp_path):
    from maskscore_core.cli.eval_command import eval_command

    out = tmp_path / "eval" / "results.jsonl"
    result = CliRunner().invoke(eval_command, ["--bench", str(bench), "--scorer", "toy-fixed", "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    assert "## instruction_following" in result.output
    summaries = sorted(out.parent.glob("results-toy-fixed-*.json"))
    assert len(summaries) == 1
    summary = json.loads(summaries[0].read_text())
    assert summary["dimensions"]["overall"]["accuracy"]["value"] == 1.0
    # the scorer renders like the bench was built (depth assets have that shape)
    assert (summary["scorer"]["views"], summary["scorer"]["resolution"]) == (3, 40)
    unknown = CliRunner().invoke(eval_command, ["--bench", str(bench), "--scorer", "nope", "--quiet"])
    assert unknown.exit_code == 2 and "no installed scorer plugin provides 'nope'" in unknown.output


def _built_with(bench) -> ScorerConfig:
    """The configuration the bench fixture was scored with (toy_config: seed 3; 3 views, 40 px)."""
    return ScorerConfig(name="toy-score", version=evaluate.scorer_version("toy-score"), views=3, resolution=40, seed=3)


def _without_source(report: dict) -> dict:
    return {k: v for k, v in report.items() if k != "scores_from"}


def test_stored_scores_are_the_results_of_the_configuration_that_built_the_bench(bench, fixed, tmp_path):
    config = _built_with(bench)
    assert evaluate.bench_scorer_config(bench) == config.as_dict()
    stored = evaluate.evaluate(bench, config, tmp_path / "stored.jsonl", resamples=100)
    rescored = evaluate.evaluate(bench, config, tmp_path / "rescored.jsonl", resamples=100, rescore=True)
    assert (stored["scores_from"], rescored["scores_from"]) == ("bench", "scorer")
    assert not (tmp_path / "stored.jsonl").exists()  # nothing scored, nothing cached
    assert len((tmp_path / "rescored.jsonl").read_text().splitlines()) == 24
    assert _without_source(stored) == _without_source(rescored)
    # any other configuration (here the seed of its passes) is scored, never served stored scores
    other = evaluate.evaluate(bench, attrs.evolve(config, seed=4), tmp_path / "other.jsonl", resamples=100)
    assert other["scores_from"] == "scorer"


def test_stored_scores_need_no_asset_file_and_rescore_names_the_missing_one(bench, fixed, tmp_path):
    config = _built_with(bench)
    before = evaluate.evaluate(bench, config, tmp_path / "r.jsonl", resamples=100)
    shutil.rmtree(bench / "assets")
    after = evaluate.evaluate(bench, config, tmp_path / "r.jsonl", resamples=100)
    assert after == before and after["scores_from"] == "bench"
    with pytest.raises(DatasetReadError, match=r"candidates cannot be read: FileNotFoundError: depth asset 'assets/depth/"):
        evaluate.evaluate(bench, config, tmp_path / "r.jsonl", resamples=100, rescore=True)
    # a broken bench is not a scorer failure: no error line was cached
    assert not (tmp_path / "r.jsonl").exists()


def test_eval_command_uses_stored_scores_by_default_and_rescores_on_request(bench, fixed, tmp_path):
    from maskscore_core.cli.eval_command import eval_command

    out = tmp_path / "results.jsonl"
    args = ["--bench", str(bench), "--scorer", "toy-score", "--out", str(out), "--quiet"]
    stored = CliRunner().invoke(eval_command, args)
    assert stored.exit_code == 0, stored.output
    assert "the scores stored in the bench at build time" in stored.output and not out.exists()
    rescored = CliRunner().invoke(eval_command, [*args, "--rescore"])
    assert rescored.exit_code == 0, rescored.output
    assert "scored by the scorer plugin" in rescored.output and len(out.read_text().splitlines()) == 24
    figures = [[line for line in r.output.splitlines() if not line.startswith(("- ", "results:"))] for r in (stored, rescored)]
    assert figures[0] == figures[1] and any(line.startswith("| **overall accuracy** |") for line in figures[0])
