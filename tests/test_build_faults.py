"""Faults and scale-out: a build killed with SIGKILL resumes to the exact bytes of an
uninterrupted one, and the Ray backend (a local Ray instance) builds the same bytes as the
local one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from maskscore_core.dataset.runner import run_build

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))
from test_build import toy_config, tree_bytes  # noqa: E402
from test_build_fixtures import toy_only  # noqa: E402, F401

pytestmark = pytest.mark.usefixtures("toy_only")

SLOW = {"delay_s": 0.15}  # each instance sleeps, so the build is still running when it is killed

BUILD_SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
from test_build import toy_config
from maskscore_core.dataset.runner import run_build
run_build(toy_config({out!r}, rows=96, source_options={slow!r}), progress=False)
"""


def _wait_for_shards(root: Path, count: int, process: subprocess.Popen, limit_s: float = 120.0) -> None:
    deadline = time.monotonic() + limit_s
    while len(list((root / "data").glob("*/shard-*.parquet"))) < count:
        if process.poll() is not None:
            pytest.fail(f"build exited before {count} shards landed: {process.stderr.read().decode()}")
        if time.monotonic() > deadline:
            pytest.fail(f"no {count} shards after {limit_s} s")
        time.sleep(0.02)


@pytest.mark.slow
def test_kill_9_then_restart_gives_exactly_the_uninterrupted_rows(tmp_path):
    reference = tmp_path / "reference"
    run_build(toy_config(reference, rows=96, source_options=SLOW), progress=False)
    killed = tmp_path / "killed"
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    script = BUILD_SCRIPT.format(tests=str(TESTS), out=str(killed), slow=SLOW)
    for landed in (1, 4):  # kill after the first shard, then again part-way through the resumed build
        process = subprocess.Popen([sys.executable, "-c", script], env=env, stderr=subprocess.PIPE)
        _wait_for_shards(killed, landed, process)
        process.send_signal(signal.SIGKILL)
        process.wait()
        assert process.returncode == -signal.SIGKILL
    shards = len(list((killed / "data").glob("*/shard-*.parquet")))
    assert 4 <= shards < 16 and not (killed / "README.md").exists()
    summary = run_build(toy_config(killed, rows=96, source_options=SLOW), progress=False)
    assert summary.shards_resumed == shards and summary.shards_built == 16 - shards
    assert tree_bytes(killed) == tree_bytes(reference)


@pytest.mark.slow
def test_ray_backend_builds_the_same_bytes_on_a_local_ray_instance(tmp_path, monkeypatch):
    ray = pytest.importorskip("ray")
    monkeypatch.setenv("PYTHONPATH", str(TESTS))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    run_build(toy_config(tmp_path / "local"), progress=False)
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": {"PYTHONPATH": str(TESTS), "MASKSCORE_LOAD_PLUGINS": os.environ["MASKSCORE_LOAD_PLUGINS"]}})
        summary = run_build(toy_config(tmp_path / "ray", backend="ray", workers=2), progress=False)
    finally:
        ray.shutdown()
    assert summary.shards_built == 8
    assert tree_bytes(tmp_path / "ray") == tree_bytes(tmp_path / "local")
