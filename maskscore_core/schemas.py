"""Arrow schemas of the eight reward tables, read from the JSON files in `schemas/`.

The JSON files are the single source of truth (seed 000's column lists, verbatim); this module
turns them into `pyarrow` schemas and validates tables against them, naming the column and the
row of the first problem so a broken dataset is fixed in minutes, not hours.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path

import pyarrow as pa

from . import vocab

_TYPES = {
    "string": pa.string(),
    "list<string>": pa.list_(pa.string()),
    "list<float>": pa.list_(pa.float64()),
    "list<list<float>>": pa.list_(pa.list_(pa.float64())),
}

# The column of each table that holds the candidate list (scores align with it element-wise).
CANDIDATE_COLUMN = {
    "TextEditReward": "output_texts",
    "MeshEditReward": "output_meshes",
    "SpeechEditReward": "output_audios",
    "MultimodalEditReward": "output_candidates",
    "KeypointEditReward": "output_keypoints",
    "DepthEditReward": "output_depths",
    "VideoEditReward": "output_videos",
    "PoseEditReward": "output_poses",
}


class SchemaError(ValueError):
    """A table that does not match its reward-table schema."""


def schema_dir() -> Path:
    """`schemas/` of the source tree, or the copy shipped inside the wheel."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "_schemas", here.parent / "schemas"):
        if (candidate / "MeshEditReward.json").exists():
            return candidate
    raise FileNotFoundError(f"reward-table schemas not found next to {here}")


@functools.cache
def table_specs() -> dict[str, dict]:
    """Every reward table's JSON spec, keyed by table name."""
    specs = {}
    for path in sorted(schema_dir().glob("*EditReward.json")):
        spec = json.loads(path.read_text())
        specs[spec["name"]] = spec
    return specs


def table_for_modality(modality: str) -> str:
    vocab.check_modality(modality)
    return next(name for name, spec in table_specs().items() if spec["modality"] == modality)


def arrow_schema(table: str) -> pa.Schema:
    specs = table_specs()
    if table not in specs:
        raise SchemaError(f"unknown reward table {table!r}; expected one of: {', '.join(specs)}")
    return pa.schema(
        [pa.field(col["name"], _TYPES[col["type"]], nullable=False) for col in specs[table]["columns"]],
        metadata={"maskscore.table": table, "maskscore.modality": specs[table]["modality"]},
    )


def to_table(table: str, rows: list[dict]) -> pa.Table:
    """Build an Arrow table from row dicts and validate it."""
    schema = arrow_schema(table)
    for i, row in enumerate(rows):
        missing = [f.name for f in schema if f.name not in row]
        extra = sorted(set(row) - set(schema.names))
        if missing or extra:
            raise SchemaError(f"{table} row {i}: missing columns {missing}, unexpected columns {extra}")
    try:
        arrow = pa.Table.from_pylist(rows, schema=schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as err:
        raise SchemaError(f"{table}: rows do not convert to the schema: {err}") from err
    validate(table, arrow)
    return arrow


def validate(table: str, arrow: pa.Table) -> None:
    """Raise SchemaError naming the column (and row) of the first mismatch."""
    schema = arrow_schema(table)
    if arrow.schema.names != schema.names:
        raise SchemaError(f"{table}: columns {arrow.schema.names} differ from the schema's {schema.names}")
    for field in schema:
        column = arrow.column(field.name)
        if not column.type.equals(field.type):
            raise SchemaError(f"{table} column {field.name!r}: type {column.type}, expected {field.type}")
        if column.null_count:
            row = column.to_pylist().index(None)
            raise SchemaError(f"{table} column {field.name!r} row {row}: null value")
    cand_col = CANDIDATE_COLUMN[table]
    for i, row in enumerate(arrow.select(["task_type", "dimension", "scores", cand_col]).to_pylist()):
        for name, check in (("task_type", vocab.check_task_type), ("dimension", vocab.check_dimension)):
            try:
                check(row[name])
            except vocab.VocabularyError as err:
                raise SchemaError(f"{table} column {name!r} row {i}: {err}") from None
        scores = row["scores"]
        if scores and len(scores) != len(row[cand_col]):
            raise SchemaError(
                f"{table} column 'scores' row {i}: {len(scores)} scores for {len(row[cand_col])} candidates"
            )
        if any(not math.isfinite(s) for s in scores):
            raise SchemaError(f"{table} column 'scores' row {i}: non-finite score")
