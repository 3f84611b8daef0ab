"""The reference mesh every modality decodes to: the ANNY body plus fixed accessory slots.

The renderer needs one fixed topology so that one Mitsuba scene serves every candidate. The
reference mesh is ANNY's SOMA mesh followed by one slot per procedural accessory (glasses, hat,
earrings, scarf; see `accessories`). An absent accessory's vertices collapse onto one point, so
its triangles are degenerate and invisible, while the topology stays the same.
"""

from __future__ import annotations

import functools
from typing import Sequence

import numpy as np

from .body import BodyModel, get_body_model
from .records import BodyState
from .vocab import ACCESSORY_PARTS


class ReferenceMesh:
    def __init__(self, body: BodyModel) -> None:
        from . import accessories

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

    def vertices(self, states: Sequence[BodyState]) -> np.ndarray:
        """(B, V, 3) vertices of the reference mesh for each state."""
        out = self.body.forward(states)
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
        from .parts import part_vertex_ids

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
def get_reference_mesh() -> ReferenceMesh:
    return ReferenceMesh(get_body_model())
