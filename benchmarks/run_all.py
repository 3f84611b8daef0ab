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
# script -> the flag it writes its JSON figures with, and its arguments for this run.
BENCHMARKS = {
    "bench_metric.py": ("--out", []),
    "bench_build.py": ("--json", ["--rows", "24"]),
    # detect + fit per frame of the pixel path (image modality, pixel clips), frontal, 256 px
    "bench_landmark_fit.py": ("--json", ["--yaws", "0", "--sizes", "256"]),
    "bench_calibration.py": ("--out", []),
}


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    summary = {}
    for script, (out_flag, arguments) in BENCHMARKS.items():
        target = OUT / script.replace(".py", ".json")
        print(f"== {script}", flush=True)
        subprocess.run([sys.executable, str(HERE / script), *arguments, out_flag, str(target)], check=True)
        summary[script] = json.loads(target.read_text())
    (OUT / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    print(f"figures written to {OUT / 'summary.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
