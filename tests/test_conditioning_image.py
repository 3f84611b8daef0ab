"""The conditioning image of a reward row: frame A from the run's first view, drawn with frame A's
look when it has one."""

from __future__ import annotations

import attrs
import imageio.v3 as iio
import numpy as np
import pytest

from maskscore_core.metric import appearance

from maskscore_core.dataset import reward_tables
from maskscore_core.plugin.context import Context
from maskscore_core.plugin.records import Appearance, BodyState, EditInstance, EditInstruction, Light, Subject, Target
from maskscore_core.body.reference_mesh import get_reference_mesh
from maskscore_core.metric.render import get_renderer
from maskscore_core.metric.views import ViewConfig, camera_poses

LOOK = Appearance(skin=(0.45, 0.3, 0.22), light=Light((-0.6, 0.3, 0.7), 1.0, 0.2), background=(0.1, 0.5, 0.8))


def _instance(key: str, look: Appearance | None, phenotype: dict | None = None) -> EditInstance:
    target = Target("frame A", Subject("s", phenotype or {}), (BodyState(appearance=look, phenotype=phenotype or {}),))
    instruction = EditInstruction("relight the face to match frame B", "face", "lighting_change", "mesh")
    return EditInstance(key, instruction, target, target)


def test_a_short_subject_is_drawn_framed_as_the_row_is_scored(ctx, tmp_path):
    """The picture is framed on frame A's head, zoomed for the row's part (`framing.subject_framing`),
    as the row's candidates are scored: a short young woman's body covers about as much of it as
    the default subject's does, where the fixed camera saw little of her face."""
    from maskscore_core.metric.framing import subject_framing

    short = {"height": 0.25, "age": 0.45, "gender": 1.0}
    pictures = {}
    for name, phenotype in (("default", {}), ("short", short)):
        relative = reward_tables.render_conditioning_image(_instance(f"k-{name}", LOOK, phenotype), tmp_path, ctx)
        pictures[name] = iio.imread(tmp_path / relative)
    vertices = get_reference_mesh().vertices([BodyState(appearance=LOOK, phenotype=short)])[0]
    renderer = get_renderer(ViewConfig(count=4, resolution=48))
    framed = appearance.picture(renderer.render(subject_framing(short, "face").apply(vertices)), LOOK, view=0)
    unframed = appearance.picture(renderer.render(vertices), LOOK, view=0)
    np.testing.assert_array_equal(pictures["short"], framed)
    background = np.rint(np.asarray(LOOK.background) * 255).astype(np.uint8)

    def body(picture):
        return int((picture != background).any(axis=-1).sum())

    assert 0.8 < body(pictures["short"]) / body(pictures["default"]) < 1.25, (body(pictures["short"]), body(pictures["default"]))
    assert body(unframed) < 0.8 * body(pictures["default"]), body(unframed)


@pytest.fixture
def ctx(tmp_path):
    return Context(workdir=tmp_path, seed=0, config={"views": 4, "resolution": 48})


def test_frame_a_is_drawn_with_its_look(ctx, tmp_path):
    relative = reward_tables.render_conditioning_image(_instance("k-look", LOOK), tmp_path, ctx)
    assert relative == "conditioning/k-look.png"
    picture = iio.imread(tmp_path / relative)
    vertices = get_reference_mesh().vertices([BodyState(appearance=LOOK)])[0]
    # the same pixels as view 0 of the run's own 4-view render, shaded with the look
    expected = appearance.picture(get_renderer(ViewConfig(count=4, resolution=48)).render(vertices), LOOK, view=0)
    np.testing.assert_array_equal(picture, expected)
    assert tuple(picture[0, 0]) == tuple(np.rint(np.asarray(LOOK.background) * 255).astype(np.uint8))
    # another look, another picture; no look, the renderer's plain picture as before
    relit = reward_tables.render_conditioning_image(_instance("k-relit", attrs.evolve(LOOK, skin=(0.8, 0.65, 0.55))), tmp_path, ctx)
    assert not np.array_equal(iio.imread(tmp_path / relit), picture)
    plain = reward_tables.render_conditioning_image(_instance("k-plain", None), tmp_path, ctx)
    np.testing.assert_array_equal(iio.imread(tmp_path / plain), get_renderer(ViewConfig(count=4, resolution=48)).render_rgb(
        get_reference_mesh().vertices([BodyState()])[0], 48, 48, view_index=0))  # fmt: skip


@pytest.mark.parametrize("offset", [(0.0, 0.0), (0.3, 0.1)])
def test_the_one_camera_is_view_0_of_the_run(offset):
    config = ViewConfig(count=5, resolution=32, offset=offset)
    one = attrs.evolve(config, count=1, offset=(offset[0] / config.count, offset[1]))
    assert camera_poses(one) == [camera_poses(config)[0]]
