"""The learned reward model against render-compare, in one run: bench pair accuracy (beside
latent-l2 and render-compare), pair agreement with render-compare on the native editor's own
samples, and candidates scored per second by each scorer on the same bench groups.

Give it what `maskscore loop` (or the stage commands) made:

    .venv/bin/python benchmarks/bench_reward_model.py --work out/loop
    .venv/bin/python benchmarks/bench_reward_model.py --bench B --reward R --native-bench N

Rates are measured after one warm-up group per scorer (checkpoint load, renderer compile) that is
not timed, with the candidates already read from disk and a fresh context per scorer (nothing it
kept from the accuracy runs); both scorers score the same groups one after the other. Wall and
CPU rates are both printed: on a shared machine the wall rate depends on the other jobs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


from maskscore_core.cli.loop_command import LOOP_SCORERS, candidates_per_second, pair_agreement
from maskscore_core.dataset import evaluate
from maskscore_core.dataset.reader import render_settings


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, help="A loop directory (bench/, reward/, native-bench/ inside).")
    parser.add_argument("--bench", type=Path)
    parser.add_argument("--reward", type=Path, help="reward-model checkpoint directory")
    parser.add_argument("--native-bench", type=Path, help="bench built with --editor native-flow")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rate-groups", type=int, default=None, help="bench groups timed (default: all)")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)
    if args.work:
        args.bench, args.reward = args.bench or args.work / "bench", args.reward or args.work / "reward"
        args.native_bench = args.native_bench or args.work / "native-bench"
    if not args.bench or not args.reward:
        parser.error("give --work, or --bench and --reward")
    settings = render_settings(args.bench)
    weights = {"reward-model": str(args.reward), "latent-l2": "default", "render-compare": "default"}
    figures = {"bench": str(args.bench), "reward": str(args.reward), **settings, "accuracy": {}}
    for name in LOOP_SCORERS:
        config = evaluate.ScorerConfig(name=name, version=evaluate.scorer_version(name), weights=weights[name],
                                       views=settings["views"], resolution=settings["resolution"], seed=args.seed)
        result = evaluate.evaluate(args.bench, config, args.bench / "eval" / "results.jsonl")
        figures["accuracy"][name] = {"mean_accuracy": result["mean_accuracy"], "scores_from": result["scores_from"],
                                     "failures": len(result["failures"]),
                                     **{d: v["accuracy"] for d, v in result["dimensions"].items()}}
    if args.native_bench:
        figures["native_agreement"] = pair_agreement(args.native_bench, "reward-model", weights["reward-model"],
                                                     settings["views"], settings["resolution"], args.seed)
    rates = candidates_per_second(args.bench, {"reward-model": weights["reward-model"], "render-compare": "default"},
                                  settings["views"], settings["resolution"], args.seed, args.rate_groups)
    rates["ratio"] = rates["rates"]["reward-model"]["per_second"] / rates["rates"]["render-compare"]["per_second"]
    rates["cpu_ratio"] = rates["rates"]["reward-model"]["per_cpu_second"] / rates["rates"]["render-compare"]["per_cpu_second"]
    figures["throughput"] = rates
    text = json.dumps(figures, indent=2, sort_keys=True)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
