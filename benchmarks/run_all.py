"""Run every benchmark in one go and collect the figures in out/bench/ (used by `make bench`).

Each benchmark is its own script so it can also run alone; this runner only sequences them so
that all ratios in one report were measured in one run on one machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "out" / "bench"
BENCHMARKS = ("bench_metric.py", "bench_build.py")


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    summary = {}
    for script in BENCHMARKS:
        target = OUT / script.replace(".py", ".json")
        print(f"== {script}", flush=True)
        subprocess.run([sys.executable, str(HERE / script), "--out", str(target)], check=True)
        summary[script] = json.loads(target.read_text())
    (OUT / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    print(f"figures written to {OUT / 'summary.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
