"""The dataset card: DIR/README.md (for people and for `datasets`) and DIR/card.json.

It states counts per modality, task type and dimension, planned against actual (the plan's
proportion rule is in `plan`), the build config, and a content hash over every shard, asset and sidecar byte, so two builds can be compared by
one line. Nothing in it depends on the clock or on the machine.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq

from maskscore_core import vocab

from maskscore_core.plugin import manager as plugins
from maskscore_core.dataset import atomic

# Files of the card itself and of the evaluation are not dataset content; hidden entries
# (.partial, .work, .build-config.json) are build machinery.
NOT_CONTENT = ("README.md", "card.json", "eval")

SPLIT_PURPOSE = {
    "bench": "evaluates reward models (EditReward-Bench analogue); subjects held out",
    "reward-train": "trains the reward model (EditScore-Reward-Data analogue)",
    "rl-train": "prompts for RL fine-tuning (EditScore-RL-Data analogue); no candidates, no scores",
}


def content_hash(root: Path) -> str:
    """sha256 over (relative path, size, bytes) of every content file: shards, assets, sidecars and
    whatever else the plugins wrote (conditioning images, ...)."""
    root = Path(root)
    digest = hashlib.sha256()
    files = sorted(
        p for p in root.rglob("*")
        if p.is_file() and p.relative_to(root).parts[0] not in NOT_CONTENT and not p.relative_to(root).parts[0].startswith(".")
    )
    for path in files:
        data = path.read_bytes()
        digest.update(f"{path.relative_to(root).as_posix()}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def _pair_order(pair: str) -> tuple[int, int]:
    """'modality/task type' in vocabulary order (modality first)."""
    modality, task = pair.split("/", 1)
    return plugins.modality_names().index(modality), vocab.TASK_TYPES.index(task)


def count_rows(root: Path) -> dict:
    """Row counts per modality, task type, dimension, and per (modality, task type)."""
    per_modality: Counter = Counter()
    per_task: Counter = Counter()
    per_dimension: Counter = Counter()
    per_pair: Counter = Counter()
    for path in sorted((Path(root) / "data").glob("*/shard-*.parquet")):
        modality = path.parent.name
        table = pq.read_table(path, columns=["task_type", "dimension"])
        for task, dimension in zip(table.column("task_type").to_pylist(), table.column("dimension").to_pylist()):
            per_modality[modality] += 1
            per_task[task] += 1
            per_dimension[dimension] += 1
            per_pair[f"{modality}/{task}"] += 1
    return {
        "rows": sum(per_modality.values()),
        "modality": {m: per_modality[m] for m in plugins.modality_names() if per_modality[m]},
        "task_type": {t: per_task[t] for t in vocab.TASK_TYPES if per_task[t]},
        "dimension": {d: per_dimension[d] for d in vocab.DIMENSIONS if per_dimension[d]},
        "modality_task_type": {p: per_pair[p] for p in sorted(per_pair, key=_pair_order)},
        "absent_task_types": [t for t in vocab.TASK_TYPES if not per_task[t]],
    }


def planned_counts(planned: dict[str, dict[str, int]]) -> dict:
    """The plan's rows per modality, per task type and per (modality, task type), keyed as count_rows."""
    per_task = {t: sum(tasks.get(t, 0) for tasks in planned.values()) for t in vocab.TASK_TYPES}
    return {
        "rows": sum(sum(tasks.values()) for tasks in planned.values()),
        "modality": {m: sum(planned[m].values()) for m in plugins.modality_names() if m in planned},
        "task_type": {t: n for t, n in per_task.items() if n},
        "modality_task_type": {p: n for p, n in sorted(((f"{m}/{t}", n) for m, tasks in planned.items() for t, n in tasks.items()),
                                                        key=lambda item: _pair_order(item[0]))},
    }


def _versus(header: str, planned: dict[str, int], actual: dict[str, int], total: int) -> list[str]:
    """A table of planned and actual rows (and the actual share) for every name in either."""
    lines = [f"| {header} | planned rows | actual rows | share |", "| --- | ---: | ---: | ---: |"]
    for name in list(planned) + [n for n in actual if n not in planned]:
        n = actual.get(name, 0)
        lines.append(f"| {name} | {planned.get(name, 0)} | {n} | {100.0 * n / total:.1f}% |")
    return lines


def _table(header: tuple[str, str, str], counts: dict[str, int], total: int) -> list[str]:
    lines = [f"| {header[0]} | {header[1]} | {header[2]} |", "| --- | ---: | ---: |"]
    for name, n in counts.items():
        lines.append(f"| {name} | {n} | {100.0 * n / total:.1f}% |")
    return lines


def _ladder_section(config: dict) -> list[str]:
    """The rungs each modality's rows hold, and why a modality drops one (`protocol.rungs_of`)."""
    levels = config.get("ladder_levels") or {}
    if not levels:
        return []
    lines = ["## Ladder", "", "Rungs: 1 frame B's part, 2 interpolation, 3 partial edit, 4 wrong part, 5 wrong subject.", ""]
    for modality, table in levels.items():
        dropped = table.get("dropped") or {}
        kept = [r for r in ("1", "2", "3", "4", "5") if r not in {str(k) for k in dropped}]
        lines.append(f"- {modality}: rungs {', '.join(kept)}" + "".join(f"; rung {r} dropped: {why}" for r, why in dropped.items()))
    return lines + [""]


def write_card(root: Path, config: dict, subjects: int, planned: dict[str, dict[str, int]]) -> dict:
    """Write README.md and card.json; return the card's data. `planned`: rows per modality and
    task type that the build's plan asked for."""
    root = Path(root)
    counts = count_rows(root)
    plan = planned_counts(planned)
    card = {"config": config, "counts": counts, "planned": plan, "subjects": subjects, "content_sha256": content_hash(root)}
    atomic.write_text(root / "card.json", json.dumps(card, indent=2, sort_keys=True) + "\n")
    split = config["split"]
    total = max(counts["rows"], 1)
    front = ["---", "configs:"]
    for modality in counts["modality"]:
        front += [f"- config_name: {modality}", f"  data_files: data/{modality}/*.parquet"]
    front.append("---")
    body = [
        f"# maskscore-{split}",
        "",
        f"{SPLIT_PURPOSE[split]}. {counts['rows']} rows from {subjects} subjects, built by `maskscore build`.",
        "",
        "Each row is one edit instance (frame A -> frame B of one subject, 'edit the {part} to match frame B')"
        " in one modality" + (", for one scoring dimension; candidates are the ladder's rungs in order"
        " (rung 1 = frame B's part on frame A, best; 5 = wrong subject; see Ladder below) and `scores` align"
        " with them." if split != "rl-train" else "."),
        "The plan (docs/datasets.md): edit instances are spread evenly over the modalities (the remainder"
        " to the first in vocabulary order); within a modality, instances take its task types in turn"
        " (those its task table gives, vocabulary order), so each gets an equal share, the remainder to"
        " the first. Planned and actual rows are listed side by side; the build fails if they differ.",
        "",
        f"Content hash (sha256 over every shard, asset and sidecar file): `{card['content_sha256']}`",
        "",
        "## Rows per modality",
        *_versus("modality", plan["modality"], counts["modality"], total),
        "",
        "## Rows per task type",
        *_versus("task type", plan["task_type"], counts["task_type"], total),
        "",
        "Task types with no row: " + (", ".join(counts["absent_task_types"]) or "none") + ".",
        "",
        "## Rows per modality and task type",
        *_versus("modality/task type", plan["modality_task_type"], counts["modality_task_type"], total),
        "",
        "## Rows per dimension",
        *_table(("dimension", "rows", "share"), counts["dimension"], total),
        "",
        *_ladder_section(config),
        "## Build config",
        "```json",
        json.dumps(config, indent=2, sort_keys=True),
        "```",
        "",
    ]
    atomic.write_text(root / "README.md", "\n".join(front + [""] + body))
    return card
