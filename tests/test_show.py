"""The contact sheet on a real (tiny) bench: built-in source, frame-pair ladder, render-compare,
the mesh and depth modality plugins, the Mitsuba renderer and the part masks."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner
from PIL import Image

from maskscore_core.dataset import contact_sheet
from maskscore_core.dataset.plan import BuildConfig
from maskscore_core.dataset.reader import iter_rows
from maskscore_core.dataset.runner import run_build

TILE = 48


@pytest.fixture(scope="module")
def real_bench(tmp_path_factory):
    root = tmp_path_factory.mktemp("show") / "bench"
    # seed 0: 24 anny subjects put two in the bench pool
    run_build(BuildConfig(split="bench", out=root, rows=6, seed=0, subjects=24, modalities=("mesh", "depth"),
                          views=2, resolution=32), progress=False)
    return root


def _tiles(image: np.ndarray, count: int) -> list[np.ndarray]:
    top = 2 * contact_sheet.LINE_HEIGHT
    return [image[top:top + TILE, contact_sheet.MARGIN + i * (TILE + contact_sheet.MARGIN):][:, :TILE] for i in range(count)]


@pytest.mark.slow
def test_sheet_shows_frames_candidates_scores_and_the_part_mask(real_bench, tmp_path):
    key = next(row["key"] for _, row in iter_rows(real_bench, ["mesh"]))
    out = contact_sheet.draw_sheet(real_bench, key, tmp_path / "sheet.png", resolution=TILE)
    image = np.asarray(Image.open(out).convert("RGB"))
    assert image.shape[1] == contact_sheet.MARGIN + 7 * (TILE + contact_sheet.MARGIN)  # A, B, five rungs
    tiles = _tiles(image, 7)
    for tile in tiles:
        assert (tile != 255).any()  # something was drawn in every tile
    # frames A and B differ where the part was edited
    assert not np.array_equal(tiles[0], tiles[1])
    # same key, same picture
    again = contact_sheet.draw_sheet(real_bench, key, tmp_path / "again.png", resolution=TILE)
    assert again.read_bytes() == out.read_bytes()


@pytest.mark.slow
def test_depth_candidates_are_drawn_from_their_depth_maps(real_bench, tmp_path):
    key = next(row["key"] for _, row in iter_rows(real_bench, ["depth"]))
    out = contact_sheet.draw_sheet(real_bench, key, tmp_path / "depth.png", resolution=TILE)
    assert Image.open(out).size[0] == contact_sheet.MARGIN + 7 * (TILE + contact_sheet.MARGIN)


def test_unknown_key_is_a_usage_error_naming_keys_that_exist(real_bench, tmp_path):
    from maskscore_core.cli.show_command import show_command

    result = CliRunner().invoke(show_command, ["no-such-key", "--bench", str(real_bench), "--out", str(tmp_path / "x.png")])
    assert result.exit_code == 2
    key = next(row["key"] for _, row in iter_rows(real_bench))
    assert "no row with key 'no-such-key'" in result.stderr and f"e.g. '{key}'" in result.stderr
    assert not (tmp_path / "x.png").exists()


@pytest.mark.slow
def test_part_mask_is_tinted_exactly_over_the_part_pixels():
    from maskscore_core.body.parts import pixel_mask
    from maskscore_core.plugin.records import BodyState
    from maskscore_core.body.reference_mesh import get_reference_mesh
    from maskscore_core.metric.render import get_renderer

    vertices = get_reference_mesh().vertices([BodyState()])[0]
    tile = contact_sheet._mesh_tile(vertices, "nose", TILE)
    renderer = get_renderer(contact_sheet._front_view(TILE))
    plain = renderer.render_rgb(vertices, TILE, TILE)
    mask = pixel_mask(renderer.render(vertices), "nose")[0]
    changed = (tile != plain).any(axis=-1)
    assert mask.any()
    assert not changed[~mask].any()
    assert changed[mask].mean() > 0.9
