"""Reading a built dataset back: rows, their edit instances (sidecars) and their candidates.

Candidates are rebuilt from a row's candidate column with the registered modality's `read`; a bench row
lists its modality's ladder in order (rung 1 first; speech and text drop rung 4, as the levels
the bench recorded say: `ladder_rungs`), so their rungs follow from their positions.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import pyarrow.parquet as pq

from maskscore_core import vocab

from maskscore_core.plugin import manager as plugins

from maskscore_core.dataset import schemas
from maskscore_core.plugin.context import Context
from maskscore_core.paths import check_key, contained
from maskscore_core.plugin.records import Candidate, EditInstance, converter
from maskscore_core.dataset.protocol import rungs_of


class DatasetReadError(RuntimeError):
    """A dataset directory, shard or sidecar that is missing or does not parse."""


def build_config(root: Path) -> dict:
    """The config a dataset was built with (from its card, else from its resume marker)."""
    root = Path(root)
    for path, field in ((root / "card.json", "config"), (root / ".build-config.json", None)):
        if not path.exists():
            continue
        try:
            data = json.loads(path.read_text())
            config = data[field] if field else data
            if not isinstance(config, dict):
                raise TypeError(f"its config is a {type(config).__name__}, not an object")
        except Exception as err:  # noqa: BLE001 - any parse failure is a corrupt file
            raise DatasetReadError(f"{path} is corrupt ({type(err).__name__}: {err}); rebuild the dataset"
                                   " with `maskscore build`") from None
        return config
    raise DatasetReadError(f"{root} has neither card.json nor .build-config.json: not a finished MaskScore build")


def render_settings(root: Path) -> dict:
    """{"views", "resolution"} the dataset was built with: render-space assets (depth maps) have
    that shape, so reading them back needs the same settings."""
    config = build_config(root)
    try:
        return {"views": int(config["views"]), "resolution": int(config["resolution"])}
    except (KeyError, TypeError, ValueError) as err:
        raise DatasetReadError(f"the build config of {root} has no valid views/resolution ({type(err).__name__}: {err});"
                               " rebuild the dataset") from None


def shard_paths(root: Path, modalities=None) -> list[Path]:
    root = Path(root)
    if not (root / "data").is_dir():
        raise DatasetReadError(f"{root} is not a MaskScore dataset: no data/ directory")
    wanted = set(modalities) if modalities else set(plugins.modality_names())
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
    """The EditInstance of `key` from DIR/instances/<key>.json (a key that is no plain file name
    is refused: it would name a file outside the dataset)."""
    check_key(key, "row key", DatasetReadError)
    path = contained(root, f"instances/{key}.json", f"instance sidecar of row {key!r}", DatasetReadError)
    try:
        return converter.structure(json.loads(path.read_text()), EditInstance)
    except FileNotFoundError:
        raise DatasetReadError(f"instance sidecar for row {key!r} is missing: {path}") from None
    except Exception as err:
        raise DatasetReadError(f"instance sidecar {path} is corrupt: {type(err).__name__}: {err}") from err


def candidate_values(modality: str, row: dict) -> list:
    return list(row[schemas.CANDIDATE_COLUMN[schemas.table_for_modality(modality)]])


def ladder_rungs(root: Path, modality: str, count: int) -> list[int]:
    """The rungs of a row's `count` candidates: its modality's ladder as the bench recorded it
    (`protocol.rungs_of`) when the row holds a whole ladder, else their positions 1..count."""
    try:
        table = build_config(root).get("ladder_levels", {}).get(modality)
    except DatasetReadError:
        table = None
    rungs = rungs_of(table)
    return rungs if len(rungs) == count else list(range(1, count + 1))


def read_candidates(root: Path, modality: str, values: list, ctx: Context, rungs: list | None = None) -> list[Candidate]:
    """Candidates from their column values (`Modality.read`), labelled and ranked by their rungs
    (default `ladder_rungs`). The build scores exactly these, so its stored scores are the scores
    of what rows point to."""
    rungs = ladder_rungs(root, modality, len(values)) if rungs is None else list(rungs)
    candidates = []
    for position, (value, rung) in enumerate(zip(values, rungs, strict=True)):
        asset = plugins.call("read_asset", modality, modality=modality, value=value, root=Path(root), ctx=ctx)
        number = position + 1 if rung is None else rung
        candidates.append(Candidate(f"rung{number}", asset, rung))
    return candidates


def load_candidates(root: Path, modality: str, row: dict, ctx: Context) -> list[Candidate]:
    """The row's candidates as Assets (`Modality.read`), labelled and ranked by their ladder position;
    DatasetReadError naming the row when one cannot be read (missing, corrupt, outside the dataset)."""
    try:
        return read_candidates(root, modality, candidate_values(modality, row), ctx)
    except Exception as err:  # noqa: BLE001 - whatever the plugin raises, the row is what is broken
        raise DatasetReadError(f"bench row {row.get('key')!r} ({modality}): its candidates cannot be read:"
                               f" {type(err).__name__}: {err}") from err
