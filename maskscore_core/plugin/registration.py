"""What plugins register: modalities, editors, scorers and sources, each under its own name.

A plugin's `register_modalities(register)` hook calls `register(MyModality())`, in the style of
llm's `register_models`; editors, scorers and sources are registered the same way. The core
keeps no list of names: every modality name, table, template and task table it uses comes from
these objects (docs/plugins.md).
"""

from __future__ import annotations

import abc
import string
import zlib
from typing import Any, ClassVar, Mapping

import attrs
import pyarrow as pa

from maskscore_core import vocab
from maskscore_core.body.parts import FACIAL_ACTION_NAMES

ARROW_TYPES = {
    "string": pa.string(),
    "list<string>": pa.list_(pa.string()),
    "list<float>": pa.list_(pa.float64()),
    "list<list<float>>": pa.list_(pa.list_(pa.float64())),
}


class RegistrationError(ValueError):
    """A registered object that is not well formed (bad name, columns, template or task table)."""


def _check_name(name: str, kind: str) -> str:
    if not isinstance(name, str) or not name or not all(c.isalnum() or c in "-_." for c in name):
        raise RegistrationError(f"a {kind} name must be a non-empty string of letters, digits, '-', '_', '.'; got {name!r}")
    return name


@attrs.frozen
class Column:
    """One column of a reward table, typed as the table's JSON spec writes it."""

    name: str
    type: str = attrs.field(validator=attrs.validators.in_(tuple(ARROW_TYPES)))
    description: str = ""

    def spec(self) -> dict:
        return {"name": self.name, "type": self.type, "description": self.description}


# Every reward table starts and ends with the same columns (the design's tables).
HEAD_COLUMNS = (
    Column("key", "string", "trial identifier"),
    Column("instruction", "string", "edit described in natural language"),
)
TAIL_COLUMNS = (
    Column("scores", "list<float>", "render-and-compare scores"),
    Column("task_type", "string", "one of the 13 task types"),
    Column("dimension", "string", "instruction_following, consistency, overall"),
)
# The input column most tables share: an RGB picture of frame A (`reward_tables.conditioning_image`).
CONDITIONING_IMAGE = Column("conditioning_image", "string", "path to source frame")


def tasks_of(value) -> tuple[str, ...]:
    """The task types one task-table entry stands for ("part": the three accessory task types)."""
    names = (value,) if isinstance(value, str) else tuple(value)
    found: list[str] = []
    for name in names:
        found.extend(vocab.TASK_GROUPS["part"] if name == "part" else (name,))
    return tuple(found)


class Modality(abc.ABC):
    """A representation of the edited body: its table, its instructions, and its files.

    Subclasses set the class attributes and implement the five methods. The plugin that
    registers it also answers the `decode_to_mesh` and `mask_part` hooks for its name.
    """

    name: ClassVar[str]
    table: ClassVar[str]  # the reward table's name, e.g. "MeshEditReward"
    input_columns: ClassVar[tuple[Column, ...]] = ()  # between `instruction` and the candidates
    candidate_column: ClassVar[Column]
    template: ClassVar[str]  # the instruction; may use {part} and {phrase}
    task_table: ClassVar[Mapping[str, str | tuple[str, ...]]]  # part -> task type(s), first = geometric
    ladder_levels: ClassVar[Mapping | None] = None  # {dimension: {rung: level}}; None: the design's
    sequence: ClassVar[bool] = False  # True: an edit pairs two clips, not two frames
    # How two clips make an edit (sequence modalities): "part", when the edited part changes
    # between them (and the accessories do not); "words", when what is said differs (a
    # representation that carries only words and voice).
    pairs_by: ClassVar[str] = "part"
    # The facial actions a candidate of this modality can show (a picture read through a face
    # detector does not show gaze or brows on bald skin), or None: all. A frame pair is an edit of
    # a part only where these change, and every other action changes less (`edits.instances`):
    # an edit the modality cannot show would make a row that grades noise.
    shown_actions: ClassVar[tuple[str, ...] | None] = None
    # Files `read` takes (score's --modality default): ".glb", or "/frames.json" for a folder holding that file.
    suffixes: ClassVar[tuple[str, ...]] = ()
    order: ClassVar[int | None] = None  # position in listings; None sorts after numbered ones by name
    # The attrs class of the `ctx.config` keys it reads (`RunConfig.options`), or None.
    options: ClassVar[type | None] = None

    def __init__(self, **declared: Any) -> None:
        """The attributes above may also be given here, as keywords, instead of in the class body:
        a plugin whose class only wires its representation module declares its data where it
        registers it (`register(Depth(name="depth", table=...))`)."""
        known = {name for cls in type(self).__mro__ for name in getattr(cls, "__annotations__", {})}
        unknown = sorted(set(declared) - known)
        if unknown:
            raise RegistrationError(f"{type(self).__name__} declares unknown attributes {unknown}; known: {sorted(known)}")
        for key, value in declared.items():
            setattr(self, key, value)

    @abc.abstractmethod
    def encode(self, target, ctx):
        """records.Target -> records.Asset of this modality (the inverse of decode_to_mesh)."""

    @abc.abstractmethod
    def decode_reference(self, instance, which, ctx):
        """Frame A (`which="a"`) or B of `instance` decoded as a candidate would be -> records.Decoded."""

    @abc.abstractmethod
    def write(self, asset, directory, name, ctx):
        """Write `asset` under `directory` (file stem `name`); returns the table value: a path
        relative to the dataset root, or the numbers the column holds."""

    @abc.abstractmethod
    def read(self, value, root, ctx):
        """What `write` returned (a table value), read back into a records.Asset; a clear error for
        missing or corrupt files."""

    @abc.abstractmethod
    def row(self, instance, input_value, candidate_values, scores, dimension, root, ctx) -> dict:
        """One row of this modality's reward table (`reward_tables.make_row` builds it)."""

    def pixel_size(self, asset) -> int | None:
        """The frame size (pixels) of a candidate given as pixels that this modality reads back
        through a detector and a fit (a pixel clip), or None: decoded exactly (the default). The
        render-compare scorer then decodes the references through pixels of that size as well
        (`ctx.config["pixel_references"]`), so that both sides of the comparison pay the same
        reading error."""
        return None

    # -- derived ------------------------------------------------------------------------------
    def columns(self) -> tuple[Column, ...]:
        return (*HEAD_COLUMNS, *self.input_columns, self.candidate_column, *TAIL_COLUMNS)

    def arrow_schema(self) -> pa.Schema:
        return pa.schema(
            [pa.field(c.name, ARROW_TYPES[c.type], nullable=False) for c in self.columns()],
            metadata={"maskscore.table": self.table, "maskscore.modality": self.name},
        )

    def spec(self) -> dict:
        """The table's JSON spec, as `schemas/<table>.json` holds it."""
        return {
            "name": self.table,
            "modality": self.name,
            "candidate_column": self.candidate_column.name,
            "columns": [c.spec() for c in self.columns()],
        }

    def task_types(self) -> tuple[str, ...]:
        """Every task type this modality produces, in the design's order."""
        found = {t for value in self.task_table.values() for t in tasks_of(value)}
        return tuple(t for t in vocab.TASK_TYPES if t in found)

    def stream_id(self) -> int:
        """The modality's number in a build's random streams: its `order`, else one derived from
        its name alone, so a dataset's bytes do not depend on which other modalities are installed."""
        if self.order is not None:
            return int(self.order)
        return 1000 + zlib.crc32(self.name.encode("utf-8")) % 1_000_000

    def instruction(self, part: str, phrase: str = "") -> str:
        return self.template.format(part=part, phrase=phrase)

    def check(self) -> None:
        """Raise RegistrationError naming what is malformed; the registry calls it on register."""
        what = f"modality {getattr(self, 'name', None)!r}"
        _check_name(getattr(self, "name", None), "modality")
        for attribute in ("table", "candidate_column", "template", "task_table"):
            if not hasattr(self, attribute):
                raise RegistrationError(f"{what} does not set {attribute!r}")
        _check_name(self.table, "table")
        if not all(isinstance(c, Column) for c in (*self.input_columns, self.candidate_column)):
            raise RegistrationError(f"{what}: input_columns and candidate_column must be Column objects")
        names = [c.name for c in self.columns()]
        if len(set(names)) != len(names):
            raise RegistrationError(f"{what}: column names repeat: {names}")
        if not self.candidate_column.type.startswith("list<"):
            raise RegistrationError(f"{what}: the candidate column {self.candidate_column.name!r} must be a list type")
        fields = {f for _, f, _, _ in string.Formatter().parse(self.template) if f is not None}
        if not fields <= {"part", "phrase"}:
            raise RegistrationError(f"{what}: template {self.template!r} may use only {{part}} and {{phrase}}")
        if not self.task_table:
            raise RegistrationError(f"{what}: task_table is empty")
        for part, value in self.task_table.items():
            try:
                vocab.check_part(part)
                for task in tasks_of(value):
                    vocab.check_task_type(task)
            except vocab.VocabularyError as err:
                raise RegistrationError(f"{what} task_table: {err}") from None
        if self.pairs_by not in ("part", "words"):
            raise RegistrationError(f"{what}: pairs_by must be 'part' or 'words', got {self.pairs_by!r}")
        if self.shown_actions is not None:
            unknown = sorted(set(self.shown_actions) - set(FACIAL_ACTION_NAMES))
            if unknown or not self.shown_actions:
                raise RegistrationError(f"{what}: shown_actions names no facial action or unknown ones: {unknown}")
        if not all(isinstance(s, str) and len(s) > 1 and s[0] in "./" for s in self.suffixes):
            raise RegistrationError(f"{what}: suffixes must be strings starting with '.' or '/', got {self.suffixes!r}")
        _check_options(self.options, what)


def _check_options(options, what: str) -> None:
    if options is not None and not (isinstance(options, type) and attrs.has(options)):
        raise RegistrationError(f"{what}: options must be an attrs class (its fields are run config keys), got {options!r}")


@attrs.frozen
class Named:
    """An editor, scorer or source: the name its plugin answers the operation hook for, and the
    attrs class of the `ctx.config` keys it reads (`options`; `RunConfig.options`)."""

    name: str = attrs.field(validator=lambda _i, _a, v: _check_name(v, "plugin"))
    description: str = ""
    options: type | None = attrs.field(default=None, kw_only=True)
    kind: ClassVar[str] = ""

    def check(self) -> None:
        _check_name(self.name, self.kind)
        _check_options(self.options, f"{self.kind} {self.name!r}")


@attrs.frozen
class Editor(Named):
    """Answers `edit(editor=name, ...)`."""

    kind: ClassVar[str] = "editor"


@attrs.frozen
class Scorer(Named):
    """Answers `score(scorer=name, ...)`.

    `rows_in_flight`: how many rows' `score` calls the dataset builder may run at once in one
    process, on threads. Above 1 only for a scorer whose own work is thread-safe and does not
    depend on what else runs; it must make its plugin calls (decoding candidates, masks) inside
    `manager.serialized()`. Stored scores must not depend on it."""

    rows_in_flight: int = attrs.field(default=1, kw_only=True)
    kind: ClassVar[str] = "scorer"

    def check(self) -> None:
        super().check()
        if not isinstance(self.rows_in_flight, int) or isinstance(self.rows_in_flight, bool) or self.rows_in_flight < 1:
            raise RegistrationError(f"scorer {self.name!r}: rows_in_flight must be a whole number >= 1, got {self.rows_in_flight!r}")


@attrs.frozen
class Source(Named):
    """Answers `extract(source=name, ...)`."""

    kind: ClassVar[str] = "source"


@attrs.frozen
class Trainer(Named):
    """Answers `train(trainer=name, ...)`."""

    kind: ClassVar[str] = "trainer"


KINDS: dict[str, Any] = {"modality": Modality, "editor": Editor, "scorer": Scorer, "source": Source, "trainer": Trainer}
