"""The hooks a MaskScore plugin can implement. Every hook is dispatched by name.

Each operation hook is `firstresult`: pluggy calls the implementations (newest registered
first) until one returns something other than None. A plugin answers only for the modality,
editor, scorer or source it provides, and returns None otherwise. When no plugin answers,
`maskscore_core.plugins.call` raises `NoPluginError` naming the hook and what was asked for,
never a silent default.

Plugins import `hookimpl` from `maskscore_core`, never from pluggy.
"""

from __future__ import annotations

import pluggy

PROJECT = "maskscore"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def plugin_info():
    """Describe this plugin for `maskscore list-plugins`.

    Returns: `records.PluginInfo(kind, provides)`, kind one of modality / editor / scorer /
    source, provides the names it answers for. Every plugin implements it; all answers are kept.
    """


@hookspec(firstresult=True)
def extract(source, config, ctx):
    """Turn a source's raw data into trials.

    source: the source name (`anny`, `speakingfaces`, ...); config: `dict` of source options
    (seed, count, path); ctx: the run's `Context`. Returns: an iterable of `records.Trial`.
    Answered by the source plugin whose name is `source`.
    """


@hookspec(firstresult=True)
def encode(modality, target, ctx):
    """Represent a `records.Target` (subject, body state(s), transcript) in `modality`.

    The inverse of decode_to_mesh; the frame-pair editor uses it to build ladder candidates.
    Returns: `records.Asset` of that modality. Answered by the modality plugin named `modality`.
    """


@hookspec(firstresult=True)
def edit(editor, modality, instance, ctx):
    """Execute the edit `instance.instruction` on frame A, producing candidates.

    editor: editor name (`frame-pair` is built in); modality: the representation to edit in;
    instance: `records.EditInstance`. Returns: a list of `records.Candidate`.
    Answered by the editor plugin named `editor`.
    """


@hookspec(firstresult=True)
def decode_to_mesh(asset, instance, ctx):
    """Decode a candidate to the common reference: the ANNY mesh, or the render-space quantity
    that the modality compares (depth maps), plus face activations where the modality has them.

    asset: `records.Asset`; instance: the `records.EditInstance` it belongs to (for the subject
    and frame A, which partial assets such as keypoints are applied to). Returns:
    `records.Decoded`. Answered by the modality plugin named `asset.modality`.
    """


@hookspec(firstresult=True)
def decode_reference(modality, instance, which, ctx):
    """The reference a candidate of `modality` is compared with: frame A (`which="a"`) or
    frame B (`which="b"`) of `instance`, decoded like a candidate would be. For speech and text
    this is the video-derived face activations (the truth), not the audio-derived ones.

    Returns: `records.Decoded`. Answered by the modality plugin named `modality`.
    """


@hookspec(firstresult=True)
def write_asset(asset, directory, name, ctx):
    """Write `asset` under `directory` (file stem `name`) for a dataset.

    Returns: a path relative to the dataset root (the file it wrote), or for keypoints and pose
    the list of floats the table column holds. `reward_row` turns these values into the row (the
    text plugin writes `.txt` files and puts their transcripts in the table). Answered by the
    modality plugin named `asset.modality`.
    """


@hookspec(firstresult=True)
def read_asset(modality, value, root, ctx):
    """Read back what `write_asset` wrote: `value` from a reward-table column, `root` the
    dataset directory. Returns: `records.Asset`. Raises a clear error on missing or corrupt
    files. Answered by the modality plugin named `modality`.
    """


@hookspec(firstresult=True)
def reward_row(modality, instance, input_value, candidate_values, scores, dimension, root, ctx):
    """One row of the modality's reward table (seed 000's columns exactly) as a dict.

    input_value / candidate_values: what write_asset returned for frame A and each candidate;
    scores: floats aligned with candidates (empty for RL data); dimension: one of the three.
    Answered by the modality plugin named `modality`.
    """


@hookspec(firstresult=True)
def mask_part(modality, part, ctx):
    """The mask of a See-Through part in a modality's own representation.

    Returns: a modality-specific mask (vertex ids for mesh, bone and action names for pose,
    keypoint ids for keypoints, ...). Answered by the modality plugin named `modality`; raises
    `parts.PartError` for unknown parts or parts not active for the data.
    """


@hookspec(firstresult=True)
def ladder_levels(modality):
    """How a modality's ladder rungs are expected to rank, when its representation cannot carry
    what tells some rungs apart (a transcript has no voice, so "another subject's words" are
    just other words).

    Returns: {dimension: {rung: level}} for all three dimensions and rungs 1-5, level 0 best
    (`dataset.protocol.EXPECTED_LEVEL` is the design's table), or None to keep the design's.
    Answered only by the modality plugin named `modality`; optional (no answer is no override).
    """


@hookspec(firstresult=True)
def score(scorer, instance, candidates, ctx):
    """Score candidates of one edit on the three dimensions.

    scorer: scorer name (`render-compare` is the built-in metric); candidates: list of
    `records.Candidate`. Returns: a list of `records.CandidateScore`, one per candidate, in
    order. Answered by the scorer plugin named `scorer`. A scorer that cannot score raises; it
    never returns a made-up score.
    """


@hookspec(firstresult=True)
def train(trainer, options, ctx):
    """Train a model (an editor, a reward model, a policy by RL) and write its checkpoint.

    trainer: the trainer's name (`maskscore train editor|reward|rl --trainer NAME`; the
    defaults are `native-flow`, `reward-model` and `flow-grpo`); options: `dict` of the command's
    options (out, data, steps, seed, ...); ctx: the run's `Context`. Returns: a `dict` summary
    (where the checkpoint is, the figures measured), JSON-serialisable. Answered by the plugin
    that provides the trainer `trainer`; a run that cannot train raises with a one-line reason.
    """
