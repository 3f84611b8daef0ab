"""Checks a modality plugin's tests share: it works alone, and without it the core answers
nothing for its modality; and one real round trip of a modality through the core (encode, write,
read, decode, score), which tests/test_plugins_installed_alone.py runs inside a fresh virtual
environment holding only the core and one plugin. Third-party modality plugins can call them too."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from . import plugins
from .cli import main

# A modality plugin registers its Modality and answers the two operation hooks on modalities.
MODALITY_HOOKS = frozenset({"decode_to_mesh", "mask_part", "register_modalities"})
# The old style (until every plugin has moved; maskscore_core.legacy).
OLD_MODALITY_HOOKS = frozenset(
    {"decode_reference", "decode_to_mesh", "encode", "mask_part", "plugin_info", "read_asset", "reward_row", "write_asset"}
)
OPTIONAL_OLD_MODALITY_HOOKS = frozenset({"ladder_levels"})


def check_modality_hooks(hooks) -> None:
    """Every modality hook, and nothing but modality hooks."""
    hooks = set(hooks)
    if "register_modalities" in hooks:
        assert hooks == MODALITY_HOOKS, sorted(hooks)
    else:
        assert OLD_MODALITY_HOOKS <= hooks <= OLD_MODALITY_HOOKS | OPTIONAL_OLD_MODALITY_HOOKS, sorted(hooks)


def _listed() -> dict[str, dict]:
    result = CliRunner().invoke(main, ["list-plugins", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    return {row["name"]: row for row in rows}


def check_modality_plugin_alone(modality: str, distribution: str, monkeypatch, target=None, ctx=None) -> None:
    """With only `distribution` loaded (MASKSCORE_LOAD_PLUGINS, set by the plugin's conftest), its
    modality is provided by it alone and `maskscore list-plugins` shows it with every modality hook;
    with nothing loaded, `list-plugins` no longer shows it and its hooks raise NoPluginError
    (`encode` too, when a `target` is given)."""
    records = {r.name: r for r in plugins.list_plugins() if r.error is None}
    assert records[modality].distribution == distribution
    assert plugins.providers("modality") == {modality: modality}
    row = _listed()[modality]
    assert row["distribution"] == distribution and row["error"] is None
    check_modality_hooks(row["hooks"])

    monkeypatch.setenv("MASKSCORE_LOAD_PLUGINS", "")  # the core alone: as if the plugin were uninstalled
    plugins.reset()
    assert modality not in plugins.providers("modality")
    assert modality not in _listed()
    with pytest.raises(plugins.NoPluginError, match=f"'mask_part' for '{modality}'"):
        plugins.call("mask_part", modality, modality=modality, part="mouth", ctx=ctx)
    if target is not None:
        with pytest.raises(plugins.NoPluginError, match=f"'encode' for '{modality}'"):
            plugins.call("encode", modality, modality=modality, target=target, ctx=ctx)


def round_trip_instance(modality: str):
    """A small mouth edit every modality can carry: two clips of one subject (with a voice, for
    speech) saying two phrases, the face moved by each phrase's own visemes (as the built-in
    source moves it), so that audio, text and face motion agree. Frame B differs from A only in
    the mouth, so frame B itself is the ideal edit."""
    from .records import BodyState, EditInstance, EditInstruction, Subject, Target
    from .speech.face_drive import text_activations

    subject = Subject("s1", {"age": 0.4}, voice="en-us")

    def clip(label: str, phrase: str) -> Target:
        states = tuple(BodyState(phenotype={"age": 0.4}, expression=row) for row in text_activations(phrase, 25.0))
        return Target(label, subject, states, phrase, fps=25.0)

    instruction = EditInstruction(f"edit the mouth of the {modality} to match frame B", "mouth", "expression_change", modality)
    return EditInstance(
        key=f"round-trip-{modality}", instruction=instruction, a=clip("a", "turn on the lights"), b=clip("b", "play some music")
    )


def modality_round_trip(modality: str, workdir, config: dict | None = None) -> dict:
    """One real pass of `modality` through the core, as a user would run it: encode frames B and
    A of `round_trip_instance`, write each asset to disk, decode it to the mesh, and score both
    with the built-in render-compare scorer (2 views of 32 px unless `config` says otherwise).
    Returns what a test checks, as plain JSON values."""
    from pathlib import Path

    import numpy as np

    from .context import Context
    from .records import Candidate

    workdir = Path(workdir)
    ctx = Context(workdir=workdir, seed=0, config={"views": 2, "resolution": 32, "frame_resolution": 32, **(config or {})})
    instance = round_trip_instance(modality)
    candidates, finite, written = [], [], []
    for target in (instance.b, instance.a):
        asset = plugins.call("encode", modality, modality=modality, target=target, ctx=ctx)
        value = plugins.call("write_asset", modality, asset=asset, directory=workdir / "assets", name=target.label, ctx=ctx)
        written.append(value is not None)
        decoded = plugins.call("decode_to_mesh", modality, asset=asset, instance=instance, ctx=ctx)
        arrays = [x for x in (decoded.vertices, decoded.depth, decoded.activations) if x is not None]
        finite.append(bool(arrays) and all(np.isfinite(np.asarray(x)).all() for x in arrays))
        candidates.append(Candidate(label=f"frame {target.label}", asset=asset))
    scores = plugins.call("score", "render-compare", scorer="render-compare", instance=instance, candidates=candidates, ctx=ctx)
    return {
        "labels": [c.label for c in candidates],
        "written": written,
        "decoded_finite": finite,
        "scores": [[s.instruction_following, s.consistency, s.overall] for s in scores],
    }


def no_provider_message(modality: str) -> str | None:
    """The NoPluginError the core raises when asked for `modality`'s part mask, or None when a
    plugin answers."""
    try:
        plugins.call("mask_part", modality, modality=modality, part="mouth", ctx=None)
    except plugins.NoPluginError as err:
        return str(err)
    return None


def only_distributions(monkeypatch, *distributions: str):
    """Body of an autouse fixture (`yield from`): only these plugin distributions load, plus the
    core's built-ins, with a fresh plugin manager before and after the test; so a plugin's own
    tests prove it works without the others."""
    monkeypatch.setenv("MASKSCORE_LOAD_PLUGINS", ",".join(distributions))
    monkeypatch.delenv("MASKSCORE_STRICT_PLUGINS", raising=False)
    plugins.reset()
    yield
    plugins.reset()


def small_context(workdir, **config):
    """A run context small enough for tests on shared cores: 4 views of 96 px, plus `config`."""
    from .context import Context

    return Context(workdir=workdir, seed=0, config={"views": 4, "resolution": 96, **config})



def misordered_pairs(modality: str, scores, dimensions=None) -> list[str]:
    """The graded pairs of one ladder's scores (`records.CandidateScore`s of rungs 1-5, in
    order) that are tied or in the wrong order, on `dimensions` (default: all three), by the
    modality's own ladder levels (`dataset.protocol.levels_for`): [] when the ladder is
    recovered exactly."""
    from . import vocab
    from .dataset.protocol import graded_pairs, levels_for

    levels = levels_for(modality)
    wrong = []
    for dimension in vocab.DIMENSIONS if dimensions is None else dimensions:
        values = [getattr(score, dimension) for score in scores]
        for better, worse in graded_pairs(dimension, list(range(1, len(values) + 1)), levels):
            if not values[better] > values[worse]:
                wrong.append(f"{dimension}: rung {better + 1} {values[better]:.4f} <= rung {worse + 1} {values[worse]:.4f}")
    return wrong
