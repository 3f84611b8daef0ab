"""Machine-readable output is pure JSON on stdout: `maskscore score ... | python -c json.load` works
in a fresh process (where anny initialises Warp, whose banner went to stdout), and a second run
prints the same bytes. Library noise, Python or C, goes to stderr."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from maskscore_core.body.meshio import write_mesh
from maskscore_core.plugin.records import BodyState
from maskscore_core.body.reference_mesh import get_reference_mesh


def _maskscore() -> list[str]:
    script = Path(sys.executable).with_name("maskscore")
    return [str(script)] if script.exists() else [sys.executable, "-m", "maskscore_core"]


@pytest.fixture(scope="module")
def meshes(tmp_path_factory) -> list[str]:
    root = tmp_path_factory.mktemp("score-json")
    reference = get_reference_mesh()
    expression = np.zeros(52)
    expression[reference.body.action_index("jawOpen")] = 0.6
    a = write_mesh(root / "a.glb", reference.vertices([BodyState()])[0])
    b = write_mesh(root / "b.glb", reference.vertices([BodyState(expression=expression)])[0])
    return [str(a), str(b)]


@pytest.mark.slow
def test_score_prints_pure_json_and_the_same_bytes_twice(meshes, tmp_path):
    from click.testing import CliRunner

    from maskscore_core.cli import main

    a, b = meshes
    args = ["score", "--frame-a", a, "--frame-b", b, "--part", "mouth", "--views", "2", "--resolution", "32", b, a]
    # a fresh process, through the shell pipe: a JSON parser reads stdout to the end
    copy = tmp_path / "stdout.json"
    parse = f"{shlex.quote(sys.executable)} -c 'import json,sys; json.load(sys.stdin)'"
    pipeline = f"{shlex.join([*_maskscore(), *args])} | tee {shlex.quote(str(copy))} | {parse}"
    env = {**os.environ, "MASKSCORE_DEBUG": ""}
    piped = subprocess.run(["bash", "-o", "pipefail", "-c", pipeline], capture_output=True, env=env, timeout=600)
    assert piped.returncode == 0, piped.stderr.decode()[-2000:]
    report = json.loads(copy.read_bytes())
    assert [c["path"] for c in report["candidates"]] == [b, a]
    assert report["candidates"][0]["overall"] > report["candidates"][1]["overall"]
    # a second run (here in this process, where anny and the renderer are already loaded): same bytes
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 0, again.output
    assert again.stdout_bytes == copy.read_bytes()


def test_noise_from_python_and_c_goes_to_stderr_and_stdout_holds_the_document():
    program = (
        "import os, sys\n"
        "from maskscore_core.cli.output import noise_to_stderr, write_json\n"
        "with noise_to_stderr():\n"
        "    print('python noise')\n"
        "    os.write(1, b'C noise\\n')\n"
        "    import ctypes; ctypes.CDLL(None).printf(b'buffered C noise\\n')\n"
        "write_json({'b': 1, 'a': [1.5]})\n"
    )
    run = subprocess.run([sys.executable, "-c", program], capture_output=True, timeout=120)
    assert run.returncode == 0, run.stderr.decode()
    assert run.stdout == b'{\n  "a": [\n    1.5\n  ],\n  "b": 1\n}\n'
    for noise in (b"python noise", b"C noise", b"buffered C noise"):
        assert noise in run.stderr
