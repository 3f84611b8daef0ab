"""Stage 3: train the reward model on reward-train rows (`maskscore train reward`).

Every instance of the dataset(s) gives its candidates' features (`features`, from the pose column
and the instance's frames) and their render-compare scores on the three dimensions. The loss is
the squared error on the scores plus a pairwise logistic term on every candidate pair of one
instance that render-compare orders (so the model learns the ranking, what the bench grades).
The pairwise term compares the logits, not the scores: consistencies sit at 0.99 and above,
where the sigmoid is flat, and a term on the scores has almost no gradient left there to order them.
Full-batch Adam on one thread; resumable and deterministic by seed (`maskscore_core.checkpoints`).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from maskscore_core import checkpoints, threads, vocab
from maskscore_core.plugin.context import Context
from maskscore_core.dataset import reader

from . import features
from .model import RewardNet, save

DEFAULTS = {"seed": 0, "steps": 600, "width": 256, "depth": 2, "lr": 2e-3, "rank_weight": 1.0, "rank_scale": 3.0, "save_every": 200,
            "log_every": 20}


class RewardDataError(ValueError):
    """A dataset the reward model cannot learn from."""


def load_rows(root: Path, ctx) -> dict:
    """Features (N, F), scores (N, 3) and instance index (N,) of every pose candidate in `root`."""
    root = Path(root)
    by_key: dict[str, dict] = {}
    for modality, row in reader.iter_rows(root, [features.MODALITY]):
        entry = by_key.setdefault(row["key"], {"row": row, "scores": {}})
        entry["scores"][row["dimension"]] = list(row["scores"])
    if not by_key:
        raise RewardDataError(f"{root} holds no {features.MODALITY} rows; build reward-train with --modalities pose")
    xs, ys, groups = [], [], []
    for number, (key, entry) in enumerate(sorted(by_key.items())):
        missing = [d for d in vocab.DIMENSIONS if d not in entry["scores"]]
        if missing:
            raise RewardDataError(f"{root}: row {key} lacks scores for {', '.join(missing)}")
        instance = reader.load_instance(root, key)
        poses = np.stack([features.pose_of(v, f"{key} candidate {i}") for i, v in enumerate(reader.candidate_values(features.MODALITY, entry["row"]))])
        xs.append(features.features(features.references(instance, ctx), poses))
        ys.append(np.stack([entry["scores"][d] for d in vocab.DIMENSIONS], axis=1))
        groups.append(np.full(len(poses), number))
    return {"x": np.concatenate(xs), "y": np.concatenate(ys).astype(np.float32), "group": np.concatenate(groups),
            "instances": len(by_key)}


def ranked_pairs(y: np.ndarray, group: np.ndarray) -> np.ndarray:
    """(P, 3) rows (better, worse, dimension) of candidates of one instance with different scores."""
    pairs = []
    for g in np.unique(group):
        idx = np.flatnonzero(group == g)
        for d in range(y.shape[1]):
            for i in idx:
                for j in idx:
                    if y[i, d] > y[j, d] + 1e-6:
                        pairs.append((i, j, d))
    return np.asarray(pairs, dtype=np.int64).reshape(-1, 3)


def pair_agreement(pred: np.ndarray, pairs: np.ndarray) -> float:
    return float(np.mean(pred[pairs[:, 0], pairs[:, 2]] > pred[pairs[:, 1], pairs[:, 2]])) if len(pairs) else float("nan")


def merge(parts: list[dict]) -> dict:
    """Rows of several datasets as one (instance numbers kept apart)."""
    offset, groups = 0, []
    for part in parts:
        groups.append(part["group"] + offset)
        offset += part["instances"]
    return {"x": np.concatenate([p["x"] for p in parts]), "y": np.concatenate([p["y"] for p in parts]),
            "group": np.concatenate(groups), "instances": offset}


def run(options: dict, ctx) -> dict:
    """Train on options["data"]: one reward-train directory, or a list of them."""
    out = Path(options["out"])
    opts = {**DEFAULTS, **{k: v for k, v in options.items() if v is not None and k in DEFAULTS}}
    sources = [options["data"]] if isinstance(options["data"], (str, Path)) else list(options["data"])
    data = merge([load_rows(Path(source), ctx) for source in sources])
    checkpoints.check_run_config(out, {"trainer": "reward-model", "data": [str(Path(s).resolve()) for s in sources], **opts})
    with threads.one_thread():
        return _train(out, opts, data, [str(s) for s in sources], options.get("progress", True))


def _train(out: Path, opts: dict, data: dict, sources: list[str], progress: bool) -> dict:
    x, y = torch.as_tensor(data["x"]), torch.as_tensor(data["y"])
    pairs = ranked_pairs(data["y"], data["group"])
    pair_index = torch.as_tensor(pairs)
    torch.manual_seed(opts["seed"])
    model = RewardNet(opts["width"], opts["depth"])
    optimizer = torch.optim.Adam(model.parameters(), lr=opts["lr"])
    resumed = checkpoints.resume_state(out, model, optimizer)
    start, history, _ = resumed if resumed else (0, [], [])
    extra = {"train": opts, "data": sources, "instances": data["instances"], "candidates": int(len(x))}
    started = time.perf_counter()
    bar = tqdm(total=opts["steps"], initial=start, desc="train reward", unit="step", file=sys.stderr, disable=not progress)
    for step in range(start, opts["steps"]):
        logits = model.logits(x)
        mse = ((torch.sigmoid(logits) - y) ** 2).mean()
        if len(pairs):
            better = logits[pair_index[:, 0], pair_index[:, 2]]
            worse = logits[pair_index[:, 1], pair_index[:, 2]]
            rank = torch.nn.functional.softplus(-(better - worse) * opts["rank_scale"]).mean()
        else:
            rank = torch.zeros(())
        loss = mse + opts["rank_weight"] * rank
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        bar.update(1)
        done = step + 1
        if done % opts["log_every"] == 0 or done == opts["steps"]:
            with torch.no_grad():
                agreement = pair_agreement(model.logits(x).numpy(), pairs)
            history.append({"step": done, "mse": float(mse.detach()), "rank_loss": float(rank.detach()),
                            "train_pair_agreement": agreement})
            bar.set_postfix(mse=f"{float(mse.detach()):.4f}", agree=f"{agreement:.3f}")
        if done % opts["save_every"] == 0 and done < opts["steps"]:
            save(model, out, {**extra, "steps_done": done})
            checkpoints.save_state(out, done, model, optimizer, history)
            checkpoints.write_curves(out, history, "reward model on reward-train")
    bar.close()
    save(model, out, {**extra, "steps_done": opts["steps"]})
    checkpoints.write_curves(out, history, "reward model on reward-train")
    checkpoints.clear_state(out)
    return {"checkpoint": str(out), "steps": opts["steps"], "resumed_from": start, "instances": data["instances"],
            "candidates": int(len(x)), "ranked_pairs": int(len(pairs)),
            "train_pair_agreement": history[-1]["train_pair_agreement"] if history else None,
            "seconds": round(time.perf_counter() - started, 1)}
