"""ANNY's forward pass for a few vertices, differentiable in every input: what fits optimise.

Why not anny's own forward: it computes all 18k rest vertices before the rest bone poses, and a
fit that needs a few hundred points pays for all of them every step. This evaluates anny's own
blendshape coefficients, rest bones, forward kinematics and linear blend skinning for the
chosen vertices only (equal to the full pass to float64 rounding; tested).
"""

from __future__ import annotations

import torch

from maskscore_core.body.anny_model import BodyModel
from maskscore_core.plugin.records import SOMA_BONES


def rotation(rotvec: torch.Tensor) -> torch.Tensor:
    """Axis-angle -> rotation via the matrix exponential: unlike Rodrigues' formula with its
    zero-angle branch, it has a gradient at the identity, where every fit starts."""
    x, y, z = rotvec.unbind(-1)
    zero = torch.zeros_like(x)
    skew = torch.stack([zero, -z, y, z, zero, -x, -y, x, zero], dim=-1).reshape(*rotvec.shape[:-1], 3, 3)
    return torch.linalg.matrix_exp(skew)


class _WithoutRestVertices:
    """A view of the anny model whose rest-vertex step is skipped.

    anny's rest model computes all 18k rest vertices before the rest bone poses; a fit needs a
    few of them, and that full step dominates each iteration (docs/speakingfaces.md, "The fit").
    Running anny's own `_get_cached_rest_model` on this view keeps the bone computation exactly
    anny's."""

    def __init__(self, model) -> None:
        self._model = model

    def __getattr__(self, name):
        return getattr(self._model, name)

    def get_rest_vertices(self, blendshape_coeffs):
        return None


def posed_points(body: BodyModel, states_pose, translation, phenotype, actions, ids) -> torch.Tensor:
    """World positions (B, K, 3) of the vertices `ids`, differentiable in every argument.

    Equal (to float64 rounding; tested) to anny's full forward restricted to `ids`: same
    blendshape coefficients, same rest bones and forward kinematics, and linear blend skinning
    of only those vertices with anny's own weights.
    """
    model = body.torch_model
    batch = states_pose.shape[0]
    local = torch.zeros(batch, SOMA_BONES, 4, 4, dtype=torch.float64)
    local[:, :, :3, :3] = rotation(states_pose)
    local[:, :, 3, 3] = 1.0
    local[:, 0, :3, 3] = translation
    pose_p, pheno_p, local_p, actions_p = model.get_tensor_inputs(local, phenotype, None, actions)
    coeffs = model._get_phenotype_blendshape_coefficients(pheno_p, local_p, actions_p)
    if model.bone_orientation == "cached":
        rest_bones = type(model)._get_cached_rest_model(_WithoutRestVertices(model), coeffs)["rest_bone_poses"]
    else:  # other anny bone orientations: the full (slower) rest model
        rest_bones = model.get_rest_model(coeffs)["rest_bone_poses"]
    transforms, _ = model.get_bone_transforms(pose_p, rest_bones)
    transforms = transforms.expand(batch, -1, -1, -1)
    rest = model.template_vertices[ids] + torch.einsum("bn,nkd->bkd", coeffs, model.blendshapes[:, ids])
    rest = rest.expand(batch, -1, -1)
    weights = model.vertex_bone_weights[ids]  # (K, J)
    per_bone = transforms[:, model.vertex_bone_indices[ids]]  # (B, K, J, 4, 4)
    moved = torch.einsum("bkjxy,bky->bkjx", per_bone[..., :3, :3], rest) + per_bone[..., :3, 3]
    return (weights[None, ..., None] * moved).sum(dim=2)
