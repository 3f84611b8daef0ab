"""The mesh modality: encode/decode, .glb files, reward rows, bad input, the ladder."""

from __future__ import annotations

import numpy as np
import pytest

from maskscore_core.plugin import manager as plugins
from maskscore_core.plugin.contract import ModalityContract
from maskscore_core.plugin.records import Asset
from maskscore_core.body.reference_mesh import get_reference_mesh
from maskscore_core.plugin.testing import face_state, unit_instance

MODALITY = "mesh"


def _instance():
    return unit_instance(MODALITY, "edit the mouth to match frame B", "expression_change", face_state(), face_state(jawOpen=0.8))


class TestMeshContract(ModalityContract):
    modality = MODALITY
    bad_files = (
        ("nope.glb", {}, "not found"),
        ("bad.glb", {"bad.glb": b"glTF not really"}, "cannot read .glb"),
    )

    unit_instance = staticmethod(_instance)

    def check_rows(self, table, values, instance, ctx):
        import imageio.v3 as iio

        assert iio.imread(ctx.workdir / table.column("conditioning_image")[0].as_py()).shape == (96, 96, 3)


def test_encode_decode_is_the_reference_mesh(ctx):
    instance = _instance()
    asset = plugins.call("encode", MODALITY, modality=MODALITY, target=instance.b, ctx=ctx)
    decoded = plugins.call("decode_to_mesh", MODALITY, asset=asset, instance=instance, ctx=ctx)
    expected = get_reference_mesh().vertices([instance.b.state])[0]
    np.testing.assert_array_equal(decoded.vertices, expected)
    ref_a = plugins.call("decode_reference", MODALITY, modality=MODALITY, instance=instance, which="a", ctx=ctx)
    assert not np.allclose(ref_a.vertices, decoded.vertices)  # the jaw opened


def test_glb_round_trip_is_deterministic(ctx, tmp_path):
    instance = _instance()
    asset = plugins.call("encode", MODALITY, modality=MODALITY, target=instance.b, ctx=ctx)
    value = plugins.call("write_asset", MODALITY, asset=asset, directory=tmp_path / "assets", name="b", ctx=ctx)
    assert value == "assets/b.glb"
    first = (tmp_path / value).read_bytes()
    plugins.call("write_asset", MODALITY, asset=asset, directory=tmp_path / "assets", name="b2", ctx=ctx)
    assert (tmp_path / "assets/b2.glb").read_bytes() == first
    back = plugins.call("read_asset", MODALITY, modality=MODALITY, value=value, root=tmp_path, ctx=ctx)
    np.testing.assert_allclose(back.data, asset.data, atol=1e-6)  # glTF stores float32


@pytest.mark.parametrize("suffix", [".glb", ".ply", ".obj"])
def test_a_mesh_of_any_topology_is_read_written_and_decoded(ctx, tmp_path, suffix):
    import trimesh

    from maskscore_core.metric.foreign_mesh import ForeignMesh

    box = trimesh.creation.box(extents=(0.3, 0.3, 0.3))
    box.export(tmp_path / f"box{suffix}")
    asset = plugins.call("read_asset", MODALITY, modality=MODALITY, value=f"box{suffix}", root=tmp_path, ctx=ctx)
    assert isinstance(asset.data, ForeignMesh) and len(asset.data.faces) == 12
    # A box is no body: decoding fits ANNY from frame A, and there is no surface near its head.
    with pytest.raises(ValueError, match="no surface near frame A's head") as caught:
        plugins.call("decode_to_mesh", MODALITY, asset=asset, instance=_instance(), ctx=ctx)
    assert "\n" not in str(caught.value)
    value = plugins.call("write_asset", MODALITY, asset=asset, directory=tmp_path / "assets", name="box", ctx=ctx)
    assert value == "assets/box.glb"
    back = plugins.call("read_asset", MODALITY, modality=MODALITY, value=value, root=tmp_path, ctx=ctx)
    np.testing.assert_array_equal(back.data.faces, asset.data.faces)
    np.testing.assert_allclose(back.data.vertices, asset.data.vertices, atol=1e-6)


def test_bad_meshes_of_any_topology_are_one_line_errors(ctx, tmp_path):
    import trimesh

    from maskscore_core.metric.foreign_mesh import ForeignMesh

    trimesh.PointCloud(np.random.default_rng(0).random((40, 3))).export(tmp_path / "points.ply")
    with pytest.raises(ValueError, match="not a triangle mesh") as caught:
        plugins.call("read_asset", MODALITY, modality=MODALITY, value="points.ply", root=tmp_path, ctx=ctx)
    assert "\n" not in str(caught.value)
    box = trimesh.creation.box(extents=(0.3, 0.3, 0.3))
    vertices = np.asarray(box.vertices, dtype=np.float64).copy()
    vertices[2] = np.nan
    for data, message in ((ForeignMesh(vertices, np.asarray(box.faces)), "NaN"),
                          (ForeignMesh(np.asarray(box.vertices), np.zeros((0, 3), np.int64)), "no faces")):
        with pytest.raises(ValueError, match=message):
            plugins.call("decode_to_mesh", MODALITY, asset=Asset(MODALITY, data), instance=_instance(), ctx=ctx)


def test_a_remeshed_candidate_is_decoded_by_fitting_anny_and_scores_like_its_anny_mesh(ctx):
    """Through the render-compare scorer: frame B subdivided and vertex-clustered (2 mm), decoded
    by fitting ANNY from frame A (the decoded mesh is a reference mesh carrying its surface),
    score within tests/test_foreign_mesh.py's tolerance of frame B on ANNY's topology."""
    from maskscore_core.body import remesh
    from maskscore_core.metric.foreign_mesh import ForeignMesh
    from maskscore_core.plugin.records import Candidate

    instance = _instance()
    b = get_reference_mesh().vertices([instance.b.state])[0]
    surface = remesh.body_surface(b)
    meshes = {"anny": b, "subdivided": ForeignMesh(*remesh.subdivide(*surface)),
              "clustered": ForeignMesh(*remesh.cluster(*surface, 0.002))}
    candidates = [Candidate(label=k, asset=Asset(MODALITY, v)) for k, v in meshes.items()]
    decoded = plugins.call("decode_to_mesh", MODALITY, asset=candidates[1].asset, instance=instance, ctx=ctx)
    assert np.array_equal(decoded.faces, get_reference_mesh().faces) and np.array_equal(decoded.surface.faces, meshes["subdivided"].faces)
    assert decoded.vertices.shape == (get_reference_mesh().vertex_count, 3)
    anny, *remeshed = plugins.call("score", "render-compare", scorer="render-compare", instance=instance,
                                   candidates=candidates, ctx=ctx)
    for score in remeshed:
        for dimension in ("instruction_following", "consistency", "overall"):
            assert abs(getattr(score, dimension) - getattr(anny, dimension)) <= 0.05


def test_nan_and_wrong_size_vertices_are_rejected(ctx):
    instance = _instance()
    good = get_reference_mesh().vertices([instance.a.state])[0]
    bad = good.copy()
    bad[7] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        plugins.call("decode_to_mesh", MODALITY, asset=Asset(MODALITY, bad), instance=instance, ctx=ctx)
    with pytest.raises(ValueError, match="vertices"):
        plugins.call("decode_to_mesh", MODALITY, asset=Asset(MODALITY, good[:100]), instance=instance, ctx=ctx)
    with pytest.raises(ValueError, match="'a' or 'b'"):
        plugins.call("decode_reference", MODALITY, modality=MODALITY, instance=instance, which="c", ctx=ctx)
