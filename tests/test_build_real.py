"""A real build end to end: built-in anny source, edits, and the eight modality plugins writing
their own assets and rows (rl-train: no scoring, so it stays small enough for every CI run)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from maskscore_core import edits, schemas, vocab
from maskscore_core.dataset import reader
from maskscore_core.dataset.leakage import dataset_subjects
from maskscore_core.dataset.plan import BuildConfig
from maskscore_core.dataset.runner import run_build
from maskscore_core.dataset.splits import subject_pool


@pytest.mark.slow
def test_rl_train_of_all_eight_modalities_with_the_real_plugins(tmp_path):
    root = tmp_path / "rl"
    # seed 0 with 24 anny subjects leaves 22 training subjects
    summary = run_build(BuildConfig(split="rl-train", out=root, rows=8, seed=0, subjects=24, views=2, resolution=32),
                        progress=False)
    assert summary.rows == 8
    card = json.loads((root / "card.json").read_text())
    assert card["counts"]["modality"] == {m: 1 for m in vocab.MODALITIES}
    # one instance per modality: its first task type, as planned
    assert card["counts"]["modality_task_type"] == card["planned"]["modality_task_type"] == {
        f"{m}/{edits.task_types(m)[0]}": 1 for m in vocab.MODALITIES}
    for modality, row in reader.iter_rows(root):  # validates every shard against its schema
        table = schemas.table_for_modality(modality)
        assert row["scores"] == [] and row[schemas.CANDIDATE_COLUMN[table]] == []
        instance = reader.load_instance(root, row["key"])
        assert instance.instruction.modality == modality and instance.instruction.text == row["instruction"]
        for column in schemas.table_specs()[table]["columns"]:
            value = row[column["name"]]
            if column["type"] == "string" and isinstance(value, str) and "/" in value:
                assert not Path(value).is_absolute() and (root / value).exists(), (modality, column["name"], value)
    assert all(subject_pool(s, 0) == "train" for s in dataset_subjects(root))
    pq.read_table(root / "data" / "pose" / "shard-00000.parquet")


@pytest.mark.slow
def test_real_bench_is_byte_identical_when_built_twice_by_one_or_two_workers(tmp_path):
    """Built for real (scored), once in this process and once by two worker processes, each on
    its share of the cores (a different torch / Dr.Jit thread count): the same bytes."""
    def build(name, workers):
        return run_build(BuildConfig(split="bench", out=tmp_path / name, rows=12, seed=0, subjects=24, shard_size=2,
                                     modalities=("mesh", "keypoints"), views=2, resolution=32, workers=workers),
                         progress=False)  # fmt: skip

    first, second = build("one", 1), build("two", 2)
    assert first.card["content_sha256"] == second.card["content_sha256"]
    # two instances per modality, the first two task types of each (the plan), made for real
    assert first.card["counts"]["modality_task_type"] == first.card["planned"]["modality_task_type"] == {
        "mesh/part_add": 3, "mesh/part_remove": 3, "keypoints/expression_change": 3, "keypoints/surface_edit": 3}
    files = sorted(p.relative_to(tmp_path / "one") for p in (tmp_path / "one").rglob("*") if p.is_file())
    assert any(p.suffix == ".glb" for p in files) and any(p.parts[0] == "conditioning" for p in files)
    for path in files:
        assert (tmp_path / "one" / path).read_bytes() == (tmp_path / "two" / path).read_bytes(), path
    for _, row in reader.iter_rows(tmp_path / "one"):
        assert len(row["scores"]) == 5 and all(0.0 <= s <= 1.0 for s in row["scores"])


@pytest.mark.slow
def test_build_command_writes_a_dataset_and_rejects_bad_options(tmp_path):
    from click.testing import CliRunner

    from maskscore_core.cli.build_command import build_command

    out = tmp_path / "rl"
    args = ["rl-train", "--out", str(out), "--rows", "2", "--modalities", "pose,mesh", "--subjects", "24",
            "--views", "2", "--resolution", "32", "--quiet"]
    result = CliRunner().invoke(build_command, args)
    assert result.exit_code == 0, result.output
    assert "2 rows in" in result.output and (out / "README.md").exists()
    assert sorted(p.name for p in (out / "data").iterdir()) == ["mesh", "pose"]
    again = CliRunner().invoke(build_command, args)  # complete: every shard is resumed, nothing rebuilt
    assert again.exit_code == 0 and "0 shards built, 2 already done" in again.output
    bad = CliRunner().invoke(build_command, ["bench", "--out", str(tmp_path / "x"), "--source-option", "subjects"])
    assert bad.exit_code != 0 and "expected NAME=VALUE" in bad.output
    unknown = CliRunner().invoke(build_command, ["bench", "--out", str(tmp_path / "y"), "--modalities", "audio"])
    assert unknown.exit_code == 2 and "unknown modality 'audio'" in unknown.output
