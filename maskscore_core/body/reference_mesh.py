"""The reference mesh every modality decodes to: the ANNY body plus fixed accessory slots.

The renderer needs one fixed topology so that one Mitsuba scene serves every candidate. The
reference mesh is ANNY's SOMA mesh followed by one slot per procedural accessory (glasses, hat,
earrings, scarf; see `accessories`). An absent accessory's vertices collapse onto one point, so
its triangles are degenerate and invisible, while the topology stays the same.

Facial actions keep off the skull. ANNY's facial actions are not confined to the face: at full
strength jawOpen also moves the back of the head by 1.5 mm and the ears by 1.2 mm, cheekPuff by
0.9 mm, mouthSmile by 0.7 mm (and the Jaw and Head bones they regress with it), and the hat and
earrings, placed from landmarks and bones of the head, follow. A face's expression does not move
its skull; render-and-compare would read that pull as a change of "the rest" in every edit of
the mouth or face (consistency), most of all on a hat's brim. So the mesh of a state with facial
actions is moved rigidly to put its skull (the front hair, back hair and ears vertices, Kabsch)
back where the same state without facial actions has it, each vertex by its head skinning
weight (the neck bends smoothly in between), and its accessories are placed from that resting
state's bones. The actions' own deformation is kept (`anny_posed`).
"""

from __future__ import annotations

import functools
from typing import Sequence

import attrs
import numpy as np

from maskscore_core.body.anny_model import BodyModel, get_body_model
from maskscore_core.plugin.records import FACIAL_ACTIONS, BodyState
from maskscore_core.vocab import ACCESSORY_PARTS
from maskscore_core.body import accessories
from maskscore_core.body.parts import part_vertex_ids


class ReferenceMesh:
    def __init__(self, body: BodyModel) -> None:
        self.body = body
        self.anny_vertex_count = body.vertex_count
        self.slots = accessories.slots()
        faces = [body.faces]
        offset = body.vertex_count
        self.slot_ranges: dict[str, tuple[int, int]] = {}
        for slot in self.slots:
            faces.append(slot.faces + offset)
            self.slot_ranges[slot.name] = (offset, offset + len(slot.vertices))
            offset += len(slot.vertices)
        self.faces = np.concatenate(faces).astype(np.int64)
        self.vertex_count = offset
        self.anny_face_count = len(body.faces)

    def anny_posed(self, states: Sequence[BodyState]) -> dict[str, np.ndarray]:
        """ANNY's vertices (B, V, 3) and world bone poses (B, 78, 4, 4) of each state, with
        facial actions kept off the skull (module docstring); bone poses are those of the state
        without facial actions."""
        out = self.body.forward(states)
        expressive = [i for i, state in enumerate(states) if np.any(state.expression)]
        if not expressive:
            return out
        resting = self.body.forward([attrs.evolve(states[i], expression=np.zeros(FACIAL_ACTIONS)) for i in expressive])
        skull, weights = _skull_ids(), self.body.head_weights
        vertices, bone_poses = out["vertices"].copy(), out["bone_poses"].copy()
        for j, i in enumerate(expressive):
            moved, rest = vertices[i], resting["vertices"][j]
            rotation, source_centre, target_centre = rigid_fit(moved[skull], rest[skull])
            held = (moved - source_centre) @ rotation.T + target_centre
            vertices[i] = moved + weights[:, None] * (held - moved)
            bone_poses[i] = resting["bone_poses"][j]
        return {"vertices": vertices, "bone_poses": bone_poses}

    def vertices(self, states: Sequence[BodyState]) -> np.ndarray:
        """(B, V, 3) vertices of the reference mesh for each state."""
        out = self.anny_posed(states)
        anny_vertices, bone_poses = out["vertices"], out["bone_poses"]
        full = np.empty((len(states), self.vertex_count, 3))
        full[:, : self.anny_vertex_count] = anny_vertices
        for b, state in enumerate(states):
            if state.part_scale:
                self._scale_parts(full[b], state.part_scale)
            for slot in self.slots:
                start, stop = self.slot_ranges[slot.name]
                full[b, start:stop] = slot.place(state, anny_vertices[b], bone_poses[b], self.body)
        return full

    def _scale_parts(self, vertices: np.ndarray, part_scale: dict[str, float]) -> None:
        for part, scale in sorted(part_scale.items()):
            if part in ACCESSORY_PARTS:
                continue  # accessory slots apply their own scale when they are placed
            ids = part_vertex_ids(part)
            centre = vertices[ids].mean(axis=0)
            vertices[ids] = centre + (vertices[ids] - centre) * float(scale)

    def check(self, vertices: np.ndarray, what: str = "mesh") -> np.ndarray:
        """Validate a candidate's vertices against this topology, with a clear error."""
        arr = np.asarray(vertices, dtype=np.float64)
        if arr.ndim != 2 or arr.shape[1] != 3:
            raise ValueError(f"{what}: vertices must have shape (V, 3), got {arr.shape}")
        if arr.shape[0] not in (self.vertex_count, self.anny_vertex_count):
            raise ValueError(
                f"{what}: {arr.shape[0]} vertices, but the reference mesh has {self.vertex_count}"
                f" (ANNY SOMA topology: {self.anny_vertex_count}, plus accessory slots)"
            )
        bad = ~np.isfinite(arr).all(axis=1)
        if bad.any():
            raise ValueError(f"{what}: {int(bad.sum())} vertices hold NaN or infinite coordinates (first: {int(np.argmax(bad))})")
        if arr.shape[0] == self.anny_vertex_count:
            # A bare ANNY mesh: accessory slots collapse (no accessories).
            arr = np.concatenate([arr, np.repeat(arr[:1], self.vertex_count - self.anny_vertex_count, axis=0)])
        return arr


@functools.cache
def _skull_ids() -> np.ndarray:
    """ANNY vertices of the skull, which facial actions must not move: hair region and ears."""
    return np.unique(np.concatenate([part_vertex_ids(part) for part in ("front hair", "back hair", "ears")]))


def rigid_fit(source: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(R, source centre, target centre) with R (source - source centre) + target centre ~= target
    in the least-squares sense (Kabsch, no reflection)."""
    source_centre, target_centre = source.mean(axis=0), target.mean(axis=0)
    u, _s, vt = np.linalg.svd((source - source_centre).T @ (target - target_centre))
    sign = np.sign(np.linalg.det(vt.T @ u.T)) or 1.0
    return vt.T @ np.diag([1.0, 1.0, sign]) @ u.T, source_centre, target_centre


@functools.cache
def get_reference_mesh() -> ReferenceMesh:
    return ReferenceMesh(get_body_model())
