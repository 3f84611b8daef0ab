"""Helpers for modality plugins' tests: small instances and contexts, the works-alone check, one
real round trip through the core (encode, write, read, decode, score) and the ladder-order check.
`maskscore_core.plugin.contract.ModalityContract` runs them for every plugin, and
tests/test_plugins_installed_alone.py runs the round trip inside a fresh virtual environment
holding only the core and one plugin."""

from __future__ import annotations

import json
import string
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from maskscore_core.plugin import manager as plugins
from maskscore_core.cli import main
from maskscore_core import vocab
from maskscore_core.dataset.protocol import graded_pairs, levels_for, rungs_of
from maskscore_core.plugin.context import Context
from maskscore_core.plugin.records import BodyState, Candidate, EditInstance, EditInstruction, Subject, Target

# A modality plugin registers its Modality object and answers the two operation hooks for it.
MODALITY_HOOKS = frozenset({"register_modalities", "decode_to_mesh", "mask_part"})


def check_modality_hooks(hooks) -> None:
    """Every modality hook, and nothing but modality hooks."""
    assert set(hooks) == MODALITY_HOOKS, sorted(hooks)


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
    from maskscore_core.speech.face_drive import text_activations

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


def speaking_instance(modality: str, text: str, key: str):
    """A speech_edit of the mouth: frame A says "turn on the lights" over 30 frames, frame B "play
    some music" over 40, the jaw moving with each."""
    a = [face_state(jawOpen=j) for j in 0.2 * np.sin(np.linspace(0, 3, 30)) ** 2]
    b = [face_state(jawOpen=j) for j in 0.7 * np.sin(np.linspace(0, 4, 40)) ** 2]
    return unit_instance(modality, text, "speech_edit", a, b, key=key, transcripts=("turn on the lights", "play some music"))


def check_round_trip(result: dict) -> None:
    """What `modality_round_trip` must give: frame B (the ideal edit there) beats frame A on
    instruction_following, frame A keeps consistency at least as well; every score is in
    [0, 1], every asset written and every decoded array finite."""
    assert result["labels"] == ["frame b", "frame a"]
    assert result["written"] == [True, True] and result["decoded_finite"] == [True, True]
    (b_if, b_cons, b_overall), (a_if, a_cons, a_overall) = result["scores"]
    assert all(0.0 <= v <= 1.0 for v in (b_if, b_cons, b_overall, a_if, a_cons, a_overall))
    assert b_if > a_if and a_cons >= b_cons


def no_provider_message(modality: str) -> str | None:
    """The NoPluginError the core raises when asked for `modality`'s part mask, or None when a
    plugin answers."""
    try:
        plugins.call("mask_part", modality, modality=modality, part="mouth", ctx=None)
    except plugins.NoPluginError as err:
        return str(err)
    return None


def small_context(workdir, **config):
    """A run context small enough for tests on shared cores: 4 views of 96 px and 48 px video
    frames, plus `config`."""
    return Context(workdir=workdir, seed=0, config={"views": 4, "resolution": 96, "frame_resolution": 48, **config})


def face_state(**actions: float):
    """A `BodyState` of a subject aged 0.4 with the named facial actions set (jawOpen=0.8, ...)."""
    from maskscore_core.body.anny_model import get_body_model

    expression = np.zeros(52)
    for name, value in actions.items():
        expression[get_body_model().action_index(name)] = value
    return BodyState(phenotype={"age": 0.4}, expression=expression)


def unit_instance(modality: str, text: str, task_type: str, a, b, *, key: str = "unit-0001", voice: str = "en-us",
                  transcripts: tuple[str, str] = ("", ""), fps: float = 25.0):
    """An EditInstance of subject s1 (age 0.4) editing the mouth: frames A and B are a body state
    each, or a sequence of them (clips), with their transcripts."""
    subject = Subject("s1", {"age": 0.4}, voice=voice)

    def target(label, states, transcript):
        states = (states,) if isinstance(states, BodyState) else tuple(states)
        return Target(label, subject, states, transcript, fps=fps)

    return EditInstance(
        key=key, instruction=EditInstruction(text, "mouth", task_type, modality),
        a=target("a", a, transcripts[0]), b=target("b", b, transcripts[1]),
    )  # fmt: skip


def misordered_pairs(modality: str, scores, dimensions=None) -> list[str]:
    """The graded pairs of one ladder's scores (`records.CandidateScore`s of the rungs the
    modality makes, in order: `dataset.protocol.rungs_of`) that are tied or in the wrong order,
    on `dimensions` (default: all three), by the modality's own ladder levels
    (`dataset.protocol.levels_for`, where rung 1 is alone at the top on instruction_following
    and overall): [] when the ladder is recovered exactly."""
    levels = levels_for(modality)
    rungs = rungs_of(levels)
    if len(scores) != len(rungs):
        return [f"{len(scores)} scores for the {modality} ladder's rungs {rungs}"]
    wrong = []
    for dimension in vocab.DIMENSIONS if dimensions is None else dimensions:
        values = [getattr(score, dimension) for score in scores]
        for better, worse in graded_pairs(dimension, rungs, levels):
            if not values[better] > values[worse]:
                wrong.append(f"{dimension}: rung {rungs[better]} {values[better]:.4f} <= rung {rungs[worse]} {values[worse]:.4f}")
    return wrong


def tiny_chat_tokenizer(special: list[str], **tokenizer_options):
    """(tokenizer, vocab) for a tiny chat model in a test: the `special` tokens first, then every
    printable character and the chat roles as words, so any prompt tokenizes without a hub."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(special)}
    for c in string.printable:
        if c not in "\r\x0b\x0c":
            vocab.setdefault(c, len(vocab))
    for word in ("system", "user", "assistant"):
        vocab[word] = len(vocab)
    words = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    words.pre_tokenizer = pre_tokenizers.Split(Regex("system|user|assistant|."), behavior="isolated")
    words.decoder = decoders.Fuse()
    words.add_special_tokens(special)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=words, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                        unk_token="<unk>", **tokenizer_options)
    return tokenizer, vocab
