"""The common reference frame: the ANNY body model on the SOMA rig and SOMA topology.

Fixed choice (documented in docs/architecture.md): `anny.Anny(rig="soma", topology="soma",
facial_actions="all")`, 78 bones, 18,056 vertices, 36,108 triangles, Y up, metres, face towards +Z. Forward
kinematics and skinning are anny's own; this module only converts SOMA axis-angle poses into
the 4x4 local transforms anny expects and batches the calls.

Skinning is anny's torch linear blend skinning (`SKINNING`), not its default Warp kernel: Warp's
libraries take about 200 MB of every process's memory (and compile their kernels on a machine's
first run) to skin one mesh on a CPU. The two agree to the last bit or two (up to 6.7e-16 m);
the switch is metric revision 9 (`render_compare.METRIC_VERSION`).
"""

from __future__ import annotations

import functools
import threading
from typing import Sequence

import numpy as np
import torch

from maskscore_core import threads
from maskscore_core.plugin.records import FACIAL_ACTIONS, SOMA_BONES, BodyState

RIG = "soma"
TOPOLOGY = "soma"
# Bones the head consists of: the head itself and the child bones that move head vertices
# without moving the head (the jaw and the eyes).
HEAD_CHILD_BONES: tuple[str, ...] = ("Jaw", "LeftEye", "RightEye")
HEAD_BONES: tuple[str, ...] = ("Head", "HeadEnd", *HEAD_CHILD_BONES)


# anny's torch linear blend skinning (module docstring); with it anny never loads Warp, whose
# start would also print a banner on stdout, where commands put their JSON.
SKINNING = "lbs"


class BodyModelError(ValueError):
    """A body state the model cannot evaluate (wrong sizes, unknown phenotype label, ...)."""


def axis_angle_to_matrix(rotvec: torch.Tensor) -> torch.Tensor:
    """Rodrigues' formula, batched: (..., 3) axis-angle -> (..., 3, 3) rotation."""
    angle = torch.linalg.norm(rotvec, dim=-1, keepdim=True)
    safe = torch.where(angle > 1e-12, angle, torch.ones_like(angle))
    axis = rotvec / safe
    x, y, z = axis.unbind(-1)
    zero = torch.zeros_like(x)
    k = torch.stack([zero, -z, y, z, zero, -x, -y, x, zero], dim=-1).reshape(*rotvec.shape[:-1], 3, 3)
    eye = torch.eye(3, dtype=rotvec.dtype).expand_as(k)
    s = torch.sin(angle)[..., None]
    c = torch.cos(angle)[..., None]
    rot = eye + s * k + (1 - c) * (k @ k)
    return torch.where((angle > 1e-12)[..., None], rot, eye)


class BodyModel:
    """ANNY evaluated for batches of `BodyState`s; vertices come back as float64 numpy arrays."""

    def __init__(self) -> None:
        import anny  # heavy import, deferred until a body is needed

        threads.apply()
        with threads.one_thread():  # float64 results independent of the thread count (threads.py)
            self._model = anny.Anny(rig=RIG, topology=TOPOLOGY, facial_actions="all", skinning_method=SKINNING)
        self._model.eval()
        self.bone_names: tuple[str, ...] = tuple(self._model.bone_labels)
        self.action_names: tuple[str, ...] = tuple(self._model.facial_action_labels)
        self.phenotype_names: tuple[str, ...] = tuple(self._model.phenotype_labels)
        self.faces: np.ndarray = self._model.get_triangular_faces().cpu().numpy().astype(np.int64)
        if len(self.bone_names) != SOMA_BONES or len(self.action_names) != FACIAL_ACTIONS:
            raise BodyModelError(
                f"anny returned {len(self.bone_names)} bones and {len(self.action_names)} facial actions;"
                f" MaskScore expects {SOMA_BONES} and {FACIAL_ACTIONS}"
            )
        self.vertex_count = int(self._model.template_vertices.shape[0])
        self._lock = threading.Lock()

    @property
    def torch_model(self):
        """anny's torch module itself, for differentiable fits (landmark fitting); read-only use."""
        return self._model

    def skinning(self) -> tuple[np.ndarray, np.ndarray]:
        """anny's skinning: per-vertex bone weights (V, K) and the bone indices they refer to (V, K)."""
        return (
            self._model.vertex_bone_weights.cpu().numpy(),
            self._model.vertex_bone_indices.cpu().numpy(),
        )

    @functools.cached_property
    def head_weights(self) -> np.ndarray:
        """(V,) how much each vertex is carried by the head: its skinning weight on HEAD_BONES,
        clipped to [0, 1] (read-only)."""
        weights, bones = self.skinning()
        carried = (weights * np.isin(bones, [self.bone_index(name) for name in HEAD_BONES])).sum(axis=1)
        carried = np.clip(carried, 0.0, 1.0)
        carried.flags.writeable = False
        return carried

    def bone_index(self, name: str) -> int:
        try:
            return self.bone_names.index(name)
        except ValueError:
            raise BodyModelError(f"unknown SOMA bone {name!r}") from None

    def action_index(self, name: str) -> int:
        try:
            return self.action_names.index(name)
        except ValueError:
            raise BodyModelError(f"unknown facial action {name!r}") from None

    def _inputs(self, states: Sequence[BodyState]):
        if not states:
            raise BodyModelError("no body states given")
        pose = torch.as_tensor(np.stack([s.pose for s in states]), dtype=torch.float64)
        local = torch.zeros(len(states), SOMA_BONES, 4, 4, dtype=torch.float64)
        local[:, :, :3, :3] = axis_angle_to_matrix(pose)
        local[:, :, 3, 3] = 1.0
        local[:, 0, :3, 3] = torch.as_tensor(np.stack([s.translation for s in states]), dtype=torch.float64)
        phenotype = {}
        for label in self.phenotype_names:
            phenotype[label] = torch.tensor([float(s.phenotype.get(label, 0.5)) for s in states], dtype=torch.float64)
        for state in states:
            unknown = set(state.phenotype) - set(self.phenotype_names)
            if unknown:
                raise BodyModelError(f"unknown phenotype labels {sorted(unknown)}; known: {self.phenotype_names}")
        actions = torch.as_tensor(np.stack([s.expression for s in states]), dtype=torch.float64)
        return local, phenotype, actions

    def forward(self, states: Sequence[BodyState]) -> dict[str, np.ndarray]:
        """Vertices (B, V, 3) and world bone poses (B, 78, 4, 4) for each state."""
        local, phenotype, actions = self._inputs(states)
        with self._lock, torch.no_grad(), threads.one_thread():
            out = self._model(pose_parameters=local, phenotype_kwargs=phenotype, facial_actions=actions)
        return {"vertices": out["vertices"].cpu().numpy(), "bone_poses": out["bone_poses"].cpu().numpy()}

    def vertices(self, states: Sequence[BodyState]) -> np.ndarray:
        return self.forward(states)["vertices"]


def chain_weights(body: BodyModel, chain: Sequence[str]) -> np.ndarray:
    """(V, len(chain)) each vertex's skinning weight carried by each bone of `chain` (a bone's
    weight counts for the nearest bone of the chain at or above it in the skeleton): how much of
    a vertex turns with each of those bones."""
    weights, bones = body.skinning()
    parents = list(body.torch_model.bone_parents)
    members = [body.bone_index(name) for name in chain]

    def group(j):
        while j is not None and j >= 0:
            if j in members:
                return members.index(j)
            j = parents[j]
        return -1

    groups = np.array([group(j) for j in range(len(body.bone_names))])
    return np.stack([(weights * (groups[bones] == k)).sum(axis=1) for k in range(len(members))], axis=1)


@functools.cache
def get_body_model() -> BodyModel:
    """One ANNY model per process (building it is the slow part, even with anny's cache)."""
    return BodyModel()
