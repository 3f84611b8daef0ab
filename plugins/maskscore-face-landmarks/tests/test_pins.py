"""The detector's pins agree with the rest of the environment: mediapipe 0.10.14 needs protobuf
>= 4.25.3, < 5, and every other installed distribution (Ray above all) must accept that protobuf."""

from __future__ import annotations

import importlib.metadata as md
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def _pins() -> dict[str, Requirement]:
    declared = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    return {Requirement(text).name: Requirement(text) for text in declared}


def _unconditional(distribution) -> list[Requirement]:
    """The requirements a plain install of `distribution` enforces (no extras)."""
    out = []
    for text in distribution.requires or []:
        requirement = Requirement(text)
        if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
            out.append(requirement)
    return out


def test_pyproject_pins_the_installed_mediapipe_and_its_protobuf_range():
    pins = _pins()
    installed = Version(md.version("mediapipe"))
    assert installed in pins["mediapipe"].specifier and str(pins["mediapipe"].specifier) == "==0.10.14"
    mediapipe_protobuf = next(r for r in _unconditional(md.distribution("mediapipe")) if r.name == "protobuf")
    assert pins["protobuf"].specifier == mediapipe_protobuf.specifier


def test_every_installed_distribution_accepts_the_installed_protobuf():
    protobuf = Version(md.version("protobuf"))
    refusing = []
    for distribution in md.distributions():
        for requirement in _unconditional(distribution):
            if requirement.name == "protobuf" and protobuf not in requirement.specifier:
                refusing.append(f"{distribution.metadata['Name']} requires {requirement}")
    assert not refusing, f"protobuf {protobuf} is refused: {refusing}"
    ray = [r for r in _unconditional(md.distribution("ray")) if r.name == "protobuf"]
    assert ray and all(protobuf in r.specifier for r in ray)  # Ray's own protobuf use


def test_mediapipe_requirements_are_met():
    missing = []
    for requirement in _unconditional(md.distribution("mediapipe")):
        try:
            version = Version(md.version(requirement.name))
        except md.PackageNotFoundError:
            missing.append(f"{requirement} (not installed)")
            continue
        if version not in requirement.specifier:
            missing.append(f"{requirement} (installed {version})")
    assert not missing, missing
