"""How speech and text reach the mesh: face activations drive a speaker's body.

Candidates and references alike put their mouth and jaw activations on a clip of body states
(resampled onto one timeline of absolute time): frame A's clip unless the speech plugin
identified another speaker from the voice (`speakers.identify`), in which case that speaker's
enrolled clip, or a neutral body for a voice nobody enrolled has. Since references and frame A's
own speech use frame A's clip, render-and-compare sees the mouth, not the head motion that
differs between two clips (and the reference mesh keeps the skull still while the mouth moves,
`reference_mesh`). Shared by the speech and text modality plugins.
"""

from __future__ import annotations

import functools

import attrs
import numpy as np

from maskscore_core.plugin.context import setting
from maskscore_core.plugin.records import Decoded, EditInstance
from maskscore_core.body import parts


@functools.cache
def spoken_columns() -> np.ndarray:
    """The facial actions speech moves (mouth and jaw): every action some viseme sets."""
    from maskscore_core.speech.visemes import viseme_vectors

    return np.flatnonzero(np.any(np.stack(list(viseme_vectors().values())) != 0, axis=0))


def spoken_only(activations: np.ndarray) -> np.ndarray:
    """The activations of the actions speech moves, the others zero: speech cannot move brows,
    eyes or lids, so both sides are compared on what it can move."""
    out = np.zeros_like(np.asarray(activations, dtype=np.float64))
    out[:, spoken_columns()] = np.asarray(activations)[:, spoken_columns()]
    return out


DEFAULT_SAMPLED_FRAMES = 12


@attrs.frozen
class SpokenOptions:
    """The run config key the spoken modalities read (`ctx.config.options`)."""

    # How many frames render-and-compare samples from a clip.
    speech_frames: int = setting(DEFAULT_SAMPLED_FRAMES, lambda v: isinstance(v, int) and v >= 1, "a whole number of at least 1", int)


# What every modality that carries only what is said declares (speech, text): audio or words move
# only the mouth, an edit pairs two clips whose words differ, and the setting above.
SPOKEN = {"task_table": {"mouth": "speech_edit"}, "sequence": True, "pairs_by": "words", "options": SpokenOptions}


def sampled_frame_count(ctx) -> int:
    """How many frames render-and-compare samples from a clip (`SpokenOptions.speech_frames`)."""
    return ctx.config.options(SpokenOptions).speech_frames if ctx is not None else DEFAULT_SAMPLED_FRAMES


def spoken_part_actions(part: str, modality: str) -> tuple[str, ...]:
    """The mask of a part for a modality that moves the face by speaking (speech, text): the
    part's facial actions that speech moves (mouth and jaw). Parts speech cannot move (eyes,
    brows, hair, ...) raise PartError."""
    from maskscore_core.body.anny_model import get_body_model

    parts.check_active(part)
    spoken = {get_body_model().action_names[i] for i in spoken_columns()}
    actions = tuple(name for name in parts.part_actions(part) if name in spoken)
    if not actions:
        raise parts.PartError(f"{modality} moves only the mouth and jaw; the part {part!r} has none of those actions")
    return actions


def sampled_rows(length: int, count: int) -> np.ndarray:
    """Rows at the relative times (k + 0.5) / count of the timeline: the frames
    render-and-compare looks at."""
    if count <= 0:
        raise ValueError(f"the number of sampled frames must be positive, got {count}")
    rows = np.minimum(((np.arange(count) + 0.5) / count * length).astype(int), length - 1)
    return np.unique(rows)  # a clip shorter than `count` frames gives each frame once


def _mesh(state) -> np.ndarray:
    from maskscore_core.body.reference_mesh import get_reference_mesh

    return get_reference_mesh().vertices([state])[0]  # one state per call: bit-identical per frame


def _speaking(state, row: np.ndarray):
    """`state` with its mouth and jaw actions replaced by an activation row."""
    expression = state.expression.copy()
    expression[spoken_columns()] = np.clip(row[spoken_columns()], 0.0, 1.0)
    return attrs.evolve(state, expression=expression)


def timeline_length(instance: EditInstance) -> int:
    """Frames of the comparison timeline: the longer of the two clips (at the clips' frame rate)."""
    return max(len(instance.a.states), len(instance.b.states))


def on_timeline(activations: np.ndarray, length: int) -> np.ndarray:
    """The activations at absolute times 0 .. length-1 frames: cut, or padded with the rest pose."""
    out = np.zeros((length, activations.shape[1]))
    count = min(length, len(activations))
    out[:count] = activations[:count]
    return out


def neutral_body(states) -> tuple:
    """`states` as nobody in particular: ANNY's default phenotype (every value 0.5), no
    accessories, no regional scaling; pose and expression kept. The body an unidentified voice
    speaks with."""
    return tuple(attrs.evolve(s, phenotype={}, accessories=(), part_scale={}) for s in states)


def decode_activations(instance: EditInstance, activations: np.ndarray, count: int, body_states=None) -> Decoded:
    """Face activations on a body (`body_states`, frame A's clip by default): how candidates and
    references alike reach the mesh.

    References use the same body as candidates (frame A's clip, resampled onto the timeline by
    relative time as the ladder does) and the same decoding (the speech and text plugins decode
    frame A's and B's words as a candidate's; the multimodal plugin's spoken inputs take the
    clip's own activations), so render-and-compare sees the mouth and jaw, not the head motion
    that differs between two clips. Everything lives on one timeline of absolute time from the start
    (`timeline_length` frames), so a candidate that starts with frame B's words agrees with B for
    as long as it says them, whatever it says afterwards.
    """
    states = tuple(instance.a.states if body_states is None else body_states)
    if not states:
        raise ValueError(f"{instance.key}: no body states to put the face activations on")
    length = timeline_length(instance)
    acts = on_timeline(np.asarray(activations, dtype=np.float64), length)
    body = np.round(np.linspace(0, len(states) - 1, length)).astype(int)
    picked = sampled_rows(length, count)
    return Decoded(
        vertices=_mesh(_speaking(states[body[length // 2]], acts[length // 2])),
        frames=tuple(_mesh(_speaking(states[body[r]], acts[r])) for r in picked),
        activations=spoken_only(acts),
    )
