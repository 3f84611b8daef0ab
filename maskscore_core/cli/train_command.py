"""`maskscore train editor|reward|rl`: stages 1, 3 and 4 of the loop, run by trainer plugins.

The command only gathers options and dispatches through the `train` hook; the models and their
training live in the plugin distributions (maskscore-native-editor, maskscore-reward-model).
A trainer writes its checkpoint (safetensors + config.json, `maskscore_core.checkpoints`) and
its curves under --out, and resumes there after an interruption.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import click

from maskscore_core.plugin import manager as plugins
from maskscore_core.plugin.context import Context
from maskscore_core.cli import options as bounds
from maskscore_core.cli.output import noise_to_stderr, write_json

DEFAULT_TRAINERS = {"editor": "native-flow", "reward": "reward-model", "rl": "flow-grpo"}


def run_trainer(trainer: str, options: dict, seed: int) -> dict:
    """Call the trainer through the `train` hook, in a scratch work directory."""
    with tempfile.TemporaryDirectory(prefix="maskscore-train-") as workdir:
        ctx = Context(workdir=Path(workdir), seed=seed, config={})
        with noise_to_stderr():  # stdout holds the summary's JSON only
            return plugins.call("train", trainer, trainer=trainer, options=options, ctx=ctx)


def _finish(summary: dict) -> None:
    write_json(summary)


_out = click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path),
                    help="Checkpoint directory (resumed when it holds an unfinished run of the same options).")
_seed = click.option("--seed", type=bounds.SEED, default=0, show_default=True)
_steps = click.option("--steps", type=bounds.STEPS, default=None, help="Optimiser steps (default: the trainer's).")
_quiet = click.option("--quiet", is_flag=True, help="No progress bar.")
_lr = click.option("--lr", type=bounds.LEARNING_RATE, default=None, help="Adam learning rate (default: the trainer's).")


def _trainer(kind: str):
    return click.option("--trainer", default=DEFAULT_TRAINERS[kind], show_default=True, help="Trainer plugin.")


@click.group("train")
def train_command() -> None:
    """Train the loop's models: the native editor, the reward model, the editor by RL."""


@train_command.command("editor")
@_out
@_seed
@_steps
@click.option("--subjects", type=bounds.SUBJECTS, default=None, help="Subjects asked of the source (the bench's share is left out).")
@click.option("--source", default=None, help="Trial source plugin (default anny).")
@click.option("--batch", type=bounds.BATCH, default=None)
@click.option("--width", type=bounds.WIDTH, default=None, help="MLP width (default 512).")
@click.option("--depth", type=bounds.DEPTH, default=None, help="MLP hidden layers (default 3).")
@click.option("--save-every", type=bounds.STEPS, default=None, help="Steps between resumable saves.")
@_lr
@_trainer("editor")
@_quiet
def train_editor(out, seed, steps, subjects, source, batch, width, depth, save_every, lr, trainer, quiet):
    """Stage 1: the native editor learns to regenerate a masked part from built-in trials."""
    options = {"out": str(out), "seed": seed, "steps": steps, "subjects": subjects, "source": source, "batch": batch,
               "width": width, "depth": depth, "save_every": save_every, "lr": lr, "progress": not quiet}
    _finish(run_trainer(trainer, options, seed))


@train_command.command("reward")
@click.option("--data", "data", required=True, multiple=True,
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="A reward-train dataset (maskscore build reward-train); repeat to train on several.")
@_out
@_seed
@_steps
@click.option("--save-every", type=bounds.STEPS, default=None, help="Steps between resumable saves.")
@_lr
@_trainer("reward")
@_quiet
def train_reward(data, out, seed, steps, save_every, lr, trainer, quiet):
    """Stage 3: a reward model learns the three dimensions from reward-train rows."""
    options = {"data": [str(d) for d in data], "out": str(out), "seed": seed, "steps": steps, "save_every": save_every, "lr": lr,
               "progress": not quiet}
    _finish(run_trainer(trainer, options, seed))


@train_command.command("rl")
@click.option("--editor", "editor", required=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="The editor checkpoint to start from (the reference policy).")
@click.option("--data", "data", required=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="An rl-train dataset: its edit instances are the prompts.")
@click.option("--reward", "reward", required=True, help="Scorer plugin giving the reward (e.g. reward-model).")
@click.option("--reward-weights", default=None, help="Weights handed to the reward scorer (a reward-model checkpoint).")
@click.option("--eval-bench", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="A bench of held-out subjects: before/after figures with render-compare.")
@_out
@_seed
@_steps
@click.option("--group", type=bounds.BATCH, default=None, help="Samples per prompt (default 12).")
@click.option("--prompts", type=bounds.BATCH, default=None, help="Prompts per step (default 12).")
@click.option("--eval-instances", type=bounds.INSTANCES, default=None, help="Held-out instances scored before/after (default 80).")
@click.option("--views", type=bounds.VIEWS, default=None, help="render-compare views of the before/after figures (default 4).")
@click.option("--resolution", type=bounds.RESOLUTION, default=None, help="render-compare size of the before/after figures (default 64).")
@click.option("--save-every", type=bounds.STEPS, default=None, help="Steps between resumable saves.")
@_lr
@click.option("--kl", type=bounds.KL, default=None, help="KL weight to the reference policy (default 0.04).")
@_trainer("rl")
@_quiet
def train_rl(editor, data, reward, reward_weights, eval_bench, out, seed, steps, group, prompts, eval_instances, views,
             resolution, save_every, lr, kl, trainer, quiet):
    """Stage 4: fine-tune the editor by group-relative policy optimisation with a scorer as reward."""
    if views is not None and resolution is not None:
        bounds.check_render_size(views, resolution)
    options = {"editor": str(editor), "data": str(data), "reward": reward, "reward_weights": reward_weights,
               "eval_bench": str(eval_bench) if eval_bench else None, "out": str(out), "seed": seed, "steps": steps,
               "group": group, "prompts": prompts, "eval_instances": eval_instances, "views": views,
               "resolution": resolution, "save_every": save_every, "lr": lr, "kl": kl, "progress": not quiet}
    _finish(run_trainer(trainer, options, seed))
