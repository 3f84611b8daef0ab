"""Scoring files of any installed modality against frames A and B (`maskscore score`).

A file goes the way a dataset's table value goes: its modality's `read`, then the
`decode_to_mesh` hook, then the render-and-compare metric (`render_compare_scorer.score_decoded`).
Which modality reads a file is the one whose registered `suffixes` match it ("/frames.json": a
folder holding that file), unless `modality` names it. Mesh files no modality claims (.glb, .ply,
.obj on the reference topology) are the metric's own reference and are read by the core. A
modality whose table holds numbers rather than paths (keypoints, pose) reads an .npz file with
one array named after it, or a .json file holding {"<modality>": [numbers]} (a plain list needs
`modality`), and gets those numbers as its table value.

There is no edit instance on disk here, so frames A and B are decoded like the candidates, and
the instance the decoders receive holds ANNY's default body (every phenotype value 0.5) at rest:
keypoints move its surface, a pose moves its bones, speech, text and face captures move its face.
A mesh of its own topology gets no instance: nobody says what frame A's body state is, so its own
triangles are rendered (`foreign_mesh.decode` without a start), and frames A and B must be on the
reference topology, which is checked before anything is decoded.
Sequence modalities get a timeline as long as the longest file (frames, audio duration, or the
spoken length of a transcript at 25 frames per second). A modality whose decoded frames carry no
mesh (depth maps) needs frames A and B as meshes: the part's pixels come from a mesh render.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from maskscore_core.plugin import manager as plugins
from maskscore_core.plugin.records import BodyState, Decoded, EditInstance, EditInstruction, Subject, Target
from maskscore_core.builtins.render_compare_scorer import render_compare_of, score_decoded
from maskscore_core.metric import foreign_mesh
from maskscore_core.plugin.registration import tasks_of

MESH_SUFFIXES = (".glb", ".ply", ".obj")
NUMBER_SUFFIXES = (".npz", ".json")
TIMELINE_FPS = 25.0


class FileScoringError(ValueError):
    """A file that no modality reads, or that cannot be scored as given."""


def _matches(path: Path, suffix: str) -> bool:
    if suffix.startswith("/"):
        return path.is_dir() and (path / suffix[1:]).is_file()
    return path.suffix.lower() == suffix.lower() and not path.is_dir()


def _holds_numbers(modality) -> bool:
    """Whether `modality`'s table values are numbers (a list of floats per candidate)."""
    return modality.candidate_column.type == "list<list<float>>"


def _number_arrays(path: Path) -> dict:
    """The named arrays of an .npz file, or the object of a .json file ({} for a plain list)."""
    try:
        if path.suffix.lower() == ".npz":
            with np.load(path, allow_pickle=False) as data:
                return {name: data[name] for name in data.files}
        loaded = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise FileScoringError(f"{path} cannot be read as {path.suffix.lower()}: {err}") from None
    return loaded if isinstance(loaded, dict) else {}


def modality_of(path: Path, preferred: str | None = None) -> str | None:
    """The modality that reads `path`: `preferred` when it does, else the one registered
    modality whose suffixes match (or whose name an .npz/.json of numbers uses); None for a mesh
    file no modality claims."""
    path = Path(path)

    def reads(m) -> bool:
        if any(_matches(path, s) for s in m.suffixes):
            return True
        return _holds_numbers(m) and path.suffix.lower() in NUMBER_SUFFIXES and path.is_file()

    if preferred is not None and reads(plugins.modality(preferred)):
        return preferred
    readers = [m.name for m in plugins.modalities() if reads(m)]
    if len(readers) > 1 and path.suffix.lower() in NUMBER_SUFFIXES:
        named = [m for m in readers if m in _number_arrays(path)]
        readers = named or readers
    if len(readers) == 1:
        return readers[0]
    if not readers and path.suffix.lower() in MESH_SUFFIXES:
        return None
    if preferred is not None and not readers:
        return preferred  # its read names what is wrong with the file
    known = sorted({s for m in plugins.modalities() for s in m.suffixes} | set(MESH_SUFFIXES))
    if readers:
        raise FileScoringError(f"{path}: modalities {', '.join(readers)} all read this kind of file; choose one with --modality")
    raise FileScoringError(f"{path}: no installed modality reads this kind of file (known: {', '.join(known)}); name one with --modality")


def numbers_of(path: Path, modality: str) -> list[float]:
    """The table value an .npz/.json file of numbers holds for `modality`: its one array (or the
    one named after the modality), flattened."""
    arrays = _number_arrays(path)
    if modality in arrays:
        values = arrays[modality]
    elif len(arrays) == 1:
        (values,) = arrays.values()
    elif path.suffix.lower() == ".json" and not arrays:
        values = json.loads(path.read_text())
    else:
        raise FileScoringError(f"{path} holds {', '.join(sorted(arrays)) or 'nothing'}; expected one array named {modality!r}")
    try:
        return [float(v) for v in np.asarray(values, dtype=np.float64).ravel()]
    except (TypeError, ValueError) as err:
        raise FileScoringError(f"{path}: the {modality} values are not numbers: {err}") from None


def _task_type(modality, part: str) -> str:
    if part in modality.task_table:
        return tasks_of(modality.task_table[part])[0]
    return modality.task_types()[0]


def neutral_instance(modality: str, part: str, frames: int, transcripts: tuple[str, str] = ("", "")) -> EditInstance:
    """Frames A and B as ANNY's default body at rest for `frames` frames, saying `transcripts`:
    what decoders put a file's values on when no instance says whose body it is."""
    m = plugins.modality(modality)
    subject = Subject("default", {})
    rest = tuple(BodyState() for _ in range(max(1, frames)))
    instruction = EditInstruction(m.instruction(part), part, _task_type(m, part), modality)
    a, b = (Target(label, subject, rest, text, fps=TIMELINE_FPS) for label, text in zip("ab", transcripts))
    return EditInstance(key="score", instruction=instruction, a=a, b=b)


def transcript_of(asset) -> str:
    """What a file says, when its modality carries words (a transcript, audio with its text)."""
    if asset is None:
        return ""
    data = asset.data
    return data if isinstance(data, str) else str(getattr(data, "transcript", "") or "")


def timeline_frames(asset) -> int:
    """Frames a sequence asset lasts at TIMELINE_FPS: a clip's frames, audio's duration, a
    transcript's spoken length; 1 for anything else."""
    data = asset.data
    if hasattr(data, "states"):
        return len(data.states)
    if hasattr(data, "duration_s"):
        return max(1, math.ceil(float(data.duration_s) * TIMELINE_FPS))
    if isinstance(data, str):
        from maskscore_core.speech.face_drive import text_activations

        return max(1, len(text_activations(data, TIMELINE_FPS)))
    return 1


def _read(path: Path, modality: str | None, ctx):
    if modality is None:  # a mesh file: the reference topology, or any other (a model's output)
        from maskscore_core.body.reference_mesh import get_reference_mesh

        mesh = foreign_mesh.read(path)  # checked: count and triangles by is_reference, extent, NaN
        if foreign_mesh.is_reference(mesh):
            return None, Decoded(vertices=get_reference_mesh().check(mesh.vertices, str(path)))
        return None, Decoded(vertices=mesh.vertices, faces=mesh.faces)
    m = plugins.modality(modality)
    if _holds_numbers(m) and path.suffix.lower() in NUMBER_SUFFIXES:
        return m.read(numbers_of(path, modality), None, ctx), None
    return m.read(str(path), None, ctx), None


def score_files(frame_a, frame_b, part: str, candidates, ctx, modality: str | None = None) -> dict:
    """Scores of candidate files for "edit the `part` to match frame B", as a JSON-ready dict.

    `modality` is the candidates' modality (default: from their suffixes); frames A and B are
    read by it too, unless their suffix belongs to another modality (meshes as frames of depth
    candidates)."""
    candidates = [Path(p) for p in candidates]
    kinds = {modality_of(p, modality) for p in candidates}
    if len(kinds) != 1:
        raise FileScoringError(f"the candidates are of several modalities ({', '.join(sorted(map(str, kinds)))}); score one at a time")
    (cand_modality,) = kinds
    frames = [Path(frame_a), Path(frame_b)]
    frame_modalities = [modality_of(p, cand_modality) for p in frames]
    read = [_read(p, m, ctx) for p, m in zip([*frames, *candidates], [*frame_modalities, *[cand_modality] * len(candidates)])]
    for which, (asset, done), path in (("A", read[0], frames[0]), ("B", read[1], frames[1])):
        own = done if asset is None else asset.data
        if isinstance(own, foreign_mesh.ForeignMesh) and not foreign_mesh.is_reference(own):
            _not_reference(which, path, len(own.vertices), len(own.faces))
    decoded = _decode(read, [*frame_modalities, *[cand_modality] * len(candidates)], part, ctx)
    ref_a, ref_b = decoded[:2]
    for which, ref, path in (("A", ref_a, frames[0]), ("B", ref_b, frames[1])):
        if ref.vertices is None and ref.frames is None:
            raise FileScoringError(f"frame {which} ({path}) decodes to no mesh, and the part's pixels come from a mesh render;"
                                   " give --frame-a and --frame-b as meshes (.glb)")  # fmt: skip
        if ref.faces is not None:
            _not_reference(which, path, len(ref.vertices), len(ref.faces))
    scores = score_decoded(render_compare_of(ctx), part, ref_a, ref_b, decoded[2:])
    config = render_compare_of(ctx).view_config
    return {
        "part": part,
        "modality": cand_modality or "mesh",
        "frame_a": str(frame_a),
        "frame_b": str(frame_b),
        "views": {"count": config.count, "resolution": config.resolution, "fov_deg": config.fov_deg,
                  "radius": config.radius, "target": config.target},
        "candidates": [
            {"path": str(path), "instruction_following": s.instruction_following, "consistency": s.consistency,
             "overall": s.overall, "distances": s.distances}
            for path, s in zip(candidates, scores)
        ],
    }  # fmt: skip


def _not_reference(which: str, path: Path, vertices: int, faces: int):
    raise FileScoringError(f"frame {which} ({path}) is not on the reference topology ({vertices} vertices,"
                           f" {faces} triangles); the part's pixels come from the reference mesh's"
                           " triangles, so only candidates may be meshes of their own topology")  # fmt: skip


def _decode(read, modalities, part: str, ctx) -> list[Decoded]:
    """Each (asset, decoded) pair decoded, assets through their modality's decode_to_mesh on one
    neutral instance per modality: as long as the longest of its files (sequence modalities),
    saying what frames A and B say (the first two files). A mesh of its own topology is decoded
    with no instance (no state to fit ANNY from: module docstring)."""
    lengths: dict[str, int] = {}
    for (asset, _), m in zip(read, modalities):
        if asset is not None and plugins.modality(m).sequence:
            lengths[m] = max(lengths.get(m, 1), timeline_frames(asset))
    instances = {}
    for m in {m for m in modalities if m is not None}:
        said = tuple(transcript_of(asset) if fm == m else "" for (asset, _), fm in zip(read[:2], modalities[:2]))
        instances[m] = neutral_instance(m, part, lengths.get(m, 1), said)
    return [
        done if asset is None else plugins.call("decode_to_mesh", m, asset=asset, ctx=ctx,
                                                instance=None if isinstance(asset.data, foreign_mesh.ForeignMesh) else instances[m])
        for (asset, done), m in zip(read, modalities)
    ]
