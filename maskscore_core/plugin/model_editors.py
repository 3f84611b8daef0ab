"""What every model editor plugin does around its model: read its options, seed its passes, and
keep only outputs its modality can decode, recording the others.

A model's output may not decode (a repainted picture with no face left, words the pronouncing
dictionary does not know). Such an output is never scored, and never given a score: it is
recorded with its reason in `editor-outputs/<key>.json` under the dataset root (committed with
the shard), beside the editor's name and configuration. An instance none of whose outputs
decodes stops the build with one line listing the reasons; its record is kept in the dataset
root all the same (`dataset.shard`).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Callable

from maskscore_core.plugin import manager as plugins
from maskscore_core.plugin.context import CoreOptions
from maskscore_core.plugin.records import Asset, Candidate

RECORDS = "editor-outputs"


class EditError(RuntimeError):
    """An edit that gave nothing to score; the message has every output's reason."""


class WeightsError(ValueError):
    """No weights directory given, or one that lacks a file the model needs."""


def weights_dir(given: str | None, env: str, what: str, model: str, ways: str = "pass --editor-option weights=DIR") -> Path:
    """`given`, else the environment variable `env`: weights come only from a local directory,
    never from a hub. WeightsError naming both ways if neither is set, or if it is no directory."""
    given = given or os.environ.get(env)
    if not given:
        raise WeightsError(f"{what} needs local {model} weights: {ways} or set {env}")
    path = Path(given).expanduser()
    if not path.is_dir():
        raise WeightsError(f"{what}: {model} weights directory {path} does not exist")
    return path


def check_weight_files(path: Path, what: str, required: tuple[str, ...] = ()) -> None:
    """WeightsError naming the first file of `required` that `path` lacks, else the first
    safetensors shard its index lists that is missing (model.safetensors without an index)."""
    for name in required:
        if not (path / name).is_file():
            raise WeightsError(f"{what} weights: {path / name} is missing")
    index = path / "model.safetensors.index.json"
    if index.is_file():
        for shard in sorted(set(json.loads(index.read_text())["weight_map"].values())):
            if not (path / shard).is_file():
                raise WeightsError(f"{what} weights: {path / shard} is missing (listed in {index.name})")
    elif not (path / "model.safetensors").is_file():
        raise WeightsError(f"{what} weights: {path / 'model.safetensors'} is missing")


def weights_found(locate: Callable[[], Path], check_complete: Callable[[Path], None]) -> str:
    """For listings: where the weights are, or why none were found."""
    try:
        path = locate()
        check_complete(path)
        return f"weights found at {path}"
    except WeightsError as err:
        return f"no weights ({err})"


def options(editor: str, ctx, defaults: dict) -> tuple[dict, str | None]:
    """(`defaults` overridden by `--editor-option`s, typed like the defaults; the `weights` option)."""
    given = dict(ctx.config.options(CoreOptions).editor_options) if ctx is not None else {}
    weights = given.pop("weights", None)
    out = dict(defaults)
    for name, value in given.items():
        if name not in defaults:
            raise ValueError(f"{editor}: unknown editor option {name!r}; options: weights, {', '.join(defaults)}")
        try:
            out[name] = type(defaults[name])(value)
        except (TypeError, ValueError):
            raise ValueError(f"{editor}: editor option {name}={value!r} is not a {type(defaults[name]).__name__}") from None
    return out, weights


def seed(ctx, key: str, index: int) -> int:
    """The seed of an instance's `index`-th pass: from the run seed and the instance key only."""
    return int.from_bytes(hashlib.sha256(f"{ctx.seed}:{key}:{index}".encode()).digest()[:4], "little")


def record_path(ctx, key: str) -> Path:
    root = ctx.config.dataset_root
    return (Path(root) if root else Path(ctx.workdir)) / RECORDS / f"{key}.json"


def keep_decodable(editor: str, instance, ctx, outputs, config: dict, verify=None) -> list[Candidate]:
    """outputs: (label, seed, data, extra record fields) per pass, data in the instance's modality.
    `verify(data)`, when given, raises for an output the modality would decode although it is not
    what the editor was asked to make (a talker's silence spliced between real words). Returns
    the candidates that decode; records every outcome; EditError if none decodes."""
    modality = instance.instruction.modality
    candidates, outcomes = [], []
    for label, pass_seed, data, extra in outputs:
        asset = Asset(modality=modality, data=data, meta={"label": label, "editor": editor, "seed": pass_seed})
        outcome = {"label": label, "seed": pass_seed, **extra}
        try:
            if verify is not None:
                verify(data)
            plugins.call("decode_to_mesh", modality, asset=asset, instance=instance, ctx=ctx)
        except Exception as err:  # noqa: BLE001 - an undecodable output is recorded, never scored
            outcomes.append({**outcome, "decoded": False, "reason": plugins.describe_error(err)})
            continue
        outcomes.append({**outcome, "decoded": True})
        candidates.append(Candidate(label=label, asset=asset, rung=None))
    path = record_path(ctx, instance.key)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"editor": editor, "config": config, "instance": instance.key, "candidates": outcomes}
    path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    if not candidates:
        reasons = "; ".join(o["reason"] for o in outcomes)
        raise EditError(f"{editor}: none of the {len(outcomes)} outputs for {instance.key} decodes: {reasons}")
    return candidates
