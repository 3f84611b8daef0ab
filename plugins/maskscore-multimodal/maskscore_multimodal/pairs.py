"""Which two derivation paths a multimodal row compares, chosen from the instance alone.

The input (frame A and B, the references) goes through one modality's decode path, the
candidates through another's; agreement of the two through the ANNY mesh is the score. The pair
is a deterministic function of the instance key (sha256 of the key, modulo the list of eligible
ordered pairs), so the same dataset is built on every machine whatever plugins are installed;
a pair whose plugin is missing fails loudly, naming it.

Inputs may be any path. Outputs are the paths that carry a body state (depth, keypoints, pose,
video): speech and text carry only what is said (words and voice), while a multimodal edit moves
the face or neck of one frame (edits.TASK_TABLE), so every candidate would encode to the same
audio or transcript and the ladder would collapse into ties. Speech and text are input paths
only for mouth edits: what is said moves only the mouth and jaw, so their reference of frame B
cannot show an edit of the eyes or brows. So 20 pairs for a mouth edit (6 inputs x 4 outputs,
minus the 4 same-path pairs), 12 for any other part (4 x 4 - 4).
`ctx.config["multimodal_pair"] = "pose->video"` pins a pair (for tests and ablations).
"""

from __future__ import annotations

import hashlib

import attrs

from maskscore_core import vocab
from maskscore_core.records import EditInstance

# Seed 000's derivation paths that have a decoder to the mesh. "image" is not among them: turning
# pixels back into a mesh needs an image fitter, which MaskScore does not have (README.md).
PATHS: tuple[str, ...] = ("depth", "keypoints", "pose", "speech", "text", "video")
OUTPUT_PATHS: tuple[str, ...] = ("depth", "keypoints", "pose", "video")
SPOKEN_PATHS: tuple[str, ...] = ("speech", "text")


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


def eligible_pairs(part: str) -> list[Pair]:
    """Every (input, output) pair a row editing `part` may compare, in a fixed order."""
    inputs = [m for m in PATHS if m not in SPOKEN_PATHS or part == "mouth"]
    return [Pair(i, o) for o in OUTPUT_PATHS for i in inputs if i != o]


def choose_pair(instance: EditInstance, ctx) -> Pair:
    pinned = ctx.config.get("multimodal_pair")
    if pinned:
        return parse_pair(pinned)
    pairs = eligible_pairs(instance.instruction.part)
    digest = hashlib.sha256(instance.key.encode("utf-8")).digest()
    return pairs[int.from_bytes(digest[:8], "big") % len(pairs)]
