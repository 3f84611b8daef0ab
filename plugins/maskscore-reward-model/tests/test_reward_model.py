"""The reward model's inputs and refusals on their own: a candidate that is not a finite 237-float
pose is an error naming what is wrong, no checkpoint is an error (never a score), and the plugin
registers its scorer and trainer."""

from __future__ import annotations

import numpy as np
import pytest

from maskscore_core.plugin import manager as plugins
from maskscore_core.plugin.context import Context
from maskscore_reward_model import features, scorer


def test_pose_values_are_checked():
    assert features.pose_of([0.0] * 237, "c").shape == (237,)
    with pytest.raises(features.FeatureError, match="237 floats"):
        features.pose_of([0.0] * 5, "c")
    with pytest.raises(features.FeatureError, match="NaN"):
        features.pose_of([float("nan")] * 237, "c")


def test_features_depend_only_on_the_poses():
    rng = np.random.default_rng(0)
    refs = features.References(rng.normal(size=237), rng.normal(size=237), np.eye(len(features.PARTS))[0])
    poses = rng.normal(size=(4, 237))
    x = features.features(refs, poses)
    assert x.shape == (4, features.SIZE)
    assert np.array_equal(features.features(refs, poses[::-1]), x[::-1])


def test_no_checkpoint_is_an_error(tmp_path, monkeypatch):
    monkeypatch.delenv(scorer.ENV, raising=False)
    with pytest.raises(scorer.RewardModelError, match="needs a checkpoint"):
        scorer.checkpoint_dir(Context(workdir=tmp_path))
    assert scorer.checkpoint_dir(Context(workdir=tmp_path, config={"weights": str(tmp_path)})) == tmp_path


def test_registers_scorer_and_trainer():
    assert "reward-model" in plugins.names("scorer") and "reward-model" in plugins.names("trainer")


def test_numpy_forward_equals_the_torch_model():
    """The scorer runs the checkpoint's MLP in numpy; it must give the torch model's scores."""
    import torch

    from maskscore_reward_model.model import RewardNet

    torch.manual_seed(0)
    model = RewardNet(width=32, depth=2).eval()
    for layer in model.net:
        if hasattr(layer, "weight"):
            torch.nn.init.normal_(layer.weight, std=0.05)
    x = np.random.default_rng(1).normal(size=(7, features.SIZE)).astype(np.float32)
    with torch.no_grad():
        expected = model(torch.as_tensor(x)).double().numpy()
    got = scorer.NumpyNet(model)(x)
    assert got.shape == (7, 3) and got.dtype == np.float64
    np.testing.assert_allclose(got, expected, atol=2e-6)
    assert len(np.unique(got[:, 0])) == 7  # not a constant


def test_scores_near_one_stay_ordered():
    """Logits are bounded, so candidates the model orders never tie at exactly 1.0."""
    import torch

    from maskscore_reward_model.model import RewardNet

    model = RewardNet(width=8, depth=1).eval()
    with torch.no_grad():
        model.net[0].weight.zero_(), model.net[0].bias.zero_()
        model.net[0].weight[0, 0] = 1.0  # hidden unit 0 is SiLU(x[0])
        model.net[-1].weight.zero_()
        model.net[-1].weight[:, 0] = 1.0
        model.net[-1].bias.fill_(60.0)  # far beyond where a float64 sigmoid reaches 1.0
    x = np.zeros((2, features.SIZE), dtype=np.float32)
    x[1, 0] = 5.0  # a larger first hidden unit: a larger logit
    scores = scorer.NumpyNet(model)(x)
    assert np.all(scores < 1.0) and np.all(scores[1] > scores[0])
