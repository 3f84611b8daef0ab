"""MaskScore's pytest plugin, installed with the core (entry point group `pytest11`).

Any test run in an environment holding MaskScore gets:

- plugin isolation: each test loads only the plugin distribution whose source tree holds the test
  (the `name` of the nearest `pyproject.toml` above the test file), plus the core's built-ins,
  with a fresh plugin manager before and after the test. So a plugin's own tests prove it works
  without the others. `@pytest.mark.maskscore_plugins("dist-a", ...)` loads more distributions
  beside it (the multimodal plugin's path plugins). The core's own tests keep the environment's
  `MASKSCORE_LOAD_PLUGINS`;
- fixtures: `ctx` (a run context small enough for shared cores) and `built_in_trials` (the
  built-in ANNY source's trials that ladder tests draw their instances from);
- parametrization of `maskscore_core.plugin.contract.ModalityContract`'s bad-file cases.

The contract itself is `maskscore_core.plugin.contract.ModalityContract`; docs/plugins.md shows its use.
"""

from __future__ import annotations

import functools
import tomllib
from pathlib import Path

import pytest

from maskscore_core.plugin import manager as plugins

CORE_DISTRIBUTION = "maskscore"


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers", "maskscore_plugins(*distributions): load these plugin distributions beside the test's own"
    )


@functools.cache
def distribution_of(directory: Path) -> str | None:
    """The project name in the nearest pyproject.toml at or above `directory`, if any."""
    for folder in (directory, *directory.parents):
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file():
            try:
                return tomllib.loads(pyproject.read_text())["project"]["name"]
            except (tomllib.TOMLDecodeError, KeyError, OSError):
                return None
    return None


def distributions_for(node) -> tuple[str, ...] | None:
    """The plugin distributions a test loads, or None to keep the environment's choice."""
    own = distribution_of(Path(node.path).resolve().parent)
    extra = [name for marker in node.iter_markers("maskscore_plugins") for name in marker.args]
    if (own is None or own == CORE_DISTRIBUTION) and not extra:
        return None
    return tuple(dict.fromkeys(([own] if own and own != CORE_DISTRIBUTION else []) + extra))


@pytest.fixture(autouse=True)
def _maskscore_plugin_isolation(request, monkeypatch):
    wanted = distributions_for(request.node)
    if wanted is not None:
        monkeypatch.setenv("MASKSCORE_LOAD_PLUGINS", ",".join(wanted))
        monkeypatch.delenv("MASKSCORE_STRICT_PLUGINS", raising=False)
    plugins.reset()
    yield
    plugins.reset()


@pytest.fixture
def ctx(tmp_path):
    """A small run in the test's tmp_path: 4 views of 96 px and 48 px video frames."""
    from maskscore_core.plugin.testing import small_context

    return small_context(tmp_path)


@pytest.fixture(scope="session")
def built_in_trials(tmp_path_factory):
    """Trials of the built-in ANNY source: seed 0, 3 subjects, 2 clips each."""
    from maskscore_core.trials.anny_source import AnnySourceConfig, generate_trials

    config = AnnySourceConfig(seed=0, subjects=3, trials_per_subject=2)
    return generate_trials(config, tmp_path_factory.mktemp("built-in-trials"))


def pytest_generate_tests(metafunc) -> None:
    """A contract's bad-file cases, one test each."""
    if "bad_file" in metafunc.fixturenames and metafunc.cls is not None:
        cases = list(getattr(metafunc.cls, "bad_files", ()))
        metafunc.parametrize("bad_file", cases, ids=[str(case[0])[:40] for case in cases])
