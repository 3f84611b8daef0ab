"""The entry-point path for real: installing a plugin distribution makes it appear in
`maskscore list-plugins`, uninstalling it makes it disappear."""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "maskscore-example-editor"


def _listed(python: Path) -> dict[str, dict]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MASKSCORE_")}
    out = subprocess.run(
        [str(python), "-m", "maskscore_core", "list-plugins", "--json"], env=env, check=True, capture_output=True, text=True
    ).stdout
    return {row["name"]: row for row in json.loads(out)}


@pytest.fixture(scope="module")
def fresh_env(tmp_path_factory):
    """A new virtual environment that sees this project's installed packages through a .pth file."""
    env = tmp_path_factory.mktemp("env") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
    python = env / "bin" / "python"
    env_site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    Path(env_site, "maskscore_project.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return python


def test_installing_and_uninstalling_a_plugin_distribution(fresh_env):
    before = _listed(fresh_env)
    assert "example_editor" not in before
    assert before["speech"]["distribution"] == "maskscore-speech"

    pip = [str(fresh_env), "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "install", "--no-deps", "--no-build-isolation", "--no-index", str(EXAMPLE)], check=True)
    installed = _listed(fresh_env)["example_editor"]
    assert installed["distribution"] == "maskscore-example-editor"
    assert installed["version"] == "0.1.0"
    assert installed["kind"] == "editor" and installed["provides"] == ["part-transfer"]
    assert installed["hooks"] == ["edit", "register_editors"]
    assert installed["error"] is None

    subprocess.run([*pip, "uninstall", "-y", "maskscore-example-editor"], check=True)
    assert "example_editor" not in _listed(fresh_env)
