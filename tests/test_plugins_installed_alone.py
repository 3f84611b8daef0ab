"""Each modality plugin installs and uninstalls on its own, for real (issue 5).

In a fresh virtual environment that holds the core and no other MaskScore distribution, one
plugin is `pip install`ed; `maskscore list-plugins --json` must then list exactly its modality,
with every modality hook and no load error, and the modality must make one real round trip
(`maskscore_core.plugin.testing.modality_round_trip`: encode, write, decode, render-compare at 2 views
of 32 px). After `pip uninstall`, the plugin must be gone from the listing and the core must
answer its modality with NoPluginError.

The environment sees the third-party dependencies (torch, mitsuba, anny, ...) through a .pth
file naming a directory of links to the project venv's site-packages entries, minus the
project's own distributions (the editable maskscore and maskscore-* installs). The core is built
into a wheel once per session and installed into each environment from it.
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
from pathlib import Path

import pytest

from maskscore_core.plugin.testing import check_modality_hooks, check_round_trip

ROOT = Path(__file__).resolve().parents[1]
MODALITIES = ("mesh", "pose", "keypoints", "depth", "video", "speech", "text", "multimodal", "arkit")
# Where each distribution's source lives: the eight in plugins/, the ninth (from outside) in examples/.
SOURCES = {m: ROOT / "plugins" / f"maskscore-{m}" for m in MODALITIES} | {"arkit": ROOT / "examples" / "maskscore-arkit"}
# Multimodal compares two other modalities' derivation paths; to run its round trip, the two
# path plugins of this pair are installed after it has been checked alone.
MULTIMODAL_PAIR = ("keypoints", "depth")


def _is_project_entry(name: str) -> bool:
    """The project's own site-packages entries: maskscore*, maskscore_*.dist-info,
    __editable__*maskscore*, _editable_impl_maskscore*.pth."""
    return "maskscore" in name.lower()


@pytest.fixture(scope="session")
def third_party_site(tmp_path_factory) -> Path:
    """A directory of links to every entry of the project venv's site-packages except the
    project's own distributions."""
    links = tmp_path_factory.mktemp("third_party") / "site"
    links.mkdir()
    for packages in map(Path, site.getsitepackages()):
        for entry in sorted(packages.iterdir()):
            if not _is_project_entry(entry.name) and not (links / entry.name).exists():
                (links / entry.name).symlink_to(entry)
    assert not any("maskscore" in p.name.lower() for p in links.iterdir())
    return links


@pytest.fixture(scope="session")
def core_wheel(tmp_path_factory) -> Path:
    """The core distribution built once into a wheel."""
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", "wheel", "--no-deps", "--no-build-isolation",
         "--no-index", "-w", str(out), str(ROOT)],
        check=True,
    )  # fmt: skip
    (wheel,) = out.glob("maskscore-*.whl")
    return wheel


def _env() -> dict[str, str]:
    """This process's environment without plugin selection; a plugin failing to load is fatal."""
    env = {k: v for k, v in os.environ.items() if k not in ("MASKSCORE_LOAD_PLUGINS", "MASKSCORE_DEBUG_PLUGINS")}
    env["MASKSCORE_STRICT_PLUGINS"] = "1"
    return env


class FreshEnv:
    """A virtual environment holding the core wheel and, through a .pth file, third-party packages."""

    def __init__(self, path: Path, third_party: Path, wheel: Path):
        subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
        self.python = path / "bin" / "python"
        purelib = self.run_python("import sysconfig; print(sysconfig.get_paths()['purelib'])").strip()
        Path(purelib, "third_party.pth").write_text(f"{third_party}\n")
        self.pip("install", "--no-deps", "--no-index", str(wheel))

    def run_python(self, code: str, *args: str) -> str:
        result = subprocess.run([str(self.python), "-c", code, *args], env=_env(), capture_output=True, text=True)
        assert result.returncode == 0, result.stderr[-4000:]
        return result.stdout

    def pip(self, *args: str) -> None:
        subprocess.run([str(self.python), "-m", "pip", "--disable-pip-version-check", "-q", *args], check=True, env=_env())

    def install(self, modality: str) -> None:
        self.pip("install", "--no-deps", "--no-build-isolation", "--no-index", str(SOURCES[modality]))

    def uninstall(self, modality: str) -> None:
        self.pip("uninstall", "-y", f"maskscore-{modality}")

    def listed(self) -> dict[str, dict]:
        rows = json.loads(self.run_python("from maskscore_core.cli import main; main(['list-plugins', '--json'])"))
        return {row["name"]: row for row in rows}

    def distributions(self) -> list[str]:
        code = "import importlib.metadata as m; print('\\n'.join(sorted(d.metadata['Name'] for d in m.distributions())))"
        return [name for name in self.run_python(code).split() if name.lower().startswith("maskscore")]

    def round_trip(self, modality: str, workdir: Path, config: dict | None = None) -> dict:
        code = (
            "import json, sys; from maskscore_core.plugin.testing import modality_round_trip; "
            "print(json.dumps(modality_round_trip(sys.argv[1], sys.argv[2], json.loads(sys.argv[3]))))"
        )
        return json.loads(self.run_python(code, modality, str(workdir), json.dumps(config or {})).splitlines()[-1])

    def round_trip_failure(self, modality: str, workdir: Path, config: dict) -> str:
        """The NoPluginError message of a round trip that must fail."""
        code = (
            "import json, sys; from maskscore_core.plugin import manager as plugins; from maskscore_core.plugin.testing import modality_round_trip\n"
            "try:\n    modality_round_trip(sys.argv[1], sys.argv[2], json.loads(sys.argv[3]))\n"
            "except plugins.NoPluginError as err:\n    print(err)\nelse:\n    print('no error')"
        )
        return self.run_python(code, modality, str(workdir), json.dumps(config)).strip().splitlines()[-1]

    def no_provider_message(self, modality: str) -> str:
        code = "import sys; from maskscore_core.plugin.testing import no_provider_message; print(no_provider_message(sys.argv[1]))"
        return self.run_python(code, modality).strip().splitlines()[-1]


@pytest.fixture(scope="module")
def core_env(tmp_path_factory, third_party_site, core_wheel) -> FreshEnv:
    """One environment with only the core installed; each test installs and uninstalls one plugin."""
    env = FreshEnv(tmp_path_factory.mktemp("env") / "venv", third_party_site, core_wheel)
    assert env.distributions() == ["maskscore"]
    assert {row["kind"] for row in env.listed().values()} == {"editor", "scorer", "source"}
    return env


def _modality_rows(listed: dict[str, dict]) -> dict[str, dict]:
    return {name: row for name, row in listed.items() if row["kind"] == "modality"}


def _check_installed_alone(env: FreshEnv, modality: str) -> None:
    listed = env.listed()
    assert all(row["error"] is None for row in listed.values()), listed
    assert list(_modality_rows(listed)) == [modality]
    row = listed[modality]
    assert row["distribution"] == f"maskscore-{modality}" and row["version"] == "0.1.0"
    assert row["provides"] == [modality]
    check_modality_hooks(row["hooks"])


@pytest.mark.slow
@pytest.mark.parametrize("modality", MODALITIES)
def test_plugin_installs_works_and_uninstalls_alone(core_env, modality, tmp_path):
    env = core_env
    env.install(modality)
    try:
        assert env.distributions() == ["maskscore", f"maskscore-{modality}"]
        _check_installed_alone(env, modality)
        if modality == "multimodal":
            # Alone it lists; going through a path names that path's missing plugin.
            assert "unknown modality 'keypoints'; expected one of: multimodal" in env.round_trip_failure(
                modality, tmp_path / "alone", {"multimodal_pair": "->".join(MULTIMODAL_PAIR)}
            )
            for path in MULTIMODAL_PAIR:
                env.install(path)
            try:
                result = env.round_trip(modality, tmp_path, {"multimodal_pair": "->".join(MULTIMODAL_PAIR)})
            finally:
                for path in MULTIMODAL_PAIR:
                    env.uninstall(path)
        else:
            result = env.round_trip(modality, tmp_path)
        check_round_trip(result)
    finally:
        env.uninstall(modality)
    assert env.distributions() == ["maskscore"]
    assert modality not in env.listed()
    assert env.no_provider_message(modality).startswith(f"no installed plugin answers 'mask_part' for '{modality}'")


def _maskscore(env: FreshEnv, *args: str) -> str:
    """Run the `maskscore` command of `env`; its stdout."""
    result = subprocess.run([str(env.python.parent / "maskscore"), *args], env=_env(), capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-4000:]
    return result.stdout


@pytest.mark.slow
def test_a_modality_from_outside_builds_bench_rows_and_scores_alone(core_env, tmp_path):
    """examples/maskscore-arkit, installed alone beside the core, builds bench rows of its own
    table and scores its own files from the command line (`score --modality arkit`)."""
    import pyarrow.parquet as pq

    env = core_env
    env.install("arkit")
    try:
        out = tmp_path / "bench"
        _maskscore(env, "build", "bench", "--out", str(out), "--rows", "1", "--subjects", "24", "--modalities", "arkit",
                   "--views", "2", "--resolution", "32", "--quiet")  # fmt: skip
        (shard,) = (out / "data" / "arkit").glob("shard-*.parquet")
        row = pq.read_table(shard).to_pylist()[0]
        assert len(row["output_captures"]) == 5 and row["input_capture"].endswith(".csv")
        first, _, _, _, last = (str(out / p) for p in row["output_captures"])
        part = json.loads((out / "instances" / f"{row['key']}.json").read_text())["instruction"]["part"]
        report = json.loads(_maskscore(env, "score", "--modality", "arkit", "--views", "2", "--resolution", "32", "--frame-a", str(out / row["input_capture"]),
                                       "--frame-b", first, "--part", part, first, last))  # fmt: skip
        assert report["modality"] == "arkit"
        best, worst = report["candidates"]
        assert best["overall"] > worst["overall"] and best["instruction_following"] == pytest.approx(1.0, abs=1e-6)
    finally:
        env.uninstall("arkit")
    assert "arkit" not in env.listed()
