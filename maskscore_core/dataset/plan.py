"""A build's configuration and its fixed plan: which (modality, task type) each instance is.

The plan is a pure function of the config (split, rows, modalities, shard size) and of the task
tables (`edits.task_types`, read when the plan is made, so a task type added to a table is
planned without touching this module). The stated proportion rule:

1. instances (rows / rows-per-instance, rounded up) are spread evenly over the modalities, the
   remainder to the first ones in vocabulary order;
2. within a modality, instance slots take its task types in turn (vocabulary order, round
   robin), so every task type of a modality gets an equal share, the remainder to the first
   ones, and any run of consecutive slots mixes them;
3. each modality's slots are cut into shards of `shard_size` instances.

Each shard's content depends only on the config and its own index, so shards can be built in
any order, on any worker, and rebuilt after a crash.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import attrs

from maskscore_core import limits, vocab

from maskscore_core.edits import instances as edits

from maskscore_core.plugin import manager as plugins
from maskscore_core.dataset.splits import SCORED_SPLITS, check_split

# The design's sizes (EditScore's three datasets).
DEFAULT_ROWS = {"bench": 2890, "reward-train": 97_300, "rl-train": 110_000}
# Scored splits hold one row per dimension of each instance; rl-train one row per instance.
DEFAULT_SHARD_SIZE = {"bench": 16, "reward-train": 64, "rl-train": 512}
# The subjects asked of the source (SpeakingFaces has 142).
DEFAULT_SUBJECTS = 142


class PlanError(ValueError):
    """A build configuration that cannot be planned."""


def _modalities(value) -> tuple[str, ...]:
    names = tuple(value) if value else plugins.modality_names()
    if not names:
        raise PlanError("no modality plugin is installed; install one (pip install maskscore-mesh) or name --modalities")
    for name in names:
        vocab.check_modality(name)
    if len(set(names)) != len(names):
        raise PlanError(f"modalities listed twice: {names}")
    return tuple(m for m in plugins.modality_names() if m in names)  # registered order, whatever the input order


@attrs.frozen
class BuildConfig:
    """Everything that decides a dataset's bytes, plus how to run the build (out, workers, backend)."""

    split: str = attrs.field(validator=lambda _i, _a, v: check_split(v))
    out: Path = attrs.field(converter=Path)
    rows: int | None = None
    seed: int = 0
    source: str = "anny"
    subjects: int = DEFAULT_SUBJECTS
    source_options: dict[str, Any] = attrs.field(factory=dict)
    modalities: tuple[str, ...] = attrs.field(default=(), converter=_modalities)
    editor: str = "frame-pair"
    editor_options: dict[str, Any] = attrs.field(factory=dict)  # `--editor-option`, handed to `edit` as ctx.config["editor_options"]
    scorer: str = "render-compare"
    views: int = 8
    resolution: int = 256
    shard_size: int | None = None
    workers: int = 1
    backend: str = attrs.field(default="local", validator=attrs.validators.in_(("local", "ray")))
    # "module:function" making edit instances, and extra plugin modules to register in every
    # worker (tests use both to run the machinery with plugins defined in the test suite).
    instance_maker: str = "maskscore_core.edits.instances:make_instances"
    plugin_modules: tuple[str, ...] = attrs.field(default=(), converter=tuple)

    def __attrs_post_init__(self):
        if self.rows is not None and self.rows <= 0:
            raise PlanError(f"--rows must be positive, got {self.rows}")
        if self.workers < 1:
            raise PlanError(f"--workers must be at least 1, got {self.workers}")
        try:  # the command line's bounds (`limits`)
            limits.check_render_size(self.views, self.resolution)
        except limits.LimitError as err:
            raise PlanError(str(err)) from None
        if self.shard_size is not None and self.shard_size < 1:
            raise PlanError(f"shard size must be at least 1, got {self.shard_size}")

    @property
    def scored(self) -> bool:
        return self.split in SCORED_SPLITS

    @property
    def rows_per_instance(self) -> int:
        return len(vocab.DIMENSIONS) if self.scored else 1

    @property
    def total_rows(self) -> int:
        return self.rows if self.rows is not None else DEFAULT_ROWS[self.split]

    @property
    def instances_per_shard(self) -> int:
        return self.shard_size if self.shard_size is not None else DEFAULT_SHARD_SIZE[self.split]

    def source_config(self) -> dict[str, Any]:
        """What the source's `extract` hook receives."""
        return dict(sorted({"seed": self.seed, "subjects": self.subjects, **self.source_options}.items()))

    def content_config(self) -> dict[str, Any]:
        """The fields that decide the dataset's bytes (for the card); out/workers/backend do not."""
        return {
            "split": self.split,
            "rows": self.total_rows,
            "seed": self.seed,
            "source": self.source,
            "source_config": self.source_config(),
            "modalities": list(self.modalities),
            "editor": self.editor if self.scored else None,
            **({"editor_options": dict(sorted(self.editor_options.items()))} if self.scored and self.editor_options else {}),
            "scorer": self.scorer if self.scored else None,
            "views": self.views,
            "resolution": self.resolution,
            "shard_size": self.instances_per_shard,
            "instance_maker": self.instance_maker,
            # the tables the plan read: a build made with other tables is another dataset
            "task_types": {m: list(edits.task_types(m)) for m in self.modalities},
        }


@attrs.frozen
class ShardSpec:
    """One shard: instances of one modality, the `index`-th shard of that modality; `task_types`
    holds the planned task type of each of its instances, in order."""

    split: str
    modality: str
    index: int
    task_types: tuple[str, ...] = attrs.field(converter=tuple)

    @property
    def count(self) -> int:
        return len(self.task_types)

    @property
    def name(self) -> str:
        return f"shard-{self.index:05d}"

    def parquet_path(self, root: Path) -> Path:
        return Path(root) / "data" / self.modality / f"{self.name}.parquet"

    def asset_dir(self, root: Path) -> Path:
        return Path(root) / "assets" / self.modality / self.name


def instances_per_modality(config: BuildConfig) -> dict[str, int]:
    """How many instances each modality gets: rows / rows-per-instance, rounded up, spread evenly."""
    total = math.ceil(config.total_rows / config.rows_per_instance)
    count = len(config.modalities)
    base, remainder = divmod(total, count)
    return {m: base + (1 if i < remainder else 0) for i, m in enumerate(config.modalities)}


def task_slots(modality: str, instances: int) -> tuple[str, ...]:
    """The task type of each of `modality`'s instance slots: its task types in turn."""
    tasks = edits.task_types(modality)
    if not tasks:
        raise PlanError(f"the {modality} modality has no task type in its task_table; it cannot be planned")
    return tuple(tasks[i % len(tasks)] for i in range(instances))


def planned_instances(config: BuildConfig) -> dict[str, dict[str, int]]:
    """Planned instances per modality and task type (task types in vocabulary order)."""
    planned = {}
    for modality, instances in instances_per_modality(config).items():
        slots = task_slots(modality, instances)
        planned[modality] = {t: slots.count(t) for t in vocab.TASK_TYPES if t in slots}
    return planned


def shard_plan(config: BuildConfig) -> list[ShardSpec]:
    """The fixed list of shards, in (modality, index) order, each with its instances' task types."""
    shards = []
    size = config.instances_per_shard
    for modality, instances in instances_per_modality(config).items():
        slots = task_slots(modality, instances)
        for index in range(math.ceil(instances / size)):
            shards.append(ShardSpec(config.split, modality, index, slots[index * size:(index + 1) * size]))
    return shards
