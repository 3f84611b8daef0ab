"""The run configuration is typed: the core's settings are checked fields, a plugin's ride along."""

from __future__ import annotations

import pickle

import attrs
import pytest

from maskscore_core import limits
from maskscore_core.plugin.context import Context, RunConfig
from maskscore_core.dataset.reward_tables import dataset_root, view_config


def test_a_dict_becomes_typed_fields_and_extras(tmp_path):
    ctx = Context(workdir=tmp_path, config={"views": 4, "resolution": 96, "video_frames": 5})
    assert isinstance(ctx.config, RunConfig)
    assert (ctx.config.views, ctx.config.resolution, ctx.config.extras) == (4, 96, {"video_frames": 5})
    assert ctx.config.get("video_frames", 9) == 5 and ctx.config.get("speech_frames", 9) == 9
    assert view_config(ctx).count == 4 and view_config(None).resolution == 256
    assert dataset_root(ctx) == tmp_path  # unset: the work directory
    assert "dataset_root" not in ctx.config
    again = attrs.evolve(ctx, config={**ctx.config, "dataset_root": tmp_path / "bench"})
    assert again.config.dataset_root == str(tmp_path / "bench") and again.config.extras == {"video_frames": 5}
    assert pickle.loads(pickle.dumps(again)).config == again.config  # workers receive it whole


@pytest.mark.parametrize(
    "config, message",
    [
        ({"views": 0}, "views must be between 1 and 64"),
        ({"views": "8"}, "'views' must be an integer"),
        ({"resolution": 100_000}, "resolution must be between"),
        ({"temperature": float("nan")}, "'temperature' must be a number"),
        ({"weights": ""}, "'weights' must be a non-empty string"),
    ],
)
def test_bad_settings_are_refused_when_made(config, message):
    with pytest.raises(limits.LimitError, match=message):
        Context(config=config)


def test_settings_are_checked_when_changed_too():
    config = RunConfig()
    config["resolution"] = 64
    assert config.resolution == 64
    with pytest.raises(limits.LimitError, match="resolution must be between"):
        config["resolution"] = 4
    config["multimodal_pair"] = "pose->video"
    del config["multimodal_pair"]
    assert dict(config) == {"views": 8, "resolution": 64, "weights": "default", "temperature": 0.0}
