"""The self-supervised loop end to end, tiny: `maskscore loop` runs stages 1-4 on the built-in
data (7 subjects, seed 1: two held out for the bench; 2 views of 32 px; an MLP 32 wide), and
every artefact it leaves is checked: checkpoints (safetensors + config), curves (PNG), the
native editor's bench scored by render-compare, the reward model graded by `maskscore eval`
beside latent-l2 and render-compare, the RL run's held-out before/after. Then what a loop run
cannot show by itself: a training killed with SIGKILL resumes to the bytes of an uninterrupted
one, equal seeds give equal bytes, bad checkpoints are one-line errors, the reward model reads no
rung, and the Flow-GRPO step's log-probability is the Gaussian's. Real components throughout."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from maskscore_core import checkpoints

from maskscore_core.plugin import manager as plugins
from maskscore_core.cli import main
from maskscore_core.cli.loop_command import run_loop
from maskscore_core.dataset import reader

DISTRIBUTIONS = ("maskscore-pose", "maskscore-native-editor", "maskscore-reward-model")
pytestmark = [pytest.mark.slow, pytest.mark.maskscore_plugins(*DISTRIBUTIONS)]
TINY = {"seed": 1, "subjects": 7, "editor_steps": 6, "width": 32, "reward_rows": 12, "bench_rows": 6, "native_rows": 3,
        "native_train_rows": 3,
        "reward_steps": 30, "rl_rows": 2, "rl_steps": 2, "eval_instances": 2, "views": 2, "resolution": 32,
        "rate_groups": None, "shard_size": 4, "workers": 1, "progress": False}
EDITOR_ARGS = ["--subjects", "3", "--seed", "1", "--width", "32", "--depth", "1", "--batch", "16", "--quiet"]


@pytest.fixture(scope="module")
def loop(tmp_path_factory):
    """One tiny loop run, shared by the tests of this module."""
    out = tmp_path_factory.mktemp("loop")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MASKSCORE_LOAD_PLUGINS", ",".join(DISTRIBUTIONS))
        plugins.reset()
        figures = run_loop(out, dict(TINY))
        plugins.reset()
    return out, figures


def invoke(*args):
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def test_loop_writes_every_stage_and_a_report(loop):
    out, figures = loop
    for stage in ("editor", "reward", "rl"):
        config = json.loads((out / stage / "config.json").read_text())
        assert config["kind"] in ("native-flow-editor", "reward-model")
        assert (out / stage / "model.safetensors").stat().st_size > 0
        assert (out / stage / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert not (out / stage / checkpoints.STATE).exists()  # finished runs leave no resumable state
    report = (out / "report.md").read_text()
    for needle in ("reward-model", "latent-l2", "render-compare", "pair agreement", "Candidates per second",
                   "Flow-GRPO", "curves-rl.png"):
        assert needle in report
    bench = figures["bench"]
    assert {name: bench[name]["instances"] for name in bench} == {"reward-model": 2, "latent-l2": 2, "render-compare": 2}
    assert not bench["reward-model"]["failures"]
    assert 0.0 <= bench["reward-model"]["mean_accuracy"] <= 1.0
    rates = figures["throughput"]["rates"]
    firsts: dict = {}
    for _, row in reader.iter_rows(out / "bench"):
        firsts.setdefault(row["key"], row)
    timed = list(firsts.values())[1:]  # the first group warms up, untimed
    candidates = sum(len(row["output_poses"]) for row in timed)
    assert rates["reward-model"]["candidates"] == rates["render-compare"]["candidates"] == candidates >= 4
    assert figures["throughput"]["groups"] == len(timed)
    assert all(r["cpu_seconds"] > 0 and r["per_cpu_second"] > 0 for r in rates.values())
    held = figures["rl"]["heldout"]
    assert held["instances"] == 2 and held["reward_scorer"] == "reward-model"
    assert set(held["render-compare"]) == {"before", "after", "gain", "improved_share"}


def test_stage_two_native_editor_bench_is_scored_by_render_compare(loop):
    out, figures = loop
    rows = list(reader.iter_rows(out / "native-bench"))
    assert len(rows) == 3 and {r["dimension"] for _, r in rows} == {"instruction_following", "consistency", "overall"}
    for _, row in rows:
        assert len(row["output_poses"]) == 4 and len(row["scores"]) == 4  # four samples, none from a ladder
        assert all(0.0 <= s <= 1.0 for s in row["scores"])
    assert figures["native_agreement"]["instances"] == 1
    assert json.loads((out / "native-bench" / "card.json").read_text())["config"]["editor"] == "native-flow"
    # the reward model also learnt from the native editor's samples on training subjects
    assert json.loads((out / "native-train" / "card.json").read_text())["config"]["split"] == "reward-train"
    assert len(json.loads((out / "reward" / "config.json").read_text())["data"]) == 2


def test_eval_cli_grades_the_reward_model(loop, tmp_path):
    out, figures = loop
    code, output = invoke("eval", "--bench", str(out / "bench"), "--scorer", "reward-model", "--weights", str(out / "reward"),
                          "--out", str(tmp_path / "results.jsonl"), "--quiet")
    assert code == 0, output
    (summary,) = tmp_path.glob("results-reward-model-*.json")
    result = json.loads(summary.read_text())
    assert result["failures"] == [] and result["mean_accuracy"] == figures["bench"]["reward-model"]["mean_accuracy"]


def test_reward_model_reads_no_rung_or_label(loop, tmp_path):
    """The same poses under other labels, in another order, without rungs: the same scores."""
    out, _ = loop
    from maskscore_core.plugin.context import Context
    from maskscore_core.plugin.records import Asset, Candidate

    ctx = Context(workdir=tmp_path, config={"weights": str(out / "reward")})
    _, row = next(reader.iter_rows(out / "bench"))
    instance = reader.load_instance(out / "bench", row["key"])
    ladder = reader.load_candidates(out / "bench", "pose", row, ctx)
    plain = [Candidate(f"x{i}", Asset("pose", c.asset.data)) for i, c in reversed(list(enumerate(ladder)))]
    first = plugins.call("score", "reward-model", scorer="reward-model", instance=instance, candidates=ladder, ctx=ctx)
    second = plugins.call("score", "reward-model", scorer="reward-model", instance=instance, candidates=plain, ctx=ctx)
    assert [s.overall for s in first] == pytest.approx([s.overall for s in reversed(second)], abs=1e-6)
    bad = [Candidate("short", Asset("pose", np.zeros(10)))]
    with pytest.raises(ValueError, match="237 floats"):
        plugins.call("score", "reward-model", scorer="reward-model", instance=instance, candidates=bad, ctx=ctx)


def test_reward_model_references_follow_the_instance(loop, tmp_path):
    """The scorer keeps an instance's encoded frames; another frame B under the same key is
    encoded anew, never served from what was kept."""
    import attrs

    from maskscore_core.plugin.context import Context
    from maskscore_reward_model import features, scorer

    out, _ = loop
    ctx = Context(workdir=tmp_path, config={"weights": str(out / "reward")})
    _, row = next(reader.iter_rows(out / "bench"))
    instance = reader.load_instance(out / "bench", row["key"])
    kept = scorer.references(instance, ctx)
    assert scorer.references(instance, ctx) is kept
    assert scorer.references(instance, Context(workdir=tmp_path)) is not kept  # kept per run, not per process
    fresh = features.references(instance, ctx)
    assert np.array_equal(kept.a, fresh.a) and np.array_equal(kept.b, fresh.b)
    other_b = attrs.evolve(instance.b, states=(attrs.evolve(instance.b.state, pose=instance.b.state.pose + 0.1),))
    moved = attrs.evolve(instance, b=other_b)
    assert scorer.instance_digest(moved) != scorer.instance_digest(instance)
    again = scorer.references(moved, ctx)
    assert again is not kept and np.array_equal(again.b, features.references(moved, ctx).b)


def test_rl_checkpoint_drives_the_editor(loop, tmp_path, monkeypatch):
    out, _ = loop
    from maskscore_native_editor import editor, params

    instance = reader.load_instance(out / "bench", next(reader.iter_rows(out / "bench"))[1]["key"])
    model = editor.load_policy(out / "rl")
    states = editor.sample_states(model, instance, 3, 0.7, seed=0)
    again = editor.sample_states(model, instance, 3, 0.7, seed=0)
    mask = params.part_mask(instance.instruction.part)
    a = params.to_vector(instance.a.state)
    for state, same in zip(states, again):
        vector = params.to_vector(state)
        assert np.array_equal(vector, params.to_vector(same))  # seeded
        assert np.array_equal(vector[mask == 0], a[mask == 0])  # only the part is regenerated
    assert not np.array_equal(params.to_vector(states[0]), params.to_vector(states[1]))
    monkeypatch.delenv(editor.ENV_CHECKPOINT, raising=False)
    from maskscore_core.plugin.context import Context

    with pytest.raises(editor.EditorConfigError, match="MASKSCORE_NATIVE_EDITOR"):
        plugins.call("edit", "native-flow", editor="native-flow", modality="pose", instance=instance,
                     ctx=Context(workdir=tmp_path))


def test_bad_checkpoints_are_one_line_errors(loop, tmp_path):
    out, _ = loop
    from maskscore_native_editor.model import load

    with pytest.raises(checkpoints.CheckpointError, match="does not exist"):
        load(tmp_path / "nothing")
    with pytest.raises(checkpoints.CheckpointError, match="holds a 'reward-model' model, expected 'native-flow-editor'"):
        load(out / "reward")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text((out / "editor" / "config.json").read_text())
    (broken / "model.safetensors").write_bytes((out / "editor" / "model.safetensors").read_bytes()[:100])
    with pytest.raises(checkpoints.CheckpointError, match="is corrupt"):
        load(broken)
    (broken / "config.json").write_text("{not json")
    with pytest.raises(checkpoints.CheckpointError, match="config .* is corrupt"):
        load(broken)
    code, output = invoke("train", "rl", "--editor", str(out / "reward"), "--data", str(out / "rl-train"), "--reward",
                          "reward-model", "--out", str(tmp_path / "rl"), "--quiet")
    assert code == 1 and output.count("\n") == 1 and "expected 'native-flow-editor'" in output, output


def _editor_cli(out: Path, steps: int) -> list[str]:
    return [sys.executable, "-m", "maskscore_core", "train", "editor", "--out", str(out), "--steps", str(steps),
            "--save-every", "50", *EDITOR_ARGS]


def test_editor_training_resumes_after_kill_9_to_the_same_bytes(tmp_path):
    env = {**os.environ, "MASKSCORE_LOAD_PLUGINS": ",".join(DISTRIBUTIONS)}
    killed = tmp_path / "killed"
    process = subprocess.Popen(_editor_cli(killed, 400), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while not (killed / checkpoints.STATE).exists() and process.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    saved = checkpoints.resume_state(killed, *_fresh_editor())
    assert saved is not None and 0 < saved[0] < 400  # killed mid-run, after a save
    finished = subprocess.run(_editor_cli(killed, 400), env=env, capture_output=True, text=True)
    assert finished.returncode == 0, finished.stderr[-2000:]
    assert json.loads(finished.stdout)["resumed_from"] == saved[0]
    whole = tmp_path / "whole"
    code, output = invoke("train", "editor", "--out", str(whole), "--steps", "400", "--save-every", "50", *EDITOR_ARGS)
    assert code == 0, output
    assert (killed / "model.safetensors").read_bytes() == (whole / "model.safetensors").read_bytes()
    assert json.loads((killed / "curves.json").read_text()) == json.loads((whole / "curves.json").read_text())
    code, output = invoke("train", "editor", "--out", str(whole), "--steps", "401", "--save-every", "50", *EDITOR_ARGS)
    assert code == 1 and "another configuration" in output and output.count("\n") == 1


def _fresh_editor():
    from maskscore_native_editor.model import Denoiser

    model = Denoiser(32, 1)
    return model, torch.optim.Adam(model.parameters())


def test_reward_training_is_deterministic_by_seed(loop, tmp_path):
    out, _ = loop
    digests = []
    for name, seed in (("a", 3), ("b", 3), ("c", 4)):
        code, output = invoke("train", "reward", "--data", str(out / "reward-train"), "--out", str(tmp_path / name),
                              "--seed", str(seed), "--steps", "20", "--quiet")
        assert code == 0, output
        digests.append((tmp_path / name / "model.safetensors").read_bytes())
    assert digests[0] == digests[1] != digests[2]


def test_sde_step_log_prob_is_the_gaussian_density():
    from maskscore_native_editor import flow

    torch.manual_seed(0)
    x, v, sample = torch.randn(4, 6), torch.randn(4, 6), torch.randn(4, 6)
    mask = torch.ones(4, 6)
    times = flow.grid(20)
    std = flow.sde_std(times, 3, 0.7)
    t, dt = float(times[3]), float(times[4] - times[3])
    assert std == pytest.approx(0.7 * math.sqrt(t / (1 - t)))
    mean = flow.step_mean(x, v, t, dt, std)
    expected = torch.distributions.Normal(mean, std * math.sqrt(-dt)).log_prob(sample).mean(dim=1)
    assert torch.allclose(flow.log_prob(sample, mean, std, dt, mask), expected, atol=1e-5)
    assert torch.equal(flow.step_mean(x, v, t, dt, 0.0), x + v * dt)  # eta 0 is the ODE's Euler step
