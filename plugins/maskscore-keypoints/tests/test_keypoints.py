"""The keypoints modality: a fixed surface point set, displacement along the surface, rows,
bad input, the ladder."""

from __future__ import annotations

import json

import numpy as np
import pytest

from maskscore_core import vocab

from maskscore_core.plugin import manager as plugins
from maskscore_core.plugin.contract import ModalityContract
from maskscore_core.plugin.records import Asset, BodyState, Target
from maskscore_core.body.reference_mesh import get_reference_mesh
from maskscore_core.plugin.testing import face_state, unit_instance

MODALITY = "keypoints"


def _instance():
    return unit_instance(MODALITY, "refit the mouth landmarks to frame B", "expression_change", face_state(), face_state(jawOpen=0.9))


class TestKeypointsContract(ModalityContract):
    """The ladder: README.md has the measured figures, and the face edits of other draws where
    sparse keypoints swap rungs 2 and 3."""

    modality = MODALITY
    bad_files = (
        ([0.0] * 10, {}, "keypoints x 3 coordinates"),
        (None, {}, "keypoints x 3 coordinates"),
        (["a", "b", "c"], {}, "not a list of numbers"),
    )
    unit_instance = staticmethod(_instance)

    def check_rows(self, table, values, instance, ctx):
        assert len(values[0]) == 3 * len(_keypoint_set()) and all(type(v) is float for v in values[0])


def _keypoint_set():
    from maskscore_keypoints.keypoint_set import get_keypoint_set

    return get_keypoint_set()


def test_keypoint_set_is_fixed_and_on_every_part():
    from maskscore_core.body import parts

    keypoints = _keypoint_set()
    assert set(keypoints.parts) == set(vocab.ACTIVE_FACE_PARTS + vocab.ACCESSORY_PARTS)
    assert not keypoints.pinned[: len(keypoints.ids("front hair"))].any()
    assert np.allclose(keypoints.barycentric.sum(axis=1), 1.0) and (keypoints.barycentric >= 0).all()
    for part in vocab.ACTIVE_FACE_PARTS:
        assert parts.part_face_mask(part)[keypoints.faces[keypoints.ids(part)]].all()
    # Sampling again, as a fresh process would, gives the very same points.
    from maskscore_keypoints.keypoint_set import get_keypoint_set

    rebuilt = get_keypoint_set.__wrapped__()
    assert np.array_equal(rebuilt.faces, keypoints.faces) and np.array_equal(rebuilt.barycentric, keypoints.barycentric)


def test_encode_puts_points_on_the_surface_and_decode_of_frame_a_is_frame_a(ctx):
    instance = _instance()
    asset = plugins.call("encode", MODALITY, modality=MODALITY, target=instance.a, ctx=ctx)
    vertices_a = get_reference_mesh().vertices([instance.a.state])[0]
    corners = vertices_a[get_reference_mesh().faces[asset.meta["faces"]]]
    np.testing.assert_allclose(asset.data, np.einsum("kc,kcd->kd", asset.meta["barycentric"], corners))
    decoded = plugins.call("decode_to_mesh", MODALITY, asset=asset, instance=instance, ctx=ctx)
    np.testing.assert_allclose(decoded.vertices, vertices_a, atol=1e-12)


def test_moving_keypoints_moves_the_surface_near_them_only(ctx):
    instance = _instance()
    reference = get_reference_mesh()
    vertices_a = reference.vertices([instance.a.state])[0]
    vertices_b = reference.vertices([instance.b.state])[0]
    asset_b = plugins.call("encode", MODALITY, modality=MODALITY, target=instance.b, ctx=ctx)
    decoded = plugins.call("decode_to_mesh", MODALITY, asset=asset_b, instance=instance, ctx=ctx)
    moved_by_b = np.linalg.norm(vertices_b - vertices_a, axis=1) > 0.003  # the jaw region
    error_before = np.linalg.norm(vertices_b - vertices_a, axis=1)[moved_by_b].mean()
    error_after = np.linalg.norm(vertices_b - decoded.vertices, axis=1)[moved_by_b].mean()
    assert error_after < 0.6 * error_before
    far = np.linalg.norm(vertices_a - vertices_a[moved_by_b].mean(axis=0), axis=1) > 0.3  # legs, arms
    np.testing.assert_array_equal(decoded.vertices[far], vertices_a[far])


def test_column_round_trip_and_sidecar(ctx, tmp_path):
    instance = _instance()
    asset = plugins.call("encode", MODALITY, modality=MODALITY, target=instance.b, ctx=ctx)
    value = plugins.call("write_asset", MODALITY, asset=asset, directory=tmp_path / "assets", name="b", ctx=ctx)
    assert len(value) == 3 * len(_keypoint_set()) and all(type(v) is float for v in value)
    back = plugins.call("read_asset", MODALITY, modality=MODALITY, value=value, root=tmp_path, ctx=ctx)
    np.testing.assert_array_equal(back.data, asset.data)
    sidecar = json.loads((tmp_path / "assets" / "keypoint_set.json").read_text())
    assert [k["face"] for k in sidecar["keypoints"]] == _keypoint_set().faces.tolist()


def test_nan_keypoints_and_unknown_parts_are_named(ctx):
    from maskscore_core.body import parts

    instance = _instance()
    asset = plugins.call("encode", MODALITY, modality=MODALITY, target=instance.a, ctx=ctx)
    points = asset.data.copy()
    points[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN or infinite coordinates"):
        plugins.call("decode_to_mesh", MODALITY, asset=Asset(MODALITY, points), instance=instance, ctx=ctx)
    assert len(plugins.call("mask_part", MODALITY, modality=MODALITY, part="mouth", ctx=ctx).native) > 0
    with pytest.raises(vocab.VocabularyError, match="unknown part"):
        plugins.call("mask_part", MODALITY, modality=MODALITY, part="tentacle", ctx=ctx)
    with pytest.raises(parts.PartError, match="no keypoints"):
        plugins.call("mask_part", MODALITY, modality=MODALITY, part="topwear", ctx=ctx)


def test_accessory_keypoints_pin_the_accessory(ctx):
    """Adding a hat is expressed by where the hat's own points are, not by deforming the body."""
    reference = get_reference_mesh()
    hat_ids = plugins.call("mask_part", MODALITY, modality=MODALITY, part="headwear", ctx=ctx).native
    start, stop = next(reference.slot_ranges[s.name] for s in reference.slots if s.part == "headwear")
    assert len(hat_ids) == stop - start
    instance = _instance()
    with_hat = Target("b", instance.a.subject, (BodyState(phenotype={"age": 0.4}, accessories=("hat_tall",)),))
    asset = plugins.call("encode", MODALITY, modality=MODALITY, target=with_hat, ctx=ctx)
    decoded = plugins.call("decode_to_mesh", MODALITY, asset=asset, instance=instance, ctx=ctx)
    truth = reference.vertices([with_hat.state])[0]
    np.testing.assert_allclose(decoded.vertices[start:stop], truth[start:stop])
    np.testing.assert_allclose(decoded.vertices[: reference.anny_vertex_count], truth[: reference.anny_vertex_count])
