"""`maskscore eval`: grade a scorer (a reward model) on a bench, with a JSONL result cache.

Each bench instance (one key; its three dimension rows share the candidates) is scored once per
pass: the scorer runs `num_pass` times with seeds seed+0 .. seed+N-1 and the three dimensions are
averaged over passes (Avg@N). Results are cached one line per (scorer configuration, modality,
key) in a JSONL file; the configuration (scorer name, version, weights, num_pass, temperature,
render size, seed) is hashed into `config_key`, so a rerun reuses exactly its own lines, never
another configuration's, and appends only the keys it lacks. A scorer that raises on an instance
gets no score: the report lists the failure and its pairs count as wrong, but nothing of it is
cached, so the next run scores that instance again (a failure's cause may be fixed by then;
error lines of older caches are skipped the same way). A bench whose candidates cannot be read
is an error of the bench (DatasetReadError), not of the scorer.

The bench's rows already hold the scores of the scorer that built it, under the configuration
the build recorded (card.json, `scorer_config`). When the requested configuration equals it,
those stored scores are the results (nothing is scored; the report says so); `rescore=True`
scores anyway.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import json

import numpy as np
from tqdm import tqdm

from maskscore_core import vocab

from maskscore_core.plugin import manager as plugins
from maskscore_core.dataset import reader
from maskscore_core.dataset.metrics import grade_row, summarize
from maskscore_core.dataset.protocol import check_levels, rungs_of
from maskscore_core.dataset.reader import DatasetReadError
from maskscore_core.dataset.scorer_config import ScorerConfig, ScorerConfigError, scorer_version  # noqa: F401 - the eval API
from maskscore_core.dataset.shard import make_context

SCORES_FROM_BENCH = "bench"  # the scores stored in the bench rows at build time
SCORES_FROM_SCORER = "scorer"  # the scorer run now (or its cached results)


class EvalError(RuntimeError):
    """An evaluation that cannot run (bad cache file, a scorer answering the wrong count, ...)."""


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
                raise EvalError(f"result cache {self.path} line {number} is not a result record: {err};"
                                " delete the file (or pass another --out) to score anew") from err
            if "scores" not in record:
                continue  # an error line an older version cached: a failure is retried, never a result
            if ident in self.records:
                raise EvalError(f"result cache {self.path} line {number} duplicates {ident};"
                                " delete the file (or pass another --out) to score anew")
            self.records[ident] = record

    def get(self, config_key: str, modality: str, key: str) -> dict | None:
        return self.records.get((config_key, modality, key))

    def append(self, record: dict) -> None:
        if "scores" not in record:
            raise EvalError(f"only results are cached, not failures: {record.get('error', record)}")
        ident = (record["config_key"], record["modality"], record["key"])
        if ident in self.records:
            raise EvalError(f"result for {ident} is already cached")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, sort_keys=True) + "\n")
            handle.flush()
        self.records[ident] = record


def _score_instance(root: Path, modality: str, row: dict, config: ScorerConfig, workdir: Path) -> dict:
    """{dimension: [score per candidate]} averaged over passes; raises when the scorer fails, and
    DatasetReadError when the row's sidecar or candidate files cannot be read."""
    instance = reader.load_instance(root, row["key"])
    passes = []
    for n in range(config.num_pass):
        ctx = make_context(workdir, config.pass_seed(n), config={**config.hook_config(n), "dataset_root": str(root)})
        candidates = reader.load_candidates(root, modality, row, ctx)  # DatasetReadError naming the row
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
    """Every bench instance's result for `config` by (modality, key): cached ones reused, the
    others scored and cached; a failure is returned as {"error"} but never cached."""
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
                except DatasetReadError:
                    raise  # the bench is broken, not the scorer: no record, stop
                except Exception as err:  # noqa: BLE001 - a scorer's failure is reported, never cached
                    record["error"] = plugins.describe_error(err)  # names the plugin that raised it
                if "scores" in record:
                    cache.append(record)
            results[(modality, key)] = record
    return results


def bench_scorer_config(root: Path) -> dict | None:
    """The scorer configuration the bench's stored scores were made with (None: not recorded)."""
    return reader.build_config(root).get("scorer_config")


def bench_ladder_levels(root: Path) -> dict[str, dict]:
    """modality -> the ladder levels the bench was built with (`protocol.levels_for`, recorded in
    its card); a bench that recorded none is graded on the design's levels."""
    recorded = reader.build_config(root).get("ladder_levels") or {}
    return {modality: check_levels(table, f"the bench's {modality} ladder levels") for modality, table in recorded.items()}


def stored_results(root: Path, config: ScorerConfig, modalities=None) -> dict:
    """The bench's stored scores as results of `config`, by (modality, key); reads no asset."""
    results: dict[tuple[str, str], dict] = {}
    for modality, row in reader.iter_rows(root, modalities):
        record = results.setdefault((modality, row["key"]), {
            "config_key": config.key, "config": config.as_dict(), "modality": modality, "key": row["key"], "scores": {}})
        record["scores"][row["dimension"]] = [float(x) for x in row["scores"]]
    for (modality, key), record in results.items():
        missing = [d for d in vocab.DIMENSIONS if d not in record["scores"]]
        if missing:
            raise DatasetReadError(f"bench row {key} ({modality}) has no stored scores for {', '.join(missing)}")
    return results


def evaluate(root: Path, config: ScorerConfig, cache_path: Path, modalities=None, progress: bool = False,
             resamples: int = 1000, rescore: bool = False) -> dict:
    """Grade `config` on the whole bench, from the bench's stored scores when they were made
    with this very configuration (unless `rescore`), else by scoring (or reusing the cache)."""
    root = Path(root)
    from_bench = not rescore and bench_scorer_config(root) == config.as_dict()
    if from_bench:
        results = stored_results(root, config, modalities)
    else:
        results = score_bench(root, config, ResultCache(cache_path), modalities, progress)
    outcomes = []
    levels = bench_ladder_levels(root)
    for modality, row in reader.iter_rows(root, modalities):
        record = results[(modality, row["key"])]
        scores = record["scores"][row["dimension"]] if "scores" in record else None
        rungs = rungs_of(levels.get(modality))  # the ladder the row holds, in order
        outcomes.append(grade_row(modality, row["task_type"], row["dimension"], row["key"], scores, rungs,
                                  levels.get(modality)))  # fmt: skip
    failures = sorted({f"{m}/{k}: {r['error']}" for (m, k), r in results.items() if "error" in r})
    summary = summarize(outcomes, seed=config.seed, resamples=resamples)
    return {
        "bench": str(root),
        "scorer": config.as_dict(),
        "config_key": config.key,
        "scores_from": SCORES_FROM_BENCH if from_bench else SCORES_FROM_SCORER,
        "instances": len(results),
        "failures": failures,
        **summary,
    }
