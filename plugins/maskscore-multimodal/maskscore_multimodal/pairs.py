"""Which two derivation paths a multimodal row compares, chosen from the instance alone.

The input (frame A and B, the references) goes through one modality's decode path, the
candidates through another's; agreement of the two through the ANNY mesh is the score. The pair
is a deterministic function of the instance key (sha256 of the key, modulo the list of eligible
ordered pairs), so the same dataset is built on every machine whatever plugins are installed;
a pair whose plugin is missing fails loudly, naming it.

Inputs may be any path. Outputs are the paths that carry a whole body (depth, keypoints, video):
speech and text carry only what is said (words and voice), while a multimodal edit moves the face
or neck of one frame (`PATH_PARTS`), so every candidate would encode to the same audio or
transcript and the ladder would collapse into ties; a pose carries bones but no body shape, so
it is applied to frame A's body and the wrong-subject candidate decodes as frame A with another
subject's bones, which scored above the wrong-part rung (README.md, "How a row is built").

A path is used for a part only when it carries that part's edit (`carries`): when the part is one
its own modality is edited on (`PATH_PARTS`: no gaze for depth and keypoints, whose eyes are
sockets; speech and text move only the mouth), and, for pose, when bones carry every facial
action of the part (the gaze of the irides, the neck's bones; not the lips, cheeks or brows,
which a pose leaves at frame A: maskscore-pose's README). A path that drops part of the edit
would make frame B's reference (or a candidate) something other than frame B's part, and the
comparison across paths would measure that loss instead of the edit.

An output must also be one the metric can judge for the part (`scorable_output`): a neck edit
turns the head, and render-and-compare measures consistency against frame A carried along to
the candidate's head (`render_compare.NO_ALIGN_PARTS`), which needs the candidate's vertices. A
depth map has none, so the turn the edit asks for counted against it (rung 1's consistency fell,
rung 4 rose above rungs 1-3 on overall: README.md); depth is no output for the neck. Nor for
the face: every other part shares an action with it, so its ladder's wrong part (rung 4) is the
neck's turn, which a depth map cannot be aligned for either, so the turned head counted against
rung 4 on both dimensions and it fell below another subject's face (README.md).

Pairs per part: mouth 12 (inputs depth, keypoints, speech, text, video; outputs depth,
keypoints, video), face 4 (outputs keypoints, video), eyebrow 6, irides 1 (pose->video), neck 6 (inputs depth, keypoints,
pose, video; outputs keypoints, video).
`ctx.config["multimodal_pair"] = "pose->video"` pins a pair (for tests and ablations).
"""

from __future__ import annotations

import functools
import hashlib

import attrs

from maskscore_core import vocab

from maskscore_core.edits import instances as edits
from maskscore_core.plugin.context import setting
from maskscore_core.plugin.records import EditInstance

# The design's derivation paths (docs/design.md) that have a decoder to the mesh. "image" is not among them: turning
# pixels back into a mesh needs an image fitter, which MaskScore does not have (README.md).
PATHS: tuple[str, ...] = ("depth", "keypoints", "pose", "speech", "text", "video")
OUTPUT_PATHS: tuple[str, ...] = ("depth", "keypoints", "video")
# The parts each path's own modality edits (its registered task table). Written here, not asked
# of the installed plugins, so that the pair a row compares does not depend on what is installed.
PATH_PARTS: dict[str, tuple[str, ...]] = {
    "depth": tuple(edits.WITHOUT_GAZE),
    "keypoints": tuple(p for p in edits.WITHOUT_GAZE if p not in vocab.ACCESSORY_PARTS),
    "pose": tuple(p for p in edits.MOTION_PARTS if p != "eyebrow"),
    "speech": ("mouth",),
    "text": ("mouth",),
    "video": edits.MOTION_PARTS,
}
# Parts whose every facial action and bone a SOMA pose carries (maskscore-pose: Jaw, LeftEye and
# RightEye carry jawOpen, jawLeft/Right and the eight eyeLook actions; the neck is bones only).
POSE_CARRIED_PARTS: tuple[str, ...] = ("irides", "neck")
# Paths whose candidates decode to render space (maps, no vertices): the metric cannot re-render them.
RENDER_SPACE_PATHS: tuple[str, ...] = ("depth",)


class PairError(ValueError):
    """A modality pair that cannot be used (unknown path, same path twice, malformed)."""


@attrs.frozen
class Pair:
    input: str
    output: str

    def __str__(self) -> str:
        return f"{self.input}->{self.output}"


def parse_pair(text: str) -> Pair:
    if not isinstance(text, str) or text.count("->") != 1:
        raise PairError(f"a modality pair is written 'input->output', got {text!r}")
    pair = Pair(*(part.strip() for part in text.split("->")))
    for name, allowed in ((pair.input, PATHS), (pair.output, OUTPUT_PATHS)):
        vocab.check_modality(name)
        if name not in allowed:
            raise PairError(f"{name!r} cannot be used there; expected one of: {', '.join(allowed)}")
    if pair.input == pair.output:
        raise PairError(f"a multimodal pair needs two different paths, got {text!r}")
    return pair


def carries(path: str, part: str) -> bool:
    """Whether the derivation path `path` carries an edit of `part` whole (module docstring)."""
    if part not in PATH_PARTS[path]:
        return False
    return path != "pose" or part in POSE_CARRIED_PARTS


def scorable_output(path: str, part: str) -> bool:
    """Whether render-and-compare can judge `path`'s candidates of `part` (module docstring):
    not a render-space path (depth maps) for a part whose edit carries the head, nor for one
    whose ladder's wrong part (rung 4, `ladder.wrong_part_pool`) does: the face's only one is the
    neck, whose turn a depth map cannot be aligned for."""
    from maskscore_core.metric.render_compare import NO_ALIGN_PARTS

    if path not in RENDER_SPACE_PATHS:
        return True
    return part not in NO_ALIGN_PARTS and not set(_wrong_parts(part)) & set(NO_ALIGN_PARTS)


@functools.cache
def _wrong_parts(part: str) -> tuple[str, ...]:
    from maskscore_core.edits.ladder import wrong_part_pool

    return tuple(wrong_part_pool(part, "multimodal"))


def eligible_pairs(part: str) -> list[Pair]:
    """Every (input, output) pair a row editing `part` may compare, in a fixed order."""
    inputs = [m for m in PATHS if carries(m, part)]
    outputs = [m for m in OUTPUT_PATHS if carries(m, part) and scorable_output(m, part)]
    return [Pair(i, o) for o in outputs for i in inputs if i != o]


@attrs.frozen
class MultimodalOptions:
    """The run config key the multimodal modality reads (`ctx.config.options`): a pinned pair."""

    multimodal_pair: str | None = setting(None, lambda v: v is None or isinstance(v, str), "a pair such as 'pose->video'")


def choose_pair(instance: EditInstance, ctx) -> Pair:
    pinned = ctx.config.options(MultimodalOptions).multimodal_pair
    if pinned:
        return parse_pair(pinned)
    pairs = eligible_pairs(instance.instruction.part)
    if not pairs:
        raise PairError(f"no two derivation paths both carry an edit of {instance.instruction.part!r}")
    digest = hashlib.sha256(instance.key.encode("utf-8")).digest()
    return pairs[int.from_bytes(digest[:8], "big") % len(pairs)]
