"""Per-pixel distances between renders, averaged over a part's pixels: L1, SSIM and LPIPS.

Every function takes a batch of views (N, H, W) or (N, H, W, C) for the two sides plus a
(N, H, W) boolean mask, and averages over the masked pixels of all views together (a view in
which the part is hidden simply contributes no pixels). An empty mask has no mean: it raises
`EmptyMaskError` rather than inventing a score, so the caller decides what an invisible part
means.

SSIM follows Wang et al. 2004 with the usual constants: an 11x11 Gaussian window (sigma 1.5),
K1 = 0.01, K2 = 0.03; borders are padded by symmetric reflection (scipy's "reflect", as
scikit-image does). Normals live in [-1, 1], so their data range is L = 2 (`NORMALS_RANGE`).

LPIPS is lpips's own v0.1 AlexNet model (`lpips.LPIPS(net="alex", spatial=True)`), with the
backbone loaded from the verified checkpoint of `lpips_weights` (never random weights) and the
linear layers checked equal to lpips's packaged v0.1 weights. Features of a reference are
computed once (`Lpips.features`) and reused against every candidate.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import warnings
from pathlib import Path

import attrs
import torch

from maskscore_core.metric import ssim_kernels, lpips_weights

NORMALS_RANGE = 2.0  # normals are unit vectors: components in [-1, 1]
SSIM_WINDOW = 11
SSIM_SIGMA = 1.5
SSIM_K1 = 0.01
SSIM_K2 = 0.03


class EmptyMaskError(ValueError):
    """A masked mean over a mask that selects no pixel."""


class ImageShapeError(ValueError):
    """Images or masks whose shapes or values do not fit together."""


def _tensor(x, what: str) -> torch.Tensor:
    """A float tensor (float32 stays float32: renders are float32 and sums are taken in float64
    by masked_mean), or a bool mask as is; NaN and infinities are refused."""
    t = torch.as_tensor(x) if not isinstance(x, torch.Tensor) else x
    if t.dtype == torch.bool:
        return t
    if t.dtype not in (torch.float32, torch.float64):
        t = t.to(torch.float64)
    # The smallest and largest element are finite exactly when every element is (both propagate
    # NaN): one pass in the tensor's own type, cheaper than a float64 sum or an isfinite mask.
    if t.numel() and not all(math.isfinite(float(v)) for v in torch.aminmax(t)):
        raise ImageShapeError(f"{what} holds NaN or infinite values")
    return t


def _views_and_mask(a, b, mask) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """a, b as (N, H, W, C) float64 and mask as (N, H, W) bool, with the shapes checked."""
    ta, tb = _tensor(a, "first image batch"), _tensor(b, "second image batch")
    tm = torch.as_tensor(mask)
    if ta.shape != tb.shape:
        raise ImageShapeError(f"image batches differ in shape: {tuple(ta.shape)} vs {tuple(tb.shape)}")
    if ta.ndim == 3:
        ta, tb = ta[..., None], tb[..., None]
    if ta.ndim != 4:
        raise ImageShapeError(f"images must be (N, H, W) or (N, H, W, C), got {tuple(ta.shape)}")
    if tm.dtype != torch.bool:
        raise ImageShapeError(f"mask must be boolean, got {tm.dtype}")
    if tuple(tm.shape) != tuple(ta.shape[:3]):
        raise ImageShapeError(f"mask shape {tuple(tm.shape)} does not match the images' (N, H, W) {tuple(ta.shape[:3])}")
    return ta, tb, tm


def masked_mean(values, mask) -> float:
    """Mean of a per-pixel map (N, H, W) over the pixels where mask (N, H, W) is True."""
    tv = _tensor(values, "value map")
    tm = torch.as_tensor(mask)
    if tm.dtype != torch.bool:
        raise ImageShapeError(f"mask must be boolean, got {tm.dtype}")
    if tuple(tm.shape) != tuple(tv.shape):
        raise ImageShapeError(f"mask shape {tuple(tm.shape)} does not match the map's {tuple(tv.shape)}")
    count = int(tm.sum())
    if count == 0:
        raise EmptyMaskError("the mask selects no pixel (is the part hidden in every view?)")
    return float(tv[tm].to(torch.float64).sum() / count)  # float64 sum: no float32 drift over 10^5 pixels


def masked_l1(a, b, mask) -> float:
    """Mean absolute difference over the masked pixels (and over channels, if any)."""
    ta, tb, tm = _views_and_mask(a, b, mask)
    return masked_mean((ta - tb).abs().mean(dim=-1), tm)


def _gaussian_window(size: int = SSIM_WINDOW, sigma: float = SSIM_SIGMA) -> torch.Tensor:
    x = torch.arange(size, dtype=torch.float64) - (size - 1) / 2
    w = torch.exp(-(x**2) / (2 * sigma**2))
    return w / w.sum()


@functools.cache
def _blur_weights() -> tuple[float, ...]:
    return tuple(float(v) for v in _gaussian_window())


def _symmetric_indices(size: int, radius: int, start: int, stop: int) -> torch.Tensor:
    """Indices of rows start-radius .. stop+radius, reflected half-sample symmetrically
    (d c b a | a b c d, scipy's "reflect") where they leave 0 .. size-1."""
    if radius > size:
        raise ImageShapeError(f"images of {size} pixels across are smaller than the SSIM window radius {radius}")
    idx = torch.arange(start - radius, stop + radius)
    idx = torch.where(idx < 0, -idx - 1, idx)
    return torch.where(idx >= size, 2 * size - 1 - idx, idx)


def _blur_valid(planes: torch.Tensor, other: torch.Tensor | None = None) -> torch.Tensor:
    """Separable 11x11 Gaussian filter of padded (B, H+10, W+10) planes (or of their product
    with `other`) -> (B, H, W), compiled (`ssim_kernels`): the same sums as 2 x 11 shifted
    in-place adds in torch, several times faster."""
    return ssim_kernels.blur_valid(planes, _blur_weights(), other)


def _padded_planes(t: torch.Tensor, rows: tuple[int, int], cols: tuple[int, int]) -> torch.Tensor:
    """(N, H, W, C) -> (N*C, rows+10, cols+10) float32 planes of one rectangle plus the window's
    halo, reflected at the image border."""
    n, h, w, c = t.shape
    radius = SSIM_WINDOW // 2
    if rows == (0, h) and cols == (0, w) and radius <= min(h, w):  # the whole image: one compiled copy
        return ssim_kernels.padded_planes(t.to(torch.float32), radius)
    ri = _symmetric_indices(h, radius, *rows)
    ci = _symmetric_indices(w, radius, *cols)
    return t[:, ri][:, :, ci].permute(0, 3, 1, 2).reshape(n * c, len(ri), len(ci)).to(torch.float32)


def _ssim_from_moments(mu_a, mu_b, aa, bb, ab, data_range: float) -> torch.Tensor:
    """Wang et al.'s formula from the filtered moments. Overwrites mu_a, aa and ab (scratch) but
    never mu_b or bb, which SsimReference keeps. Written so that a == b gives exactly 1."""
    c1, c2 = _ssim_constants(data_range)
    mu_ab = mu_a * mu_b
    mu_b2 = mu_b * mu_b
    covariance = ab.sub_(mu_ab).mul_(2.0).add_(c2)  # 2 cov + c2
    mean_term = mu_ab.mul_(2.0).add_(c1)  # 2 mu_a mu_b + c1
    mu_a2 = mu_a.mul_(mu_a)
    variances = aa.sub_(mu_a2).add_(bb - mu_b2).add_(c2)  # var_a + var_b + c2
    return mean_term.mul_(covariance).div_(mu_a2.add_(mu_b2).add_(c1).mul_(variances))


def _ssim_channel_mean(mu_a, mu_b, aa, bb, ab, data_range: float, out: torch.Tensor | None = None) -> torch.Tensor:
    """`_ssim_from_moments` of (C, H, W) moments averaged over the channels, in one compiled pass
    (`ssim_kernels`: the same bits), into `out` when given (float64: widened exactly); reads its
    inputs only."""
    return ssim_kernels.ssim_channel_mean(mu_a, mu_b, aa, bb, ab, *_ssim_constants(data_range), out=out)


def _ssim_channel_mean_where(mu_a, mu_b, aa, bb, ab, data_range: float, where: torch.Tensor) -> torch.Tensor:
    """`_ssim_channel_mean(...)[where]` as float64, computed at those pixels only."""
    return ssim_kernels.ssim_channel_mean_where(mu_a, mu_b, aa, bb, ab, *_ssim_constants(data_range), where)


def _ssim_constants(data_range: float) -> tuple[float, float]:
    """Wang et al.'s c1 and c2 for `data_range`."""
    return (SSIM_K1 * data_range) ** 2, (SSIM_K2 * data_range) ** 2


def _ssim_window_map(ta: torch.Tensor, tb: torch.Tensor, rows: tuple[int, int], cols: tuple[int, int],
                     data_range: float) -> torch.Tensor:
    """SSIM (N, rows, cols) of (N, H, W, C) batches over one rectangle, channels averaged.

    Only the rectangle (plus the window's halo) is filtered, so a small part costs little.
    Float32 arithmetic: identical inputs still give exactly 1.
    """
    n, _, _, c = ta.shape
    pa, pb = _padded_planes(ta, rows, cols), _padded_planes(tb, rows, cols)
    with torch.no_grad():
        mu_a, mu_b, aa, bb, ab = (_blur_valid(x, y) for x, y in ((pa, None), (pb, None), (pa, pa), (pb, pb), (pa, pb)))
    ssim = _ssim_from_moments(mu_a, mu_b, aa, bb, ab, data_range)
    return ssim.reshape(n, c, rows[1] - rows[0], cols[1] - cols[0]).mean(dim=1).to(torch.float64)


def _content_boxes(content: torch.Tensor) -> list[tuple[int, int, int, int] | None]:
    """Per view of (N, H, W), the rows and columns around its True pixels grown by the window
    radius (`_boxes`), clipped to the image."""
    return _grown(_boxes(content), content.shape[1], content.shape[2])


def _grown(boxes: list, height: int, width: int) -> list[tuple[int, int, int, int] | None]:
    """Boxes grown by the window's radius, clipped to the image."""
    radius = SSIM_WINDOW // 2
    return [None if box is None else (max(0, box[0] - radius), min(height, box[1] + radius),
                                      max(0, box[2] - radius), min(width, box[3] + radius))
            for box in boxes]  # fmt: skip


def _differing_boxes(ta: torch.Tensor, tb: torch.Tensor | None = None) -> list[tuple[int, int, int, int] | None]:
    """`_content_boxes((ta != tb).any(dim=-1))` of (N, H, W, C) images (tb None: != 0), found in
    one compiled pass without making the mask where both are float32."""
    if ta.dtype == torch.float32 and (tb is None or tb.dtype == torch.float32):
        return _grown(ssim_kernels.boxes_where(ta, tb), ta.shape[1], ta.shape[2])
    return _content_boxes((ta != (0 if tb is None else tb)).any(dim=-1))


def ssim_map(a, b, data_range: float = NORMALS_RANGE) -> torch.Tensor:
    """Per-pixel SSIM (N, H, W) of two (N, H, W[, C]) batches, averaged over channels.

    Renders are mostly background (0 in both images), where every window sees only zeros and
    SSIM is exactly 1; only the rectangle around non-zero pixels (plus the window's reach) is
    filtered, the rest is filled with 1. The result equals filtering the whole image.
    """
    ta, tb, _ = _views_and_mask(a, b, torch.ones(torch.as_tensor(a).shape[:3], dtype=torch.bool))
    n, h, w, _c = ta.shape
    out = torch.ones((n, h, w), dtype=torch.float64)
    box = _content_boxes(((ta != 0) | (tb != 0)).any(dim=-1).any(dim=0, keepdim=True))[0]
    if box is not None:
        r0, r1, c0, c1 = box
        out[:, r0:r1, c0:c1] = _ssim_window_map(ta, tb, (r0, r1), (c0, c1), data_range)
    return out


class SsimReference:
    """One side of SSIM filtered once, to compare many candidates with (an RL group, a ladder).

    `SsimReference(b).map(a)` equals `ssim_map(a, b)` exactly, and costs 3 filtered planes per
    channel instead of 5.
    """

    def __init__(self, reference, data_range: float = NORMALS_RANGE) -> None:
        tb = _tensor(reference, "SSIM reference")
        if tb.ndim == 3:
            tb = tb[..., None]
        if tb.ndim != 4:
            raise ImageShapeError(f"SSIM reference must be (N, H, W) or (N, H, W, C), got {tuple(tb.shape)}")
        self.shape = tuple(tb.shape)
        self.data_range = data_range
        self._tb = tb
        n, h, w, c = tb.shape
        self._pb = _padded_planes(tb, (0, h), (0, w))  # boxes are sliced from it
        # Filtered only on each view's box around its content (grown by the window's reach):
        # windows that see nothing but background (zeros) filter to exactly 0.
        self._mu_b = torch.zeros((n * c, h, w), dtype=self._pb.dtype)
        self._bb = torch.zeros((n * c, h, w), dtype=self._pb.dtype)
        for view, box in enumerate(_differing_boxes(tb)):
            if box is None:
                continue
            r0, r1, c0, c1 = box
            planes = slice(view * c, (view + 1) * c)
            pb = self._pb[planes, r0 : r1 + SSIM_WINDOW - 1, c0 : c1 + SSIM_WINDOW - 1]
            with torch.no_grad():
                mu, squares = _blur_valid(pb), _blur_valid(pb, pb)
            self._mu_b[planes, r0:r1, c0:c1], self._bb[planes, r0:r1, c0:c1] = mu, squares

    def map(self, candidate) -> torch.Tensor:
        """Per-pixel SSIM (N, H, W) of `candidate` against the reference; `candidate` may be an
        SsimReference itself, whose filtered moments are then reused (only the cross term is
        filtered)."""
        other = candidate if isinstance(candidate, SsimReference) else None
        ta = other._tb if other is not None else _tensor(candidate, "SSIM candidate")
        if ta.ndim == 3:
            ta = ta[..., None]
        if tuple(ta.shape) != self.shape:
            raise ImageShapeError(f"SSIM candidate {tuple(ta.shape)} does not match the reference {self.shape}")
        n, h, w, c = ta.shape
        out = torch.ones((n, h, w), dtype=torch.float64)
        # A window in which candidate and reference agree pixel for pixel has SSIM exactly 1
        # (`_ssim_from_moments`), so only each view's box around differing pixels, grown by the
        # window's reach, is filtered: for a local edit, a small part of the picture.
        padded = None
        for view, box in enumerate(_differing_boxes(ta, self._tb)):
            if box is None:
                continue
            r0, r1, c0, c1 = box
            if padded is None:  # the whole image padded once; a box's planes are a slice of it
                padded = other._pb if other is not None else _padded_planes(ta, (0, h), (0, w))
            planes = slice(view * c, (view + 1) * c)
            pa, pb = (x[planes, r0 : r1 + SSIM_WINDOW - 1, c0 : c1 + SSIM_WINDOW - 1] for x in (padded, self._pb))
            with torch.no_grad():
                if other is not None:
                    mu_a, aa = (x[planes, r0:r1, c0:c1] for x in (other._mu_b, other._bb))
                    ab = _blur_valid(pa, pb)
                else:
                    mu_a, aa, ab = _blur_valid(pa), _blur_valid(pa, pa), _blur_valid(pa, pb)
            mu_b, bb = self._mu_b[planes, r0:r1, c0:c1], self._bb[planes, r0:r1, c0:c1]
            _ssim_channel_mean(mu_a, mu_b, aa, bb, ab, self.data_range, out=out[view, r0:r1, c0:c1])
        return out


def _boxes(masks: torch.Tensor) -> list[tuple[int, int, int, int] | None]:
    """Per view of (N, H, W) masks, the rows and columns around its True pixels (None where it
    has none), found for all views at once."""
    as_bytes = masks.view(torch.uint8)  # amax over bytes: several times faster than any() over bools
    rows, cols = as_bytes.amax(dim=2), as_bytes.amax(dim=1)  # (N, H), (N, W)
    height, width = rows.shape[1], cols.shape[1]
    found = rows.amax(dim=1).tolist()
    # argmax gives the first maximum: the first True from either end.
    r0, r1 = rows.argmax(dim=1).tolist(), rows.flip(1).argmax(dim=1).tolist()
    c0, c1 = cols.argmax(dim=1).tolist(), cols.flip(1).argmax(dim=1).tolist()
    return [(r0[v], height - r1[v], c0[v], width - c1[v]) if found[v] else None for v in range(len(found))]


def region_ssim(candidate, references: list[SsimReference], regions: list) -> list[list[torch.Tensor]]:
    """SSIM of one candidate against several references, only where it is wanted.

    Returns, per reference k and view v, `references[k].map(candidate)[v][regions[k][v]]` (float64,
    the region's pixels in row order): the same numbers, for less work. A scorer needs SSIM on
    the compared pixels only, so each view filters just the box around each region (renders are
    mostly background), and the candidate's own moments (mean, square) are filtered once, on the
    box around all regions, for every reference.
    """
    ta = _tensor(candidate, "SSIM candidate")
    if ta.ndim == 3:
        ta = ta[..., None]
    masks = [torch.as_tensor(region) for region in regions]
    if len(masks) != len(references):
        raise ImageShapeError(f"{len(references)} SSIM references but {len(masks)} regions")
    for reference, mask in zip(references, masks):
        if tuple(ta.shape) != reference.shape:
            raise ImageShapeError(f"SSIM candidate {tuple(ta.shape)} does not match the reference {reference.shape}")
        if mask.dtype != torch.bool or tuple(mask.shape) != tuple(ta.shape[:3]):
            raise ImageShapeError(f"SSIM region must be boolean of shape {tuple(ta.shape[:3])}, got {mask.dtype} {tuple(mask.shape)}")
    n, h, w, c = ta.shape
    out: list[list[torch.Tensor]] = [[] for _ in references]
    padded = _padded_planes(ta, (0, h), (0, w))  # the whole image padded once; boxes are slices of it
    boxes_by_mask = [_boxes(mask) for mask in masks]
    for view in range(n):
        boxes = [boxes_of_mask[view] for boxes_of_mask in boxes_by_mask]
        found = [box for box in boxes if box is not None]
        if not found:
            for values in out:
                values.append(torch.zeros(0, dtype=torch.float64))
            continue
        r0, r1 = min(b[0] for b in found), max(b[1] for b in found)
        c0, c1 = min(b[2] for b in found), max(b[3] for b in found)
        planes = slice(view * c, (view + 1) * c)
        pa = padded[planes, r0 : r1 + SSIM_WINDOW - 1, c0 : c1 + SSIM_WINDOW - 1]
        with torch.no_grad():
            mu_a, aa = _blur_valid(pa), _blur_valid(pa, pa)
            for k, (reference, box) in enumerate(zip(references, boxes)):
                if box is None:
                    out[k].append(torch.zeros(0, dtype=torch.float64))
                    continue
                b0, b1, d0, d1 = box
                pb = reference._pb[planes, b0 : b1 + SSIM_WINDOW - 1, d0 : d1 + SSIM_WINDOW - 1]
                inner = (slice(None), slice(b0 - r0, b1 - r0), slice(d0 - c0, d1 - c0))
                halo = (slice(None), slice(b0 - r0, b1 - r0 + SSIM_WINDOW - 1), slice(d0 - c0, d1 - c0 + SSIM_WINDOW - 1))
                ab = _blur_valid(pa[halo], pb)
                out[k].append(_ssim_channel_mean_where(
                    mu_a[inner], reference._mu_b[planes, b0:b1, d0:d1], aa[inner], reference._bb[planes, b0:b1, d0:d1], ab,
                    reference.data_range, masks[k][view, b0:b1, d0:d1],
                ))  # fmt: skip
    return out


def masked_ssim(a, b, mask, data_range: float = NORMALS_RANGE) -> float:
    """SSIM (1 = identical) averaged over the masked pixels; windows see the whole image."""
    ta, tb, tm = _views_and_mask(a, b, mask)
    if not bool(tm.any()):
        raise EmptyMaskError("the mask selects no pixel (is the part hidden in every view?)")
    rows = torch.nonzero(tm.any(dim=(0, 2)))[:, 0]
    cols = torch.nonzero(tm.any(dim=(0, 1)))[:, 0]
    r0, r1, c0, c1 = int(rows[0]), int(rows[-1]) + 1, int(cols[0]), int(cols[-1]) + 1
    window = _ssim_window_map(ta, tb, (r0, r1), (c0, c1), data_range)
    return masked_mean(window, tm[:, r0:r1, c0:c1])


@attrs.frozen(eq=False)
class PulledMask:
    """A pixel mask pulled down to each LPIPS layer's size (`Lpips.pull`)."""

    planes: dict  # (h, w) -> (B, h, w) float64
    count: int  # the mask's pixels
    shape: tuple  # (B, H, W) of the mask


@attrs.frozen
class LpipsFeatures:
    """LPIPS's five unit-normalised AlexNet feature maps of a batch of images."""

    layers: tuple[torch.Tensor, ...]
    image_size: tuple[int, int]

    @property
    def batch(self) -> int:
        return int(self.layers[0].shape[0])

    def __len__(self) -> int:
        return len(self.layers)

    def __getitem__(self, index: int) -> torch.Tensor:
        return self.layers[index]


@contextlib.contextmanager
def _alexnet_features_only():
    """While lpips builds its trunk, torchvision's AlexNet is made with its classifier on the
    meta device: lpips keeps only the convolutions (`.features`), whose weights come from our
    checkpoint, so the 58M-parameter classifier would be allocated and dropped for nothing (a
    transient that can set a scoring process's peak memory). The convolutions are real
    (uninitialised) CPU tensors, every one overwritten from the checkpoint in `Lpips.__init__`."""
    import lpips.pretrained_networks as trunks
    import torchvision

    def alexnet(*_args, **_kwargs):
        with torch.device("meta"):
            model = torchvision.models.AlexNet()
        model.features.to_empty(device="cpu")
        return model

    original = trunks.tv.alexnet
    trunks.tv.alexnet = alexnet
    try:
        yield
    finally:
        trunks.tv.alexnet = original


class Lpips:
    """LPIPS v0.1 (AlexNet) on images in [-1, 1]: features once, spatial distance maps after."""

    def __init__(self, checkpoint: Path | None = None) -> None:
        import lpips

        weights = lpips_weights.load_checkpoint(checkpoint)
        # pnet_rand: no torchvision download; the backbone is replaced right below.
        # fork_rng: the throwaway random initialisation must not move the caller's torch RNG.
        with torch.random.fork_rng(), warnings.catch_warnings(), _alexnet_features_only():
            warnings.simplefilter("ignore", UserWarning)  # torchvision's "pretrained is deprecated"
            self._model = lpips.LPIPS(net="alex", version="0.1", pnet_rand=True, spatial=True, verbose=False)
        convs = [m for m in self._model.net.modules() if isinstance(m, torch.nn.Conv2d)]
        if len(convs) != len(weights["conv_weights"]):
            raise lpips_weights.WeightsError(f"lpips's AlexNet has {len(convs)} convolutions, the checkpoint 5")
        with torch.no_grad():
            for conv, w, bias in zip(convs, weights["conv_weights"], weights["conv_biases"]):
                if tuple(conv.weight.shape) != w.shape:
                    raise lpips_weights.WeightsError(f"AlexNet conv {tuple(conv.weight.shape)} vs checkpoint {w.shape}")
                conv.weight.copy_(torch.from_numpy(w))
                conv.bias.copy_(torch.from_numpy(bias))
        for i, (lin, w) in enumerate(zip(self._model.lins, weights["linear_weights"])):
            packaged = lin.model[-1].weight.detach()
            if not torch.equal(packaged, torch.from_numpy(w)):
                raise lpips_weights.WeightsError(
                    f"lpips's packaged v0.1 linear layer {i} differs from the checkpoint's: this lpips install"
                    " does not match the backbone the checkpoint was exported with"
                )
        self._model.eval()
        for p in self._model.parameters():
            p.requires_grad_(False)
        # AlexNet runs in channels-last layout: oneDNN's convolutions are ~1.5x faster on a CPU
        # that way (features differ from NCHW's in the last float32 digits, ~1e-4 at most).
        self._model.net.to(memory_format=torch.channels_last)

    def features(self, images) -> LpipsFeatures:
        """Normalised features of (N, 3, H, W) images in [-1, 1] (torch or numpy), one forward."""
        x = torch.as_tensor(images) if not isinstance(images, torch.Tensor) else images
        if x.ndim != 4 or x.shape[1] != 3:
            raise ImageShapeError(f"LPIPS expects (N, 3, H, W) images, got {tuple(x.shape)}")
        x = x.to(torch.float32)
        # One pass checks both: amax propagates NaN, and an infinity is its own maximum.
        magnitude = float(x.abs().amax())
        if not math.isfinite(magnitude):
            raise ImageShapeError("LPIPS input holds NaN or infinite values")
        if magnitude > 1.0 + 1e-5:
            raise ImageShapeError(f"LPIPS expects values in [-1, 1], got a maximum magnitude of {magnitude:.4g}")
        import lpips

        with torch.no_grad():
            outs = self._model.net.forward(self._model.scaling_layer(x).contiguous(memory_format=torch.channels_last))
            layers = tuple(lpips.normalize_tensor(o) for o in outs)
        return LpipsFeatures(layers=layers, image_size=(int(x.shape[2]), int(x.shape[3])))

    def distance_map(self, features_a: LpipsFeatures, features_b: LpipsFeatures) -> torch.Tensor:
        """Spatial LPIPS (B, H, W), upsampled to image size as lpips's spatial mode does.

        features_b may hold the N reference views once while features_a holds G x N candidate
        views (candidate-major): the reference is then tiled G times.
        """
        if features_a.image_size != features_b.image_size:
            raise ImageShapeError(f"LPIPS features of {features_a.image_size} and {features_b.image_size} images")
        na, nb = features_a.batch, features_b.batch
        if na % nb != 0:
            raise ImageShapeError(f"LPIPS batches of {na} and {nb} images: the first must be a multiple of the second")
        repeat = na // nb
        import lpips.lpips as lpips_module

        total = None
        with torch.no_grad():
            for lin, fa, fb in zip(self._model.lins, features_a.layers, features_b.layers):
                fb = fb.repeat(repeat, 1, 1, 1) if repeat > 1 else fb
                layer = lpips_module.upsample(lin((fa - fb) ** 2), out_HW=features_a.image_size)
                total = layer if total is None else total + layer
        return total[:, 0]

    def distance(self, features_a: LpipsFeatures, features_b: LpipsFeatures, mask) -> float:
        """LPIPS averaged over the masked pixels of all views: the masked mean of `distance_map`,
        computed without upsampling anything (`layer_maps`, then `masked_layer_mean`)."""
        self._check_pair(features_a, features_b)
        return self.masked_layer_mean(self.layer_maps(features_a, features_b), mask, features_a)

    @staticmethod
    def _check_pair(features_a: LpipsFeatures, features_b: LpipsFeatures) -> None:
        if features_a.batch != features_b.batch or features_a.image_size != features_b.image_size:
            raise ImageShapeError(
                f"LPIPS features of {features_a.batch} x {features_a.image_size} and"
                f" {features_b.batch} x {features_b.image_size} images"
            )

    def layer_maps(self, features_a: LpipsFeatures, features_b: LpipsFeatures) -> dict[tuple[int, int], torch.Tensor]:
        """The linear layers' outputs (B, h, w), summed per layer size: LPIPS before upsampling.
        Maps of two pairs may be combined per position (render_compare takes the excess of one
        over another) before `masked_layer_mean`."""
        self._check_pair(features_a, features_b)
        by_size: dict[tuple[int, int], torch.Tensor] = {}
        with torch.no_grad():
            for lin, fa, fb in zip(self._model.lins, features_a.layers, features_b.layers):
                size = (int(fa.shape[2]), int(fa.shape[3]))
                difference = fa - fb
                layer = lin(difference.mul_(difference))[:, 0]  # (fa - fb) ** 2, one temporary fewer
                by_size[size] = layer if size not in by_size else by_size[size] + layer
        return by_size

    @staticmethod
    def pull(mask, features: LpipsFeatures) -> PulledMask:
        """`mask` pulled down to the size of each of `features`' layers (see `masked_layer_mean`),
        to reuse for every candidate compared on the same pixels."""
        tm = torch.as_tensor(mask)
        expected = (features.batch, *features.image_size)
        if tm.dtype != torch.bool or tuple(tm.shape) != expected:
            raise ImageShapeError(f"LPIPS mask must be boolean of shape {expected}, got {tm.dtype} {tuple(tm.shape)}")
        count = int(tm.sum())
        if count == 0:
            raise EmptyMaskError("the mask selects no pixel (is the part hidden in every view?)")
        height, width = features.image_size
        planes = {}
        with torch.no_grad():
            plane = tm.to(torch.float32)
            for layer in features.layers:
                h, w = int(layer.shape[2]), int(layer.shape[3])
                if (h, w) not in planes:
                    pulled = _upsample_matrix(h, height).T @ (plane @ _upsample_matrix(w, width))  # (B, h, w)
                    planes[(h, w)] = pulled.to(torch.float64)
        return PulledMask(planes=planes, count=count, shape=expected)

    @staticmethod
    def masked_layer_mean(maps: dict[tuple[int, int], torch.Tensor], mask, features: LpipsFeatures) -> float:
        """The masked mean of the upsampled sum of `maps` over the image, without upsampling.

        The spatial map is a sum over layers of bilinear upsamplings U_h L U_w^T of small maps L,
        so its sum over a mask m equals sum(L * (U_h^T m U_w)): the mask is pulled down to each
        layer's size instead of every layer being pushed up to the image's (much cheaper).
        `mask` is a boolean (B, H, W) mask or one already pulled (`pull`).
        """
        pulled = mask if isinstance(mask, PulledMask) else Lpips.pull(mask, features)
        expected = (features.batch, *features.image_size)
        if pulled.shape != expected:
            raise ImageShapeError(f"LPIPS mask pulled for {pulled.shape} images, the features are {expected}")
        with torch.no_grad():
            total = torch.zeros((), dtype=torch.float64)
            for size, layer in maps.items():
                total += (layer.to(torch.float64) * pulled.planes[size]).sum()
        return float(total / pulled.count)


@functools.cache
def _upsample_matrix(size_in: int, size_out: int) -> torch.Tensor:
    """(size_out, size_in) float32 matrix of lpips's bilinear upsampling along one axis (torch's
    bilinear mode, align_corners=False, is separable), read off by upsampling a unit basis."""
    basis = torch.eye(size_in, dtype=torch.float64).reshape(size_in, 1, size_in, 1)
    up = torch.nn.functional.interpolate(basis, size=(size_out, 1), mode="bilinear", align_corners=False)
    return up[:, 0, :, 0].T.contiguous().to(torch.float32)


def normals_to_images(normals) -> torch.Tensor:
    """(N, H, W, 3) normals in [-1, 1] -> (N, 3, H, W) float32, the layout LPIPS wants."""
    t = torch.as_tensor(normals, dtype=torch.float32)
    if t.ndim != 4 or t.shape[-1] != 3:
        raise ImageShapeError(f"normals must be (N, H, W, 3), got {tuple(t.shape)}")
    return t.permute(0, 3, 1, 2).contiguous().clamp(-1.0, 1.0)


_SHARED: dict[str, Lpips] = {}


def get_lpips() -> Lpips:
    """One LPIPS model per process and cache directory (loading it reads and hashes 10 MB)."""
    key = os.fspath(lpips_weights.checkpoint_path())
    if key not in _SHARED:
        _SHARED[key] = Lpips()
    return _SHARED[key]
