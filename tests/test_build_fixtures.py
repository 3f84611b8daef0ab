"""Small, fast, real plugins for testing the dataset machinery (no tests in this module).

They register toy versions of the eight design modalities (the real plugins' tables, templates,
task tables and ladder levels, taken from their Modality classes; assets are a body state flattened into a parameter vector, .npy
files or float lists), a `toy` source, an instance maker that makes the task types the plan asks
for, a `toy-ladder` editor with the five rungs, a `toy-score` scorer (distance to frame B /
frame A in parameter space) and a `toy-noisy` scorer (seeded noise, for Avg@N). Registered by
import name in build workers via BuildConfig.plugin_modules, so this directory must be on
PYTHONPATH for spawned processes; tests using them load no modality plugin (`toy_only`), since
two plugins may not register one modality.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np

import pytest

from maskscore_core import Editor, Modality, Scorer, Source, hookimpl, vocab

from maskscore_core.plugin import manager as plugins
from maskscore_core.edits.ladder import ladder_rungs
from maskscore_core.plugin.records import (
    Asset,
    BodyState,
    Candidate,
    CandidateScore,
    EditInstance,
    EditInstruction,
    Frame,
    Subject,
    Target,
    Trial,
)

MODULE = "test_build_fixtures"
INSTANCE_MAKER = f"{MODULE}:make_instances"
LIST_MODALITIES = ("keypoints", "pose")
ACTIONS = 8  # expression entries the toy source varies


SCORERS = ("toy-score", "toy-noisy", "toy-broken", "toy-constant")
# toy-score's scores from a scorer that lets the builder score two rows at once
# (`Scorer.rows_in_flight`); OVERLAP counts how many of its calls ran at once in this process.
OVERLAPPING = "toy-overlapping"
OVERLAP = {"now": 0, "most": 0}
_overlap_lock = threading.Lock()


@pytest.fixture
def toy_only(monkeypatch):
    """No modality plugin but the toy's (in this process and the workers it spawns)."""
    from maskscore_core.dataset.shard import register_plugin_modules

    monkeypatch.setenv("MASKSCORE_LOAD_PLUGINS", "")
    plugins.reset()
    register_plugin_modules([MODULE])
    yield
    plugins.reset()


class ToyModality(Modality):
    """A design modality's table and tables, on parameter vectors."""

    def encode(self, target, ctx):
        return Asset(self.name, state_vector(target.state), meta={"state": target.state})

    def decode_reference(self, instance, which, ctx):
        raise NotImplementedError("toy modalities are scored in parameter space, never decoded")

    def write(self, asset, directory, name, ctx):
        if self.name in LIST_MODALITIES:
            return [float(x) for x in asset.data]
        path = Path(directory) / f"{name}.npy"
        np.save(path, np.asarray(asset.data, dtype=np.float64))
        return path.relative_to(ctx.config["dataset_root"]).as_posix()

    def read(self, value, root, ctx):
        if self.name in LIST_MODALITIES:
            return Asset(self.name, np.asarray(value, dtype=np.float64))
        path = Path(root) / value
        if not path.exists():
            raise FileNotFoundError(f"{self.name} asset {value!r} missing under {root}")
        return Asset(self.name, np.load(path), path=value)

    def row(self, instance, input_value, candidate_values, scores, dimension, root, ctx):
        columns = [c.name for c in self.columns()]
        row = {"key": instance.key, "instruction": instance.instruction.text, "task_type": instance.instruction.task_type,
               "dimension": dimension, "scores": list(scores), "conditioning_image": "", "aligned_audio": ""}
        row[columns[2]] = input_value if self.name != "multimodal" else "mesh"
        row[self.candidate_column.name] = list(candidate_values)
        if self.name == "multimodal":
            row.update(output_modality="mesh", input_data=input_value)
        return {c: row[c] for c in columns}


def _real_modalities() -> list:
    """The eight plugins' Modality objects, as their own `register_modalities` hooks make them."""
    import maskscore_depth
    import maskscore_keypoints
    import maskscore_mesh
    import maskscore_multimodal
    import maskscore_pose
    import maskscore_speech
    import maskscore_text
    import maskscore_video

    found: list = []
    for plugin in (maskscore_mesh, maskscore_pose, maskscore_keypoints, maskscore_depth, maskscore_video,
                   maskscore_speech, maskscore_text, maskscore_multimodal):  # fmt: skip
        plugin.register_modalities(found.append)
    return found


DESCRIPTION = ("name", "table", "input_columns", "candidate_column", "template", "task_table", "ladder_levels",
               "sequence", "pairs_by", "shown_actions", "order")  # fmt: skip


@hookimpl
def register_modalities(register):
    for real in _real_modalities():
        attributes = {attribute: getattr(real, attribute) for attribute in DESCRIPTION}
        register(type(f"Toy{type(real).__name__}", (ToyModality,), attributes)())


@hookimpl
def register_sources(register):
    register(Source("toy"))


@hookimpl
def register_editors(register):
    register(Editor("toy-ladder"))


@hookimpl
def register_scorers(register):
    for name in SCORERS:
        register(Scorer(name))
    register(Scorer(OVERLAPPING, rows_in_flight=2))


@hookimpl
def extract(source, config, ctx):
    rng = np.random.default_rng(config["seed"])
    trials = []
    for s in range(config["subjects"]):
        subject = Subject(f"toy-{s:03d}", {"age": float(rng.uniform()), "weight": float(rng.uniform())})
        for t in range(2):
            frames = []
            for f in range(3):
                expression = np.zeros(52)
                expression[:ACTIONS] = rng.uniform(size=ACTIONS)
                frames.append(Frame(f, f / 25.0, BodyState(phenotype=subject.phenotype, expression=expression)))
            trials.append(Trial(f"{subject.subject_id}-t{t}", "toy", subject, "turn on the lights", 25.0, frames,
                                extras={"delay_s": str(config.get("delay_s", 0.0))}))
    return trials


def make_instances(trials, modality, rng, count, task_types=None):
    """Frame pairs of one subject, of the task types asked for (default: cycling through all)."""
    time.sleep(float(trials[0].extras.get("delay_s", 0.0)) * count)
    by_subject = {}
    for trial in trials:
        by_subject.setdefault(trial.subject.subject_id, []).append(trial)
    subjects = sorted(by_subject)
    offset = int(rng.integers(len(vocab.TASK_TYPES)))
    instances = []
    for n in range(count):
        subject, other = rng.choice(len(subjects), size=2, replace=False)
        trial = by_subject[subjects[subject]][int(rng.integers(2))]
        fa, fb = rng.choice(len(trial.frames), size=2, replace=False)
        task = task_types[n] if task_types is not None else vocab.TASK_TYPES[(offset + n) % len(vocab.TASK_TYPES)]
        part = vocab.GROUP_PARTS[vocab.task_group(task)][0]
        other_trial = by_subject[subjects[other]][0]
        make = lambda tr, fr, label: Target(label, tr.subject, (tr.frames[fr].state,), tr.transcript)  # noqa: E731
        instances.append(EditInstance(
            key=f"{trial.trial_id}-f{fa}f{fb}",
            instruction=EditInstruction(f"edit the {part} to match frame B", part, task, modality),
            a=make(trial, int(fa), "frame_a"), b=make(trial, int(fb), "frame_b"),
            other=make(other_trial, 0, "other_subject"), trial_a=trial.trial_id, trial_b=trial.trial_id,
        ))
    return instances


def state_vector(state: BodyState) -> np.ndarray:
    return np.concatenate([state.expression[:ACTIONS], [state.phenotype.get("age", 0.5), state.phenotype.get("weight", 0.5)]])


@hookimpl
def edit(editor, modality, instance, ctx):
    a, b = state_vector(instance.a.state), state_vector(instance.b.state)
    wrong_part = a.copy()
    wrong_part[ACTIONS - 1] += 0.5
    vectors = [b, 0.5 * (a + b), 0.8 * a + 0.2 * b, wrong_part, state_vector(instance.other.state)]
    labels = ["frame_b", "interpolation", "partial", "wrong_part", "wrong_subject"]
    made = ladder_rungs(modality)  # speech and text drop rung 4
    return [Candidate(label, Asset(modality, v), rung) for rung, (label, v) in reversed(list(enumerate(zip(labels, vectors), 1)))
            if rung in made]


def _distances(instance, candidates):
    a, b = state_vector(instance.a.state), state_vector(instance.b.state)
    return [(float(np.linalg.norm(c.asset.data - b)), float(np.linalg.norm(c.asset.data - a))) for c in candidates]


@hookimpl
def score(scorer, instance, candidates, ctx):
    if scorer == "toy-score":
        out = []
        for to_b, to_a in _distances(instance, candidates):
            follow, keep = 1.0 / (1.0 + to_b), 1.0 / (1.0 + to_a)
            out.append(CandidateScore(follow, keep, 0.5 * (follow + keep), {"to_b": to_b, "to_a": to_a}))
        return out
    if scorer == OVERLAPPING:
        with _overlap_lock:
            OVERLAP["now"] += 1
            OVERLAP["most"] = max(OVERLAP["most"], OVERLAP["now"])
        time.sleep(0.3)  # longer than the builder takes to edit and write the next row
        try:
            with plugins.serialized():  # where a real scorer makes its plugin calls
                return score("toy-score", instance, candidates, ctx)
        finally:
            with _overlap_lock:
                OVERLAP["now"] -= 1
    if scorer == "toy-noisy":
        rng = np.random.default_rng([ctx.seed, len(instance.key)])
        out = []
        for to_b, to_a in _distances(instance, candidates):
            follow = 1.0 / (1.0 + to_b) + float(rng.normal(0, ctx.config.get("temperature", 1.0) * 0.05))
            out.append(CandidateScore(follow, follow, follow))
        return out
    if scorer == "toy-broken":
        if instance.instruction.task_type == "part_add":
            raise RuntimeError("toy-broken cannot score part_add")
        return [CandidateScore(0.5, 0.5, 0.5) for _ in candidates]
    if scorer == "toy-constant":
        return [CandidateScore(0.5, 0.5, 0.5) for _ in candidates]
    raise AssertionError(f"the core asked the toy plugin for a scorer it did not register: {scorer!r}")
