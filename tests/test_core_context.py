"""The run configuration is typed: the core's settings are checked fields, a plugin's ride along."""

from __future__ import annotations

import pickle
import sys

import attrs
import pytest

from maskscore_core import limits
from maskscore_core.plugin.context import Context, RunConfig, setting
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


TOY_OPTIONS = """
import attrs

from maskscore_core.plugin.context import setting


@attrs.frozen
class ToyOptions:
    toy_frames: int = setting(5, lambda v: isinstance(v, int) and v >= 1, "a whole number of at least 1", int)
    toy_mode: str = setting("fast", lambda v: v in ("fast", "exact"), "'fast' or 'exact'")
"""
TOY_PLUGIN = TOY_OPTIONS + """

from maskscore_core import Scorer, hookimpl


@hookimpl
def register_scorers(register):
    register(Scorer("toy-options", options=ToyOptions))
"""
_space: dict = {}
exec(TOY_OPTIONS, _space)
_ToyOptions = _space["ToyOptions"]


def test_a_plugin_reads_its_settings_typed_with_defaults():
    config = RunConfig.of({"views": 4, "toy_frames": "3"})
    assert config.options(_ToyOptions) == _ToyOptions(toy_frames=3, toy_mode="fast")
    assert RunConfig().options(_ToyOptions).toy_frames == 5
    for value, message in ((0, "'toy_frames' must be a whole number of at least 1, got 0"),
                           ("many", "'toy_frames' must be a whole number of at least 1, got 'many'")):  # fmt: skip
        with pytest.raises(limits.LimitError, match=message):
            RunConfig.of({"toy_frames": value}).options(_ToyOptions)


@pytest.fixture
def toy_options_plugin(tmp_path, monkeypatch):
    from maskscore_core.dataset.shard import register_plugin_modules
    from maskscore_core.plugin import manager as plugins

    (tmp_path / "toy_options_plugin.py").write_text(TOY_PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    plugins.reset()
    register_plugin_modules(["toy_options_plugin"])
    yield plugins
    plugins.reset()
    sys.modules.pop("toy_options_plugin", None)


def test_settings_are_checked_against_what_installed_plugins_declare(toy_options_plugin):
    plugins = toy_options_plugin
    declared = plugins.lookup("scorer", "toy-options").obj.options
    assert plugins.option_classes()[declared].startswith("scorer 'toy-options'")
    config = plugins.check_run_config({"views": 4, "toy_mode": "exact", "editor_options": {"steps": "2"}})
    assert config.options(declared).toy_mode == "exact"
    with pytest.raises(limits.LimitError, match="run config 'toy_mdoe' is not a setting of the core or of an installed plugin;"
                                                " settings: .*toy_frames, toy_mode"):  # fmt: skip
        plugins.check_run_config({"toy_mdoe": "exact"})
    with pytest.raises(limits.LimitError, match="'toy_mode' must be 'fast' or 'exact', got 'slow'"):
        plugins.check_run_config({"toy_mode": "slow"})
    with pytest.raises(limits.LimitError, match="'editor_options' must be a mapping"):
        plugins.check_run_config({"editor_options": "steps=2"})


def test_options_must_be_an_attrs_class():
    from maskscore_core import Scorer
    from maskscore_core.plugin.registration import RegistrationError

    with pytest.raises(RegistrationError, match="scorer 'x': options must be an attrs class"):
        Scorer("x", options=dict).check()
