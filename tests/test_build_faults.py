"""Faults and scale-out, on the toy plugins: a build killed with SIGKILL (one worker or two)
resumes to the exact bytes of an uninterrupted one, its workers die with it, a directory being
built is locked, damaged shards and deleted files are rebuilt on resume, a build that fails on a
bad option leaves nothing behind, and the Ray backend (a local Ray instance) builds the same
bytes as the local one."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from maskscore_core.dataset.runner import CONFIG_MARKER, BuildError, run_build

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))
from test_build import toy_config, tree_bytes  # noqa: E402
from test_build_fixtures import MODULE, toy_only  # noqa: E402, F401

pytestmark = pytest.mark.usefixtures("toy_only")

SLOW = {"delay_s": 0.15}  # each instance sleeps, so the build is still running when it is killed

BUILD_SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
from maskscore_core.dataset.shard import register_plugin_modules
register_plugin_modules([{module!r}])
from test_build import toy_config
from maskscore_core.dataset.runner import run_build
run_build(toy_config({out!r}, rows=96, source_options={slow!r}, workers={workers}), progress=False)
"""


def _shards(root: Path) -> int:
    return len(list((root / "data").glob("*/shard-*.parquet")))


def _start_build(root: Path, workers: int) -> subprocess.Popen:
    script = BUILD_SCRIPT.format(tests=str(TESTS), module=MODULE, out=str(root), slow=SLOW, workers=workers)
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    return subprocess.Popen([sys.executable, "-c", script], env=env, stderr=subprocess.PIPE)


def _wait_for_shards(root: Path, count: int, process: subprocess.Popen, limit_s: float = 120.0) -> None:
    deadline = time.monotonic() + limit_s
    while _shards(root) < count:
        if process.poll() is not None:
            pytest.fail(f"build exited before {count} shards landed: {process.stderr.read().decode()}")
        if time.monotonic() > deadline:
            pytest.fail(f"no {count} shards after {limit_s} s")
        time.sleep(0.02)


def _children(pid: int) -> list[int]:
    """Live processes whose parent is `pid` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has stopped running


def _kill_9(process: subprocess.Popen, workers: int) -> None:
    """SIGKILL the build; its worker processes must stop at once, whatever they were doing."""
    children = _children(process.pid) if workers > 1 else []
    assert workers == 1 or children, "the pool's workers were not found"
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL
    deadline = time.monotonic() + 10.0
    while any(_alive(pid) for pid in children):
        assert time.monotonic() < deadline, f"workers {[p for p in children if _alive(p)]} outlived their parent"
        time.sleep(0.02)


@pytest.mark.slow
@pytest.mark.parametrize("killed_workers, resumed_workers", [(1, 2), (2, 1)])
def test_kill_9_then_restart_with_other_workers_gives_exactly_the_uninterrupted_rows(tmp_path, killed_workers, resumed_workers):
    reference = tmp_path / "reference"
    run_build(toy_config(reference, rows=96, source_options=SLOW), progress=False)
    killed = tmp_path / "killed"
    for landed in (1, 4):  # kill after the first shard, then again part-way through the resumed build
        process = _start_build(killed, killed_workers)
        _wait_for_shards(killed, landed, process)
        _kill_9(process, killed_workers)
    shards = _shards(killed)
    time.sleep(0.5)
    assert _shards(killed) == shards, "a shard landed after the build was killed"
    assert 4 <= shards < 16 and not (killed / "README.md").exists()
    summary = run_build(toy_config(killed, rows=96, source_options=SLOW, workers=resumed_workers), progress=False)
    assert summary.shards_resumed == shards and summary.shards_built == 16 - shards and summary.shards_repaired == 0
    assert tree_bytes(killed) == tree_bytes(reference)


@pytest.mark.slow
def test_a_second_build_of_a_directory_being_built_is_refused(tmp_path):
    root = tmp_path / "busy"
    process = _start_build(root, workers=1)
    try:
        _wait_for_shards(root, 1, process)
        with pytest.raises(BuildError) as refused:
            run_build(toy_config(root, rows=96, source_options=SLOW), progress=False)
        assert f"{root} is being built by pid {process.pid}; wait for that build to finish or use another --out" == str(refused.value)
    finally:
        process.kill()
        process.wait()
    summary = run_build(toy_config(root, rows=96, source_options=SLOW), progress=False)  # the lock died with it
    assert summary.rows == 96


def _truncate_a_shard(root: Path) -> None:
    path = root / "data" / "depth" / "shard-00000.parquet"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _garble_a_shard(root: Path) -> None:
    (root / "data" / "pose" / "shard-00000.parquet").write_bytes(b"not a parquet file")


def _delete_the_assets(root: Path) -> None:
    shutil.rmtree(root / "assets")


def _change_an_asset(root: Path) -> None:
    path = sorted((root / "assets").rglob("*.npy"))[0]
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))


def _delete_a_sidecar(root: Path) -> None:
    sorted((root / "instances").glob("*.json"))[3].unlink()


def _leave_half_written_files(root: Path) -> None:
    """What a build killed inside `atomic.write_bytes` leaves: its temporary files."""
    (root / "instances" / ".mesh-00000-0000-x.json.tmp-123").write_text('{"half": ')
    (root / ".card.json.tmp-4567").write_text("{")


@pytest.mark.parametrize("damage, repaired", [
    (_truncate_a_shard, 1), (_garble_a_shard, 1), (_delete_the_assets, None), (_change_an_asset, 1), (_delete_a_sidecar, 1),
    (_leave_half_written_files, 0),
])  # fmt: skip
def test_a_damaged_build_is_rebuilt_on_resume_to_the_same_bytes(tmp_path, damage, repaired, capsys):
    root = tmp_path / "bench"
    run_build(toy_config(root), progress=False)
    before = tree_bytes(root)
    damage(root)
    summary = run_build(toy_config(root), progress=False)
    with_files = sum(1 for p in (root / "data").glob("*/shard-*.parquet") if p.parent.name not in ("keypoints", "pose"))
    assert summary.shards_repaired == (repaired if repaired is not None else with_files) == summary.shards_built
    assert ("is damaged (" in capsys.readouterr().err) == (summary.shards_repaired > 0)
    assert tree_bytes(root) == before


@pytest.mark.parametrize("bad, message", [
    ({"source": "nosuch"}, "no installed plugin provides the source 'nosuch'"),
    ({"editor": "nosuch"}, "no installed plugin provides the editor 'nosuch'"),
    ({"scorer": "nosuch"}, "nosuch"),
    ({"instance_maker": "nosuch:make"}, "instance maker 'nosuch:make' cannot be loaded"),
    ({"subjects": 1}, "ask the source for more subjects"),  # found only by the first shard, after the claim
])  # fmt: skip
@pytest.mark.parametrize("existed", [False, True])
def test_a_build_failing_on_a_bad_option_leaves_nothing_behind(tmp_path, bad, message, existed):
    root = tmp_path / "bench"
    if existed:
        root.mkdir()
    with pytest.raises(Exception, match=re.escape(message)):
        run_build(toy_config(root, **bad), progress=False)
    if existed:
        assert list(root.iterdir()) == []  # no config, no lock file, no scratch space
    else:
        assert not root.exists()
    summary = run_build(toy_config(root), progress=False)  # the corrected command is not refused
    assert summary.shards_built == 8 and (root / CONFIG_MARKER).exists()


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
