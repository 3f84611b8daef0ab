"""One shard's data flow, from source trials to a committed Parquet file.

For each instance: source trials -> edit instances -> candidates (`edit`) -> scores (`score`,
scored splits only) -> assets (`Modality.write`) -> one row per dimension (`Modality.row`).
Everything is written under a private temporary root that mirrors the dataset's layout, then
committed: the asset directory and the instance sidecars are moved into place first, the
Parquet file last, listing every other file with its sha256. A shard whose Parquet file exists
was committed whole (the runner checks it still is, `verify.py`, before a resume trusts it);
anything else is rebuilt from scratch, so a build killed at any moment loses no row and
duplicates none.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
import os
import re
import shutil
from pathlib import Path

import attrs
import numpy as np
import pyarrow.parquet as pq

from maskscore_core import vocab

from maskscore_core.plugin import manager as plugins
from maskscore_core.plugin import model_editors

from maskscore_core.dataset import schemas
from maskscore_core.plugin.context import Context
from maskscore_core.plugin.records import Candidate, EditInstance, converter
from maskscore_core.plugin.registration import CONDITIONING_IMAGE
from maskscore_core.dataset.reward_tables import render_conditioning_image
from maskscore_core.dataset import atomic, reader, verify
from maskscore_core.dataset.plan import BuildConfig, ShardSpec
from maskscore_core.dataset import rows_in_flight
from maskscore_core.dataset.rows_in_flight import RowsInFlight
from maskscore_core.dataset.scorer_config import hook_config
from maskscore_core.dataset.splits import SPLITS, trials_for_split

PARTIAL_DIR = ".partial"
WORK_DIR = ".work"
# Fixed writer options: the same rows give the same bytes (no timestamps in Parquet metadata).
PARQUET_OPTIONS = dict(
    compression="zstd",
    compression_level=3,
    use_dictionary=True,
    write_statistics=True,
    version="2.6",
    data_page_version="1.0",
    store_schema=True,
)


class ShardError(RuntimeError):
    """A shard that cannot be built; the message names the shard and the instance."""


@attrs.frozen
class ShardOutcome:
    modality: str
    index: int
    rows: int
    built: bool  # False: it was already complete (resumed build)


def register_plugin_modules(names) -> None:
    """Register extra plugin modules (by import name) in this process, once each."""
    pm = plugins.get_plugin_manager()
    for name in names:
        if not pm.has_plugin(name):
            pm.register(importlib.import_module(name), name=name)


def load_instance_maker(spec: str):
    module_name, _, function = spec.partition(":")
    if not function:
        raise ShardError(f"instance maker {spec!r} must be 'module:function'")
    return getattr(importlib.import_module(module_name), function)


_TRIALS: dict[tuple, list] = {}
# Heavy objects hooks share through ctx.shared (renderer, LPIPS), kept for the process's life.
_SHARED: dict = {}


def make_context(workdir: Path, seed: int, config: dict) -> Context:
    """A hook context whose shared objects live as long as this process (built once per worker)."""
    return Context(workdir=workdir, seed=seed, config=plugins.check_run_config(config), shared=_SHARED)


def forget_trials(root: Path) -> None:
    """Drop this process's cached trials of the build at `root` (their files are about to go)."""
    for key in [k for k in _TRIALS if k[-1] == str(root)]:
        del _TRIALS[key]


def split_trials(config: BuildConfig) -> list:
    """The source's trials of this split's subject pool, extracted once per process."""
    key = (config.source, json.dumps(config.source_config(), sort_keys=True), config.split, str(config.out))
    if key not in _TRIALS:
        workdir = Path(config.out) / WORK_DIR / f"trials-{os.getpid()}"
        workdir.mkdir(parents=True, exist_ok=True)
        ctx = make_context(workdir, config.seed, scoring_config(config))
        trials = list(plugins.call("extract", config.source, source=config.source, config=config.source_config(), ctx=ctx))
        _TRIALS[key] = trials_for_split(trials, config.split, config.seed)
    return _TRIALS[key]


def scoring_config(config: BuildConfig) -> dict:
    """ctx.config for every hook of the build: the render size the scorer uses, and the rest of
    what `maskscore eval` hands a scorer (one pass, default weights, temperature 0), so an eval
    of the same scorer configuration makes the very same `score` calls."""
    return hook_config(config.views, config.resolution)


def shard_rng(config: BuildConfig, spec: ShardSpec) -> np.random.Generator:
    modality_id = plugins.modality(spec.modality).stream_id()
    return np.random.default_rng([config.seed, SPLITS.index(config.split), modality_id, spec.index])


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def row_key(spec: ShardSpec, position: int, instance: EditInstance) -> str:
    """A dataset-wide unique, file-name-safe key: modality, shard, position, then the edit's own key."""
    own = _UNSAFE.sub("_", instance.key).strip("_") or "edit"
    return f"{spec.modality}-{spec.index:05d}-{position:04d}-{own}"


def _column_value(value, temp_root: Path, asset_dir: Path):
    """`Modality.write`'s answer as a path relative to the dataset root (lists pass through)."""
    if not isinstance(value, str):
        return value
    path = Path(value)
    if path.is_absolute():
        return path.resolve().relative_to(temp_root.resolve()).as_posix()
    if (temp_root / path).exists():
        return path.as_posix()
    if (asset_dir / path).exists():
        return (asset_dir / path).relative_to(temp_root).as_posix()
    raise ShardError(f"Modality.write returned {value!r}, which names no file under the dataset root")


def _ordered(candidates: list[Candidate]) -> list[Candidate]:
    """Candidates in ladder order (rung 1 first); model outputs without a rung keep their order."""
    if all(c.rung is not None for c in candidates):
        return sorted(candidates, key=lambda c: c.rung)
    return list(candidates)


def instance_rows(config: BuildConfig, instance: EditInstance, temp_root: Path, asset_dir: Path, ctx: Context) -> list[dict]:
    """Edit, write the assets, score them as the rows hold them, and return the instance's rows
    (`written_rows`, then `scored_rows`)."""
    return scored_rows(config, instance, *written_rows(config, instance, temp_root, asset_dir, ctx), ctx)


def written_rows(config: BuildConfig, instance: EditInstance, temp_root: Path, asset_dir: Path, ctx: Context):
    """Edit and write the assets; returns (the unscored row, the candidates as the rows hold them
    or None when the split is not scored, how many the editor made).

    The scorer sees the candidates read back from the rows' candidate column
    (`reader.read_candidates`), as `maskscore eval` and any reward model do: a file format's
    rounding (a .glb stores float32) then never makes the stored scores differ from a re-scoring
    of the same bench. The column is taken from the unscored row (the RL row, made once), since
    only the modality knows what its column holds (a path, the transcript itself, ...)."""
    modality = instance.instruction.modality
    key = instance.key
    candidates = []
    if config.scored:
        candidates = _ordered(list(plugins.call("edit", config.editor, editor=config.editor, modality=modality, instance=instance, ctx=ctx)))
        if not candidates:
            raise ShardError(f"editor {config.editor!r} returned no candidates for {key}")
    source_asset = plugins.call("encode", modality, modality=modality, target=instance.a, ctx=ctx)

    def write(asset, name):
        value = plugins.call("write_asset", asset.modality, asset=asset, directory=asset_dir, name=name, ctx=ctx)
        return _column_value(value, temp_root, asset_dir)

    input_value = write(source_asset, f"{key}-input")
    candidate_values = [write(c.asset, f"{key}-rung{c.rung if c.rung is not None else n + 1}") for n, c in enumerate(candidates)]

    # Frame A's picture is rendered here, where the rows of a table that holds it are made; a row
    # only names it. The row is made once, unscored (what an RL row is); each dimension's row is
    # that row with its scores and dimension, in the same column order.
    if CONDITIONING_IMAGE in plugins.modality(modality).input_columns:
        render_conditioning_image(instance, temp_root, ctx)
    unscored = dict(plugins.call(
        "reward_row", modality, modality=modality, instance=instance, input_value=input_value,
        candidate_values=candidate_values, scores=[], dimension="overall", root=temp_root, ctx=ctx,
    ))
    if not config.scored:
        return unscored, None, 0
    column = reader.candidate_values(modality, unscored)
    written = reader.read_candidates(temp_root, modality, column, ctx, rungs=[c.rung for c in candidates])
    return unscored, written, len(candidates)


def scored_rows(config: BuildConfig, instance: EditInstance, unscored: dict, written, made: int, ctx: Context) -> list[dict]:
    """The instance's rows, one per dimension, scored by the build's scorer (the unscored row
    alone where the split is not scored). May run on another thread (`rows_in_flight.limit_for`)."""
    if written is None:
        return [unscored]
    scored = list(plugins.call("score", config.scorer, scorer=config.scorer, instance=instance, candidates=written, ctx=ctx))
    if len(scored) != made:
        raise ShardError(f"scorer {config.scorer!r} returned {len(scored)} scores for {made} candidates of {instance.key}")
    return [{**unscored, "scores": [float(s.dimension(dimension)) for s in scored], "dimension": dimension}
            for dimension in vocab.DIMENSIONS]


def _keep_editor_records(temp_root: Path, root: Path) -> str:
    """Move the model editors' per-output records (`model_editors.RECORDS`) of a shard that
    failed into the dataset root, where they outlive its scratch space: what a model made and why
    it could not be scored is never lost with the failure. Returns a note for the error line."""
    records = sorted((temp_root / model_editors.RECORDS).glob("*.json"))
    for path in records:
        atomic.move_file(path, root / model_editors.RECORDS / path.name)
    return f" (editor-output records kept in {root / model_editors.RECORDS})" if records else ""


def build_shard(config: BuildConfig, spec: ShardSpec) -> ShardOutcome:
    """Build one shard unless it is already complete; safe to call again after any crash."""
    root = Path(config.out)
    final_parquet = spec.parquet_path(root)
    if final_parquet.exists():
        return ShardOutcome(spec.modality, spec.index, pq.ParquetFile(final_parquet).metadata.num_rows, built=False)
    register_plugin_modules(config.plugin_modules)
    temp_root = root / PARTIAL_DIR / f"{spec.modality}-{spec.name}"
    if temp_root.exists():
        shutil.rmtree(temp_root)  # a killed attempt's leftovers
    asset_dir = spec.asset_dir(temp_root)
    asset_dir.mkdir(parents=True)
    editor_options = {"editor_options": dict(config.editor_options)} if config.editor_options else {}
    ctx = make_context(temp_root / "work", config.seed, {**scoring_config(config), "dataset_root": str(temp_root), **editor_options})
    ctx.workdir.mkdir()

    trials = split_trials(config)
    make_instances = load_instance_maker(config.instance_maker)
    instances = list(make_instances(trials, spec.modality, shard_rng(config, spec), spec.count, task_types=spec.task_types))
    if len(instances) != spec.count:
        raise ShardError(f"{spec.modality} {spec.name}: asked for {spec.count} instances, the instance maker gave {len(instances)}")
    for position, (instance, planned) in enumerate(zip(instances, spec.task_types)):
        if instance.instruction.task_type != planned:
            raise ShardError(f"{spec.modality} {spec.name}, instance {position}: the plan asks for task type {planned!r},"
                             f" the instance maker gave {instance.instruction.task_type!r}")
    rows = []
    sidecars = {}
    # Each instance is edited and written on this thread, then scored, up to `rows_in_flight` at
    # once; its rows are taken in the instances' order, so the shard's bytes do not depend on it.
    key, window = None, RowsInFlight(rows_in_flight.limit_for(config.scorer) if config.scored else 1)
    try:
        with window:
            for position, instance in enumerate(instances):
                instance = attrs.evolve(instance, key=row_key(spec, position, instance))
                key = instance.key
                written = written_rows(config, instance, temp_root, asset_dir, ctx)
                sidecars[key] = json.dumps(converter.unstructure(instance), sort_keys=True, indent=1) + "\n"
                for _key, found in window.put(key, functools.partial(scored_rows, config, instance, *written, ctx)):
                    rows.extend(found)
            for _key, found in window.drain():
                rows.extend(found)
    except Exception as err:
        kept = _keep_editor_records(temp_root, root)
        failed = window.failed_label if window.failed_label is not None else key
        raise ShardError(f"{spec.split} {spec.modality} {spec.name}, instance {failed}: {plugins.describe_error(err)}{kept}") from err
    shutil.rmtree(ctx.workdir)
    files = sorted(p for p in temp_root.rglob("*") if p.is_file())
    digests = {p.relative_to(temp_root).as_posix(): verify.file_digest(p) for p in files}
    digests.update({f"instances/{key}.json": hashlib.sha256(text.encode()).hexdigest() for key, text in sidecars.items()})
    table = verify.with_manifest(schemas.to_table(schemas.table_for_modality(spec.modality), rows), digests)
    staged = temp_root / "shard.parquet"
    pq.write_table(table, staged, **PARQUET_OPTIONS)

    # Commit: assets, other files plugins wrote under the root (e.g. conditioning images), the
    # sidecars, and last the Parquet file that marks the shard complete (and lists the others).
    atomic.move_dir(asset_dir, spec.asset_dir(root))
    for path in files:
        if path.exists():  # not moved with the asset directory
            atomic.move_file(path, root / path.relative_to(temp_root))
    for key, text in sorted(sidecars.items()):
        atomic.write_text(root / "instances" / f"{key}.json", text)
    with open(staged, "rb") as handle:
        os.fsync(handle.fileno())
    atomic.move_file(staged, final_parquet)
    shutil.rmtree(temp_root)
    return ShardOutcome(spec.modality, spec.index, len(rows), built=True)
