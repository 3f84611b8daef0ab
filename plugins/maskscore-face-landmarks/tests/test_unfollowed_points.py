"""Pictures and pixel clips are fitted without the brow points: on a dark-skinned face the
detector's brows jump when the head turns a little, and fitted, that jump read as a turn the head
did not make."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from maskscore_core.body.anny_model import get_body_model
from maskscore_core.plugin.records import Appearance, BodyState, Light
from maskscore_core.trials import landmark_fit as lf
from maskscore_face_landmarks.anchors import load
from maskscore_face_landmarks.pixels import (
    PIXEL_CLIP_FIT, PIXEL_PICTURE_FIT, RIGID_POINTS, UNFOLLOWED_POINTS, PixelFitter, picture,
)  # fmt: skip

SIZE = 448
# A built-in subject and look (trials seed 3, its first subject's first trial: dark skin, light
# from the side), on which the brow points jump by 4-8 px at a turn of 0.05 rad.
DARK_SKINNED = BodyState(
    phenotype={"gender": 0.114, "age": 0.626, "muscle": 0.51, "weight": 0.458, "height": 0.543, "proportions": 0.619},
    appearance=Appearance(skin=(0.3061, 0.2064, 0.1563), background=(0.4923, 0.1972, 0.8254),
                          light=Light(direction=(-0.307193, 0.634737, 0.709043), intensity=0.6517, ambient=0.2991)),
)  # fmt: skip


def test_without_drops_the_named_points_and_keeps_the_rest_in_order():
    anchors = load()
    kept = anchors.without(("brow_a", "brow_b"))
    assert not any(name.startswith("brow") for name in kept.names)
    assert len(kept) == len(anchors) - sum(name.startswith(("brow_a", "brow_b")) for name in anchors.names) > 0
    index = [anchors.names.index(name) for name in kept.names]
    assert index == sorted(index)
    assert np.array_equal(kept.landmark_index, anchors.landmark_index[index])
    assert np.array_equal(kept.vertex_ids, anchors.vertex_ids[index])
    assert np.array_equal(kept.weights, anchors.weights[index])
    assert np.array_equal(kept.response, anchors.response[:, index])
    assert anchors.without(()) == anchors


def test_pictures_and_clips_are_fitted_without_the_brows():
    """The fit leaves the unfollowed points out: a bias measured on every anchor is cut to match."""
    assert PixelFitter().config is PIXEL_PICTURE_FIT
    for config in (PIXEL_PICTURE_FIT, PIXEL_CLIP_FIT):
        assert config.unfollowed == UNFOLLOWED_POINTS
    assert not set(RIGID_POINTS) & set(UNFOLLOWED_POINTS)
    fitter = PixelFitter(config=PIXEL_CLIP_FIT)
    fit = fitter.fit(picture(DARK_SKINNED, SIZE), DARK_SKINNED, "test picture")
    assert len(fit.predicted_px) == len(fitter.anchors.without(UNFOLLOWED_POINTS)) < len(fitter.anchors)


@pytest.mark.parametrize("config", [PIXEL_PICTURE_FIT, PIXEL_CLIP_FIT], ids=["picture", "clip"])
@pytest.mark.parametrize("turn", [(0.05, 0.0, 0.0), (0.0, 0.0, 0.05)])
def test_a_small_turn_of_a_dark_skinned_face_reads_without_a_made_up_yaw(turn, config):
    """The head pitched or rolled by 0.05 rad reads back within 0.025 rad in yaw and roll. Fitted
    with the brow points, the same pictures read 0.04-0.05 rad of yaw and roll that were not there."""
    body = get_body_model()
    chain = [body.bone_index(name) for name in lf.LINEAR_BONES]
    pose = np.zeros((len(body.bone_names), 3))
    pose[chain] = np.outer((0.4, 0.3, 0.3), turn)
    state = attrs.evolve(DARK_SKINNED, pose=pose)
    fit = PixelFitter(config=config).fit(picture(state, SIZE), DARK_SKINNED, "test picture")
    error = fit.state.pose[chain].sum(0) - pose[chain].sum(0)
    assert np.abs(error).max() < 0.025, error
