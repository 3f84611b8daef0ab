"""The Mitsuba renderer: deterministic, geometrically right (checked against an independent ray
cast), one scene reused across meshes, clear errors on bad vertices."""

from __future__ import annotations

import numpy as np
import pytest

from maskscore_core.plugin.records import BodyState
from maskscore_core.body.reference_mesh import get_reference_mesh
from maskscore_core.metric.render import RenderError, RenderResult, Renderer, find_llvm, get_renderer, select_variant
from maskscore_core.metric.views import ViewConfig, pixel_ray_directions

SMALL = ViewConfig(count=4, resolution=64)

# Independent ray cast vs Mitsuba: the same triangles and rays, float64 numpy against Mitsuba's
# float32 kernels. Depth may differ by float32 rounding only: 1e-4 m (0.1 mm).
DEPTH_TOLERANCE_M = 1e-4


@pytest.fixture(scope="module")
def meshes():
    reference = get_reference_mesh()
    body = reference.body
    open_jaw = np.zeros(52)
    open_jaw[body.action_index("jawOpen")] = 0.8
    neutral, jaw = reference.vertices([BodyState(), BodyState(expression=open_jaw)])
    return {"neutral": neutral, "jaw": jaw, "faces": reference.faces}


def test_variant_is_llvm_when_a_new_llvm_is_installed():
    if find_llvm() is None:
        pytest.skip("no libLLVM >= 16 on this machine")
    assert select_variant() in ("llvm_ad_rgb", "cuda_ad_rgb")


def test_render_shapes_and_background_conventions(meshes):
    result = get_renderer(SMALL).render(meshes["neutral"])
    assert isinstance(result, RenderResult)
    assert result.depth.shape == (4, 64, 64) and result.depth.dtype == np.float32
    assert result.normals.shape == (4, 64, 64, 3) and result.normals.dtype == np.float32
    assert result.face_id.dtype == np.int32 and result.coverage.dtype == bool
    cov = result.coverage
    assert 0.1 < cov.mean() < 0.9  # the head fills part of each frame, not all of it
    assert (result.face_id[~cov] == -1).all() and (result.face_id[cov] >= 0).all()
    assert (result.depth[~cov] == 0).all() and (result.depth[cov] > 0).all()
    assert np.abs(result.normals[~cov]).max() == 0
    lengths = np.linalg.norm(result.normals[cov], axis=-1)
    assert np.allclose(lengths, 1.0, atol=1e-3)
    assert result.face_id.max() < len(meshes["faces"])


def test_rendering_is_byte_identical_and_scene_reuse_does_not_leak(meshes):
    renderer = get_renderer(SMALL)
    first = renderer.render(meshes["neutral"])
    other = renderer.render(meshes["jaw"])
    again = renderer.render(meshes["neutral"])
    for name in ("depth", "normals", "face_id", "coverage"):
        assert getattr(first, name).tobytes() == getattr(again, name).tobytes(), name
    assert not np.array_equal(first.depth, other.depth)
    fresh = Renderer(SMALL).render(meshes["jaw"])  # a new scene built around the second mesh
    assert fresh.depth.tobytes() == other.depth.tobytes()
    assert fresh.normals.tobytes() == other.normals.tobytes()


def test_normals_face_the_camera(meshes):
    renderer = get_renderer(SMALL)
    result = renderer.render(meshes["neutral"])
    for k, pose in enumerate(renderer.poses):
        rays = pixel_ray_directions(pose, SMALL.fov_deg, 64, 64)
        facing = (result.normals[k] * rays).sum(-1)[result.coverage[k]]
        assert (facing < 0).mean() > 0.95  # world-space normals point back towards the eye


def _ray_cast(origins, directions, triangles, chunk=64):
    """Moller-Trumbore in float64: nearest hit distance and triangle index per ray (inf, -1)."""
    v0 = triangles[:, 0]
    e1, e2 = triangles[:, 1] - v0, triangles[:, 2] - v0
    nearest = np.full(len(origins), np.inf)
    index = np.full(len(origins), -1)
    for s in range(0, len(origins), chunk):
        d, o = directions[s : s + chunk, None], origins[s : s + chunk, None]
        p = np.cross(d, e2[None])
        det = (e1[None] * p).sum(-1)
        ok = np.abs(det) > 1e-14
        inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
        tvec = o - v0[None]
        u = (tvec * p).sum(-1) * inv
        q = np.cross(tvec, e1[None])
        v = (d * q).sum(-1) * inv
        t = (e2[None] * q).sum(-1) * inv
        t = np.where(ok & (u >= 0) & (v >= 0) & (u + v <= 1) & (t > 0), t, np.inf)
        best = t.argmin(axis=1)
        nearest[s : s + chunk] = t[np.arange(len(best)), best]
        index[s : s + chunk] = np.where(np.isfinite(nearest[s : s + chunk]), best, -1)
    return nearest, index


def test_depth_agrees_with_an_independent_ray_cast(meshes):
    config = ViewConfig(count=2, resolution=32)
    renderer = get_renderer(config)
    vertices = meshes["jaw"]
    result = renderer.render(vertices)
    triangles = vertices[meshes["faces"]]
    for k, pose in enumerate(renderer.poses):
        world = pose.to_world()
        rays = pixel_ray_directions(pose, config.fov_deg, 32, 32).reshape(-1, 3)
        cos = rays @ world[:3, 2]
        origins = np.asarray(pose.origin) + rays * (config.near_clip / cos)[:, None]  # start at the near plane
        # cull triangles wholly behind the near plane or outside the view cone, for speed only
        local = (triangles - np.asarray(pose.origin)) @ world[:3, :3]
        in_front = (local[..., 2] > config.near_clip).any(axis=1)
        cone = (np.hypot(local[..., 0], local[..., 1]) < local[..., 2] * 0.5 + 0.05).any(axis=1)
        keep = np.flatnonzero(in_front & cone)
        t, hit = _ray_cast(origins, rays, triangles[keep])
        covered = np.isfinite(t).reshape(32, 32)
        depth = np.where(np.isfinite(t), t + config.near_clip / cos, 0.0).reshape(32, 32)
        face = np.where(hit >= 0, keep[np.maximum(hit, 0)], -1).reshape(32, 32)
        assert covered.sum() > 100
        assert (covered == result.coverage[k]).mean() > 0.995  # grazing edge rays may differ
        both = covered & result.coverage[k]
        error = np.abs(depth[both] - result.depth[k][both])
        assert np.median(error) < DEPTH_TOLERANCE_M / 10
        assert (error < DEPTH_TOLERANCE_M).mean() > 0.995
        assert (face[both] == result.face_id[k][both]).mean() > 0.99


def test_render_rgb_is_a_deterministic_picture(meshes):
    renderer = get_renderer(SMALL)
    image = renderer.render_rgb(meshes["neutral"], 48, 32, view_index=1)
    assert image.shape == (32, 48, 3) and image.dtype == np.uint8
    assert image.tobytes() == renderer.render_rgb(meshes["neutral"], 48, 32, view_index=1).tobytes()
    assert len(np.unique(image.reshape(-1, 3), axis=0)) > 20  # shaded, not a flat silhouette
    with pytest.raises(ValueError, match="view_index"):
        renderer.render_rgb(meshes["neutral"], 48, 32, view_index=4)


def test_bad_vertices_are_refused_with_the_reason(meshes):
    renderer = get_renderer(SMALL)
    broken = meshes["neutral"].copy()
    broken[7, 1] = np.nan
    with pytest.raises(ValueError, match="NaN or infinite"):
        renderer.render(broken)
    with pytest.raises(ValueError, match="vertices"):
        renderer.render(meshes["neutral"][:-5])
    with pytest.raises(ValueError, match="shape"):
        renderer.render(meshes["neutral"][:, :2])


@pytest.mark.parametrize(
    "name, major",
    [("libLLVM.so.19.1", 19), ("libLLVM-17.so", 17), ("libLLVM-15.so.1", 15), ("libLLVM.so", None), ("libLLVM.so.x", None)],
)
def test_llvm_versions_are_read_from_library_names(name, major):
    from maskscore_core.metric.render import _llvm_major

    assert _llvm_major(f"/usr/lib/x86_64-linux-gnu/{name}") == major


def test_frustum_culling_leaves_the_renders_unchanged(meshes, monkeypatch):
    """Faces no view can show are left out of Mitsuba's scene (a cheaper BVH rebuild); the
    passes must be bit-for-bit those of the whole mesh, face ids included."""
    from maskscore_core.metric import render

    config = ViewConfig(count=3, resolution=48)
    poses = render.camera_poses(config)
    shown = render.faces_in_view(meshes["jaw"], meshes["faces"], poses, config.fov_deg, config.near_clip, 48, 48)
    assert 0.1 < len(shown) / len(meshes["faces"]) < 0.9  # the head framing leaves most of the body out
    culled = Renderer(config).render(meshes["jaw"])
    monkeypatch.setattr(render, "faces_in_view", lambda vertices, faces, *rest: np.arange(len(faces)))
    whole = Renderer(config).render(meshes["jaw"])
    for name in ("depth", "normals", "face_id", "coverage"):
        assert getattr(culled, name).tobytes() == getattr(whole, name).tobytes(), name
    assert np.isin(culled.face_id[culled.coverage], shown).all()


def test_a_window_is_rendered_as_the_whole_view_renders_it_there(meshes, monkeypatch):
    """`render_window` renders one rectangle of a view (Mitsuba's film crop, the faces culled to
    the window's frustum): the passes of the whole view there, to float32 rounding of the rays
    (a rare edge pixel may flip), and culling to the window changes nothing."""
    from maskscore_core.metric import render

    config = ViewConfig(count=1, resolution=160)
    renderer = Renderer(config)
    whole = renderer.render(meshes["jaw"])
    x, y, w, h = window = (40, 30, 70, 90)
    part = renderer.render_window(meshes["jaw"], window)
    assert part.depth.shape == (1, h, w) and part.normals.shape == (1, h, w, 3)
    same = part.face_id[0] == whole.face_id[0, y : y + h, x : x + w]
    assert same.mean() > 0.998 and part.coverage[0].sum() > 0.3 * w * h
    assert np.abs(part.depth[0] - whole.depth[0, y : y + h, x : x + w])[same].max() < DEPTH_TOLERANCE_M
    pose = render.camera_poses(config)
    shown = render.faces_in_view(meshes["jaw"], meshes["faces"], pose, config.fov_deg, config.near_clip, 160, 160, window)
    everywhere = render.faces_in_view(meshes["jaw"], meshes["faces"], pose, config.fov_deg, config.near_clip, 160, 160)
    assert len(shown) < 0.9 * len(everywhere) and np.isin(shown, everywhere).all()
    monkeypatch.setattr(render, "faces_in_view", lambda vertices, faces, *rest: np.arange(len(faces)))
    unculled = Renderer(config).render_window(meshes["jaw"], window)
    for name in ("depth", "normals", "face_id", "coverage"):
        assert getattr(part, name).tobytes() == getattr(unculled, name).tobytes(), name


@pytest.mark.parametrize("window", [(-1, 0, 10, 10), (0, 0, 0, 10), (100, 100, 80, 10)])
def test_a_window_outside_the_view_is_refused(meshes, window):
    with pytest.raises(RenderError, match="render window"):
        Renderer(ViewConfig(count=1, resolution=160)).render_window(meshes["jaw"], window)
