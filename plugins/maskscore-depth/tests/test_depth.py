"""The depth modality: Mitsuba depth of the reference mesh, .exr files, rows, bad input, the ladder."""

from __future__ import annotations

import numpy as np
import pytest

from maskscore_core.plugin import manager as plugins
from maskscore_core.plugin.contract import ModalityContract
from maskscore_core.plugin.records import Asset
from maskscore_core.plugin.testing import face_state, unit_instance

MODALITY = "depth"


def _instance():
    return unit_instance(MODALITY, "reconstruct the mouth depth to match frame B", "depth_edit", face_state(), face_state(jawOpen=0.9))


class TestDepthContract(ModalityContract):
    modality = MODALITY
    bad_files = (
        ("nope.exr", {}, "does not exist"),
        ("bad.exr", {"bad.exr": b"not an exr"}, "cannot be read as OpenEXR"),
    )
    unit_instance = staticmethod(_instance)


def test_encode_is_the_render_depth_channel(ctx):
    instance = _instance()
    asset = plugins.call("encode", MODALITY, modality=MODALITY, target=instance.b, ctx=ctx)
    assert asset.data.shape == (4, 96, 96) and asset.data.dtype == np.float32
    covered = asset.data > 0
    assert 0.05 < covered.mean() < 0.95  # the head fills part of every view
    assert np.all((asset.data[covered] > 0.3) & (asset.data[covered] < 2.0))  # camera 0.6 m from the head
    ref_a = plugins.call("decode_reference", MODALITY, modality=MODALITY, instance=instance, which="a", ctx=ctx)
    decoded = plugins.call("decode_to_mesh", MODALITY, asset=asset, instance=instance, ctx=ctx)
    assert decoded.vertices is None
    assert np.abs(ref_a.depth - decoded.depth).max() > 0.005  # the open jaw shows in depth


def test_exr_round_trip_is_lossless_and_deterministic(ctx, tmp_path):
    asset = plugins.call("encode", MODALITY, modality=MODALITY, target=_instance().b, ctx=ctx)
    value = plugins.call("write_asset", MODALITY, asset=asset, directory=tmp_path / "assets", name="b", ctx=ctx)
    assert value == "assets/b.exr"
    plugins.call("write_asset", MODALITY, asset=asset, directory=tmp_path / "assets", name="b2", ctx=ctx)
    assert (tmp_path / "assets/b2.exr").read_bytes() == (tmp_path / value).read_bytes()
    back = plugins.call("read_asset", MODALITY, modality=MODALITY, value=value, root=tmp_path, ctx=ctx)
    np.testing.assert_array_equal(back.data, asset.data)


def test_maps_of_another_resolution_are_refused(ctx, tmp_path):
    asset = plugins.call("encode", MODALITY, modality=MODALITY, target=_instance().a, ctx=ctx)
    plugins.call("write_asset", MODALITY, asset=asset, directory=tmp_path, name="a", ctx=ctx)
    ctx.config["resolution"] = 64  # a run at another resolution must not read these maps
    with pytest.raises(ValueError, match=r"4 views of 64x64 pixels"):
        plugins.call("read_asset", MODALITY, modality=MODALITY, value="a.exr", root=tmp_path, ctx=ctx)


@pytest.mark.parametrize(
    "depth, message",
    [
        (np.zeros((3, 96, 96)), "renders 4 views"),
        (np.full((4, 96, 96), np.nan), "NaN or infinite"),
        (np.full((4, 96, 96), -1.0), "negative"),
    ],
)
def test_bad_depth_maps_are_named(ctx, depth, message):
    with pytest.raises(ValueError, match=message):
        plugins.call("decode_to_mesh", MODALITY, asset=Asset(MODALITY, depth), instance=_instance(), ctx=ctx)
