"""Fit ANNY's SOMA face to 2D face landmarks (an AnnyInverter-style fit with an L-BFGS polish).

`anny.AnnyInverter` fits ANNY to a target *mesh*; a video frame only gives 2D landmarks. This
module closes that gap: a fixed set of 68 ANNY surface vertices (laid out like the common
68-point face annotation: jaw line, brows, nose, eyes, lips) is projected through a pinhole
camera, and the facial actions (52, kept in [0, 1]), the head bone rotation(s), optionally the
phenotype, and the camera position are optimised so that the projections land on the given
landmarks. Gradients flow through anny's own forward pass (float64): Adam first (robust from a
neutral start), then `torch.optim.LBFGS` to polish.

Camera convention: the camera looks along -Z at the face (ANNY faces +Z, Y up); image u grows
to the right (+X), v grows downwards (-Y); the principal point is the image centre.
"""

from __future__ import annotations

import functools
import math
from typing import Sequence

import attrs
import numpy as np
import torch

from ..body import BodyModel, get_body_model
from ..records import SOMA_BONES, BodyState


class LandmarkFitError(ValueError):
    """Landmarks or a camera the fit cannot use (wrong shape, NaN, a face behind the camera)."""


# ---------------------------------------------------------------------------------------------
# The landmark set: 68 points in a frontal face frame, snapped onto the neutral ANNY surface.
# Coordinates are in units of the distance between the eye centres, origin at their midpoint,
# x towards the subject's left, y downwards (image-like). Measured against the default ANNY
# subject: eye line y = 0, nose tip 0.57, mouth line 1.15, chin 1.8, half-width ~1.05.


def _template_68() -> tuple[tuple[str, tuple[float, float]], ...]:
    points: list[tuple[str, tuple[float, float]]] = []
    for i, t in enumerate(np.linspace(0.0, 1.0, 17)):  # jaw, subject's right ear to left ear
        phi = math.pi * t
        points.append((f"jaw_{i:02d}", (-1.02 * math.cos(phi), 0.1 + 1.62 * math.sin(phi))))
    brow_x = (0.85, 0.70, 0.54, 0.38, 0.22)
    brow_y = (-0.22, -0.32, -0.36, -0.34, -0.28)
    for i, (x, y) in enumerate(zip(brow_x, brow_y)):  # subject's right brow, outer to inner
        points.append((f"brow_right_{i}", (-x, y)))
    for i, (x, y) in enumerate(zip(reversed(brow_x), reversed(brow_y))):  # left brow, inner to outer
        points.append((f"brow_left_{i}", (x, y)))
    for i, y in enumerate((0.12, 0.27, 0.42, 0.57)):  # nose bridge down to the tip
        points.append((f"nose_bridge_{i}", (0.0, y)))
    for i, x in enumerate((-0.28, -0.14, 0.0, 0.14, 0.28)):  # nostrils and columella
        points.append((f"nose_base_{i}", (x, 0.70 + 0.04 * (1 - abs(x) / 0.28))))
    eye = ((-0.23, 0.0), (-0.09, -0.08), (0.09, -0.08), (0.23, 0.0), (0.09, 0.07), (-0.09, 0.07))
    for i, (dx, dy) in enumerate(eye):  # right eye: outer corner, upper lid, inner corner, lower lid
        points.append((f"eye_right_{i}", (-0.5 - dx, dy)))
    for i, (dx, dy) in enumerate(eye):  # left eye: inner corner, upper lid, outer corner, lower lid
        points.append((f"eye_left_{i}", (0.5 - dx, dy)))
    for i in range(12):  # outer lip, from the right corner, over the upper lip, back along the lower
        phi = math.pi - 2 * math.pi * i / 12
        half_height = 0.12 if math.sin(phi) > 0 else 0.16
        points.append((f"lip_outer_{i:02d}", (0.43 * math.cos(phi), 1.15 - half_height * math.sin(phi))))
    for i in range(8):  # inner lip
        phi = math.pi - 2 * math.pi * i / 8
        points.append((f"lip_inner_{i}", (0.30 * math.cos(phi), 1.15 - 0.025 * math.sin(phi))))
    return tuple(points)


@attrs.frozen
class FaceLandmarks:
    """The landmark set: names (68, in the 68-point order) and the ANNY vertex each sits on."""

    names: tuple[str, ...]
    vertex_ids: np.ndarray = attrs.field(eq=attrs.cmp_using(eq=np.array_equal))

    def __len__(self) -> int:
        return len(self.names)


@functools.cache
def face_landmarks() -> FaceLandmarks:
    """Snap each template point onto the frontmost neutral-ANNY vertex in front of it.

    Deterministic (fixed template, fixed mesh): the same vertex ids every run. The snapping
    uses the eye bones to place and scale the template on the default subject's face.
    """
    body = get_body_model()
    out = body.forward([BodyState()])
    vertices, bones = out["vertices"][0], out["bone_poses"][0]
    left = bones[body.bone_index("LeftEye")][:3, 3]
    right = bones[body.bone_index("RightEye")][:3, 3]
    centre = (left + right) / 2
    unit = float(np.linalg.norm(left - right))
    head = (vertices[:, 1] > centre[1] - 2.5 * unit) & (vertices[:, 2] > centre[2] - 1.5 * unit)
    head &= np.abs(vertices[:, 0] - centre[0]) < 1.6 * unit
    candidates = np.flatnonzero(head)
    names, ids = [], []
    for name, (x, y) in _template_68():
        target = np.array([centre[0] + x * unit, centre[1] - y * unit])
        planar = np.linalg.norm(vertices[candidates, :2] - target, axis=1)
        for radius in (0.05, 0.1, 0.2, 0.4):
            near = candidates[planar < radius * unit]
            if len(near):
                break
        else:
            raise LandmarkFitError(f"landmark {name!r}: no ANNY vertex near the template point")
        names.append(name)
        ids.append(int(near[np.argmax(vertices[near, 2])]))
    if len(set(ids)) != len(ids):
        raise LandmarkFitError("two landmarks snapped onto the same ANNY vertex; the template is too dense")
    return FaceLandmarks(tuple(names), np.asarray(ids, dtype=np.int64))


# ---------------------------------------------------------------------------------------------
# Camera


@attrs.frozen
class PinholeCamera:
    """Intrinsics of the frame the landmarks come from (principal point at the image centre)."""

    width: int
    height: int
    focal_px: float

    def __attrs_post_init__(self) -> None:
        if self.width <= 0 or self.height <= 0 or not (self.focal_px > 0 and math.isfinite(self.focal_px)):
            raise LandmarkFitError(f"invalid camera {self.width}x{self.height}, focal {self.focal_px} px")

    @classmethod
    def from_diagonal_fov(cls, width: int, height: int, diagonal_fov_deg: float) -> "PinholeCamera":
        """E.g. SpeakingFaces' Logitech C920: 768x512 at 78 degrees diagonal."""
        half_diagonal = math.hypot(width, height) / 2
        return cls(width, height, half_diagonal / math.tan(math.radians(diagonal_fov_deg) / 2))

    def project(self, points: torch.Tensor, camera_position: torch.Tensor) -> torch.Tensor:
        """(..., 3) world points -> (..., 2) pixels, for a camera at `camera_position` looking along -Z."""
        rel = points - camera_position
        depth = -rel[..., 2]
        u = self.focal_px * rel[..., 0] / depth + self.width / 2
        v = -self.focal_px * rel[..., 1] / depth + self.height / 2
        return torch.stack([u, v], dim=-1)


SPEAKINGFACES_CAMERA = PinholeCamera.from_diagonal_fov(768, 512, 78.0)


# ---------------------------------------------------------------------------------------------
# Forward model shared by projection and fitting


def _rotation(rotvec: torch.Tensor) -> torch.Tensor:
    """Axis-angle -> rotation via the matrix exponential: unlike Rodrigues' formula with its
    zero-angle branch, it has a gradient at the identity, where every fit starts."""
    x, y, z = rotvec.unbind(-1)
    zero = torch.zeros_like(x)
    skew = torch.stack([zero, -z, y, z, zero, -x, -y, x, zero], dim=-1).reshape(*rotvec.shape[:-1], 3, 3)
    return torch.linalg.matrix_exp(skew)


class _WithoutRestVertices:
    """A view of the anny model whose rest-vertex step is skipped.

    anny's rest model computes all 18k rest vertices before the rest bone poses; the fit needs
    only 68 vertices, and that full step dominates each iteration (~40-250 ms). Running anny's
    own `_get_cached_rest_model` on this view keeps the bone computation exactly anny's."""

    def __init__(self, model) -> None:
        self._model = model

    def __getattr__(self, name):
        return getattr(self._model, name)

    def get_rest_vertices(self, blendshape_coeffs):
        return None


def _landmark_points(body: BodyModel, states_pose, translation, phenotype, actions, ids) -> torch.Tensor:
    """World positions (B, K, 3) of landmark vertices, differentiable in every argument.

    Equal (to float64 rounding; tested) to anny's full forward restricted to `ids`: same
    blendshape coefficients, same rest bones and forward kinematics, and linear blend skinning
    of only the landmark vertices with anny's own weights.
    """
    model = body.torch_model
    batch = states_pose.shape[0]
    local = torch.zeros(batch, SOMA_BONES, 4, 4, dtype=torch.float64)
    local[:, :, :3, :3] = _rotation(states_pose)
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


def _phenotype_tensors(body: BodyModel, phenotype: dict[str, float]) -> dict[str, torch.Tensor]:
    unknown = set(phenotype) - set(body.phenotype_names)
    if unknown:
        raise LandmarkFitError(f"unknown phenotype labels {sorted(unknown)}; known: {body.phenotype_names}")
    return {k: torch.tensor([float(phenotype.get(k, 0.5))], dtype=torch.float64) for k in body.phenotype_names}


def project_landmarks(state: BodyState, camera: PinholeCamera, camera_position: Sequence[float]) -> np.ndarray:
    """(68, 2) pixel positions of the landmark set for a known body state (the fit's inverse)."""
    body = get_body_model()
    ids = torch.as_tensor(face_landmarks().vertex_ids)
    with torch.no_grad():
        points = _landmark_points(
            body,
            torch.as_tensor(state.pose[None], dtype=torch.float64),
            torch.as_tensor(state.translation[None], dtype=torch.float64),
            _phenotype_tensors(body, state.phenotype),
            torch.as_tensor(state.expression[None], dtype=torch.float64),
            ids,
        )
        pixels = camera.project(points[0], torch.as_tensor(camera_position, dtype=torch.float64))
    return pixels.numpy()


# ---------------------------------------------------------------------------------------------
# The fit


@attrs.frozen
class FitConfig:
    """What the fit optimises and for how long.

    bones: SOMA bones whose rotation is fitted. From face landmarks alone, the neck bones and the
    head bone are not separable (they all turn the head), so the default puts the whole head
    rotation on `Head`; the jaw is driven by the `jawOpen` action, not by the Jaw bone, unless
    "Jaw" is listed. action_prior / rotation_prior: small L2 pulls towards neutral that keep the
    52 actions (more unknowns than a face's landmarks pin down) from drifting where no landmark
    sees them (tongue, eye gaze).
    """

    bones: tuple[str, ...] = ("Head",)
    fit_phenotype: bool = False
    adam_steps: int = 100
    adam_lr: float = 0.03
    lbfgs_steps: int = 300
    action_prior: float = 1e-6
    rotation_prior: float = 1e-6


@attrs.frozen
class FitResult:
    state: BodyState
    camera_position: np.ndarray = attrs.field(eq=attrs.cmp_using(eq=np.array_equal))
    predicted_px: np.ndarray = attrs.field(eq=attrs.cmp_using(eq=np.array_equal))
    mean_error_px: float
    max_error_px: float
    evaluations: int = 0


def _check_landmarks(landmarks_px, count: int) -> np.ndarray:
    arr = np.asarray(landmarks_px, dtype=np.float64)
    if arr.shape != (count, 2):
        raise LandmarkFitError(f"expected ({count}, 2) landmark pixels (the 68-point layout), got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise LandmarkFitError("landmarks hold NaN or infinite coordinates")
    return arr


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


def fit_landmarks(
    landmarks_px,
    camera: PinholeCamera = SPEAKINGFACES_CAMERA,
    phenotype: dict[str, float] | None = None,
    config: FitConfig = FitConfig(),
    init: BodyState | None = None,
) -> FitResult:
    """Recover a SOMA body state (face actions, head rotation) and camera from 68 landmarks.

    phenotype: the subject's phenotype when known (else ANNY's average); with
    `config.fit_phenotype` it is a starting point that the fit refines. init: a warm start
    (e.g. the previous frame's fit). Deterministic: no random initialisation.

    Runs on one torch thread: the problem is small (68 points), and on a shared 2-core machine
    two threads made each iteration ~15x slower (0.5 s instead of 0.03 s), measured.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _fit(landmarks_px, camera, phenotype, config, init)
    finally:
        torch.set_num_threads(threads)


def _fit(landmarks_px, camera, phenotype, config, init) -> FitResult:
    body = get_body_model()
    landmarks = face_landmarks()
    target = torch.as_tensor(_check_landmarks(landmarks_px, len(landmarks)))
    ids = torch.as_tensor(landmarks.vertex_ids)
    bone_ids = [body.bone_index(name) for name in config.bones]
    init = init or BodyState(phenotype=dict(phenotype or {}))
    pheno0 = _phenotype_tensors(body, dict(phenotype if phenotype is not None else init.phenotype))

    # Parameters. Actions live in [0, 1] through a sigmoid; phenotype likewise.
    start = np.clip(init.expression, 0.02, 0.98)
    raw_actions = torch.tensor([_logit(p) for p in start], dtype=torch.float64, requires_grad=True)
    rotations = torch.tensor(init.pose[bone_ids], dtype=torch.float64, requires_grad=True)
    raw_pheno = torch.tensor(
        [_logit(min(max(float(pheno0[k][0]), 0.02), 0.98)) for k in body.phenotype_names],
        dtype=torch.float64,
        requires_grad=config.fit_phenotype,
    )
    base_pose = torch.as_tensor(init.pose, dtype=torch.float64)
    translation = torch.as_tensor(init.translation[None], dtype=torch.float64)

    def points_of(raw_a, rot, raw_p):
        pose = base_pose.clone()
        pose[bone_ids] = rot
        if config.fit_phenotype:
            pheno = {k: torch.sigmoid(raw_p[i])[None] for i, k in enumerate(body.phenotype_names)}
        else:  # exactly the given phenotype (a sigmoid could not reach 0 or 1)
            pheno = pheno0
        return _landmark_points(body, pose[None], translation, pheno, torch.sigmoid(raw_a)[None], ids)[0]

    # Camera initialisation from the neutral face: centre on the landmarks, depth from their spread.
    with torch.no_grad():
        neutral = points_of(raw_actions, rotations, raw_pheno)
        spread_3d = float(torch.linalg.norm(neutral[:, :2] - neutral[:, :2].mean(0), dim=1).mean())
        spread_2d = float(torch.linalg.norm(target - target.mean(0), dim=1).mean())
        if spread_2d <= 0:
            raise LandmarkFitError("all landmarks lie on one pixel; cannot fit a face to them")
        depth = camera.focal_px * spread_3d / spread_2d
        centre_px = target.mean(0)
        centre_3d = neutral.mean(0)
        cam0 = torch.stack(
            [
                centre_3d[0] - (centre_px[0] - camera.width / 2) * depth / camera.focal_px,
                centre_3d[1] + (centre_px[1] - camera.height / 2) * depth / camera.focal_px,
                centre_3d[2] + depth,
            ]
        )
    # The camera moves in units of a tenth of its distance, so one optimiser step means the same
    # to it as to the rotations (radians) and the actions (logits).
    cam_delta = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    cam_unit = 0.1 * depth
    scale = spread_2d  # residuals in units of the landmarks' spread: independent of image size

    evaluations = [0]

    def loss_fn(with_actions: bool = True):
        evaluations[0] += 1
        pts = points_of(raw_actions if with_actions else raw_actions.detach(), rotations, raw_pheno)
        cam = cam0 + cam_unit * cam_delta
        if bool((cam[2] - pts[:, 2] <= 1e-3).any()):
            raise LandmarkFitError("the fitted face crossed the camera plane; check the landmarks and camera")
        pred = camera.project(pts, cam)
        residual = ((pred - target) / scale).pow(2).sum(-1).mean()
        prior = config.action_prior * torch.sigmoid(raw_actions).pow(2).sum()
        prior = prior + config.rotation_prior * rotations.pow(2).sum()
        return residual + prior

    # Stage 1: rigid (head rotation + camera), stage 2: everything with Adam, stage 3: L-BFGS.
    rigid = torch.optim.Adam([rotations, cam_delta], lr=config.adam_lr)
    for _ in range(max(1, config.adam_steps // 4)):
        rigid.zero_grad()
        loss_fn(with_actions=False).backward()
        rigid.step()
    params = [raw_actions, rotations, cam_delta] + ([raw_pheno] if config.fit_phenotype else [])
    adam = torch.optim.Adam(params, lr=config.adam_lr)
    for _ in range(config.adam_steps):
        adam.zero_grad()
        loss_fn().backward()
        adam.step()
    if config.lbfgs_steps > 0:
        lbfgs = torch.optim.LBFGS(
            params,
            lr=1.0,
            max_iter=config.lbfgs_steps,
            tolerance_grad=1e-12,
            tolerance_change=1e-15,
            history_size=20,
            line_search_fn="strong_wolfe",
        )

        def closure():
            lbfgs.zero_grad()
            value = loss_fn()
            value.backward()
            return value

        lbfgs.step(closure)

    with torch.no_grad():
        pts = points_of(raw_actions, rotations, raw_pheno)
        cam = cam0 + cam_unit * cam_delta
        pred = camera.project(pts, cam).numpy()
        pose = init.pose.copy()
        pose[bone_ids] = rotations.numpy()
        pheno_out = {k: float(torch.sigmoid(raw_pheno[i])) for i, k in enumerate(body.phenotype_names)}
        if not config.fit_phenotype:
            pheno_out = {k: float(pheno0[k][0]) for k in body.phenotype_names}
        actions = np.clip(torch.sigmoid(raw_actions).numpy(), 0.0, 1.0)
    errors = np.linalg.norm(pred - target.numpy(), axis=1)
    if not np.isfinite(errors).all():
        raise LandmarkFitError("the fit diverged (non-finite landmark projections)")
    state = BodyState(
        phenotype=dict(sorted(pheno_out.items())),
        pose=pose,
        translation=init.translation,
        expression=actions,
        accessories=init.accessories,
        part_scale=dict(init.part_scale),
    )
    return FitResult(
        state=state,
        camera_position=cam.detach().numpy().copy(),
        predicted_px=pred,
        mean_error_px=float(errors.mean()),
        max_error_px=float(errors.max()),
        evaluations=evaluations[0],
    )


__all__ = [
    "FaceLandmarks",
    "FitConfig",
    "FitResult",
    "LandmarkFitError",
    "PinholeCamera",
    "SPEAKINGFACES_CAMERA",
    "face_landmarks",
    "fit_landmarks",
    "project_landmarks",
]
