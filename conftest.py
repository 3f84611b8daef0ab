"""Test-wide settings: only the project's own plugin distributions load, never a user's."""

from __future__ import annotations

import os

PROJECT_PLUGINS = ",".join(
    f"maskscore-{name}" for name in ("mesh", "pose", "keypoints", "depth", "video", "speech", "text", "multimodal")
)
os.environ["MASKSCORE_LOAD_PLUGINS"] = PROJECT_PLUGINS
os.environ.pop("MASKSCORE_STRICT_PLUGINS", None)
# Each test gets a fresh plugin manager from the core's pytest plugin (maskscore_core.plugin.pytest_plugin);
# a plugin's own tests load only that plugin.
