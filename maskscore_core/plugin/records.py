"""The records that flow between hooks: trials, frames, instructions, candidates, scores.

attrs classes, (un)structured with `converter` (cattrs) so that every record round-trips through
JSON. Numpy arrays are stored as nested lists with their dtype restored on the way back.
"""

from __future__ import annotations

from typing import Any

import attrs
import cattrs
import cattrs.gen
import numpy as np

from maskscore_core import vocab

converter = cattrs.Converter()
converter.register_unstructure_hook(np.ndarray, lambda a: a.tolist())
converter.register_structure_hook(np.ndarray, lambda v, _: np.asarray(v, dtype=np.float64))


def structure_error(err: BaseException) -> str:
    """`Type: message` of the innermost error a failed `converter.structure` raised (cattrs groups
    them), for a one-line message naming what was wrong."""
    while isinstance(err, BaseExceptionGroup) and err.exceptions:
        err = err.exceptions[0]
    return f"{type(err).__name__}: {err}"


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
    """What a plugin registered, for listings: its kind and the names (`plugins.plugin_info`)."""

    kind: str = attrs.field(validator=attrs.validators.in_(("modality", "editor", "scorer", "source", "trainer")))
    provides: tuple[str, ...] = attrs.field(converter=tuple)


# ---------------------------------------------------------------------------------------------
# Appearance: what a body looks like beyond its shape (the design's lighting_change, skin_tone and
# background_change). maskscore_core.metric.appearance turns it into a shaded picture.

MAX_LIGHT_INTENSITY = 4.0


class AppearanceError(ValueError):
    """An appearance value that is not finite, out of range, of the wrong length, or names an
    unknown part."""


def _finite_vector(value, length: int, what: str) -> tuple[float, ...]:
    try:
        items = [float(x) for x in value]
    except (TypeError, ValueError):
        raise AppearanceError(f"{what} must be {length} numbers, got {value!r}") from None
    if len(items) != length:
        raise AppearanceError(f"{what} must have {length} values, got {len(items)}: {value!r}")
    if not all(np.isfinite(items)):
        raise AppearanceError(f"{what} holds NaN or infinite values: {value!r}")
    return tuple(items)


def _rgb(value, what: str = "an RGB colour") -> tuple[float, float, float]:
    """Linear RGB in [0, 1] per channel (albedo or background colour)."""
    rgb = _finite_vector(value, 3, what)
    if any(c < 0.0 or c > 1.0 for c in rgb):
        raise AppearanceError(f"{what} must lie in [0, 1] per channel, got {rgb}")
    return rgb


def _check_appearance_part(part: str, what: str) -> str:
    if part not in vocab.ACTIVE_FACE_PARTS and part not in vocab.ACCESSORY_PARTS:
        raise AppearanceError(
            f"{what}: {part!r} is not a part with a mask on this data; parts: "
            f"{', '.join(vocab.ACTIVE_FACE_PARTS + vocab.ACCESSORY_PARTS)}"
        )
    return part


def _direction(value) -> tuple[float, float, float]:
    direction = _finite_vector(value, 3, "light direction")
    if float(np.linalg.norm(direction)) < 1e-6:
        raise AppearanceError(f"light direction must be a non-zero vector, got {direction}")
    return direction


def _in_range(low: float, high: float):
    def check(_instance, attribute, value):
        if not (isinstance(value, (int, float)) and np.isfinite(value) and low <= value <= high):
            raise AppearanceError(f"{attribute.name} must be a finite number in [{low}, {high}], got {value!r}")

    return check


@attrs.frozen
class Light:
    """One directional light in world space (Y up, the face looks towards +Z), pointing from the
    surface towards the light; it need not be unit length (shading normalises it). Radiance of a
    surface point = albedo x (ambient + intensity x max(0, n . direction))."""

    # tuple[float, ...]: cattrs hands any length to the converter, which names a wrong one
    direction: tuple[float, ...] = attrs.field(default=(0.3, 0.5, 0.8), converter=_direction)
    intensity: float = attrs.field(default=0.85, converter=float, validator=_in_range(0.0, MAX_LIGHT_INTENSITY))
    ambient: float = attrs.field(default=0.15, converter=float, validator=_in_range(0.0, 1.0))


def _rgb_map(value) -> dict[str, tuple[float, float, float]]:
    if not isinstance(value, dict):
        raise AppearanceError(f"part albedo must be a dict part -> RGB, got {type(value).__name__}")
    return {
        _check_appearance_part(part, "part albedo"): _rgb(rgb, f"albedo of {part!r}") for part, rgb in sorted(value.items())
    }


def _light_map(value) -> dict[str, Light]:
    if not isinstance(value, dict):
        raise AppearanceError(f"part lights must be a dict part -> Light, got {type(value).__name__}")
    out = {}
    for part, light in sorted(value.items()):
        _check_appearance_part(part, "part light")
        if isinstance(light, dict):
            light = converter.structure(light, Light)
        if not isinstance(light, Light):
            raise AppearanceError(f"light of {part!r} must be a records.Light, got {type(light).__name__}")
        out[part] = light
    return out


@attrs.frozen
class Appearance:
    """How a body looks, for the appearance task types: skin albedo, per-part albedo, light,
    per-part light and the backdrop colour.

    `skin` is the albedo of every body triangle; inner facial parts (lips, brows, ...) tint it
    (`appearance.PART_TINT`) unless `albedo` names the part (a blush, a lip colour, a tan of one
    part). `light` lights the whole body unless `part_light` relights a part (what a
    lighting_change edit of one part produces). `background` colours every pixel no triangle
    covers. Colours are linear RGB in [0, 1].
    """

    skin: tuple[float, ...] = attrs.field(default=(0.78, 0.6, 0.5), converter=lambda v: _rgb(v, "skin albedo"))
    albedo: dict[str, tuple[float, ...]] = attrs.field(factory=dict, converter=_rgb_map)
    light: Light = attrs.field(factory=Light)
    part_light: dict[str, Light] = attrs.field(factory=dict, converter=_light_map)
    background: tuple[float, ...] = attrs.field(
        default=(0.16, 0.16, 0.19), converter=lambda v: _rgb(v, "background colour")
    )

    @light.validator
    def _check_light(self, _attribute, value):
        if not isinstance(value, Light):
            raise AppearanceError(f"light must be a records.Light, got {type(value).__name__}")


@attrs.frozen
class BodyState:
    """One ANNY configuration: who (phenotype), how they stand (SOMA pose), their face (actions),
    and optionally how they look (appearance).

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
    # What the body looks like (None: geometry only, scored on depth and normals alone).
    appearance: Appearance | None = None

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
    """One candidate output. rung is its place on the design's ladder (1 best .. 5 worst),
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
    `frames` is a per-frame vertex sequence for video. `faces` is set only for a mesh of its own
    topology (an image-to-3D model's output, `metric.foreign_mesh`): then `vertices` are that
    mesh's, in the reference frame, and the metric renders its own triangles.
    """

    vertices: np.ndarray | None = attrs.field(default=None, eq=False)
    depth: np.ndarray | None = attrs.field(default=None, eq=False)
    activations: np.ndarray | None = attrs.field(default=None, eq=False)
    frames: tuple[np.ndarray, ...] | None = attrs.field(default=None, eq=False)
    faces: np.ndarray | None = attrs.field(default=None, eq=False)
    surface: Any = attrs.field(default=None, eq=False)
    # The look of the mesh (albedo, light, backdrop) where the modality carries one; the metric
    # then also compares shaded pictures (maskscore_core.metric.appearance).
    appearance: Appearance | None = attrs.field(default=None, eq=False)


@attrs.frozen
class PartMask:
    """A part as a modality masks it (`mask_part`): `region`, the sorted reference-mesh vertex
    ids whose pixels the metric compares, and `native`, the mask in the modality's own terms
    (vertex ids, bone and action names, keypoint ids, ...)."""

    region: np.ndarray = attrs.field(converter=lambda v: np.asarray(v, dtype=np.int64), eq=attrs.cmp_using(eq=_eq_arrays))
    native: Any = attrs.field(default=None, eq=False)

    @region.validator
    def _check_region(self, _attribute, value):
        if value.ndim != 1 or value.size == 0:
            raise ValueError(f"a part's region must be a non-empty 1-D array of vertex ids, got shape {value.shape}")
        if value.min() < 0 or np.any(np.diff(value) <= 0):
            raise ValueError("a part's region must hold sorted, distinct, non-negative vertex ids")


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
    # The phenotype whose head at rest frames the views that draw this target in render space
    # (`framing.subject_framing`); None: its own subject's. An edit keeps its input's camera, so the
    # ladder's wrong-subject rung is drawn framed on the edited subject (a depth map of another
    # subject, framed on its own head, would lay that head onto frame A's).
    framed_on: dict[str, float] | None = None
    # The edited part whose zoom frames those views (`framing.subject_framing`); None: the head alone.
    # An EditInstance sets it to its row's part, so a depth map is drawn as the row is scored.
    framed_part: str | None = attrs.field(default=None, validator=attrs.validators.optional(lambda _i, _a, v: vocab.check_part(v)))

    @property
    def state(self) -> BodyState:
        """The representative frame's state (the middle one of a clip)."""
        return self.states[len(self.states) // 2]

    def with_states(self, label: str, states, transcript: str | None = None) -> "Target":
        """An editor's output made from this target: other states (and words), the same subject
        and fps, seen through this target's camera (`framed_on`, `framed_part`)."""
        return attrs.evolve(self, label=label, states=states, rung=None,
                            transcript=self.transcript if transcript is None else transcript)  # fmt: skip

    @property
    def framing_phenotype(self) -> dict[str, float]:
        """The phenotype its render-space views are framed on (`framed_on`, else its own)."""
        return self.state.phenotype if self.framed_on is None else self.framed_on


# A target framed on its own subject's head is written without `framed_on` and `framed_part`, as
# records were before they existed.
converter.register_unstructure_hook(
    Target, cattrs.gen.make_dict_unstructure_fn(
        Target, converter, framed_on=cattrs.gen.override(omit_if_default=True),
        framed_part=cattrs.gen.override(omit_if_default=True),
    ),
)


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

    def __attrs_post_init__(self):
        # Every target of a row is drawn as the row is scored: zoomed for the row's edited part
        # (an instance evolved to edit another part re-frames its targets with it).
        for name in ("a", "b", "other"):
            target = getattr(self, name)
            if target is not None and target.framed_part != self.instruction.part:
                object.__setattr__(self, name, attrs.evolve(target, framed_part=self.instruction.part))

    def frame(self, which: str) -> Target:
        """Frame A (`"a"`) or frame B (`"b"`): what `decode_reference(which=...)` decodes."""
        if which == "a":
            return self.a
        if which == "b":
            return self.b
        raise ValueError(f"reference frame must be 'a' or 'b', got {which!r}")
