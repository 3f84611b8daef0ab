"""`maskscore loop --out DIR`: the self-supervised loop of docs/design.md, stages 1-4, small, in one run.

1. train the native editor by masked-part reconstruction (`train` hook, trainer native-flow);
2. build a reward-train set and a bench of held-out subjects with the frame-pair ladder scored
   by render-compare, and a bench of the native editor's own samples (`--editor native-flow`),
   scored by render-compare as any editor's, plus (--native-train-rows) a reward-train set of its
   samples on training subjects;
3. train the reward model (trainer reward-model) and grade it beside latent-l2 and
   render-compare on the bench; measure its pair agreement with render-compare on the native
   editor's samples, and both scorers' candidates per second in one run;
4. build an rl-train set and fine-tune the editor by Flow-GRPO with the reward model as reward
   (trainer flow-grpo); before/after on held-out instances with render-compare.
Everything goes under DIR (one directory per stage, each resumable) and DIR/report.md holds
the figures with the training curves (PNG) beside it. Sizes are options; the defaults are
chosen to fit the time budget docs/loop.md states, with the measured run beside it.
"""

from __future__ import annotations

import itertools
import json
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

import click
import numpy as np

from maskscore_core import vocab

from maskscore_core.plugin import manager as plugins
from maskscore_core.plugin.context import Context
from maskscore_core.dataset import evaluate, reader
from maskscore_core.dataset.atomic import write_text
from maskscore_core.dataset.plan import BuildConfig
from maskscore_core.dataset.runner import run_build
from maskscore_core.cli import options
from maskscore_core.cli.train_command import run_trainer

MODALITY = "pose"
LOOP_SCORERS = ("reward-model", "latent-l2", "render-compare")
NATIVE_ENV = "MASKSCORE_NATIVE_EDITOR"


def pair_agreement(root: Path, scorer: str, weights: str, views: int, resolution: int, seed: int) -> dict:
    """Share of candidate pairs of each row that `scorer` orders like the row's stored scores
    (render-compare's), per dimension and overall; pairs render-compare ties are left out and a
    tie of `scorer` counts as disagreement."""
    by_key: dict[str, dict] = {}
    for modality, row in reader.iter_rows(root):
        entry = by_key.setdefault((modality, row["key"]), {"row": row, "stored": {}})
        entry["stored"][row["dimension"]] = list(row["scores"])
    agree = {d: [0, 0] for d in vocab.DIMENSIONS}
    with tempfile.TemporaryDirectory(prefix="maskscore-agree-") as workdir:
        ctx = Context(workdir=Path(workdir), seed=seed, config={"views": views, "resolution": resolution, "weights": weights})
        for (modality, key), entry in sorted(by_key.items()):
            instance = reader.load_instance(root, key)
            candidates = reader.load_candidates(root, modality, entry["row"], ctx)
            scored = plugins.call("score", scorer, scorer=scorer, instance=instance, candidates=candidates, ctx=ctx)
            for dimension in vocab.DIMENSIONS:
                stored, mine = entry["stored"][dimension], [s.dimension(dimension) for s in scored]
                for i, j in itertools.combinations(range(len(stored)), 2):
                    if stored[i] == stored[j]:
                        continue
                    agree[dimension][1] += 1
                    agree[dimension][0] += int((mine[i] - mine[j]) * (stored[i] - stored[j]) > 0)
    per = {d: (c / n if n else None) for d, (c, n) in agree.items()}
    total = [sum(c for c, _ in agree.values()), sum(n for _, n in agree.values())]
    return {"instances": len(by_key), "pairs": total[1], "agreement": total[0] / total[1] if total[1] else None,
            "dimensions": per}


def candidates_per_second(root: Path, scorers: dict[str, str], views: int, resolution: int, seed: int,
                          limit: int | None = None) -> dict:
    """Candidates scored per second by each scorer (name -> weights) on the same bench groups, in
    this one process, one after the other, after one warm-up group each (model loads, renderer
    compile) that is not timed, so no timed group was scored before; candidates are read from disk
    once, before timing. Wall and CPU seconds of this process are both given: on a shared machine
    the wall rate depends on the other jobs."""
    groups = []
    with tempfile.TemporaryDirectory(prefix="maskscore-rate-") as workdir:
        ctx = Context(workdir=Path(workdir), seed=seed, config={"views": views, "resolution": resolution})
        seen = set()
        for modality, row in reader.iter_rows(root):
            if row["key"] in seen:
                continue
            seen.add(row["key"])
            groups.append((reader.load_instance(root, row["key"]), reader.load_candidates(root, modality, row, ctx)))
            if limit is not None and len(groups) >= limit + 1:
                break
        if len(groups) < 2:
            raise click.UsageError(f"{root}: timing candidates per second needs at least 2 instances (one warms up)")
        rates = {}
        for name, weights in scorers.items():
            scorer_ctx = Context(workdir=Path(workdir), seed=seed, config={**ctx.config, "weights": weights})
            plugins.call("score", name, scorer=name, instance=groups[0][0], candidates=groups[0][1], ctx=scorer_ctx)
            started, cpu = time.perf_counter(), time.process_time()
            count = 0
            for instance, candidates in groups[1:]:
                plugins.call("score", name, scorer=name, instance=instance, candidates=candidates, ctx=scorer_ctx)
                count += len(candidates)
            elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
            rates[name] = {"candidates": count, "seconds": elapsed, "per_second": count / elapsed,
                           "cpu_seconds": cpu, "per_cpu_second": count / cpu if cpu > 0 else None}
    return {"groups": len(groups) - 1, "views": views, "resolution": resolution, "cores": os.cpu_count(),
            "load_average": os.getloadavg()[0], "rates": rates}


def _build(split: str, out: Path, opts: dict, rows: int, editor: str = "frame-pair", bench_dir: Path | None = None):
    config = BuildConfig(split=split, out=out, rows=rows, seed=opts["seed"], subjects=opts["subjects"],
                         modalities=(MODALITY,), editor=editor, views=opts["views"], resolution=opts["resolution"],
                         workers=opts["workers"], shard_size=opts["shard_size"])
    return run_build(config, progress=opts["progress"], bench_dir=bench_dir)


def _native_build(out: Path, opts: dict, split: str, name: str, rows: int):
    """A dataset of the native editor's samples (its checkpoint through MASKSCORE_NATIVE_EDITOR,
    which worker processes inherit), restoring the environment afterwards."""
    previous = os.environ.get(NATIVE_ENV)
    os.environ[NATIVE_ENV] = str(out / "editor")
    try:
        return _build(split, out / name, opts, rows, editor="native-flow")
    finally:
        if previous is None:
            os.environ.pop(NATIVE_ENV, None)
        else:
            os.environ[NATIVE_ENV] = previous


def _eval(bench: Path, out: Path, name: str, weights: str, opts: dict) -> dict:
    config = evaluate.ScorerConfig(name=name, version=evaluate.scorer_version(name), weights=weights,
                                   views=opts["views"], resolution=opts["resolution"], seed=opts["seed"])
    return evaluate.evaluate(bench, config, out / "eval" / "results.jsonl", progress=opts["progress"])


def run_loop(out: Path, opts: dict) -> dict:
    """Stages 1-4 under `out`; returns the figures (also written to out/report.json)."""
    out.mkdir(parents=True, exist_ok=True)
    timings, figures = {}, {"options": opts}
    started = time.perf_counter()

    def stage(name, fn):
        t0 = time.perf_counter()
        result = fn()
        timings[name] = round(time.perf_counter() - t0, 1)
        return result

    seed = opts["seed"]
    figures["editor"] = stage("1 train editor", lambda: run_trainer("native-flow", {
        "out": str(out / "editor"), "seed": seed, "subjects": opts["subjects"], "steps": opts["editor_steps"],
        "width": opts["width"], "progress": opts["progress"]}, seed))
    stage("2 build reward-train", lambda: _build("reward-train", out / "reward-train", opts, opts["reward_rows"]))
    stage("2 build bench", lambda: _build("bench", out / "bench", opts, opts["bench_rows"]))
    stage("2 build native-flow bench", lambda: _native_build(out, opts, "bench", "native-bench", opts["native_rows"]))
    reward_data = [str(out / "reward-train")]
    if opts["native_train_rows"]:
        stage("2 build native-flow reward-train", lambda: _native_build(
            out, opts, "reward-train", "native-train", opts["native_train_rows"]))
        reward_data.append(str(out / "native-train"))
    figures["reward_model"] = stage("3 train reward model", lambda: run_trainer("reward-model", {
        "out": str(out / "reward"), "data": reward_data, "seed": seed, "steps": opts["reward_steps"],
        "progress": opts["progress"]}, seed))
    weights = {"reward-model": str(out / "reward"), "latent-l2": "default", "render-compare": "default"}
    figures["bench"] = stage("3 eval bench", lambda: {n: _eval(out / "bench", out, n, weights[n], opts) for n in LOOP_SCORERS})
    figures["native_agreement"] = stage("3 agreement on native samples", lambda: pair_agreement(
        out / "native-bench", "reward-model", weights["reward-model"], opts["views"], opts["resolution"], seed))
    figures["throughput"] = stage("3 candidates per second", lambda: candidates_per_second(
        out / "bench", {"reward-model": weights["reward-model"], "render-compare": "default"}, opts["views"],
        opts["resolution"], seed, opts["rate_groups"]))
    stage("4 build rl-train", lambda: _build("rl-train", out / "rl-train", opts, opts["rl_rows"]))
    figures["rl"] = stage("4 train rl", lambda: run_trainer("flow-grpo", {
        "out": str(out / "rl"), "editor": str(out / "editor"), "data": str(out / "rl-train"), "reward": "reward-model",
        "reward_weights": weights["reward-model"], "eval_bench": str(out / "bench"), "seed": seed,
        "steps": opts["rl_steps"], "eval_instances": opts["eval_instances"], "eval_samples": opts.get("eval_samples"),
        "views": opts["views"],
        "resolution": opts["resolution"], "progress": opts["progress"]}, seed))
    timings["total"] = round(time.perf_counter() - started, 1)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    timings["cpu (user + system) of this process"] = round(usage.ru_utime + usage.ru_stime, 1)
    figures["seconds"] = timings
    write_text(out / "report.json", json.dumps(figures, indent=2, sort_keys=True) + "\n")
    write_text(out / "report.md", markdown(figures, out))
    return figures


def _fmt(value, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _ci(figure: dict) -> str:
    low, high = figure["ci95"] if figure.get("ci95") else (None, None)
    return f"{_fmt(figure.get('value', figure.get('mean')))} [{_fmt(low)}, {_fmt(high)}]"


def markdown(figures: dict, out: Path) -> str:
    """The loop's report page; curves are the PNGs the trainers wrote, copied next to it."""
    for stage in ("editor", "reward", "rl"):
        if (out / stage / "curves.png").exists():
            shutil.copyfile(out / stage / "curves.png", out / f"curves-{stage}.png")
    bench, rl, rate = figures["bench"], figures["rl"], figures["throughput"]["rates"]
    lines = ["# MaskScore loop report", "",
             f"Seed {figures['options']['seed']}, modality {MODALITY}, {figures['options']['views']} views of"
             f" {figures['options']['resolution']} px; {figures['seconds']['total']:.0f} s wall"
             f" ({figures['seconds']['cpu (user + system) of this process']:.0f} s of CPU) on {os.cpu_count()} cores.", "",
             "## Stage 3: pair accuracy on the held-out-subject bench (95% bootstrap intervals)", "",
             "| scorer | overall accuracy | instruction_following | consistency | overall dim | failed rows |",
             "|---|---|---|---|---|---|"]
    for name in LOOP_SCORERS:
        dims = bench[name]["dimensions"]
        lines.append(f"| {name} | {_fmt(bench[name]['mean_accuracy'])} | "
                     + " | ".join(_ci(dims[d]["accuracy"]) for d in vocab.DIMENSIONS)
                     + f" | {sum(dims[d]['failed_rows'] for d in vocab.DIMENSIONS)} |")
    agree = figures["native_agreement"]
    lines += ["", f"Reward model vs render-compare on the native editor's own samples: pair agreement"
              f" **{_fmt(agree['agreement'])}** over {agree['pairs']} pairs of {agree['instances']} instances"
              f" (per dimension: " + ", ".join(f"{d} {_fmt(v)}" for d, v in agree["dimensions"].items()) + ").", "",
              f"Candidates per second, one run, {figures['throughput']['groups']} bench groups: reward-model"
              f" **{rate['reward-model']['per_second']:.0f}**, render-compare {rate['render-compare']['per_second']:.2f}"
              f" ({rate['reward-model']['per_second'] / rate['render-compare']['per_second']:.0f}x) per wall second;"
              f" per CPU second of this process {_fmt(rate['reward-model'].get('per_cpu_second'), 0)} and"
              f" {_fmt(rate['render-compare'].get('per_cpu_second'), 2)}"
              f" (load average {_fmt(figures['throughput'].get('load_average'), 1)} on {os.cpu_count()} cores).", ""]
    held = rl.get("heldout")
    lines += ["## Stage 4: Flow-GRPO, before/after on held-out instances", ""]
    if held:
        lines += ["| scorer | before | after | gain (paired) | share improved |", "|---|---|---|---|---|"]
        for name in ("render-compare", held["reward_scorer"]):
            h = held[name]
            lines.append(f"| {name} | {_ci(h['before'])} | {_ci(h['after'])} | {_ci(h['gain'])} | {_fmt(h['improved_share'], 2)} |")
        lines += ["", f"{held['instances']} instances of held-out subjects, {held['samples']} samples each as the editor"
                  f" draws them (SDE, eta {held['eta']}), the same noise before and after; an instance's figure is the"
                  " mean over its samples.", "",
                  f"Reward gain minus render-compare gain (reward hacking shows as a positive gap):"
                  f" {_ci(held['reward_minus_render_compare_gain'])}.", ""]
    lines += [f"Training reward (reward model, SDE samples), mean of the first and last {rl.get('reward_window')} of"
              f" {rl.get('steps')} steps: {_fmt(rl.get('reward_start'))} -> {_fmt(rl.get('reward_end'))}.", "", "## Stage 1", "",
              f"Editor: {figures['editor']['steps']} steps on {figures['editor']['frames']} frames of"
              f" {figures['editor']['subjects']} subjects, final loss {_fmt(figures['editor']['final_loss'])}.", "",
              "## Curves", ""]
    lines += [f"![{stage}](curves-{stage}.png)" for stage in ("editor", "reward", "rl") if (out / f"curves-{stage}.png").exists()]
    lines += ["", "## Time per stage (s)", "", "| stage | seconds |", "|---|---|"]
    lines += [f"| {name} | {seconds} |" for name, seconds in figures["seconds"].items()]
    return "\n".join(lines) + "\n"


@click.command("loop")
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option("--seed", type=options.SEED, default=1, show_default=True,
              help="Seed of everything; with 16 subjects, seed 1 holds out 5 for the bench (seed 0 holds out none).")
@click.option("--subjects", type=options.SUBJECTS, default=16, show_default=True, help="Subjects of the source (about a fifth held out).")
@click.option("--editor-steps", type=options.STEPS, default=300, show_default=True,
              help="Stage 1 steps; a small editor leaves RL room (docs/loop.md).")
@click.option("--width", type=int, default=512, show_default=True, help="Editor MLP width.")
@click.option("--reward-rows", type=options.ROWS, default=120, show_default=True, help="reward-train rows (3 per instance).")
@click.option("--bench-rows", type=options.ROWS, default=240, show_default=True,
              help="Bench rows (3 per instance): its 80 instances of held-out subjects also give RL's before/after figures.")
@click.option("--native-rows", type=options.ROWS, default=60, show_default=True, help="Rows of the native editor's bench.")
@click.option("--native-train-rows", type=click.IntRange(min=0), default=240, show_default=True,
              help="reward-train rows of the native editor's samples (training subjects), added to the reward model's data.")
@click.option("--reward-steps", type=options.STEPS, default=600, show_default=True)
@click.option("--rl-rows", type=options.ROWS, default=320, show_default=True,
              help="rl-train rows (prompts); with 64 the policy fitted its prompts and gained little on held-out subjects (docs/loop.md).")
@click.option("--rl-steps", type=options.STEPS, default=160, show_default=True)
@click.option("--eval-instances", type=options.INSTANCES, default=80, show_default=True,
              help="Held-out instances of the bench scored before and after RL (30 gave intervals too wide to tell RL seeds apart).")
@click.option("--eval-samples", type=options.INSTANCES, default=8, show_default=True,
              help="Samples per held-out instance before and after RL (the same noise in both).")
@click.option("--rate-groups", type=options.INSTANCES, default=10, show_default=True, help="Bench groups timed for candidates/s.")
@click.option("--views", type=options.VIEWS, default=4, show_default=True)
@click.option("--resolution", type=options.RESOLUTION, default=64, show_default=True)
@click.option("--shard-size", type=options.SHARD_SIZE, default=16, show_default=True)
@click.option("--workers", type=options.WORKERS, default=1, show_default=True)
@click.option("--quiet", is_flag=True)
def loop_command(out, seed, subjects, editor_steps, width, reward_rows, bench_rows, native_rows, native_train_rows,
                 reward_steps, rl_rows, rl_steps, eval_instances, eval_samples, rate_groups, views, resolution, shard_size, workers, quiet):
    """Run the loop's four stages small on the built-in data; write DIR/report.md."""
    options.check_render_size(views, resolution)
    opts = {"seed": seed, "subjects": subjects, "editor_steps": editor_steps, "width": width, "reward_rows": reward_rows,
            "bench_rows": bench_rows, "native_rows": native_rows, "native_train_rows": native_train_rows,
            "reward_steps": reward_steps, "rl_rows": rl_rows,
            "rl_steps": rl_steps, "eval_instances": eval_instances, "eval_samples": eval_samples, "rate_groups": rate_groups, "views": views,
            "resolution": resolution,
            "shard_size": shard_size, "workers": workers, "progress": not quiet}
    figures = run_loop(Path(out), opts)
    click.echo((Path(out) / "report.md").read_text())
    click.echo(f"report: {Path(out) / 'report.md'} (figures: {Path(out) / 'report.json'}); {figures['seconds']['total']:.0f} s")
