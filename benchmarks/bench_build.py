"""Build throughput: rows per second per worker, and the scaling from 1 to 2 worker processes.

Builds the same small dataset twice into fresh directories, once with 1 worker and once with 2
(local process pool), on the real pipeline (built-in source, frame-pair editor, the scorer),
checks both builds are byte-identical, and prints (and optionally writes as JSON) the figures.
Wall time includes each worker's start-up (imports, ANNY, trial extraction, first Mitsuba
compile), which a larger --rows amortises. Then runs the 1-worker build again: every shard is
already there, so that run is what a resume costs besides building: the check of every shard
and the files it lists, the leakage gate and the card.

    .venv/bin/python benchmarks/bench_build.py --rows 48 --views 4 --resolution 64
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from maskscore_core.dataset.card import content_hash
from maskscore_core.dataset.plan import BuildConfig
from maskscore_core.dataset.runner import run_build


def measure(args, workers: int, root: Path) -> dict:
    config = BuildConfig(
        split=args.split, out=root / f"workers-{workers}", rows=args.rows, seed=args.seed, source=args.source,
        subjects=args.subjects, scorer=args.scorer, views=args.views, resolution=args.resolution,
        shard_size=args.shard_size, workers=workers, modalities=tuple(args.modalities.split(",")) if args.modalities else (),
    )
    start = time.perf_counter()
    summary = run_build(config, progress=False)
    seconds = time.perf_counter() - start
    return {
        "workers": workers,
        "rows": summary.rows,
        "seconds": round(seconds, 2),
        "rows_per_second": round(summary.rows / seconds, 3),
        "rows_per_second_per_worker": round(summary.rows / seconds / workers, 3),
        "content_sha256": content_hash(config.out),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="bench", choices=("bench", "reward-train", "rl-train"))
    parser.add_argument("--rows", type=int, default=48)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--source", default="anny")
    parser.add_argument("--subjects", type=int, default=24)
    parser.add_argument("--scorer", default="render-compare")
    parser.add_argument("--modalities", default="", help="comma-separated (default: all eight)")
    parser.add_argument("--views", type=int, default=4)
    parser.add_argument("--resolution", type=int, default=64)
    parser.add_argument("--shard-size", type=int, default=1, help="instances per shard (small: work spreads evenly)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="maskscore-bench-build-") as tmp:
        runs = [measure(args, workers, Path(tmp)) for workers in (1, 2)]
        resume = measure(args, 1, Path(tmp))  # nothing left to build: verifies every shard
    result = {
        "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in sorted(vars(args).items())},
        "cpus": os.cpu_count(),
        "runs": runs,
        "scaling_1_to_2": round(runs[1]["rows_per_second"] / runs[0]["rows_per_second"], 3),
        "identical_bytes": runs[0]["content_sha256"] == runs[1]["content_sha256"] == resume["content_sha256"],
        "resume_check_seconds": resume["seconds"],
    }
    for run in runs:
        print(f"{run['workers']} worker(s): {run['rows']} rows in {run['seconds']} s = {run['rows_per_second']} rows/s"
              f" ({run['rows_per_second_per_worker']} per worker)")
    print(f"scaling 1 -> 2 workers: x{result['scaling_1_to_2']}; identical bytes: {result['identical_bytes']}")
    print(f"resuming the finished 1-worker build (checks every shard and file): {result['resume_check_seconds']} s")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    if not result["identical_bytes"]:
        raise SystemExit("the 1- and 2-worker builds differ: the build is not deterministic")


if __name__ == "__main__":
    main()
