"""Where the metric's cameras stand: TRELLIS's Hammersley sphere around the ANNY head.

The ANNY reference frame is Y up, metres, face looking towards +Z (see `body`). A view is a
(yaw, pitch) pair from `sphere_hammersley_sequence`; yaw 0 looks at the face from the front
(+Z), positive yaw turns the camera towards +X, positive pitch raises it above the target.

Degenerate views: the sequence's first sample has pitch exactly -90 degrees (a camera looking
straight up the Y axis, where "up" is undefined). Pitches are therefore clamped to
[min_pitch_deg, max_pitch_deg] (default -30 .. +60 degrees), which keeps every camera well away
from the up axis while keeping the sequence's yaw spread. The lower limit is tighter because a
camera far below the head looks up through the chest (which the near clip plane cuts open). Views from behind are kept: they see the
back of the head and neck, which the consistency dimension compares; part masks are per pixel,
so a view that shows none of the edited part simply contributes nothing to instruction_following.
"""

from __future__ import annotations

import functools
import math

import attrs
import numpy as np

from maskscore_core.plugin.records import BodyState

# Named framings: what the cameras look at, and the default distance and field of view for it.
TARGETS = ("head", "body")


def radical_inverse_base2(n: int) -> float:
    """Van der Corput: mirror n's binary digits about the binary point (0b110 -> 0.011)."""
    if n < 0:
        raise ValueError(f"radical inverse needs a non-negative index, got {n}")
    result, scale = 0.0, 0.5
    while n:
        if n & 1:
            result += scale
        n >>= 1
        scale *= 0.5
    return result


def sphere_hammersley_sequence(n: int, num_samples: int, offset: tuple[float, float] = (0.0, 0.0)) -> tuple[float, float]:
    """The n-th of num_samples points of TRELLIS's Hammersley sphere, as (yaw, pitch) radians.

    u = n / N (+ offset[0] / N), v = radical_inverse_2(n) (+ offset[1]);
    pitch = arccos(1 - 2u) - pi/2 in [-pi/2, pi/2], yaw = 2 pi v.
    """
    if num_samples <= 0:
        raise ValueError(f"num_samples must be positive, got {num_samples}")
    if not 0 <= n < num_samples:
        raise ValueError(f"sample index {n} outside 0..{num_samples - 1}")
    u = n / num_samples + offset[0] / num_samples
    v = radical_inverse_base2(n) + offset[1]
    pitch = math.acos(1.0 - 2.0 * u) - math.pi / 2.0
    yaw = 2.0 * math.pi * v
    return yaw, pitch


def _check_positive(name):
    def check(_instance, _attribute, value):
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise ValueError(f"ViewConfig.{name} must be a positive number, got {value!r}")

    return check


def _check_target(_instance, _attribute, value):
    if isinstance(value, str):
        if value not in TARGETS:
            raise ValueError(f"unknown view target {value!r}; known: {', '.join(TARGETS)} or an (x, y, z) point")
        return
    point = np.asarray(value, dtype=np.float64)
    if point.shape != (3,) or not np.all(np.isfinite(point)):
        raise ValueError(f"view target must be a name or a finite (x, y, z) point, got {value!r}")


def _target_converter(value):
    return value if isinstance(value, str) else tuple(float(x) for x in value)


@attrs.frozen
class ViewConfig:
    """How the metric looks at the mesh. Hashable, so one Mitsuba scene serves one config.

    count views of resolution x resolution pixels; a perspective camera of fov_deg (horizontal)
    at `radius` metres from `target` ("head": the default subject's head centre, "body": the
    middle of its bounding box, or an explicit (x, y, z) point). Pitches are clamped to
    [min_pitch_deg, max_pitch_deg] (see module docstring); `offset` is the Hammersley offset (u, v);
    `clip_margin` sets the near clip plane (see `near_clip`).
    """

    count: int = attrs.field(default=8, validator=_check_positive("count"))
    resolution: int = attrs.field(default=256, validator=_check_positive("resolution"))
    fov_deg: float = attrs.field(default=30.0, validator=_check_positive("fov_deg"))
    radius: float = attrs.field(default=0.6, validator=_check_positive("radius"))
    target: str | tuple[float, float, float] = attrs.field(
        default="head", converter=_target_converter, validator=_check_target
    )
    min_pitch_deg: float = attrs.field(default=-30.0)
    max_pitch_deg: float = attrs.field(default=60.0)
    offset: tuple[float, float] = attrs.field(default=(0.0, 0.0), converter=lambda v: (float(v[0]), float(v[1])))
    clip_margin: float = attrs.field(default=0.25, validator=_check_positive("clip_margin"))

    @property
    def near_clip(self) -> float:
        """Geometry nearer to a camera than radius - clip_margin is not drawn: with the T-pose
        arms, side views of the head would otherwise look through an upper arm."""
        return max(0.01, self.radius - self.clip_margin)

    def __attrs_post_init__(self):
        if not isinstance(self.count, int) or not isinstance(self.resolution, int):
            raise ValueError("ViewConfig.count and .resolution must be integers")
        if not -90.0 < self.min_pitch_deg <= self.max_pitch_deg < 90.0:
            raise ValueError(
                "ViewConfig pitch limits must satisfy -90 < min_pitch_deg <= max_pitch_deg < 90,"
                f" got {self.min_pitch_deg} and {self.max_pitch_deg}"
            )
        if self.fov_deg >= 180.0:
            raise ValueError(f"ViewConfig.fov_deg must be below 180, got {self.fov_deg}")


@attrs.frozen
class CameraPose:
    """One camera: where it is, what it looks at, which way is up (all world space, metres)."""

    yaw: float
    pitch: float
    origin: tuple[float, float, float]
    target: tuple[float, float, float]
    up: tuple[float, float, float] = (0.0, 1.0, 0.0)

    def to_world(self) -> np.ndarray:
        """4x4 camera-to-world matrix in Mitsuba's convention (+Z forward, +Y up, +X left)."""
        origin = np.asarray(self.origin)
        forward = np.asarray(self.target) - origin
        forward /= np.linalg.norm(forward)
        left = np.cross(np.asarray(self.up), forward)
        left /= np.linalg.norm(left)
        up = np.cross(forward, left)
        matrix = np.eye(4)
        matrix[:3, 0], matrix[:3, 1], matrix[:3, 2], matrix[:3, 3] = left, up, forward, origin
        return matrix


@functools.cache
def default_target_point(target: str) -> tuple[float, float, float]:
    """The point a named framing centres on, from the default ANNY subject (all actions 0).

    "head": midway between the SOMA `Head` bone (the skull base) and `HeadEnd` (its top), about
    (0, 0.62, 0.015) m. "body": the centre of the default mesh's bounding box.
    """
    from maskscore_core.body.anny_model import get_body_model

    body = get_body_model()
    out = body.forward([BodyState()])
    if target == "head":
        poses = out["bone_poses"][0]
        head = poses[body.bone_index("Head")][:3, 3]
        head_end = poses[body.bone_index("HeadEnd")][:3, 3]
        point = (head + head_end) / 2.0
    elif target == "body":
        vertices = out["vertices"][0]
        point = (vertices.min(axis=0) + vertices.max(axis=0)) / 2.0
    else:
        raise ValueError(f"unknown view target {target!r}; known: {', '.join(TARGETS)}")
    return tuple(float(x) for x in point)


def resolve_target(config: ViewConfig) -> tuple[float, float, float]:
    """The world point `config`'s cameras look at."""
    if isinstance(config.target, str):
        return default_target_point(config.target)
    return config.target


def camera_poses(config: ViewConfig, target_point: tuple[float, float, float] | None = None) -> list[CameraPose]:
    """config.count cameras on a sphere of config.radius around target_point (default: the
    config's own target), placed by the Hammersley sequence, pitch clamped, Y up."""
    if target_point is None:
        target_point = resolve_target(config)
    centre = np.asarray(target_point, dtype=np.float64)
    lowest, highest = math.radians(config.min_pitch_deg), math.radians(config.max_pitch_deg)
    poses = []
    for n in range(config.count):
        yaw, pitch = sphere_hammersley_sequence(n, config.count, config.offset)
        pitch = min(max(pitch, lowest), highest)
        direction = np.array([math.sin(yaw) * math.cos(pitch), math.sin(pitch), math.cos(yaw) * math.cos(pitch)])
        origin = centre + config.radius * direction
        poses.append(
            CameraPose(
                yaw=yaw,
                pitch=pitch,
                origin=tuple(float(x) for x in origin),
                target=tuple(float(x) for x in centre),
            )
        )
    return poses


def pixel_ray_directions(pose: CameraPose, fov_deg: float, width: int, height: int) -> np.ndarray:
    """(H, W, 3) unit world-space directions of the rays through the pixel centres of `pose`'s
    image, for a perspective camera whose fov_deg spans the smaller image side (Mitsuba's
    `fov_axis="smaller"`). Row 0 is the top of the image, column 0 its left."""
    half = math.tan(math.radians(fov_deg) / 2.0)
    scale = half / min(width, height)
    u = (np.arange(width) + 0.5) * 2.0 - width  # pixel centres, right is positive
    v = (np.arange(height) + 0.5) * 2.0 - height  # down is positive
    x_left = -u[None, :] * scale * np.ones((height, 1))
    y_up = -v[:, None] * scale * np.ones((1, width))
    local = np.stack([x_left, y_up, np.ones((height, width))], axis=-1)
    local /= np.linalg.norm(local, axis=-1, keepdims=True)
    return local @ pose.to_world()[:3, :3].T
