"""The bench's stored scores on a real build: the built-in render-compare scorer, graded from the
scores the build stored, gives the results of scoring the bench again; stored scores need no
asset file, while re-scoring a bench whose assets are gone fails naming the missing file."""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

from maskscore_core.cli.eval_command import eval_command
from maskscore_core.dataset import evaluate
from maskscore_core.dataset.plan import BuildConfig
from maskscore_core.dataset.reader import DatasetReadError
from maskscore_core.dataset.runner import run_build


@pytest.mark.slow
def test_render_compare_stored_scores_equal_rescoring_and_need_no_assets(tmp_path):
    bench = tmp_path / "bench"
    # text: its candidate column holds the transcripts themselves, not file paths
    run_build(BuildConfig(split="bench", out=bench, rows=9, seed=0, subjects=24, modalities=("mesh", "keypoints", "text"),
                          views=2, resolution=32), progress=False)
    out = tmp_path / "results.jsonl"
    args = ["--bench", str(bench), "--scorer", "render-compare", "--out", str(out), "--quiet"]

    def summary(extra=()):
        result = CliRunner().invoke(eval_command, [*args, *extra])
        assert result.exit_code == 0, result.output
        (path,) = sorted(tmp_path.glob("results-render-compare-*.json"))
        return json.loads(path.read_text())

    stored = summary()
    assert stored["scores_from"] == "bench" and not out.exists()
    assert stored["scorer"] == evaluate.bench_scorer_config(bench)
    rescored = summary(["--rescore"])
    assert rescored["scores_from"] == "scorer" and len(out.read_text().splitlines()) == 3
    # the scores themselves, exactly: the build scored the candidates as written and read back
    config = evaluate.ScorerConfig(**stored["scorer"])
    fresh = evaluate.score_bench(bench, config, evaluate.ResultCache(out))
    kept = evaluate.stored_results(bench, config)
    assert fresh.keys() == kept.keys()
    for ident, record in kept.items():
        for dimension, scores in record["scores"].items():
            assert fresh[ident]["scores"][dimension] == scores, (ident, dimension)
    assert {k: v for k, v in stored.items() if k != "scores_from"} == {k: v for k, v in rescored.items() if k != "scores_from"}

    shutil.rmtree(bench / "assets")
    assert {k: v for k, v in summary().items()} == stored  # graded without a single asset file
    missing = CliRunner().invoke(eval_command, [*args, "--rescore", "--out", str(tmp_path / "fresh.jsonl")])
    assert missing.exit_code != 0 and isinstance(missing.exception, DatasetReadError)
    assert "assets/" in str(missing.exception) and ".glb" in str(missing.exception), str(missing.exception)
