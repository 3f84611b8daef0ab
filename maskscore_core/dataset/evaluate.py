"""`maskscore eval`: grade a scorer (a reward model) on a bench, with a JSONL result cache.

Each bench instance (one key; its three dimension rows share the candidates) is scored once per
pass: the scorer runs `num_pass` times with seeds seed+0 .. seed+N-1 and the three dimensions are
averaged over passes (Avg@N). Results are cached one line per (scorer configuration, modality,
key) in a JSONL file; the configuration (scorer name, version, weights, num_pass, temperature,
render size, seed) is hashed into `config_key`, so a rerun reuses exactly its own lines, never
another configuration's, and appends only the keys it lacks. A scorer that raises on an instance
gets an error line, never a score; its pairs then count as wrong.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path

import attrs
import numpy as np
from tqdm import tqdm

from .. import plugins, vocab
from . import reader
from .shard import make_context
from .metrics import grade_row, summarize


class EvalError(RuntimeError):
    """An evaluation that cannot run (unknown scorer, bad cache file, ...)."""


def scorer_version(name: str) -> str:
    """'distribution==version' of the plugin that provides scorer `name`."""
    for record in plugins.list_plugins():
        if record.error is None and record.kind == "scorer" and name in record.provides:
            return f"{record.distribution}=={record.version}"
    raise EvalError(f"no installed scorer plugin provides {name!r}; installed scorers: {', '.join(sorted(plugins.providers('scorer')))}")


@attrs.frozen
class ScorerConfig:
    """Everything that decides a scorer's answers; two configs never share cached results."""

    name: str
    version: str
    weights: str = "default"
    num_pass: int = 1
    temperature: float = 0.0
    views: int = 8
    resolution: int = 256
    seed: int = 0

    def __attrs_post_init__(self):
        if self.num_pass < 1:
            raise EvalError(f"--num-pass must be at least 1, got {self.num_pass}")

    def as_dict(self) -> dict:
        return attrs.asdict(self)

    @property
    def key(self) -> str:
        return hashlib.sha256(json.dumps(self.as_dict(), sort_keys=True).encode()).hexdigest()[:16]


class ResultCache:
    """The JSONL result file: one line per (config_key, modality, key), appended, never rewritten."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.records: dict[tuple[str, str, str], dict] = {}
        if self.path.exists():
            self._load()

    def _load(self) -> None:
        raw = self.path.read_bytes()
        if raw and not raw.endswith(b"\n"):
            # A line torn by a killed run: drop it so the next append starts on a clean line.
            raw = raw[: raw.rfind(b"\n") + 1]
            self.path.write_bytes(raw)
        for number, line in enumerate(raw.decode("utf-8").splitlines(), 1):
            try:
                record = json.loads(line)
                ident = (record["config_key"], record["modality"], record["key"])
            except (json.JSONDecodeError, KeyError, TypeError) as err:
                raise EvalError(f"result cache {self.path} line {number} is not a result record: {err}") from err
            if ident in self.records:
                raise EvalError(f"result cache {self.path} line {number} duplicates {ident}")
            self.records[ident] = record

    def get(self, config_key: str, modality: str, key: str) -> dict | None:
        return self.records.get((config_key, modality, key))

    def append(self, record: dict) -> None:
        ident = (record["config_key"], record["modality"], record["key"])
        if ident in self.records:
            raise EvalError(f"result for {ident} is already cached")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, sort_keys=True) + "\n")
            handle.flush()
        self.records[ident] = record


def _score_instance(root: Path, modality: str, row: dict, config: ScorerConfig, workdir: Path) -> dict:
    """{dimension: [score per candidate]} averaged over passes; raises when the scorer fails."""
    instance = reader.load_instance(root, row["key"])
    passes = []
    for n in range(config.num_pass):
        ctx = make_context(
            workdir, config.seed + n,
            config={"views": config.views, "resolution": config.resolution, "temperature": config.temperature,
                    "weights": config.weights, "pass": n, "dataset_root": str(root)},
        )
        candidates = reader.load_candidates(root, modality, row, ctx)
        scored = plugins.call("score", config.name, scorer=config.name, instance=instance, candidates=candidates, ctx=ctx)
        if len(scored) != len(candidates):
            raise EvalError(f"{config.name} returned {len(scored)} scores for {len(candidates)} candidates")
        passes.append({d: [float(s.dimension(d)) for s in scored] for d in vocab.DIMENSIONS})
    result = {d: np.mean([p[d] for p in passes], axis=0).tolist() for d in vocab.DIMENSIONS}
    for dimension, values in result.items():
        if not all(np.isfinite(values)):
            raise EvalError(f"{config.name} returned a non-finite {dimension} score")
    return result


def score_bench(root: Path, config: ScorerConfig, cache: ResultCache, modalities=None, progress: bool = False) -> dict:
    """Make sure every bench instance has a cached result for `config`; return them by (modality, key)."""
    root = Path(root)
    first_rows: dict[tuple[str, str], dict] = {}
    for modality, row in reader.iter_rows(root, modalities):
        first_rows.setdefault((modality, row["key"]), row)
    results = {}
    with tempfile.TemporaryDirectory(prefix="maskscore-eval-") as workdir:
        for (modality, key), row in tqdm(sorted(first_rows.items()), desc=f"eval {config.name}", unit="edit", disable=not progress):
            record = cache.get(config.key, modality, key)
            if record is None:
                record = {"config_key": config.key, "config": config.as_dict(), "modality": modality, "key": key}
                try:
                    record["scores"] = _score_instance(root, modality, row, config, Path(workdir))
                except Exception as err:  # noqa: BLE001 - a scorer's failure is data, recorded as such
                    record["error"] = f"{type(err).__name__}: {err}"
                cache.append(record)
            results[(modality, key)] = record
    return results


def evaluate(root: Path, config: ScorerConfig, cache_path: Path, modalities=None, progress: bool = False,
             resamples: int = 1000) -> dict:
    """Score (or reuse) and grade the whole bench; return the report data."""
    root = Path(root)
    cache = ResultCache(cache_path)
    results = score_bench(root, config, cache, modalities, progress)
    outcomes = []
    for modality, row in reader.iter_rows(root, modalities):
        record = results[(modality, row["key"])]
        scores = record["scores"][row["dimension"]] if "scores" in record else None
        rungs = list(range(1, len(reader.candidate_values(modality, row)) + 1))
        outcomes.append(grade_row(modality, row["task_type"], row["dimension"], row["key"], scores, rungs))
    failures = sorted({f"{m}/{k}: {r['error']}" for (m, k), r in results.items() if "error" in r})
    summary = summarize(outcomes, seed=config.seed, resamples=resamples)
    return {
        "bench": str(root),
        "scorer": config.as_dict(),
        "config_key": config.key,
        "instances": len(results),
        "failures": failures,
        **summary,
    }
