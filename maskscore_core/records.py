"""The records that flow between hooks: trials, frames, instructions, candidates, scores.

attrs classes, (un)structured with `converter` (cattrs) so that every record round-trips through
JSON. Numpy arrays are stored as nested lists with their dtype restored on the way back.
"""

from __future__ import annotations

from typing import Any

import attrs
import cattrs
import numpy as np

from . import vocab

converter = cattrs.Converter()
converter.register_unstructure_hook(np.ndarray, lambda a: a.tolist())
converter.register_structure_hook(np.ndarray, lambda v, _: np.asarray(v, dtype=np.float64))


def _array(shape: tuple[int, ...] | None = None):
    """An attrs converter that makes a float64 array and checks its shape and finiteness."""

    def convert(value):
        arr = np.asarray(value, dtype=np.float64)
        if shape is not None and arr.shape != shape:
            raise ValueError(f"expected an array of shape {shape}, got {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise ValueError("array holds NaN or infinite values")
        return arr

    return convert


def _eq_arrays(a, b) -> bool:
    return np.array_equal(a, b)


SOMA_BONES = 78
FACIAL_ACTIONS = 52


@attrs.frozen
class PluginInfo:
    """What a plugin says about itself for `maskscore list-plugins`."""

    kind: str = attrs.field(validator=attrs.validators.in_(("modality", "editor", "scorer", "source")))
    provides: tuple[str, ...] = attrs.field(converter=tuple)


@attrs.frozen
class BodyState:
    """One ANNY configuration: who (phenotype), how they stand (SOMA pose), their face (actions).

    pose is SOMA format: 78 bone rotations as axis-angle vectors (radians), plus a root
    translation in metres. expression holds the 52 ARKit-named facial actions in [0, 1].
    """

    phenotype: dict[str, float] = attrs.field(factory=dict)
    pose: np.ndarray = attrs.field(
        factory=lambda: np.zeros((SOMA_BONES, 3)), converter=_array((SOMA_BONES, 3)), eq=attrs.cmp_using(eq=_eq_arrays)
    )
    translation: np.ndarray = attrs.field(
        factory=lambda: np.zeros(3), converter=_array((3,)), eq=attrs.cmp_using(eq=_eq_arrays)
    )
    expression: np.ndarray = attrs.field(
        factory=lambda: np.zeros(FACIAL_ACTIONS),
        converter=_array((FACIAL_ACTIONS,)),
        eq=attrs.cmp_using(eq=_eq_arrays),
    )
    accessories: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    # Procedural regional deformation: part name -> scale of that part's vertices about their
    # centroid (1.0 = unchanged). Used by the Region task types on parts ANNY has no action for.
    part_scale: dict[str, float] = attrs.field(factory=dict)

    def pose_vector(self) -> list[float]:
        """The PoseEditReward layout: 78x3 rotations flattened, then t[3]."""
        return [*self.pose.reshape(-1).tolist(), *self.translation.tolist()]


@attrs.frozen
class Frame:
    index: int
    time_s: float
    state: BodyState


@attrs.frozen
class Subject:
    subject_id: str
    phenotype: dict[str, float]
    voice: str = "en-us"
    accessories: tuple[str, ...] = attrs.field(default=(), converter=tuple)


@attrs.frozen
class Trial:
    """One clip of one subject: the undivided unit from which all eight modalities derive."""

    trial_id: str
    source: str
    subject: Subject
    transcript: str
    fps: float
    frames: tuple[Frame, ...] = attrs.field(converter=tuple)
    audio_path: str | None = None
    image_path: str | None = None
    extras: dict[str, str] = attrs.field(factory=dict)


@attrs.frozen
class EditInstruction:
    """'edit the {part} to match frame B', with the task type it counts under."""

    text: str
    part: str = attrs.field(validator=lambda _i, _a, v: vocab.check_part(v))
    task_type: str = attrs.field(validator=lambda _i, _a, v: vocab.check_task_type(v))
    modality: str = attrs.field(validator=lambda _i, _a, v: vocab.check_modality(v))


@attrs.frozen
class Asset:
    """A value in one modality's own representation, in memory, optionally written at `path`.

    data's type is the modality's business (a vertex array, a waveform, a string, ...); the
    modality plugin that made it is the one that decodes it.
    """

    modality: str = attrs.field(validator=lambda _i, _a, v: vocab.check_modality(v))
    data: Any = attrs.field(eq=False)
    path: str | None = None
    meta: dict[str, Any] = attrs.field(factory=dict, eq=False)


@attrs.frozen
class Candidate:
    """One candidate output. rung is its place on seed 000's ladder (1 best .. 5 worst),
    None for model outputs whose quality is not known in advance."""

    label: str
    asset: Asset
    rung: int | None = None


@attrs.frozen
class Decoded:
    """What the universal metric compares: an ANNY mesh, and what a modality adds to it.

    vertices: (V, 3) on the fixed ANNY topology, or None where the modality lives in render
    space already (depth: `depth` holds per-view depth maps). `activations` is a (T, 52)
    facial-action sequence for modalities scored on face agreement (speech, text, video).
    `frames` is a per-frame vertex sequence for video.
    """

    vertices: np.ndarray | None = attrs.field(default=None, eq=False)
    depth: np.ndarray | None = attrs.field(default=None, eq=False)
    activations: np.ndarray | None = attrs.field(default=None, eq=False)
    frames: tuple[np.ndarray, ...] | None = attrs.field(default=None, eq=False)


@attrs.frozen
class CandidateScore:
    """Scores in [0, 1], higher is better, plus the raw distances they were mapped from."""

    instruction_following: float
    consistency: float
    overall: float
    distances: dict[str, float] = attrs.field(factory=dict)

    def dimension(self, name: str) -> float:
        return getattr(self, vocab.check_dimension(name))


@attrs.frozen
class Target:
    """What a representation is *of*, before a modality encodes it: a subject, one body state
    per frame (one for single-frame modalities, T for clips), and what is said.

    Frame A, frame B, every ladder rung and the wrong subject are Targets; `encode` turns a
    Target into a modality's Asset.
    """

    label: str
    subject: Subject
    states: tuple[BodyState, ...] = attrs.field(converter=tuple)
    transcript: str = ""
    fps: float = 25.0
    rung: int | None = None

    @property
    def state(self) -> BodyState:
        """The representative frame's state (the middle one of a clip)."""
        return self.states[len(self.states) // 2]


@attrs.frozen
class EditInstance:
    """One edit: `a` is the input (frame A), `b` the target (frame B), both of one subject;
    `other` is another subject (the ladder's wrong-subject rung)."""

    key: str
    instruction: EditInstruction
    a: Target
    b: Target
    other: Target | None = None
    trial_a: str = ""
    trial_b: str = ""
