"""The metric's cameras: TRELLIS's Hammersley sphere, clamped away from the up axis."""

from __future__ import annotations

import math

import numpy as np
import pytest

from maskscore_core.metric.views import (
    ViewConfig,
    camera_poses,
    pixel_ray_directions,
    radical_inverse_base2,
    sphere_hammersley_sequence,
)


def test_radical_inverse_mirrors_binary_digits():
    assert [radical_inverse_base2(n) for n in range(6)] == [0.0, 0.5, 0.25, 0.75, 0.125, 0.625]


def test_hammersley_matches_trellis_formula():
    for n in range(8):
        yaw, pitch = sphere_hammersley_sequence(n, 8)
        u = n / 8
        assert pitch == pytest.approx(math.acos(1 - 2 * u) - math.pi / 2)
        assert yaw == pytest.approx(2 * math.pi * radical_inverse_base2(n))
    assert sphere_hammersley_sequence(0, 8) == (0.0, -math.pi / 2)


def test_hammersley_offset_shifts_both_coordinates():
    yaw, pitch = sphere_hammersley_sequence(2, 8, offset=(0.5, 0.25))
    assert pitch == pytest.approx(math.acos(1 - 2 * (2 / 8 + 0.5 / 8)) - math.pi / 2)
    assert yaw == pytest.approx(2 * math.pi * (0.25 + 0.25))


@pytest.mark.parametrize("n, total", [(-1, 8), (8, 8), (0, 0)])
def test_hammersley_rejects_bad_indices(n, total):
    with pytest.raises(ValueError):
        sphere_hammersley_sequence(n, total)


def test_cameras_sit_on_the_sphere_and_look_at_the_target():
    config = ViewConfig(count=8, radius=0.6)
    target = (0.0, 0.6, 0.0)
    for pose in camera_poses(config, target):
        origin = np.asarray(pose.origin)
        assert np.linalg.norm(origin - target) == pytest.approx(0.6)
        forward = pose.to_world()[:3, 2]
        assert forward == pytest.approx((np.asarray(target) - origin) / 0.6)
        rotation = pose.to_world()[:3, :3]
        assert rotation.T @ rotation == pytest.approx(np.eye(3))
        assert np.linalg.det(rotation) == pytest.approx(1.0)


def test_no_camera_looks_along_the_up_axis():
    config = ViewConfig(count=16, min_pitch_deg=-45.0, max_pitch_deg=60.0)
    poses = camera_poses(config, (0.0, 0.0, 0.0))
    pitches = [p.pitch for p in poses]
    assert min(pitches) == pytest.approx(-math.radians(45))  # the sequence's -90 degree sample, clamped
    assert max(pitches) == pytest.approx(math.radians(60))
    assert max(abs(p) for p in pitches) <= math.radians(60) + 1e-12
    for pose in poses:
        forward = pose.to_world()[:3, 2]
        assert abs(forward[1]) <= math.sin(math.radians(60)) + 1e-9


def test_first_view_of_default_head_framing_faces_the_front():
    poses = camera_poses(ViewConfig(count=8))
    yaw0 = [p for p in poses if p.yaw == 0.0][0]
    assert yaw0.origin[2] > yaw0.target[2]  # in front of the face (+Z)


def test_head_target_is_the_head_centre():
    poses = camera_poses(ViewConfig())
    x, y, z = poses[0].target
    assert abs(x) < 0.02 and 0.55 < y < 0.7 and -0.05 < z < 0.08


@pytest.mark.parametrize(
    "kwargs",
    [{"count": 0}, {"resolution": -4}, {"fov_deg": 200.0}, {"radius": float("nan")}, {"target": "feet"},
     {"target": (0.0, float("inf"), 0.0)}, {"max_pitch_deg": 90.0},
     {"min_pitch_deg": 10.0, "max_pitch_deg": 5.0}, {"count": 2.5}],
)  # fmt: skip
def test_bad_view_configs_are_refused(kwargs):
    with pytest.raises(ValueError):
        ViewConfig(**kwargs)


def test_centre_pixel_ray_is_the_viewing_direction():
    pose = camera_poses(ViewConfig(count=4), (0.0, 0.0, 0.0))[1]
    rays = pixel_ray_directions(pose, 30.0, 5, 5)
    assert rays[2, 2] == pytest.approx(pose.to_world()[:3, 2])
    assert np.linalg.norm(rays, axis=-1) == pytest.approx(np.ones((5, 5)))
    # the corner rays sit at the field of view's edge along the smaller side
    assert math.degrees(math.acos(rays[2, 0] @ rays[2, 4])) == pytest.approx(30.0 * 4 / 5, rel=0.02)


def test_framing_puts_a_subjects_head_on_the_default_head():
    """The default subject's framing changes no bit; a moved and scaled copy of it is framed back
    onto it (views are aimed at each subject's own head, docs/metric.md)."""
    from maskscore_core.plugin.records import BodyState
    from maskscore_core.body.reference_mesh import get_reference_mesh
    from maskscore_core.metric.framing import framing_of, subject_framing

    vertices = get_reference_mesh().vertices([BodyState()])[0]
    assert np.array_equal(subject_framing({}).apply(vertices), vertices)
    moved = (vertices - [0.0, 0.6, 0.0]) * 0.85 + [0.02, 0.5, -0.01]  # a smaller subject, lower
    np.testing.assert_allclose(framing_of(moved).apply(moved), vertices, atol=1e-9)
