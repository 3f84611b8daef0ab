"""Runs a build's shard plan: in this process, on a local process pool, or as Ray tasks.

The same `build_shard` function runs everywhere; each shard commits itself atomically, so the
runner only has to lock the directory (one build at a time, `lock.py`), skip the shards already
whole and rebuild damaged ones (resume, `verify.py`), show progress, and after the last shard
check every shard again, run the leakage gate and write the dataset card. Options are checked
before anything is written, and a build that fails before committing a shard leaves nothing of
itself behind, so the corrected command starts afresh.
"""

from __future__ import annotations

import concurrent.futures
import json
import multiprocessing
import os
import shutil
import sys
from pathlib import Path

import attrs
from tqdm import tqdm

from maskscore_core.plugin import manager as plugins
from maskscore_core.dataset import atomic, lock, verify, workers
from maskscore_core.dataset.card import write_card
from maskscore_core.dataset.leakage import check_leakage
from maskscore_core.dataset.plan import BuildConfig, ShardSpec, planned_instances, shard_plan
from maskscore_core.dataset.scorer_config import for_build
from maskscore_core.dataset.shard import PARTIAL_DIR, WORK_DIR, build_shard, forget_trials, load_instance_maker, register_plugin_modules
from maskscore_core.dataset.protocol import levels_for

CONFIG_MARKER = ".build-config.json"


class BuildError(RuntimeError):
    """A build that cannot start or finish (e.g. a directory holding another config's build)."""


@attrs.frozen
class BuildSummary:
    root: Path
    rows: int
    shards_built: int
    shards_resumed: int
    card: dict
    shards_repaired: int = 0  # found damaged on resume and rebuilt (counted in shards_built)


def content_config(config: BuildConfig) -> dict:
    """What decides the dataset's bytes, plus (scored splits) the full configuration of the scorer
    that labelled the rows, version included, so `maskscore eval` can tell when the stored scores
    are the results it is asked for, and the ladder levels the bench is graded on."""
    register_plugin_modules(config.plugin_modules)
    scorer = for_build(config.scorer, config.views, config.resolution, config.seed) if config.scored else None
    # The labels: how each modality's rungs are expected to rank (`protocol.levels_for`).
    levels = {m: {d: {str(r): v for r, v in t.items()} for d, t in levels_for(m).items()} for m in config.modalities}
    content = {**config.content_config(), "scorer_config": scorer.as_dict() if scorer else None, "ladder_levels": levels}
    # Which frame pairs a modality draws depends on the actions it can show (`Modality.shown_actions`).
    shown = {m: list(actions) for m in config.modalities if (actions := plugins.modality(m).shown_actions)}
    return {**content, "shown_actions": shown} if shown else content


def _check_names(config: BuildConfig) -> None:
    """The source, the editor (scored splits) and the instance maker exist (NoPluginError or
    ShardError naming the one that does not): found now, not in the first shard."""
    plugins.lookup("source", config.source)
    if config.scored:
        plugins.lookup("editor", config.editor)
    try:
        load_instance_maker(config.instance_maker)
    except (ImportError, AttributeError) as err:
        raise BuildError(f"instance maker {config.instance_maker!r} cannot be loaded: {err}") from None


def _committed(root: Path) -> bool:
    """Whether any dataset content is in `root` (hidden entries are build machinery)."""
    return any(not entry.name.startswith(".") for entry in Path(root).iterdir())


def _claim_directory(config: BuildConfig, content: dict) -> bool:
    """Refuse to resume into a directory built with another config: never mix two datasets.
    A config whose build committed nothing (it failed or was killed first) binds nothing.
    Returns whether this call wrote the config marker."""
    root = Path(config.out)
    marker = root / CONFIG_MARKER
    wanted = json.dumps(content, indent=2, sort_keys=True) + "\n"
    if marker.exists():
        if marker.read_text() == wanted:
            return False
        if _committed(root):
            raise BuildError(f"{root} holds a build with another config ({marker}); use a fresh --out")
    elif (root / "data").exists():
        raise BuildError(f"{root} holds data from an unknown build (no {CONFIG_MARKER}); use a fresh --out")
    atomic.write_text(marker, wanted)
    return True


def _release_claim(root: Path) -> None:
    """Undo a claim whose build committed nothing: its marker and its scratch space."""
    (root / CONFIG_MARKER).unlink(missing_ok=True)
    _remove_scratch(root)


def _remove_scratch(root: Path) -> None:
    for leftover in (PARTIAL_DIR, WORK_DIR):
        shutil.rmtree(root / leftover, ignore_errors=True)


def _expected_rows(config: BuildConfig, spec: ShardSpec) -> int:
    return spec.count * config.rows_per_instance


def _shards_to_build(config: BuildConfig, plan: list[ShardSpec]) -> tuple[list[ShardSpec], int]:
    """The shards not yet built, and the damaged ones (whose Parquet file is removed first, so
    that only whole shards ever have one); returns them and how many were damaged."""
    root = Path(config.out)
    pending, damaged = [], 0
    for spec in plan:
        problem = verify.shard_problem(root, spec, _expected_rows(config, spec))
        if problem is None:
            continue
        if problem != verify.NOT_BUILT:
            print(f"maskscore build: {spec.modality} {spec.name} is damaged ({problem}); rebuilding it", file=sys.stderr)
            spec.parquet_path(root).unlink()
            damaged += 1
        pending.append(spec)
    return pending, damaged


def _run_local(config: BuildConfig, pending: list[ShardSpec], bar: tqdm) -> list:
    if config.workers == 1:
        outcomes = []
        for spec in pending:
            outcomes.append(build_shard(config, spec))
            bar.update(outcomes[-1].rows)
        return outcomes
    context = multiprocessing.get_context("spawn")
    outcomes = []
    pool = concurrent.futures.ProcessPoolExecutor(
        max_workers=config.workers, mp_context=context, initializer=workers.init_worker,
        initargs=(config.workers, os.getpid(), str(config.out)),
    )
    try:
        futures = [pool.submit(build_shard, config, spec) for spec in pending]
        for future in concurrent.futures.as_completed(futures):
            outcomes.append(future.result())
            bar.update(outcomes[-1].rows)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # a failed shard stops the build at once
    return outcomes


def _run_ray(config: BuildConfig, pending: list[ShardSpec], bar: tqdm) -> list:
    try:
        import ray
    except ImportError as err:
        raise BuildError("--backend ray needs the 'ray' package: pip install 'maskscore[ray]'") from err
    if not ray.is_initialized():
        forwarded = {k: os.environ[k] for k in ("PYTHONPATH", "MASKSCORE_LOAD_PLUGINS", "DRJIT_LIBLLVM_PATH") if k in os.environ}
        ray.init(
            address=os.environ.get("RAY_ADDRESS") or None,
            num_cpus=None if os.environ.get("RAY_ADDRESS") else config.workers,
            include_dashboard=False,
            runtime_env={"env_vars": forwarded},
            log_to_driver=False,
        )
    task = ray.remote(num_cpus=1, max_retries=2)(build_shard)
    remaining = [task.remote(config, spec) for spec in pending]
    outcomes = []
    while remaining:
        done, remaining = ray.wait(remaining, num_returns=1)
        outcomes.append(ray.get(done[0]))
        bar.update(outcomes[-1].rows)
    return outcomes


def run_build(config: BuildConfig, progress: bool = True, bench_dir: Path | None = None) -> BuildSummary:
    """Build (or finish building) the dataset described by `config` under `config.out`."""
    root = Path(config.out)
    content = content_config(config)  # a config that cannot be scored or planned fails before anything is written
    plan = shard_plan(config)
    _check_names(config)
    created = not root.exists()
    root.mkdir(parents=True, exist_ok=True)
    released = False
    try:
        with lock.build_lock(root):
            claimed = _claim_directory(config, content)
            try:
                return _build(config, plan, content, progress, bench_dir)
            except BaseException:
                if claimed and not _committed(root):
                    _release_claim(root)
                    released = True
                else:  # scratch is never resumed (a shard is rebuilt whole): free it now
                    _remove_scratch(root)
                raise
    except lock.DirectoryBusy as err:
        raise BuildError(str(err)) from None
    finally:
        if released and created:
            try:
                root.rmdir()  # this build made it and left nothing in it
            except OSError:
                pass  # something else appeared in it: leave it


def _build(config: BuildConfig, plan: list[ShardSpec], content: dict, progress: bool, bench_dir: Path | None) -> BuildSummary:
    root = Path(config.out)
    atomic.remove_leftovers(root, skip=("eval",))  # half-written files of a killed build are not data
    pending, damaged = _shards_to_build(config, plan)
    if pending:  # the card of an earlier, complete build no longer holds until the build ends again
        for name in ("card.json", "README.md"):
            (root / name).unlink(missing_ok=True)
    done_rows = sum(_expected_rows(config, s) for s in plan if s not in pending)
    total_rows = sum(_expected_rows(config, s) for s in plan)
    with tqdm(total=total_rows, initial=done_rows, unit="row", desc=f"build {config.split}", disable=not progress,
              smoothing=0.1) as bar:
        runner = _run_ray if config.backend == "ray" else _run_local
        outcomes = runner(config, pending, bar) if pending else []
    built = sum(1 for o in outcomes if o.built)
    for spec in plan:  # the card certifies only whole shards
        problem = verify.shard_problem(root, spec, _expected_rows(config, spec))
        if problem is not None:
            raise BuildError(f"{root}: {spec.modality} {spec.name} is not whole after the build ({problem}); run the build again")
    subjects = check_leakage(root, config.split, config.seed, bench_dir=bench_dir)
    forget_trials(root)
    _remove_scratch(root)
    planned_rows = {m: {t: n * config.rows_per_instance for t, n in tasks.items()}
                    for m, tasks in planned_instances(config).items()}
    card = write_card(root, content, subjects=len(subjects), planned=planned_rows)
    if card["counts"]["rows"] != total_rows:
        raise BuildError(f"{root}: {card['counts']['rows']} rows on disk, the plan has {total_rows}")
    if card["counts"]["modality_task_type"] != card["planned"]["modality_task_type"]:
        raise BuildError(f"{root}: rows per modality and task type differ from the plan; see {root / 'card.json'}")
    return BuildSummary(root, total_rows, built, len(plan) - len(pending), card, shards_repaired=damaged)
