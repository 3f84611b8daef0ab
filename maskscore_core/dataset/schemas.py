"""Arrow schemas of the reward tables, from the registered modalities, and table validation.

Each registered `Modality` declares its table's columns; this module turns them into `pyarrow`
schemas and validates tables against them, naming the column and the row of the first problem so
a broken dataset is fixed in minutes, not hours. `schemas/*.json` in the source tree is generated
from the registered modalities (`python -m maskscore_core.dataset.schemas [DIR]`; a test keeps it current).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Mapping
from pathlib import Path

import pyarrow as pa

from maskscore_core import vocab

from maskscore_core.plugin import manager as plugins


class SchemaError(ValueError):
    """A table that does not match its reward-table schema."""


def _by_table() -> dict:
    return {m.table: m for m in plugins.modalities()}


def _modality_of(table: str):
    found = _by_table()
    if table not in found:
        raise SchemaError(f"unknown reward table {table!r}; expected one of: {', '.join(found) or 'none installed'}")
    return found[table]


def table_specs() -> dict[str, dict]:
    """Every registered reward table's JSON spec, keyed by table name."""
    return {table: modality.spec() for table, modality in _by_table().items()}


def table_for_modality(modality: str) -> str:
    return plugins.modality(modality).table


def candidate_column(table: str) -> str:
    """The column of `table` holding the candidate list (scores align with it element-wise)."""
    return _modality_of(table).candidate_column.name


class _CandidateColumns(Mapping):
    """table -> candidate column, of the registered modalities (for callers indexing a dict)."""

    def __getitem__(self, table: str) -> str:
        return candidate_column(table)

    def __iter__(self):
        return iter(_by_table())

    def __len__(self) -> int:
        return len(_by_table())


CANDIDATE_COLUMN = _CandidateColumns()


def arrow_schema(table: str) -> pa.Schema:
    return _modality_of(table).arrow_schema()


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
    cand_col = candidate_column(table)
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


# -- the generated files ----------------------------------------------------------------------


def spec_files() -> dict[str, str]:
    """{file name: content} of the JSON spec of every registered table."""
    return {f"{table}.json": json.dumps(spec, indent=2) + "\n" for table, spec in sorted(table_specs().items())}


def write_spec_files(directory: Path) -> list[str]:
    """Write every registered table's spec into `directory`, remove stale ones; the names written."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    files = spec_files()
    for stale in sorted(directory.glob("*EditReward.json")):
        if stale.name not in files:
            stale.unlink()
    for name, content in files.items():
        (directory / name).write_text(content)
    return sorted(files)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m maskscore_core.dataset.schemas",
                                     description="Write the registered modalities' reward-table specs as JSON.")  # fmt: skip
    parser.add_argument("directory", nargs="?", default="schemas", help="where to write them (default: schemas)")
    args = parser.parse_args(argv)
    for name in write_spec_files(Path(args.directory)):
        print(Path(args.directory) / name, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
