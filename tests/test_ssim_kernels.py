"""The compiled SSIM window filter gives torch's shifted in-place adds bit for bit."""

import numpy as np
import pytest
import torch

from maskscore_core.metric import ssim_kernels
from maskscore_core.metric.image_metrics import SSIM_WINDOW, _blur_weights


def _torch_filter(planes: torch.Tensor, weights) -> torch.Tensor:
    """The filter as torch adds it (what every score before the compiled filter was made with)."""
    width = planes.shape[-1] - (SSIM_WINDOW - 1)
    rows = planes[..., :, 0:width] * weights[0]
    for i in range(1, SSIM_WINDOW):
        rows.add_(planes[..., :, i : i + width], alpha=weights[i])
    height = planes.shape[-2] - (SSIM_WINDOW - 1)
    out = rows[..., 0:height, :] * weights[0]
    for i in range(1, SSIM_WINDOW):
        out.add_(rows[..., i : i + height, :], alpha=weights[i])
    return out


@pytest.mark.parametrize(
    "window",
    [
        (slice(None), slice(None), slice(None)),  # whole, contiguous
        (slice(0, 3), slice(40, 266), slice(2, 254)),  # a view's box: strided rows
        (slice(3, 6), slice(100, 111), slice(7, 18)),  # one output pixel
        (slice(0, 1), slice(5, 60), slice(0, 77)),  # widths that are no multiple of a vector
    ],
)
def test_the_compiled_filter_equals_torchs_adds_bit_for_bit(window):
    generator = torch.Generator().manual_seed(0)
    first = torch.rand((24, 266, 266), generator=generator) * 2 - 1
    second = torch.rand((24, 266, 266), generator=generator) * 2 - 1
    weights = _blur_weights()
    planes, factor = first[window], second[window]
    with torch.no_grad():
        assert torch.equal(ssim_kernels.blur_valid(planes, weights), _torch_filter(planes.clone(), weights))
        assert torch.equal(ssim_kernels.blur_valid(planes, weights, factor), _torch_filter(planes * factor, weights))
    # the inputs are read, never written
    assert torch.equal(first[window], planes) and torch.equal(second[window], factor)


def test_a_plane_smaller_than_the_window_filters_to_nothing():
    out = ssim_kernels.blur_valid(torch.zeros((2, 10, 40)), _blur_weights())
    assert out.shape == (2, 0, 30)


@pytest.mark.parametrize(
    "planes, other, weights, message",
    [
        (torch.zeros((2, 20, 20), dtype=torch.float64), None, None, "float32"),
        (torch.zeros((20, 20)), None, None, r"\(P, H, W\)"),
        (torch.zeros((2, 20, 20)), torch.zeros((2, 20, 21)), None, "differ"),
        (torch.zeros((2, 20, 20)), None, (0.5, 0.5), "11 taps"),
    ],
)
def test_wrong_planes_are_refused_in_one_line(planes, other, weights, message):
    with pytest.raises(ValueError, match=message) as caught:
        ssim_kernels.blur_valid(planes, weights or _blur_weights(), other)
    assert "\n" not in str(caught.value)


def test_the_filter_runs_on_several_threads_at_once_with_the_same_result():
    """The scorer's pool runs it on two threads (the GIL released): same planes, same sums."""
    import concurrent.futures

    planes = torch.tensor(np.random.default_rng(1).uniform(-1, 1, (6, 120, 130)).astype(np.float32))
    expected = _torch_filter(planes.clone(), _blur_weights())
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        found = list(pool.map(lambda _: ssim_kernels.blur_valid(planes, _blur_weights()), range(6)))
    assert all(torch.equal(f, expected) for f in found)


@pytest.mark.parametrize("window", [(slice(None),) * 3, (slice(None), slice(20, 200), slice(5, 220))])
def test_the_compiled_formula_equals_torchs_bit_for_bit_and_keeps_its_inputs(window):
    from maskscore_core.metric.image_metrics import SSIM_K1, SSIM_K2, _ssim_from_moments

    generator = torch.Generator().manual_seed(2)
    first = torch.rand((3, 250, 260), generator=generator) * 2 - 1
    second = (first + 0.2 * torch.rand((3, 250, 260), generator=generator)).clamp(-1, 1)  # alike, as renders are
    weights = _blur_weights()
    moments = [ssim_kernels.blur_valid(*planes) for planes in
               ((first, weights), (second, weights), (first, weights, first), (second, weights, second), (first, weights, second))]
    moments = [m[window] for m in moments]
    kept = [m.clone() for m in moments]
    expected = _ssim_from_moments(*(m.clone() for m in moments), 2.0).mean(dim=0)
    found = ssim_kernels.ssim_channel_mean(*moments, (SSIM_K1 * 2.0) ** 2, (SSIM_K2 * 2.0) ** 2)
    assert torch.equal(found, expected)
    assert all(torch.equal(m, k) for m, k in zip(moments, kept))
    same = ssim_kernels.ssim_channel_mean(moments[0], moments[0], moments[2], moments[2], moments[2], 4e-4, 3.6e-3)
    assert torch.equal(same, torch.ones_like(same))  # a picture against itself: exactly 1


def test_moments_of_different_shapes_are_refused_in_one_line():
    planes = torch.zeros((3, 8, 8))
    with pytest.raises(ValueError, match="five") as caught:
        ssim_kernels.ssim_channel_mean(planes, planes, planes, planes, torch.zeros((3, 8, 9)), 4e-4, 3.6e-3)
    assert "\n" not in str(caught.value)


def _moments(seed: int, shape=(3, 90, 100)) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    first = torch.rand(shape, generator=generator) * 2 - 1
    second = (first + 0.2 * torch.rand(shape, generator=generator)).clamp(-1, 1)
    weights = _blur_weights()
    return [ssim_kernels.blur_valid(*planes) for planes in
            ((first, weights), (second, weights), (first, weights, first), (second, weights, second), (first, weights, second))]


def test_the_formula_at_picked_pixels_and_into_float64_gives_the_same_bits():
    """`ssim_channel_mean_where` computes only the picked pixels and `out=` widens in place: the
    same numbers as the whole map picked afterwards and widened by torch."""
    moments = [m[:, 10:70, 5:85] for m in _moments(3)]  # strided boxes (60 x 80), as the scorer slices them
    c1, c2 = 4e-4, 3.6e-3
    whole = ssim_kernels.ssim_channel_mean(*moments, c1, c2)
    where = torch.as_tensor(np.random.default_rng(4).random((60, 80)) < 0.3)
    picked = ssim_kernels.ssim_channel_mean_where(*moments, c1, c2, where)
    assert picked.dtype == torch.float64 and torch.equal(picked, whole[where].to(torch.float64))
    assert ssim_kernels.ssim_channel_mean_where(*moments, c1, c2, torch.zeros_like(where)).numel() == 0
    into = torch.zeros((4, 70, 100), dtype=torch.float64)
    ssim_kernels.ssim_channel_mean(*moments, c1, c2, out=into[2, 5:65, 3:83])
    assert torch.equal(into[2, 5:65, 3:83], whole.to(torch.float64)) and not into[:2].any()
    with pytest.raises(ValueError, match="mask") as caught:
        ssim_kernels.ssim_channel_mean_where(*moments, c1, c2, where.to(torch.uint8))
    assert "\n" not in str(caught.value)


def test_compiled_padding_equals_the_reflected_indices():
    from maskscore_core.metric.image_metrics import _symmetric_indices

    rng = np.random.default_rng(6)
    for shape, radius in (((2, 7, 9, 3), 5), ((1, 5, 5, 1), 5), ((3, 16, 12, 3), 2), ((1, 4, 6, 2), 0)):
        t = torch.as_tensor(rng.normal(size=shape).astype(np.float32))
        n, h, w, c = shape
        rows, cols = _symmetric_indices(h, radius, 0, h), _symmetric_indices(w, radius, 0, w)
        expected = t[:, rows][:, :, cols].permute(0, 3, 1, 2).reshape(n * c, h + 2 * radius, w + 2 * radius)
        assert torch.equal(ssim_kernels.padded_planes(t, radius), expected)
        assert torch.equal(ssim_kernels.padded_planes(t.permute(0, 2, 1, 3), radius),
                           expected.transpose(1, 2))  # strided input  # fmt: skip
    with pytest.raises(ValueError, match="reflection"):
        ssim_kernels.padded_planes(torch.zeros((1, 4, 4, 3)), 5)


def test_compiled_boxes_equal_the_boxes_of_the_mask():
    """The boxes of `(a != b).any(-1)` (or `a != 0`), NaN and -0.0 as torch compares them."""
    from maskscore_core.metric.image_metrics import _boxes

    a = torch.zeros((5, 12, 15, 3))
    b = a.clone()
    a[0, 3, 4, 1], a[0, 7, 2, 2] = 0.5, -0.25  # rows 3-7, columns 2-4
    a[1, 0, 0, 0], a[1, 11, 14, 2] = 1.0, 1.0  # the corners
    a[2, 6, 9, 0] = float("nan")  # NaN differs from everything
    a[3, 5, 5, 1] = -0.0  # -0.0 equals 0: view 3 has no change; view 4 none either
    b[4] = 0.0
    for second in (None, b):
        expected = _boxes((a != (0 if second is None else second)).any(dim=-1))
        assert ssim_kernels.boxes_where(a, second) == expected
    assert ssim_kernels.boxes_where(a, b)[:4] == [(3, 8, 2, 5), (0, 12, 0, 15), (6, 7, 9, 10), None]
