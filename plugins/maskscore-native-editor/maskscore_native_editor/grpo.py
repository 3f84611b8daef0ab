"""Stage 4: Flow-GRPO for the native editor (`maskscore train rl`).

Per step: `prompts` edit instances of the rl-train dataset, `group` samples each by the SDE
(`flow.sample`, eta 0.7, `sample_steps` steps), rewarded by a scorer (the reward model) on `overall`;
advantages normalised within each group, clipped to +-5; the policy loss is PPO's clipped ratio
of each stochastic step's log-probability, plus beta times the KL to the reference policy (the
starting checkpoint), which for two Gaussians of one variance is the squared distance of their
means over twice the variance. Gradients are accumulated over the timesteps and applied once per
step, as Flow-GRPO does. EditScore's settings are the defaults (12 samples a prompt, eta 0.7,
KL weight 0.04, clip range 2e-4; EditScore uses 1e-4 to 5e-4) but for the trajectories: training
samples take 10 steps while the editor samples with 20, Flow-GRPO's "denoising reduction" (it
trains on 10 and samples with 40): half the cost a step, so twice the steps fit in the loop's time.
Each step takes 12 prompts: with 6, the gradient's noise left one RL seed of four without a
held-out gain (docs/loop.md).

trl's GRPOTrainer drives language models only (it needs a tokenizer and `.config`), so the loss
is written here on torch. Held-out figures: `heldout.before_after`, with render-compare.
"""

from __future__ import annotations

import copy
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from maskscore_core import checkpoints, threads
from maskscore_core.plugin.context import Context

from . import data, editor, flow, heldout
from .model import load, save

DEFAULTS = {
    "seed": 0, "steps": 160, "group": 12, "prompts": 12, "sample_steps": 10, "eta": 0.7, "kl": 0.04, "clip": 2e-4,
    "adv_clip": 5.0, "lr": 3e-4, "save_every": 20, "eval_instances": 80, "eval_samples": 8, "views": 4, "resolution": 64,
}
MODALITY = "pose"
REPORT = "rl_report.json"


class RLError(ValueError):
    """An RL run that cannot start (no prompts, no reward)."""


def run(options: dict, ctx) -> dict:
    out = Path(options["out"])
    opts = {**DEFAULTS, **{k: v for k, v in options.items() if v is not None and k in DEFAULTS}}
    reference, base_config = load(Path(options["editor"]))
    prompts = heldout.load_instances(Path(options["data"]), MODALITY)
    if not prompts:
        raise RLError(f"{options['data']} holds no {MODALITY} instances the native editor can edit")
    held = heldout.load_instances(Path(options["eval_bench"]), MODALITY, opts["eval_instances"]) if options.get("eval_bench") else []
    run_config = {"trainer": "flow-grpo", "editor": str(Path(options["editor"]).resolve()), "data": str(Path(options["data"]).resolve()),
                  "reward": options["reward"], "reward_weights": options.get("reward_weights"), **opts}
    checkpoints.check_run_config(out, run_config)
    with threads.one_thread(), tempfile.TemporaryDirectory(prefix="maskscore-rl-") as workdir:
        policy = copy.deepcopy(reference)
        summary = _train(out, opts, policy, reference, base_config, prompts, options, Path(workdir),
                         options.get("progress", True))
        if held:
            summary["heldout"] = heldout.before_after({"before": reference, "after": policy}, held, options["reward"],
                                                      options.get("reward_weights"), opts["views"], opts["resolution"],
                                                      opts["seed"], Path(workdir), opts["eval_samples"], opts["eta"])
        (out / REPORT).write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    return summary


def _rewards(states, batch, opts, options, ctx) -> np.ndarray:
    rewards = []
    for p, instance in enumerate(batch):
        group = states[p * opts["group"]:(p + 1) * opts["group"]]
        cands = heldout.candidates_of(group, instance, MODALITY, ctx)
        rewards.append(heldout.overall(options["reward"], instance, cands, ctx))
    return np.asarray(rewards)


def _advantages(rewards: np.ndarray, clip: float) -> torch.Tensor:
    adv = (rewards - rewards.mean(axis=1, keepdims=True)) / (rewards.std(axis=1, keepdims=True) + 1e-4)
    return torch.as_tensor(np.clip(adv, -clip, clip).reshape(-1), dtype=torch.float32)


def policy_loss(policy, reference, states, old_logps, cond, adv, opts) -> dict:
    """Backpropagate the Flow-GRPO loss over the stochastic steps; returns its parts (floats)."""
    a, mask, target, given = cond
    times = flow.grid(opts["sample_steps"])
    stochastic = old_logps.shape[1]
    totals = {"policy": 0.0, "kl": 0.0, "clipped": 0.0}
    for j in range(stochastic):
        t, dt = float(times[j]), float(times[j + 1] - times[j])
        std = flow.sde_std(times, j, opts["eta"])
        tt = torch.full((a.shape[0],), t)
        mean = flow.step_mean(states[j], policy(states[j], tt, a, mask, target, given), t, dt, std)
        with torch.no_grad():
            ref_mean = flow.step_mean(states[j], reference(states[j], tt, a, mask, target, given), t, dt, std)
        logp = flow.log_prob(states[j + 1], mean, std, dt, mask)
        ratio = torch.exp(logp - old_logps[:, j])
        clipped = torch.clamp(ratio, 1 - opts["clip"], 1 + opts["clip"])
        pg = torch.maximum(-adv * ratio, -adv * clipped).mean()
        kl = ((((mean - ref_mean) ** 2) * mask).sum(1) / mask.sum(1)).mean() / (2 * (std**2) * (-dt))
        ((pg + opts["kl"] * kl) / stochastic).backward()
        totals["policy"] += float(pg.detach()) / stochastic
        totals["kl"] += float(kl.detach()) / stochastic
        totals["clipped"] += float(((ratio - 1).abs() > opts["clip"]).float().mean()) / stochastic
    return totals


def _train(out, opts, policy, reference, base_config, prompts, options, workdir, progress) -> dict:
    reference.eval()
    policy.train()
    for p in reference.parameters():
        p.requires_grad_(False)
    optimizer = torch.optim.Adam(policy.parameters(), lr=opts["lr"])
    resumed = checkpoints.resume_state(out, policy, optimizer)
    start, history, _ = resumed if resumed else (0, [], [])
    ctx = Context(workdir=workdir, seed=opts["seed"], config={"views": opts["views"], "resolution": opts["resolution"],
                                                              "weights": options.get("reward_weights") or "default"})
    extra = {**{k: v for k, v in base_config.items() if k not in ("kind", "format", "model")},
             "rl": {**opts, "reward": options["reward"], "base": str(options["editor"])}}
    started = time.perf_counter()
    bar = tqdm(total=opts["steps"], initial=start, desc="train rl", unit="step", file=sys.stderr, disable=not progress)
    for step in range(start, opts["steps"]):
        rng = np.random.default_rng([opts["seed"], step])
        batch = [prompts[i] for i in rng.choice(len(prompts), size=min(opts["prompts"], len(prompts)), replace=False)]
        cond = editor.conditioning(policy, batch, opts["group"])
        generator = torch.Generator().manual_seed(int(rng.integers(2**62)))
        x, states, old_logps = flow.sample(policy, *cond, opts["sample_steps"], opts["eta"], generator, keep_trajectory=True)
        rewards = _rewards(editor.to_states(policy, x, batch, opts["group"]), batch, opts, options, ctx)
        optimizer.zero_grad(set_to_none=True)
        parts = policy_loss(policy, reference, states, old_logps, cond, _advantages(rewards, opts["adv_clip"]), opts)
        optimizer.step()
        done = step + 1
        history.append({"step": done, "reward": float(rewards.mean()), "reward_std_in_group": float(rewards.std(axis=1).mean()),
                        "kl": parts["kl"], "policy_loss": parts["policy"]})
        bar.update(1)
        bar.set_postfix(reward=f"{rewards.mean():.4f}", kl=f"{parts['kl']:.2e}")
        if done % opts["save_every"] == 0 and done < opts["steps"]:
            save(policy, out, {**extra, "steps_done": done})
            checkpoints.save_state(out, done, policy, optimizer, history)
            checkpoints.write_curves(out, history, "native-flow editor: Flow-GRPO")
    bar.close()
    policy.eval()
    save(policy, out, {**extra, "steps_done": opts["steps"]})
    checkpoints.write_curves(out, history, "native-flow editor: Flow-GRPO")
    checkpoints.clear_state(out)
    return {"checkpoint": str(out), "steps": opts["steps"], "resumed_from": start, "prompts": len(prompts),
            **_reward_ends(history),
            "seconds": round(time.perf_counter() - started, 1)}


def _reward_ends(history: list[dict]) -> dict:
    """The training reward's mean over the first and the last tenth of the steps: one step's
    reward is a dozen samples of a few prompts, too noisy to compare ends by."""
    if not history:
        return {"reward_start": None, "reward_end": None, "reward_window": 0}
    window = max(1, len(history) // 10)
    rewards = [h["reward"] for h in history]
    return {"reward_start": sum(rewards[:window]) / window, "reward_end": sum(rewards[-window:]) / window,
            "reward_window": window}
