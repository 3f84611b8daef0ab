"""The hooks a MaskScore plugin can implement (docs/plugins.md has a section for each).

Registration hooks hand the core named objects (`maskscore_core.plugin.registration`): a plugin calls
`register(obj)` once per modality, editor, scorer, source or trainer it provides. Operation
hooks are then called by the core only on the plugin that registered the name asked for
(`maskscore_core.plugin.manager.call`), so an implementation needs no "is this mine?" test and can
never answer for another plugin's name. An operation that cannot be done raises; it never
returns a made-up value.

Plugins import `hookimpl` from `maskscore_core`, never from pluggy.
"""

from __future__ import annotations

import pluggy

PROJECT = "maskscore"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


# -- registration -------------------------------------------------------------------------------


@hookspec
def register_modalities(register):
    """Call `register(modality)` for each `registration.Modality` this plugin provides: its name,
    table columns, instruction template, task table, ladder levels and its encode, decode_reference,
    write, read and row methods. The plugin also implements `decode_to_mesh` and `mask_part`."""


@hookspec
def register_editors(register):
    """Call `register(registration.Editor(name, description))` for each editor; implement `edit`."""


@hookspec
def register_scorers(register):
    """Call `register(registration.Scorer(name, description))` for each scorer; implement `score`."""


@hookspec
def register_sources(register):
    """Call `register(registration.Source(name, description))` for each source; implement `extract`."""


@hookspec
def register_trainers(register):
    """Call `register(registration.Trainer(name, description))` for each trainer; implement `train`."""


# -- operations (the card's hooks), each called on the plugin that registered the name ----------


@hookspec(firstresult=True)
def extract(source, config, ctx):
    """Turn a source's raw data into trials.

    source: the source name (`anny`, `speakingfaces`, ...); config: `dict` of source options
    (seed, count, path); ctx: the run's `Context`. Returns: an iterable of `records.Trial`.
    """


@hookspec(firstresult=True)
def edit(editor, modality, instance, ctx):
    """Execute the edit `instance.instruction` on frame A, producing candidates.

    editor: editor name (`frame-pair` is built in); modality: the representation to edit in
    (`plugins.modality(modality).encode` makes its assets); instance: `records.EditInstance`.
    Returns: a list of `records.Candidate`.
    """


@hookspec(firstresult=True)
def decode_to_mesh(asset, instance, ctx):
    """Decode a candidate to the common reference: the ANNY mesh, or the render-space quantity
    that the modality compares (depth maps), plus face activations where the modality has them.

    asset: `records.Asset` (dispatched on `asset.modality`); instance: the `records.EditInstance`
    it belongs to (for the subject and frame A, which partial assets such as keypoints are
    applied to), or None for a mesh of its own topology (`foreign_mesh.ForeignMesh` data) that
    `maskscore score` reads from a file, where no one knows frame A's state: decode it without
    one. Returns: `records.Decoded`.
    """


@hookspec(firstresult=True)
def mask_part(modality, part, ctx):
    """The mask of a See-Through part for `modality`.

    Returns: `records.PartMask`: `region`, the reference-mesh vertex ids whose pixels the
    render-and-compare metric compares for the part (the part plus what its own facial actions
    deform, `parts.region_vertex_ids`), and `native`, the mask in the modality's own terms
    (bones, keypoint ids, facial actions, ...). Raises `parts.PartError` for unknown parts or
    parts not active for the data.
    """


@hookspec(firstresult=True)
def score(scorer, instance, candidates, ctx):
    """Score candidates of one edit on the three dimensions.

    scorer: scorer name (`render-compare` is the built-in metric); candidates: list of
    `records.Candidate`. Returns: a list of `records.CandidateScore`, one per candidate, in
    order. A scorer that cannot score raises; it never returns a made-up score.
    """


@hookspec(firstresult=True)
def train(trainer, options, ctx):
    """Train a model (an editor, a reward model, a policy by RL) and write its checkpoint.

    trainer: the trainer's name (`maskscore train editor|reward|rl --trainer NAME`; the
    defaults are `native-flow`, `reward-model` and `flow-grpo`); options: `dict` of the command's
    options (out, data, steps, seed, ...); ctx: the run's `Context`. Returns: a `dict` summary
    (where the checkpoint is, the figures measured), JSON-serialisable. A run that cannot train
    raises with a one-line reason.
    """
