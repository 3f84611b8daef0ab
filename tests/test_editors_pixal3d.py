"""pixal3d: one line naming what is missing here (package, CUDA, weights); its camera agrees with
Pixal3D's own projection; its post-processing turns a mesh in Pixal3D's frame into a candidate
that is scored (a remeshed ANNY body stands in for the model's output, which needs a GPU)."""

from __future__ import annotations

import importlib.util
import json
import math

import numpy as np
import pytest

from maskscore_core.plugin import manager as plugins
from maskscore_core.plugin.context import Context
from maskscore_core.plugin.testing import face_state, unit_instance

pytestmark = pytest.mark.maskscore_plugins("maskscore-pixal3d", "maskscore-mesh")


def _instance():
    return unit_instance("mesh", "edit the mouth to match frame B", "expression_change", face_state(), face_state(jawOpen=0.8))


@pytest.mark.skipif(importlib.util.find_spec("pixal3d") is not None, reason="Pixal3D is installed here")
def test_edit_names_the_missing_package_in_one_line(tmp_path):
    from maskscore_pixal3d import Pixal3DUnavailable

    with pytest.raises(Pixal3DUnavailable, match=r"pixal3d needs the Python package 'pixal3d' \(not on PyPI") as err:
        plugins.call("edit", "pixal3d", editor="pixal3d", modality="mesh", instance=None, ctx=Context(workdir=tmp_path))
    assert "\n" not in str(err.value)
    assert "needs the Python package 'pixal3d'" in plugins.lookup("editor", "pixal3d").obj.description


def test_each_prerequisite_is_named(monkeypatch, tmp_path):
    import maskscore_pixal3d as p

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object())
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert p.missing() == "pixal3d needs a CUDA GPU (torch.cuda.is_available() is False)"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.delenv(p.ENV, raising=False)
    assert "--editor-option weights=DIR or set MASKSCORE_PIXAL3D_WEIGHTS" in p.missing()
    ctx = Context(workdir=tmp_path, config={"editor_options": {"weights": str(tmp_path)}})
    assert p.missing(ctx) == f"pixal3d weights: {tmp_path / 'pipeline.json'} is missing"
    (tmp_path / "pipeline.json").write_text("{}")
    assert p.missing(ctx) == f"pixal3d weights: {tmp_path / p.pipeline.DINO_DIR / 'config.json'} is missing"
    (tmp_path / p.pipeline.DINO_DIR).mkdir()
    (tmp_path / p.pipeline.DINO_DIR / "config.json").write_text("{}")
    assert p.missing(ctx) is None
    with pytest.raises(ValueError, match="pipeline_type 'x'"):
        p.missing(Context(workdir=tmp_path, config={"editor_options": {"pipeline_type": "x"}}))


def _upstream_projection(points, params, resolution):
    """Pixal3D's own projection of output-frame points (upstream `ProjGrid.forward` and
    `project_points_to_image_batch`, numpy): (N, 2) pixel coordinates, depth."""
    rotation = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])
    world = (2.0 * points) @ rotation.T / params["mesh_scale"] / 2.0  # grid points g = 2 v
    transform = np.array([[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, -1.0, -params["distance"]], [0.0, 1.0, 0.0, 0.0], [0, 0, 0, 1.0]])
    cam = (np.concatenate([world, np.ones((len(world), 1))], axis=1) @ np.linalg.inv(transform).T)[:, :3]
    depth = -cam[:, 2]
    focal = 16.0 / math.tan(params["camera_angle_x"] / 2.0) * resolution / 32.0
    return np.stack([focal * cam[:, 0] / depth + resolution / 2.0, -focal * cam[:, 1] / depth + resolution / 2.0], axis=1), depth


def test_the_camera_agrees_with_pixal3d_projection():
    """Where our renderer draws a triangle, Pixal3D's projection of it (through `from_world`)
    lands (its centroid within a pixel or so; the hit point itself exactly): the camera
    convention, field of view, distance and axes are Pixal3D's."""
    from maskscore_core.body.reference_mesh import get_reference_mesh
    from maskscore_core.metric.render import get_renderer
    from maskscore_core.metric.framing import subject_framing
    from maskscore_core.metric.views import ViewConfig, camera_poses, pixel_ray_directions
    from maskscore_pixal3d import camera

    size = 128
    for yaw, pitch in ((0.0, 0.0), (40.0, 15.0)):
        view = camera.picture_view(ViewConfig(), yaw, pitch, size)
        params = camera.camera_params(view)
        state = face_state(jawOpen=0.5)
        reference = get_reference_mesh()
        framed = subject_framing(state.phenotype).apply(reference.vertices([state])[0])
        result = get_renderer(view).render(framed)
        rows, cols = np.nonzero(result.coverage[0])
        centroids = framed[reference.faces[result.face_id[0][rows, cols]]].mean(axis=1)
        pixels, depth = _upstream_projection(camera.from_world(centroids, view, params), params, size)
        error = np.hypot(pixels[:, 0] - (cols + 0.5), pixels[:, 1] - (rows + 0.5))
        assert (depth > 0).all()
        assert np.median(error) < 1.0 and np.percentile(error, 99) < 3.0, (yaw, pitch, np.median(error))
        # the very points the renderer hit (its depth along each pixel's ray) land on their pixels' centres
        (pose,) = camera_poses(view)
        hits = np.asarray(pose.origin) + result.depth[0][rows, cols, None] * pixel_ray_directions(pose, view.fov_deg, size, size)[rows, cols]
        pixels, _ = _upstream_projection(camera.from_world(hits, view, params), params, size)
        assert np.abs(pixels - np.stack([cols + 0.5, rows + 0.5], axis=1)).max() < 1e-6
        np.testing.assert_allclose(camera.to_world(camera.from_world(framed, view, params), view, params), framed, atol=1e-12)
    # upstream inference's distance_from_fov for the cube edge at pixel 0 (extend_pixel 0)
    angle, scale = params["camera_angle_x"], 0.7
    focal = 16.0 / math.tan(angle / 2.0) * 512 / 32.0
    upstream = focal * (-0.5 / scale) / (-512 / 2.0)
    assert camera.camera_params(view, scale)["distance"] == pytest.approx(upstream, rel=1e-12)


def test_the_picture_is_frame_a_with_the_edited_part_on_black(ctx):
    from maskscore_core.metric.framing import subject_framing
    from maskscore_core.metric.views import ViewConfig
    from maskscore_pixal3d import camera, picture

    instance = _instance()
    view = camera.picture_view(ViewConfig(), 0.0, 0.0, 96)
    framing = subject_framing(instance.a.state.phenotype)
    edited = picture(instance, view, framing, ctx)
    same = picture(unit_instance("mesh", "edit the mouth", "expression_change", face_state(), face_state()), view, framing, ctx)
    assert edited.shape == (96, 96, 3) and edited.dtype == np.uint8
    assert (edited[0] == 0).all() and (edited[:, 0] == 0).all()  # black around the head
    changed = (edited != same).any(axis=-1)
    rows = np.nonzero(changed)[0]
    assert changed.sum() > 20 and rows.min() > 96 // 2  # the open jaw, in the lower half of the face


class _StandIn:
    """What `Pixal3DImageTo3DPipeline.run` returns (`MeshWithVoxel`: vertices and faces as
    tensors), holding a remeshed ANNY body put into Pixal3D's frame."""

    def __init__(self, vertices, faces):
        import torch

        self.vertices = torch.as_tensor(vertices, dtype=torch.float32)
        self.faces = torch.as_tensor(faces, dtype=torch.int32)


def test_a_remeshed_body_in_pixal3d_frame_becomes_a_scored_candidate(ctx):
    from maskscore_core.body import remesh
    from maskscore_core.body.reference_mesh import get_reference_mesh
    from maskscore_core.edits.ladder import ideal_edit
    from maskscore_core.metric.foreign_mesh import ForeignMesh
    from maskscore_core.metric.framing import subject_framing
    from maskscore_core.metric.views import ViewConfig, resolve_target
    from maskscore_core.plugin.model_editors import EditError, record_path
    from maskscore_core.plugin.records import Asset, Candidate
    from maskscore_pixal3d import camera, candidates_from

    instance = _instance()
    view = camera.picture_view(ViewConfig(count=4, resolution=96), 0.0, 0.0, 512)
    params = camera.camera_params(view)
    framing = subject_framing(instance.a.state.phenotype)
    target = get_reference_mesh().vertices([ideal_edit(instance).state])[0]
    vertices, faces = remesh.subdivide(*remesh.body_surface(target))
    own_frame = camera.from_world(framing.apply(vertices), view, params)
    # the cameras' target (the framed head's centre) is the middle of Pixal3D's [-0.5, 0.5] cube
    np.testing.assert_allclose(camera.from_world(np.array([resolve_target(view)]), view, params), 0.0, atol=1e-12)
    output = _StandIn(own_frame, faces)
    broken = _StandIn(np.full_like(own_frame, np.nan), faces)
    config = {"model_class": "stand-in", "camera_params": params}
    candidates = candidates_from(instance, ctx, [("good", 1, output.vertices, output.faces),
                                                 ("broken", 2, broken.vertices, broken.faces)], view, params, framing, config)
    record = json.loads(record_path(ctx, instance.key).read_text())
    assert [c.label for c in candidates] == ["good"]
    assert [(o["label"], o["decoded"]) for o in record["candidates"]] == [("good", True), ("broken", False)]
    assert "NaN" in record["candidates"][1]["reason"] and "\n" not in record["candidates"][1]["reason"]
    mesh = candidates[0].asset.data
    assert isinstance(mesh, ForeignMesh)
    np.testing.assert_allclose(mesh.vertices, vertices, atol=1e-5)  # float32 tensors on the way
    anny = Candidate(label="anny", asset=Asset("mesh", target))
    remeshed, exact = plugins.call("score", "render-compare", scorer="render-compare", instance=instance,
                                   candidates=[candidates[0], anny], ctx=ctx)
    assert exact.instruction_following == pytest.approx(1.0)
    for dimension in ("instruction_following", "consistency", "overall"):
        assert abs(getattr(remeshed, dimension) - getattr(exact, dimension)) <= 0.05
    with pytest.raises(EditError, match="none of the 1 outputs"):
        candidates_from(instance, ctx, [("broken", 2, broken.vertices, broken.faces)], view, params, framing, config)


def _build_args(out, *extra):
    return ["build", "bench", "--out", str(out), "--rows", "3", "--seed", "1", "--subjects", "24", "--modalities", "mesh",
            "--views", "2", "--resolution", "64", "--editor", "pixal3d", "--quiet", *extra]


@pytest.mark.skipif(importlib.util.find_spec("pixal3d") is not None, reason="Pixal3D is installed here")
def test_build_bench_without_pixal3d_stops_with_one_line(tmp_path):
    from click.testing import CliRunner

    from maskscore_core.cli import main

    result = CliRunner().invoke(main, _build_args(tmp_path / "bench"))
    assert result.exit_code == 1
    assert "pixal3d needs the Python package 'pixal3d'" in result.output and len(result.output.strip().splitlines()) == 1


class _StandInPipeline:
    """Stands in for `Pixal3DImageTo3DPipeline` where it cannot run (no CUDA, no packages): its
    `run` takes what the real one takes and returns a subdivided ANNY body (default subject, jaw
    open) in Pixal3D's frame for the camera it is given, as `MeshWithVoxel`-like tensors. Not a
    model: it shows the editor's call and everything after it, not what Pixal3D makes."""

    def __init__(self, view):
        self.view, self.calls = view, []

    def run(self, image, camera_params, seed, preprocess_image, pipeline_type, max_num_tokens,
            sparse_structure_sampler_params, shape_slat_sampler_params, tex_slat_sampler_params):
        from maskscore_core.body import remesh
        from maskscore_core.body.reference_mesh import get_reference_mesh
        from maskscore_core.metric.framing import subject_framing
        from maskscore_pixal3d import camera

        self.calls.append({"size": image.size, "mode": image.mode, "camera_params": camera_params, "seed": seed,
                           "preprocess_image": preprocess_image, "pipeline_type": pipeline_type,
                           "steps": shape_slat_sampler_params["steps"]})
        state = face_state(jawOpen=0.6)
        body = subject_framing(state.phenotype).apply(get_reference_mesh().vertices([state])[0])
        vertices, faces = remesh.subdivide(*remesh.body_surface(body))
        return [_StandIn(camera.from_world(vertices, self.view, camera_params), faces)]


def test_build_bench_with_pixal3d_writes_and_scores_meshes_of_its_own_topology(tmp_path, monkeypatch):
    """`maskscore build bench --editor pixal3d` through the editor's real code, the pipeline
    stood in for (above): rows whose candidates are .glb meshes of their own topology, scored by
    render-compare, the call as Pixal3D takes it, the outcomes recorded."""
    from click.testing import CliRunner

    from maskscore_core.body.reference_mesh import get_reference_mesh
    from maskscore_core.cli import main
    from maskscore_core.dataset import reader
    from maskscore_core.metric import foreign_mesh
    from maskscore_core.metric.views import ViewConfig
    from maskscore_pixal3d import camera, pipeline

    stand_in = _StandInPipeline(camera.picture_view(ViewConfig(count=2, resolution=64), 0.0, 0.0, 64))
    monkeypatch.setattr(pipeline, "missing", lambda weights: None)
    monkeypatch.setattr(pipeline, "load", lambda weights: stand_in)
    out = tmp_path / "bench"
    args = _build_args(out, "--editor-option", f"weights={tmp_path}", "--editor-option", "size=64",
                       "--editor-option", "steps=2", "--editor-option", "candidates=2")
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert stand_in.calls and all(c["preprocess_image"] is False and c["size"] == (64, 64) and c["mode"] == "RGB"
                                  and c["pipeline_type"] == "1024_cascade" and c["steps"] == 2 for c in stand_in.calls)
    assert stand_in.calls[0]["camera_params"]["distance"] == pytest.approx(0.5 / math.tan(math.radians(30.0) / 2.0))
    rows = [row for _, row in reader.iter_rows(out)]
    assert rows and {row["dimension"] for row in rows} == {"instruction_following", "consistency", "overall"}
    for row in rows:
        assert len(row["output_meshes"]) == 2 == len(row["scores"])
        assert all(0.0 <= x <= 1.0 for x in row["scores"])
        mesh = foreign_mesh.read(out / row["output_meshes"][0])
        assert len(mesh.faces) != len(get_reference_mesh().faces) and not foreign_mesh.is_reference(mesh)
    records = [json.loads(p.read_text()) for p in (out / "editor-outputs").glob("*.json")]
    assert records and all(r["editor"] == "pixal3d" and all(c["decoded"] for c in r["candidates"]) for r in records)
    assert "pixal3d" in (out / "README.md").read_text()
