"""Reading a built dataset back: rows, their edit instances (sidecars) and their candidates.

Candidates are rebuilt from a row's candidate column with the `read_asset` hook; their rung is
their position, since a bench row lists the ladder in order (rung 1 first).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import pyarrow.parquet as pq

from .. import plugins, schemas, vocab
from ..context import Context
from ..records import Candidate, EditInstance, converter


class DatasetReadError(RuntimeError):
    """A dataset directory, shard or sidecar that is missing or does not parse."""


def build_config(root: Path) -> dict:
    """The config a dataset was built with (from its card, else from its resume marker)."""
    root = Path(root)
    card = root / "card.json"
    if card.exists():
        return json.loads(card.read_text())["config"]
    marker = root / ".build-config.json"
    if marker.exists():
        return json.loads(marker.read_text())
    raise DatasetReadError(f"{root} has neither card.json nor .build-config.json: not a finished MaskScore build")


def render_settings(root: Path) -> dict:
    """{"views", "resolution"} the dataset was built with: render-space assets (depth maps) have
    that shape, so reading them back needs the same settings."""
    config = build_config(root)
    return {"views": int(config["views"]), "resolution": int(config["resolution"])}


def shard_paths(root: Path, modalities=None) -> list[Path]:
    root = Path(root)
    if not (root / "data").is_dir():
        raise DatasetReadError(f"{root} is not a MaskScore dataset: no data/ directory")
    wanted = set(modalities) if modalities else set(vocab.MODALITIES)
    for name in wanted:
        vocab.check_modality(name)
    return sorted(p for p in (root / "data").glob("*/shard-*.parquet") if p.parent.name in wanted)


def iter_rows(root: Path, modalities=None) -> Iterator[tuple[str, dict]]:
    """(modality, row) for every row, shards in sorted order, rows in file order."""
    for path in shard_paths(root, modalities):
        modality = path.parent.name
        try:
            table = pq.read_table(path)
            schemas.validate(schemas.table_for_modality(modality), table)
        except Exception as err:
            raise DatasetReadError(f"shard {path} cannot be read: {type(err).__name__}: {err}") from err
        for row in table.to_pylist():
            yield modality, row


def load_instance(root: Path, key: str) -> EditInstance:
    """The EditInstance of `key` from DIR/instances/<key>.json."""
    path = Path(root) / "instances" / f"{key}.json"
    try:
        return converter.structure(json.loads(path.read_text()), EditInstance)
    except FileNotFoundError:
        raise DatasetReadError(f"instance sidecar for row {key!r} is missing: {path}") from None
    except Exception as err:
        raise DatasetReadError(f"instance sidecar {path} is corrupt: {type(err).__name__}: {err}") from err


def candidate_values(modality: str, row: dict) -> list:
    return list(row[schemas.CANDIDATE_COLUMN[schemas.table_for_modality(modality)]])


def read_candidates(root: Path, modality: str, values: list, ctx: Context) -> list[Candidate]:
    """Candidates from their column values (read_asset), labelled and ranked by ladder position.
    The build scores exactly these, so its stored scores are the scores of what rows point to."""
    candidates = []
    for position, value in enumerate(values):
        asset = plugins.call("read_asset", modality, modality=modality, value=value, root=Path(root), ctx=ctx)
        candidates.append(Candidate(f"rung{position + 1}", asset, position + 1))
    return candidates


def load_candidates(root: Path, modality: str, row: dict, ctx: Context) -> list[Candidate]:
    """The row's candidates as Assets (read_asset), labelled and ranked by their ladder position."""
    return read_candidates(root, modality, candidate_values(modality, row), ctx)
