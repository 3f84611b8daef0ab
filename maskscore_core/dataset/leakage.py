"""The held-out gate: no bench subject in a training set built with the same seed.

Subjects are read back from the instance sidecars (frame A, frame B and the wrong-subject rung
all count), so the gate checks what was written, not what the build meant to write.
"""

from __future__ import annotations

import json
from pathlib import Path

from maskscore_core.dataset.splits import pool_for_split, subject_pool


class LeakageError(RuntimeError):
    """A subject found on the wrong side of the bench / training split."""


def _subjects_of(sidecar: dict) -> set[str]:
    found = set()
    for side in ("a", "b", "other"):
        target = sidecar.get(side)
        if target:
            found.add(target["subject"]["subject_id"])
    return found


def dataset_subjects(root: Path) -> dict[str, list[str]]:
    """subject id -> sorted keys of the instances that show this subject."""
    found: dict[str, list[str]] = {}
    for path in sorted((Path(root) / "instances").glob("*.json")):
        try:
            sidecar = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as err:
            raise LeakageError(f"instance sidecar {path} cannot be read: {err}") from err
        for subject in _subjects_of(sidecar):
            found.setdefault(subject, []).append(path.stem)
    return dict(sorted(found.items()))


def _describe(subjects: dict[str, list[str]]) -> str:
    return "; ".join(f"{s} (e.g. {keys[0]})" for s, keys in sorted(subjects.items())[:10])


def check_leakage(root: Path, split: str, seed: int, bench_dir: Path | None = None) -> dict[str, list[str]]:
    """Raise LeakageError when (for training splits, given `bench_dir`) a subject also appears in
    that bench, or when a subject sits in the wrong pool for `split` under `seed`. Returns the
    dataset's subjects."""
    subjects = dataset_subjects(root)
    expected = pool_for_split(split)
    if bench_dir is not None and expected == "train":
        shared = {s: keys for s, keys in subjects.items() if s in dataset_subjects(bench_dir)}
        if shared:
            raise LeakageError(
                f"leakage gate: {len(shared)} subject(s) of the {split} set at {root} also appear in the"
                f" bench at {bench_dir}: {_describe(shared)}"
            )
    misplaced = {s: keys for s, keys in subjects.items() if subject_pool(s, seed) != expected}
    if misplaced:
        raise LeakageError(
            f"leakage gate: {len(misplaced)} subject(s) of the {split} set at {root} belong to the"
            f" {'train' if expected == 'bench' else 'bench'} pool for seed {seed}: {_describe(misplaced)}"
        )
    return subjects
