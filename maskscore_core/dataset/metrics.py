"""Bench figures from graded rows: pairwise accuracy, tie rate (over the graded pairs, and over all
candidate pairs), Kendall tau, best-of-N, and 95% bootstrap intervals.

Accuracy per task type pools that task type's pairs; a group's figure and the overall figure are
the unweighted mean over the task types present (EditReward-Bench's convention); a modality's
figure is the unweighted mean over task types within that modality. A tie (equal scores) is a
wrong answer, and so is every pair of a row the scorer failed on. Intervals resample rows with
replacement (seeded), recomputing every figure from the same draws.
"""

from __future__ import annotations

import math
import warnings

import attrs
import numpy as np
from scipy.stats import kendalltau

from maskscore_core import vocab

from maskscore_core.plugin import manager as plugins
from maskscore_core.dataset.protocol import expected_levels, graded_pairs

RESAMPLES = 1000


@attrs.frozen
class RowOutcome:
    modality: str
    task_type: str
    dimension: str
    key: str
    pairs: int
    correct: int
    ties: int
    failed: bool
    tau: float | None  # None for failed rows and rows ranking no pair; 0.0 where scores are constant
    best_hit: bool  # the top-scored candidate is rung 1, alone at the top
    all_pairs: int = 0  # every pair of the row's candidates, graded or not
    all_ties: int = 0  # those with equal scores (a scorer that cannot tell two rungs apart)


def grade_row(modality: str, task_type: str, dimension: str, key: str, scores: list[float] | None, rungs: list[int],
              levels: dict | None = None) -> RowOutcome:
    """Grade one row's scores (None when the scorer failed) against its ladder, whose expected
    levels are `levels` (the modality's, `protocol.levels_for`; default the design's)."""
    pairs = graded_pairs(dimension, rungs, levels)
    every = len(rungs) * (len(rungs) - 1) // 2
    if scores is None:
        return RowOutcome(modality, task_type, dimension, key, len(pairs), 0, 0, True, None, False, every, 0)
    if len(scores) != len(rungs):
        raise ValueError(f"row {key}: {len(scores)} scores for {len(rungs)} candidates (rungs {rungs})")
    all_ties = sum(1 for i in range(len(scores)) for j in range(i + 1, len(scores)) if scores[i] == scores[j])
    correct = sum(1 for b, w in pairs if scores[b] > scores[w])
    ties = sum(1 for b, w in pairs if scores[b] == scores[w])
    expected = expected_levels(dimension, rungs, levels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tau = float(kendalltau(scores, [-level for level in expected]).statistic)
    top = max(scores)
    winners = [i for i, s in enumerate(scores) if s == top]
    hit = len(winners) == 1 and rungs[winners[0]] == 1
    if not pairs:  # nothing is ranked on this dimension (text's consistency): no association to report
        tau = None
    elif math.isnan(tau):
        tau = 0.0
    return RowOutcome(modality, task_type, dimension, key, len(pairs), correct, ties, False, tau, hit, every, all_ties)


def _figures(weights: np.ndarray, correct: np.ndarray, pairs: np.ndarray, cells: np.ndarray, shape: tuple[int, int]):
    """Accuracy figures for each row-weighting in `weights` (B, R): per (modality, task) cells first."""
    onehot = np.zeros((len(cells), shape[0] * shape[1]))
    onehot[np.arange(len(cells)), cells] = 1.0
    corr = ((weights * correct) @ onehot).reshape(-1, *shape)
    total = ((weights * pairs) @ onehot).reshape(-1, *shape)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        per_task = corr.sum(1) / total.sum(1)  # (B, T)
        per_cell = corr / total  # (B, M, T)
        return per_task, per_cell


def _interval(samples: np.ndarray) -> list[float] | None:
    samples = samples[~np.isnan(samples)]
    if samples.size == 0:
        return None
    low, high = np.percentile(samples, [2.5, 97.5])
    return [float(low), float(high)]


def _mean(values: np.ndarray, axis: int) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(values, axis=axis)


def summarize_dimension(outcomes: list[RowOutcome], seed: int, resamples: int = RESAMPLES) -> dict:
    """Every figure of one dimension's rows, each as {"value", "ci95"}."""
    if not outcomes:
        raise ValueError("no rows to summarize")
    tasks = [t for t in vocab.TASK_TYPES if any(o.task_type == t for o in outcomes)]
    modalities = [m for m in plugins.modality_names() if any(o.modality == m for o in outcomes)]
    shape = (len(modalities), len(tasks))
    cells = np.array([modalities.index(o.modality) * len(tasks) + tasks.index(o.task_type) for o in outcomes])
    correct = np.array([o.correct for o in outcomes], dtype=float)
    pairs = np.array([o.pairs for o in outcomes], dtype=float)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(outcomes), size=(resamples, len(outcomes)))
    weights = np.zeros((resamples + 1, len(outcomes)))
    weights[0] = 1.0  # row 0: the data itself (the point estimate)
    for b in range(resamples):
        weights[b + 1] = np.bincount(draws[b], minlength=len(outcomes))
    per_task, per_cell = _figures(weights, correct, pairs, cells, shape)

    def figure(samples: np.ndarray) -> dict:
        value = samples[0]
        return {"value": None if np.isnan(value) else float(value), "ci95": _interval(samples[1:])}

    groups = {}
    for group, members in vocab.TASK_GROUPS.items():
        idx = [tasks.index(t) for t in members if t in tasks]
        if idx:
            groups[group] = figure(_mean(per_task[:, idx], axis=1))
    graded = [o for o in outcomes if not o.failed]
    total_pairs = sum(o.pairs for o in outcomes)
    return {
        "rows": len(outcomes),
        "failed_rows": sum(o.failed for o in outcomes),
        "pairs": total_pairs,
        "accuracy": figure(_mean(per_task, axis=1)),
        "tie_rate": sum(o.ties for o in outcomes) / total_pairs if total_pairs else None,
        # ties over every candidate pair of the scored rows, graded or not: a scorer that gives two
        # rungs the same score (a candidate equal to another) shows here even where the levels tie
        "tie_rate_all_pairs": (sum(o.all_ties for o in graded) / sum(o.all_pairs for o in graded)
                               if sum(o.all_pairs for o in graded) else None),
        "task_types": {t: figure(per_task[:, i]) for i, t in enumerate(tasks)},
        "groups": groups,
        "modalities": {m: figure(_mean(per_cell[:, i, :], axis=1)) for i, m in enumerate(modalities)},
        "kendall_tau": float(np.mean([o.tau for o in graded if o.tau is not None])) if any(o.tau is not None for o in graded) else None,
        "best_of_n": sum(o.best_hit for o in outcomes) / len(outcomes),
    }


def summarize(outcomes: list[RowOutcome], seed: int, resamples: int = RESAMPLES) -> dict:
    """Figures per dimension, plus the mean of the three dimensions' overall accuracies."""
    per_dimension = {}
    for dimension in vocab.DIMENSIONS:
        rows = [o for o in outcomes if o.dimension == dimension]
        if rows:
            per_dimension[dimension] = summarize_dimension(rows, seed, resamples)
    values = [d["accuracy"]["value"] for d in per_dimension.values() if d["accuracy"]["value"] is not None]
    return {"dimensions": per_dimension, "mean_accuracy": float(np.mean(values)) if values else None}
