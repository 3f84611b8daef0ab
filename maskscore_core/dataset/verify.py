"""Is a committed shard whole?

A shard's Parquet file lists, in its metadata, every other file the shard committed (assets,
sidecars, conditioning images, ...) with its sha256. A shard is whole when its Parquet file
reads and matches its reward table, holds the planned number of rows, and every listed file is
there with those bytes. A resumed build rebuilds a shard that is not whole (a truncated file,
deleted assets), and the card is written only once every shard is, so it never certifies
missing data.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from maskscore_core.dataset import schemas
from maskscore_core.dataset.plan import ShardSpec

MANIFEST_KEY = b"maskscore.files"
NOT_BUILT = "not built"


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def with_manifest(table: pa.Table, digests: dict[str, str]) -> pa.Table:
    """`table` with the manifest {path relative to the dataset root: sha256} in its metadata."""
    manifest = json.dumps(dict(sorted(digests.items())), separators=(",", ":")).encode()
    return table.replace_schema_metadata({**(table.schema.metadata or {}), MANIFEST_KEY: manifest})


def shard_problem(root: Path, spec: ShardSpec, expected_rows: int) -> str | None:
    """None when the shard is whole; else what is wrong with it, in a few words."""
    root = Path(root)
    path = spec.parquet_path(root)
    if not path.exists():
        return NOT_BUILT
    try:
        table = pq.read_table(path)
        schemas.validate(schemas.table_for_modality(spec.modality), table)
    except Exception as err:  # noqa: BLE001 - any unreadable file is damaged, whatever the reader says
        return f"unreadable: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
    if table.num_rows != expected_rows:
        return f"{table.num_rows} rows where the plan has {expected_rows}"
    raw = (table.schema.metadata or {}).get(MANIFEST_KEY)
    if raw is None:
        return "no file manifest (written by an older MaskScore)"
    try:
        manifest = json.loads(raw)
    except ValueError:
        return "its file manifest does not parse"
    for relative, digest in manifest.items():
        if Path(relative).is_absolute() or ".." in Path(relative).parts:
            return f"its file manifest names {relative!r}, outside the dataset"
        file = root / relative
        if not file.is_file():
            return f"{relative} is missing"
        if file_digest(file) != digest:
            return f"{relative} differs from what the shard wrote"
    return None
