"""How speech and text reach the mesh: face activations drive a speaker's body.

Candidates and references alike put their mouth and jaw activations on a clip of body states
(resampled onto one timeline of absolute time): frame A's clip unless the speech plugin
identified another speaker from the voice (`speakers.identify`), in which case that speaker's
enrolled clip, or a neutral body for a voice nobody enrolled has. Since references and frame A's
own speech use frame A's clip, render-and-compare sees the mouth, not the head motion that
differs between two clips; and each speaking frame keeps the skull where its resting face has
it (`spoken_vertices`), so what moves is the mouth and jaw alone. Shared by the speech and text
modality plugins.
"""

from __future__ import annotations

import functools
import threading

import attrs
import numpy as np

from ..records import Decoded, EditInstance


@functools.cache
def spoken_columns() -> np.ndarray:
    """The facial actions speech moves (mouth and jaw): every action some viseme sets."""
    from .visemes import viseme_vectors

    return np.flatnonzero(np.any(np.stack(list(viseme_vectors().values())) != 0, axis=0))


def spoken_only(activations: np.ndarray) -> np.ndarray:
    """The activations of the actions speech moves, the others zero: speech cannot move brows,
    eyes or lids, so both sides are compared on what it can move."""
    out = np.zeros_like(np.asarray(activations, dtype=np.float64))
    out[:, spoken_columns()] = np.asarray(activations)[:, spoken_columns()]
    return out


DEFAULT_SAMPLED_FRAMES = 12


def sampled_frame_count(ctx) -> int:
    """How many frames render-and-compare samples from a clip (`ctx.config["speech_frames"]`)."""
    return int(ctx.config.get("speech_frames", DEFAULT_SAMPLED_FRAMES)) if ctx is not None else DEFAULT_SAMPLED_FRAMES


def spoken_part_actions(part: str, modality: str) -> tuple[str, ...]:
    """The mask of a part for a modality that moves the face by speaking (speech, text): the
    part's facial actions that speech moves (mouth and jaw). Parts speech cannot move (eyes,
    brows, hair, ...) raise PartError."""
    from .. import parts
    from ..body import get_body_model

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
    from ..reference_mesh import get_reference_mesh

    return get_reference_mesh().vertices([state])[0]  # one state per call: bit-identical per frame


def _speaking(state, row: np.ndarray):
    """`state` with its mouth and jaw actions replaced by an activation row."""
    expression = state.expression.copy()
    expression[spoken_columns()] = np.clip(row[spoken_columns()], 0.0, 1.0)
    return attrs.evolve(state, expression=expression)


def _state_key(state) -> tuple:
    """Everything about a body state that shapes its mesh, hashable."""
    return (
        state.pose.tobytes(), state.translation.tobytes(), state.expression.tobytes(),
        tuple(sorted(state.phenotype.items())), tuple(state.accessories), tuple(sorted(state.part_scale.items())),
    )  # fmt: skip


_RESTING_KEPT = 512
_resting: dict[tuple, np.ndarray] = {}
_resting_lock = threading.Lock()


def _at_rest(state) -> np.ndarray:
    """The mesh of `state` with its mouth and jaw at rest (read-only). Kept for the last
    _RESTING_KEPT body states: every candidate and reference of a clip speaks on the same few."""
    resting = _speaking(state, np.zeros(len(state.expression)))
    key = _state_key(resting)
    with _resting_lock:
        found = _resting.get(key)
    if found is not None:
        return found
    vertices = _mesh(resting)
    vertices.flags.writeable = False
    with _resting_lock:
        if len(_resting) >= _RESTING_KEPT:
            _resting.pop(next(iter(_resting)))
        _resting[key] = vertices
    return vertices


@functools.cache
def _steady_layout() -> tuple[np.ndarray, np.ndarray, list[tuple[int, int]]]:
    """(skull vertex ids, per-vertex head weight, head accessory vertex ranges) of the reference
    mesh: what speaking must leave in place."""
    from .. import head_motion, parts
    from ..reference_mesh import get_reference_mesh
    from ..render_compare import HEAD_ACCESSORY_PARTS

    mesh = get_reference_mesh()
    skull = np.unique(np.concatenate([parts.part_vertex_ids(p) for p in ("front hair", "back hair", "ears")]))
    weights = np.zeros(mesh.vertex_count)
    weights[: mesh.anny_vertex_count] = head_motion.head_weights()
    worn = [mesh.slot_ranges[slot.name] for slot in mesh.slots if slot.part in HEAD_ACCESSORY_PARTS]
    return skull, weights, worn


def spoken_vertices(state, row: np.ndarray) -> np.ndarray:
    """The mesh of `state` speaking `row`, with the skull and what is worn on the head left where
    they are with the mouth at rest.

    ANNY's mouth and jaw actions also pull the whole skull by up to ~1.5 mm (jawOpen), and the
    hat, glasses and earrings, placed from landmarks on the skull, follow it. Speaking moves the
    mouth and jaw, not the head: left in, that pull would read as a change of "the rest" in every
    candidate that says other words than frame A (render-and-compare's consistency), and the more
    so the more it speaks. So the speaking mesh is moved rigidly to put its skull (hair region and
    ears) back onto the resting one, each vertex by its head skinning weight, and head
    accessories are taken from the resting mesh.
    """
    from ..head_motion import rigid_fit

    speaking = _mesh(_speaking(state, row))
    rest = _at_rest(state)
    skull, weights, worn = _steady_layout()
    rotation, source_centre, target_centre = rigid_fit(speaking[skull], rest[skull])
    steady = (speaking - source_centre) @ rotation.T + target_centre
    out = speaking + weights[:, None] * (steady - speaking)
    for start, stop in worn:
        out[start:stop] = rest[start:stop]
    return out


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
    relative time as the ladder does) and differ only in where the activations come from (the
    video: the truth), so render-and-compare sees the mouth and jaw, not the head motion that
    differs between two clips. Everything lives on one timeline of absolute time from the start
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
        vertices=spoken_vertices(states[body[length // 2]], acts[length // 2]),
        frames=tuple(spoken_vertices(states[body[r]], acts[r]) for r in picked),
        activations=spoken_only(acts),
    )
