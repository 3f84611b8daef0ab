"""Before/after figures of RL on held-out instances: render-compare, not the reward it trained on.

Each held-out instance (a bench of subjects no training saw) gets `samples` candidates drawn as
the editor draws them in stage 2 (the SDE at eta 0.7, seeded by the instance) from the reference
policy and from the fine-tuned one, with the same noise; all are scored by render-compare and by
the reward scorer, and an instance's figure is the mean over its samples. Reported: means with
95% bootstrap intervals (instances resampled, seeded), the paired gains, and the gap between the
reward's gain and render-compare's (a reward model that is hacked gains more than the metric).
"""

from __future__ import annotations

import numpy as np

from maskscore_core.plugin import manager as plugins
from maskscore_core.plugin.context import Context
from maskscore_core.plugin.records import Candidate

from . import editor, params

RESAMPLES = 1000


def load_instances(root, modality: str, limit: int | None = None) -> list:
    """The dataset's instances of `modality` the editor can edit, in key order."""
    from maskscore_core.dataset import reader

    keys = sorted({row["key"] for _, row in reader.iter_rows(root, [modality])})
    out = []
    for key in keys:
        instance = reader.load_instance(root, key)
        try:
            params.check_instance(instance)
        except params.ParamError:
            continue
        out.append(instance)
        if limit is not None and len(out) >= limit:
            break
    return out


def candidates_of(states, instance, modality: str, ctx) -> list[Candidate]:
    out = []
    for n, state in enumerate(states):
        target = instance.a.with_states(f"sample-{n}", (state,))
        out.append(Candidate(f"sample-{n}", plugins.call("encode", modality, modality=modality, target=target, ctx=ctx)))
    return out


def overall(scorer: str, instance, candidates, ctx) -> list[float]:
    scored = plugins.call("score", scorer, scorer=scorer, instance=instance, candidates=candidates, ctx=ctx)
    return [float(s.overall) for s in scored]


def interval(values: np.ndarray, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(values), size=(RESAMPLES, len(values)))
    means = values[draws].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return {"mean": float(values.mean()), "ci95": [float(low), float(high)]}


def before_after(models: dict, instances: list, reward: str, reward_weights, views: int, resolution: int, seed: int,
                 workdir, samples: int = 4, eta: float = 0.7) -> dict:
    """{"render-compare": {...}, reward: {...}, "gap": ...} for the policies in `models` (name -> model)."""
    ctx_rc = Context(workdir=workdir, seed=seed, config={"views": views, "resolution": resolution})
    ctx_rw = Context(workdir=workdir, seed=seed, config={"views": views, "resolution": resolution,
                                                         "weights": reward_weights or "default"})
    scores = {name: {"render-compare": [], reward: []} for name in models}
    for instance in instances:
        # Every policy's samples of an instance in one call per scorer: frames A and B are
        # decoded and prepared once (each candidate's score does not depend on the others').
        states = [s for model in models.values() for s in editor.sample_states(model, instance, samples, eta, seed)]
        cands = candidates_of(states, instance, instance.instruction.modality, ctx_rc)
        for scorer, ctx in (("render-compare", ctx_rc), (reward, ctx_rw)):
            values = np.asarray(overall(scorer, instance, cands, ctx)).reshape(len(models), samples)
            for name, row in zip(models, values):
                scores[name][scorer].append(float(np.mean(row)))
    before, after = list(models)
    report = {"instances": len(instances), "samples": samples, "eta": eta, "views": views, "resolution": resolution}
    for scorer in ("render-compare", reward):
        b, a = np.asarray(scores[before][scorer]), np.asarray(scores[after][scorer])
        report[scorer] = {"before": interval(b, seed), "after": interval(a, seed), "gain": interval(a - b, seed),
                          "improved_share": float(np.mean(a > b))}
    gap = (np.asarray(scores[after][reward]) - np.asarray(scores[before][reward])) - (
        np.asarray(scores[after]["render-compare"]) - np.asarray(scores[before]["render-compare"]))
    report["reward_minus_render_compare_gain"] = interval(gap, seed)
    report["reward_scorer"] = reward
    return report
