"""A real build end to end: built-in anny source, edits, and the eight modality plugins writing
their own assets and rows (rl-train: no scoring, so it stays small enough for every CI run)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from maskscore_core import threads, vocab

from maskscore_core.edits import instances as edits

from maskscore_core.plugin import manager as plugins

from maskscore_core.dataset import schemas
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
    assert card["counts"]["modality"] == {m: 1 for m in plugins.modality_names()}
    # one instance per modality: its first task type, as planned
    assert card["counts"]["modality_task_type"] == card["planned"]["modality_task_type"] == {
        f"{m}/{edits.task_types(m)[0]}": 1 for m in plugins.modality_names()}
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


# A real scored bench, small: two instances of mesh and two of keypoints (float64 columns show
# the last bit), one shard each, so that a worker on two threads scores two rows at once
# (`Scorer.rows_in_flight`) and one on one thread one at a time.
REAL_BENCH = ("bench", "--rows", "12", "--seed", "0", "--subjects", "24", "--shard-size", "2", "--modalities", "mesh,keypoints",
              "--views", "2", "--resolution", "32", "--quiet")  # fmt: skip


def _cli_build(out: Path, workers: int, thread_count: int | None) -> None:
    """`maskscore build` in a fresh process, on `thread_count` torch / Dr.Jit threads (None: each
    worker's share of the cores)."""
    env = {k: v for k, v in os.environ.items() if k != threads.ENV}
    if thread_count is not None:
        env[threads.ENV] = str(thread_count)
    command = [sys.executable, "-m", "maskscore_core", "build", *REAL_BENCH, "--out", str(out), "--workers", str(workers)]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]


@pytest.fixture(scope="module")
def real_bench(tmp_path_factory) -> Path:
    """The reference: one worker on two threads."""
    root = tmp_path_factory.mktemp("real") / "reference"
    _cli_build(root, workers=1, thread_count=2)
    return root


def _resumed_by_two_workers(root: Path, reference: Path) -> None:
    """The reference, interrupted before its keypoints shard, finished by two workers (each on
    its share of the cores)."""
    shutil.copytree(reference, root)
    for path in (root / "card.json", root / "README.md", root / "data" / "keypoints" / "shard-00000.parquet"):
        path.unlink()
    shutil.rmtree(root / "assets" / "keypoints")
    _cli_build(root, workers=2, thread_count=None)


@pytest.mark.slow
@pytest.mark.parametrize("build", [
    pytest.param(lambda root, reference: _cli_build(root, workers=2, thread_count=1), id="2 workers on 1 thread each"),
    pytest.param(_resumed_by_two_workers, id="resumed with 2 workers"),
])  # fmt: skip
def test_real_bench_has_the_same_bytes_whatever_the_workers_and_threads(real_bench, tmp_path, build):
    """Built for real (scored) in fresh processes: the bytes of every file (float64 keypoints,
    .glb meshes, scores) do not depend on the torch / Dr.Jit thread count, the worker count, the
    rows scored at once (two on the reference's two threads, one on one), or on a resume by
    another worker count."""
    build(tmp_path / "other", real_bench)
    card = json.loads((real_bench / "card.json").read_text())
    # two instances per modality, the first two task types of each (the plan), made for real
    assert card["counts"]["modality_task_type"] == card["planned"]["modality_task_type"] == {
        "mesh/part_add": 3, "mesh/part_remove": 3, "keypoints/expression_change": 3, "keypoints/surface_edit": 3}
    files = sorted(p.relative_to(real_bench) for p in real_bench.rglob("*") if p.is_file())
    assert any(p.suffix == ".glb" for p in files) and any(p.parts[0] == "conditioning" for p in files)
    assert files == sorted(p.relative_to(tmp_path / "other") for p in (tmp_path / "other").rglob("*") if p.is_file())
    differ = [str(p) for p in files if (real_bench / p).read_bytes() != (tmp_path / "other" / p).read_bytes()]
    assert differ == []
    for _, row in reader.iter_rows(real_bench):
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


def test_build_command_refuses_a_directory_being_built_in_one_line(tmp_path):
    """`maskscore build` on a directory whose lock another build holds: one line, exit 1, and
    nothing of it written there."""
    from click.testing import CliRunner

    from maskscore_core.cli import main
    from maskscore_core.dataset import lock

    out = tmp_path / "bench"
    out.mkdir()
    with lock.build_lock(out):
        result = CliRunner().invoke(main, ["build", "bench", "--out", str(out), "--rows", "6", "--subjects", "24",
                                           "--views", "2", "--resolution", "32", "--quiet"])  # fmt: skip
        assert {p.name for p in out.iterdir()} <= {lock.LOCK_FILE, lock.WORKERS_LOCK_FILE}  # the holder's
    assert list(out.iterdir()) == []  # the holder removed its lock files
    assert result.exit_code == 1
    assert result.output == (f"Error: {out} is being built by pid {os.getpid()}; wait for that build to finish or"
                             " use another --out\n")  # fmt: skip
