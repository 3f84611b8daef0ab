"""The JSON manifest of a folder asset (a video clip's frames.json, a multimodal folder's
manifest.json): read once here, so every folder format refuses the same problems the same way."""

from __future__ import annotations

import json
from pathlib import Path


def read_manifest(folder: Path, name: str, fmt: str, error: type[Exception], what: str) -> dict:
    """The manifest `name` in `folder`, a JSON object declaring `"format": fmt`; `error` (the
    caller's error class) names the folder or file and what is wrong: missing, not JSON, other
    format. `what` names the asset kind ("video folder")."""
    folder = Path(folder)
    if not folder.is_dir():
        raise error(f"{what} {folder} does not exist")
    path = folder / name
    if not path.is_file():
        raise error(f"{what} {folder} has no {name}")
    try:
        manifest = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise error(f"{path} is not valid JSON: {err}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != fmt:
        raise error(f"{path} is not a {fmt} manifest")
    return manifest
