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


def test_the_wrong_subject_is_drawn_through_frame_a_camera(ctx):
    """An edited depth map keeps its input's camera: the ladder's other subject (taller, older) is
    drawn framed on frame A's subject, not on its own head, where it would be laid onto A's."""
    import attrs

    from maskscore_core.body.reference_mesh import get_reference_mesh
    from maskscore_core.edits.ladder import build_ladder
    from maskscore_core.metric.render import get_renderer
    from maskscore_core.metric.framing import subject_framing
    from maskscore_core.metric.views import ViewConfig
    from maskscore_core.plugin.records import Subject, Target

    instance = _instance()
    tall_old = {"height": 0.9, "age": 0.9}
    other = Target("other", Subject("s2", tall_old), (attrs.evolve(face_state(), phenotype=tall_old),), framed_part="mouth")
    instance = attrs.evolve(instance, other=other)
    rung5 = build_ladder(instance)[-1]
    assert rung5.rung == 5 and rung5.framed_on == instance.a.state.phenotype and rung5.framed_part == "mouth"
    depth = plugins.call("encode", MODALITY, modality=MODALITY, target=rung5, ctx=ctx).data
    vertices = get_reference_mesh().vertices([other.state])[0]
    renderer = get_renderer(ViewConfig(count=4, resolution=96))
    through_a = renderer.render(subject_framing(instance.a.state.phenotype, "mouth").apply(vertices)).depth
    own_head = renderer.render(subject_framing(other.state.phenotype, "mouth").apply(vertices)).depth
    np.testing.assert_array_equal(depth, through_a)
    assert np.abs(own_head - through_a).max() > 0.01  # the two cameras really differ for this subject
    # a subject's own frames are still framed on its own head
    np.testing.assert_array_equal(
        plugins.call("encode", MODALITY, modality=MODALITY, target=other, ctx=ctx).data, own_head
    )


def test_maps_are_drawn_zoomed_for_the_rows_part(ctx):
    """A row is scored zoomed for its edited part (`framing.part_zoom`), so a depth target carries
    the part (`Target.framed_part`, set on every target of a built instance) and is drawn so: a
    tall old man's irides map is another picture than his head alone."""
    import attrs

    from maskscore_core.body.reference_mesh import get_reference_mesh
    from maskscore_core.metric.render import get_renderer
    from maskscore_core.metric.framing import subject_framing
    from maskscore_core.metric.views import ViewConfig

    tall_old = {"height": 0.75, "age": 0.9, "gender": 0.0}
    b = _instance().b
    target = attrs.evolve(b, states=(attrs.evolve(b.state, phenotype=tall_old),), framed_part="irides")
    asset = plugins.call("encode", MODALITY, modality=MODALITY, target=target, ctx=ctx)
    assert asset.meta["framed_part"] == "irides"
    vertices = get_reference_mesh().vertices([target.state])[0]
    renderer = get_renderer(ViewConfig(count=4, resolution=96))
    zoomed = renderer.render(subject_framing(tall_old, "irides").apply(vertices)).depth
    head_only = renderer.render(subject_framing(tall_old).apply(vertices)).depth
    np.testing.assert_array_equal(asset.data, zoomed)
    assert np.abs(zoomed - head_only).max() > 0.01


def test_maps_drawn_for_another_part_are_refused(ctx, tmp_path):
    """Maps keep the part they were drawn for, in memory and in the file; a row that edits another
    part refuses them in one line. A file that does not say is taken as drawn for the row."""
    import attrs
    import OpenEXR

    instance = _instance()  # edits the mouth
    asset = plugins.call("encode", MODALITY, modality=MODALITY, target=attrs.evolve(instance.b, framed_part="eyebrow"), ctx=ctx)
    with pytest.raises(ValueError, match=r"drawn for the 'eyebrow' part, but this row edits the 'mouth' part"):
        plugins.call("decode_to_mesh", MODALITY, asset=asset, instance=instance, ctx=ctx)
    value = plugins.call("write_asset", MODALITY, asset=asset, directory=tmp_path, name="brow", ctx=ctx)
    back = plugins.call("read_asset", MODALITY, modality=MODALITY, value=value, root=tmp_path, ctx=ctx)
    assert back.meta["framed_part"] == "eyebrow"
    with pytest.raises(ValueError, match=r"brow\.exr: maps drawn for the 'eyebrow' part"):
        plugins.call("decode_to_mesh", MODALITY, asset=back, instance=instance, ctx=ctx)
    head = plugins.call("encode", MODALITY, modality=MODALITY, target=attrs.evolve(instance.b, framed_part=None), ctx=ctx)
    with pytest.raises(ValueError, match=r"maps drawn for the head alone, but this row edits the 'mouth' part"):
        plugins.call("decode_to_mesh", MODALITY, asset=head, instance=instance, ctx=ctx)
    channels = {f"view{i:03d}": np.ascontiguousarray(m) for i, m in enumerate(asset.data)}
    with OpenEXR.File({"compression": OpenEXR.ZIP_COMPRESSION, "type": OpenEXR.scanlineimage}, channels) as exr:
        exr.write(str(tmp_path / "plain.exr"))
    plain = plugins.call("read_asset", MODALITY, modality=MODALITY, value="plain.exr", root=tmp_path, ctx=ctx)
    assert "framed_part" not in plain.meta
    decoded = plugins.call("decode_to_mesh", MODALITY, asset=plain, instance=instance, ctx=ctx)
    np.testing.assert_array_equal(decoded.depth, asset.data)
