"""The dataset build: shard plan, schema-valid shards, determinism, held-out subjects, card,
loading with pyarrow and `datasets`, local process pool. Runs on the toy plugins of
test_build_fixtures (real hookimpls, tiny and fast), so it exercises the machinery alone."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from maskscore_core import threads, vocab

from maskscore_core.plugin import manager as plugins

from maskscore_core.dataset import schemas
from maskscore_core.dataset import leakage, plan, protocol, splits
from maskscore_core.dataset.plan import BuildConfig, shard_plan
from maskscore_core.dataset.runner import BuildError, run_build

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))
import test_build_fixtures as toy  # noqa: E402
from test_build_fixtures import toy_only  # noqa: E402, F401

pytestmark = pytest.mark.usefixtures("toy_only")


@pytest.fixture(autouse=True)
def _toy_importable(monkeypatch):
    """Spawned workers import the toy plugins by name: put this directory on their path."""
    monkeypatch.setenv("PYTHONPATH", str(TESTS))


def toy_config(out, split="bench", rows=48, **overrides) -> BuildConfig:
    settings = dict(
        split=split, out=out, rows=rows, seed=3, source="toy", subjects=12, editor="toy-ladder", scorer="toy-score",
        shard_size=2, instance_maker=toy.INSTANCE_MAKER, plugin_modules=(toy.MODULE,),
    )
    settings.update(overrides)
    return BuildConfig(**settings)


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(Path(root).rglob("*")) if p.is_file()}


def test_plan_spreads_instances_evenly_and_covers_the_rows():
    config = toy_config("/unused", rows=100)  # 34 instances over 8 modalities
    counts = plan.instances_per_modality(config)
    assert sum(counts.values()) == 34
    assert max(counts.values()) - min(counts.values()) <= 1
    shards = shard_plan(config)
    assert sum(s.count for s in shards) == 34
    assert all(1 <= s.count <= 2 for s in shards)
    rl = toy_config("/unused", split="rl-train", rows=100)
    assert sum(plan.instances_per_modality(rl).values()) == 100  # one row per instance


def test_default_sizes_follow_the_design():
    assert toy_config("/unused", rows=None).total_rows == 2890
    assert toy_config("/unused", split="reward-train", rows=None).total_rows == 97_300
    assert toy_config("/unused", split="rl-train", rows=None).total_rows == 110_000


def test_bad_configs_are_refused_with_clear_errors():
    with pytest.raises(plan.PlanError, match="--rows"):
        toy_config("/unused", rows=0)
    with pytest.raises(vocab.VocabularyError, match="unknown modality 'audio'"):
        toy_config("/unused", modalities=("audio",))
    with pytest.raises(splits.SplitError, match="unknown split"):
        toy_config("/unused", split="test")


def test_subject_pools_are_a_pure_function_of_seed_and_id():
    ids = [f"s{i}" for i in range(400)]
    pools = [splits.subject_pool(s, seed=5) for s in ids]
    assert pools == [splits.subject_pool(s, seed=5) for s in ids]
    share = pools.count("bench") / len(ids)
    assert 0.1 < share < 0.3
    assert pools != [splits.subject_pool(s, seed=6) for s in ids]


def test_built_shards_match_the_reward_table_schemas(tmp_path):
    summary = run_build(toy_config(tmp_path / "bench"), progress=False)
    root = tmp_path / "bench"
    assert summary.rows == 48
    keys = set()
    for modality in plugins.modality_names():
        files = sorted((root / "data" / modality).glob("shard-*.parquet"))
        assert files, modality
        for path in files:
            table = pq.read_table(path)
            schemas.validate(schemas.table_for_modality(modality), table)
            rows = table.to_pylist()
            kept_rungs = protocol.rungs_of(protocol.levels_for(modality))  # speech and text drop rung 4
            for row in rows:
                assert len(row["scores"]) == len(kept_rungs)
                keys.add(row["key"])
            # one row per dimension of each instance, dimensions in order
            assert [r["dimension"] for r in rows] == list(vocab.DIMENSIONS) * (len(rows) // 3)
    assert {p.stem for p in (root / "instances").glob("*.json")} == keys
    card = json.loads((root / "card.json").read_text())
    assert card["counts"]["rows"] == 48
    assert card["counts"]["modality"] == {m: 6 for m in plugins.modality_names()}
    assert sum(card["counts"]["dimension"].values()) == 48
    # the rows of each (modality, task type) are the plan's, and the card says both
    planned = {f"{m}/{t}": 3 * n for m, tasks in plan.planned_instances(toy_config(root)).items() for t, n in tasks.items()}
    assert card["planned"]["modality_task_type"] == planned == card["counts"]["modality_task_type"]
    assert "| mesh/part_add | 3 | 3 |" in (root / "README.md").read_text()
    assert card["content_sha256"] in (root / "README.md").read_text()
    # asset paths in the rows are relative and exist under the dataset root
    mesh_row = pq.read_table(root / "data" / "mesh" / "shard-00000.parquet").to_pylist()[0]
    for value in [mesh_row["input_mesh"], *mesh_row["output_meshes"]]:
        assert not Path(value).is_absolute() and (root / value).is_file()


def test_rl_rows_carry_no_candidates_and_no_scores(tmp_path):
    run_build(toy_config(tmp_path / "rl", split="rl-train", rows=16), progress=False)
    for path in sorted((tmp_path / "rl" / "data").glob("*/shard-*.parquet")):
        modality = path.parent.name
        for row in pq.read_table(path).to_pylist():
            assert row["scores"] == []
            assert row[schemas.CANDIDATE_COLUMN[schemas.table_for_modality(modality)]] == []
            assert row["instruction"].startswith("edit the ")
            assert row["task_type"] in vocab.TASK_TYPES


def test_same_seed_and_config_give_identical_bytes(tmp_path):
    first = run_build(toy_config(tmp_path / "one"), progress=False)
    second = run_build(toy_config(tmp_path / "two"), progress=False)
    assert tree_bytes(tmp_path / "one") == tree_bytes(tmp_path / "two")
    assert first.card["content_sha256"] == second.card["content_sha256"]
    other = run_build(toy_config(tmp_path / "three", seed=4), progress=False)
    assert other.card["content_sha256"] != first.card["content_sha256"]


def test_two_worker_processes_give_the_same_bytes_as_one(tmp_path):
    run_build(toy_config(tmp_path / "serial"), progress=False)
    run_build(toy_config(tmp_path / "pool", workers=2), progress=False)
    assert tree_bytes(tmp_path / "serial") == tree_bytes(tmp_path / "pool")


def test_a_scorer_that_allows_it_scores_two_rows_at_once_with_the_same_bytes(tmp_path, monkeypatch):
    """`Scorer.rows_in_flight` = 2: the builder scores two rows at once on threads where the
    worker has two threads, one at a time on one; the bytes are the same, and the scores those
    of the same scorer one row at a time."""
    toy.OVERLAP["most"] = 0
    monkeypatch.setenv(threads.ENV, "1")
    run_build(toy_config(tmp_path / "one", scorer=toy.OVERLAPPING, shard_size=4), progress=False)
    assert toy.OVERLAP["most"] == 1
    monkeypatch.setenv(threads.ENV, "2")
    run_build(toy_config(tmp_path / "two", scorer=toy.OVERLAPPING, shard_size=4), progress=False)
    assert toy.OVERLAP["most"] == 2
    assert tree_bytes(tmp_path / "one") == tree_bytes(tmp_path / "two")
    run_build(toy_config(tmp_path / "plain", scorer="toy-score", shard_size=4), progress=False)
    plain, two = (pq.read_table(sorted((tmp_path / d / "data").rglob("*.parquet"))[0]).column("scores").to_pylist()
                  for d in ("plain", "two"))  # fmt: skip
    assert plain == two


def test_bench_and_training_sets_share_no_subject(tmp_path):
    run_build(toy_config(tmp_path / "bench"), progress=False)
    run_build(toy_config(tmp_path / "train", split="reward-train"), progress=False, bench_dir=tmp_path / "bench")
    run_build(toy_config(tmp_path / "rl", split="rl-train", rows=16), progress=False, bench_dir=tmp_path / "bench")
    bench = set(leakage.dataset_subjects(tmp_path / "bench"))
    assert bench and bench.isdisjoint(leakage.dataset_subjects(tmp_path / "train"))
    assert bench.isdisjoint(leakage.dataset_subjects(tmp_path / "rl"))


def test_leakage_gate_fails_a_build_holding_a_bench_subject(tmp_path):
    run_build(toy_config(tmp_path / "bench"), progress=False)
    run_build(toy_config(tmp_path / "train", split="reward-train"), progress=False)
    leaked = sorted((tmp_path / "bench" / "instances").glob("*.json"))[0]
    shutil.copy(leaked, tmp_path / "train" / "instances" / leaked.name)
    with pytest.raises(leakage.LeakageError, match="belong to the bench pool"):
        run_build(toy_config(tmp_path / "train", split="reward-train"), progress=False)
    # the cross-check against a given bench names the shared subject too
    subject = json.loads(leaked.read_text())["a"]["subject"]["subject_id"]
    with pytest.raises(leakage.LeakageError, match=subject):
        leakage.check_leakage(tmp_path / "train", "reward-train", seed=99, bench_dir=tmp_path / "bench")


def test_a_directory_of_another_config_is_never_resumed(tmp_path):
    run_build(toy_config(tmp_path / "bench"), progress=False)
    with pytest.raises(BuildError, match="another config"):
        run_build(toy_config(tmp_path / "bench", seed=4), progress=False)


def test_resume_completes_a_half_committed_shard_exactly(tmp_path):
    """Leftovers of a kill between commit steps: assets moved, Parquet not yet; a stale temp dir."""
    reference = tmp_path / "reference"
    run_build(toy_config(reference), progress=False)
    broken = tmp_path / "broken"
    run_build(toy_config(broken), progress=False)
    (broken / "data" / "mesh" / "shard-00000.parquet").unlink()
    (broken / "data" / "pose" / "shard-00000.parquet").unlink()
    shutil.rmtree(broken / "assets" / "pose" / "shard-00000")
    (broken / ".partial" / "video-shard-00000" / "junk").mkdir(parents=True)
    (broken / "README.md").unlink()
    summary = run_build(toy_config(broken), progress=False)
    assert summary.shards_built == 2
    assert tree_bytes(broken) == tree_bytes(reference)


def test_shards_load_with_pyarrow_dataset_and_hf_datasets(tmp_path):
    datasets = pytest.importorskip("datasets")
    root = tmp_path / "bench"
    run_build(toy_config(root), progress=False)
    loaded = datasets.load_dataset("parquet", data_files=str(root / "data" / "mesh" / "*.parquet"), split="train",
                                   cache_dir=str(tmp_path / "hf-cache"))
    assert loaded.num_rows == 6
    assert loaded.column_names == schemas.arrow_schema("MeshEditReward").names
    by_card = datasets.load_dataset(str(root), "pose", split="train", cache_dir=str(tmp_path / "hf-cache"))
    assert by_card.num_rows == 6
