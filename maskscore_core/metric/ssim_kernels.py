"""SSIM's compiled kernels: the 11 x 11 Gaussian window as one pass per plane, Wang et al.'s
formula with the channels' mean as one pass per view (or only at the pixels a region picks), and
the bookkeeping around them (reflected padding, the boxes where two pictures differ); the same
bits as torch's.

Why compiled: in torch the formula is a dozen passes over the moments (and copies of those it
overwrites), and the separable filter is 2 x 11 shifted in-place adds, each a pass over
the whole plane in memory; here each input row is filtered across once into a ring of the last
11 filtered rows, which stays in the CPU's cache, and the rows down are summed from the ring.

Why the same bits: torch adds `alpha * other` with a fused multiply-add (one rounding) and
starts each pass with a plain product; this code makes the same operations in the same order
(`_fma`: LLVM's `llvm.fma.f32`, exact on every CPU), so every SSIM value, and so every stored
score, is what the torch filter gives; the formula's plain float32 products, sums and quotient
are made in torch's order too (`tests/test_ssim_kernels.py` compares both bit for bit).
No threads of its own: the scorer runs it on its pool, and it releases the GIL there.
"""

from __future__ import annotations

import numpy as np
import torch
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic


@intrinsic
def _fma(typingctx, a, b, c):
    """a * b + c rounded once (float32), as torch's vectorised `add_(other, alpha=...)` makes it."""
    signature = types.float32(types.float32, types.float32, types.float32)

    def codegen(context, builder, sig, args):
        f32 = ir.FloatType()
        fma = builder.module.declare_intrinsic("llvm.fma", [f32], ir.FunctionType(f32, [f32, f32, f32]))
        return builder.call(fma, args)

    return signature, codegen


TAPS = 11  # the window's width (image_metrics.SSIM_WINDOW)


@njit(nogil=True, cache=True)
def _filter(first, second, weights, out):
    """out[p] = the window's filter of first[p] (times second[p] where `second` has planes),
    valid part only: (P, H + 10, W + 10) -> (P, H, W)."""
    planes, rows_in, cols_in = first.shape
    taps = TAPS  # a constant: the filter's loops unroll and the loop across a row vectorises
    rows, cols = rows_in - (taps - 1), cols_in - (taps - 1)
    product = second.shape[0] > 0
    source = np.empty(cols_in, np.float32)
    ring = np.empty((taps, cols), np.float32)  # the last `taps` rows filtered across
    for p in range(planes):
        for r in range(rows_in):
            if product:
                for x in range(cols_in):
                    source[x] = first[p, r, x] * second[p, r, x]
            else:
                for x in range(cols_in):
                    source[x] = first[p, r, x]
            across = ring[r % taps]
            for x in range(cols):
                total = source[x] * weights[0]
                for i in range(1, taps):
                    total = _fma(source[x + i], weights[i], total)
                across[x] = total
            y = r - (taps - 1)
            if y < 0:
                continue
            down = out[p, y]
            top = ring[y % taps]
            for x in range(cols):
                down[x] = top[x] * weights[0]
            for j in range(1, taps):
                below, weight = ring[(y + j) % taps], weights[j]
                for x in range(cols):
                    down[x] = _fma(below[x], weight, down[x])
    return out


_NO_PLANES = np.empty((0, 0, 0), np.float32)


def blur_valid(planes: torch.Tensor, weights: tuple[float, ...], other: torch.Tensor | None = None) -> torch.Tensor:
    """The separable filter `weights` (odd length k) of padded (P, H + k - 1, W + k - 1) float32
    planes, or of their product with `other` (same shape), on the valid part: (P, H, W)."""
    taps = len(weights)
    if taps != TAPS:
        raise ValueError(f"the compiled filter has {TAPS} taps, got {taps} weights")
    if planes.dtype != torch.float32 or planes.ndim != 3:
        raise ValueError(f"expected (P, H, W) float32 planes, got {tuple(planes.shape)} {planes.dtype}")
    if other is not None and (other.shape != planes.shape or other.dtype != torch.float32):
        raise ValueError(f"planes {tuple(planes.shape)} and their factor {tuple(other.shape)} {other.dtype} differ")
    count, rows_in, cols_in = planes.shape
    out = torch.empty((count, max(0, rows_in - taps + 1), max(0, cols_in - taps + 1)), dtype=torch.float32)
    if out.numel() == 0:
        return out
    # float32 weights, as torch casts a Python float `alpha` for float32 tensors
    _filter(planes.detach().numpy(), _NO_PLANES if other is None else other.detach().numpy(),
            np.asarray(weights, dtype=np.float32), out.numpy())  # fmt: skip
    return out


@njit(nogil=True, cache=True)
def _ssim_at(mu_a, mu_b, aa, bb, ab, c1, c2, y, x):
    """SSIM at (y, x) from the filtered moments (C, H, W), averaged over the C channels (summed in
    channel order, then divided, as torch's mean over a leading dimension of three)."""
    two = np.float32(2.0)
    total = np.float32(0.0)
    for k in range(mu_a.shape[0]):
        mean_ab = mu_a[k, y, x] * mu_b[k, y, x]
        mean_b2 = mu_b[k, y, x] * mu_b[k, y, x]
        covariance = (ab[k, y, x] - mean_ab) * two + c2
        mean_term = mean_ab * two + c1
        mean_a2 = mu_a[k, y, x] * mu_a[k, y, x]
        variances = ((aa[k, y, x] - mean_a2) + (bb[k, y, x] - mean_b2)) + c2
        value = (mean_term * covariance) / (((mean_a2 + mean_b2) + c1) * variances)
        total = value if k == 0 else total + value
    return total / np.float32(mu_a.shape[0])


@njit(nogil=True, cache=True)
def _ssim_mean(mu_a, mu_b, aa, bb, ab, c1, c2, out):
    """out (H, W) = `_ssim_at` everywhere (out may be float64: float32 values widened exactly)."""
    for y in range(out.shape[0]):
        for x in range(out.shape[1]):
            out[y, x] = _ssim_at(mu_a, mu_b, aa, bb, ab, c1, c2, y, x)
    return out


@njit(nogil=True, cache=True)
def _ssim_mean_where(mu_a, mu_b, aa, bb, ab, c1, c2, where):
    """`_ssim_at` at the True pixels of `where` (H, W) only, in row order, as float64."""
    out = np.empty(np.count_nonzero(where), np.float64)
    found = 0
    for y in range(where.shape[0]):
        for x in range(where.shape[1]):
            if where[y, x]:
                out[found] = _ssim_at(mu_a, mu_b, aa, bb, ab, c1, c2, y, x)
                found += 1
    return out


def _checked_moments(moments) -> None:
    first = moments[0]
    if any(m.dtype != torch.float32 or m.shape != first.shape or m.ndim != 3 for m in moments):
        raise ValueError(f"expected five (C, H, W) float32 moments of one shape, got {[tuple(m.shape) for m in moments]}")


def ssim_channel_mean(mu_a: torch.Tensor, mu_b: torch.Tensor, aa: torch.Tensor, bb: torch.Tensor, ab: torch.Tensor,
                      c1: float, c2: float, out: torch.Tensor | None = None) -> torch.Tensor:
    """SSIM (H, W) from (C, H, W) float32 moments, channels averaged; reads its inputs only.
    Written into `out` (H, W) when given (float64: the float32 values widened exactly)."""
    moments = (mu_a, mu_b, aa, bb, ab)
    _checked_moments(moments)
    if out is None:
        out = torch.empty(mu_a.shape[1:], dtype=torch.float32)
    elif tuple(out.shape) != tuple(mu_a.shape[1:]) or out.dtype not in (torch.float32, torch.float64):
        raise ValueError(f"SSIM of {tuple(mu_a.shape[1:])} pixels into {tuple(out.shape)} {out.dtype}")
    if out.numel() and mu_a.shape[0]:
        _ssim_mean(*(m.detach().numpy() for m in moments), np.float32(c1), np.float32(c2), out.numpy())
    return out


def ssim_channel_mean_where(mu_a: torch.Tensor, mu_b: torch.Tensor, aa: torch.Tensor, bb: torch.Tensor,
                            ab: torch.Tensor, c1: float, c2: float, where: torch.Tensor) -> torch.Tensor:
    """`ssim_channel_mean(...)[where]` as float64, computed at the True pixels of `where` only."""
    moments = (mu_a, mu_b, aa, bb, ab)
    _checked_moments(moments)
    if where.dtype != torch.bool or tuple(where.shape) != tuple(mu_a.shape[1:]):
        raise ValueError(f"SSIM pixels picked by a {where.dtype} {tuple(where.shape)} mask; expected bool {tuple(mu_a.shape[1:])}")
    if mu_a.shape[0] == 0:
        raise ValueError("SSIM of moments with no channel")
    values = _ssim_mean_where(*(m.detach().numpy() for m in moments), np.float32(c1), np.float32(c2), where.numpy())
    return torch.from_numpy(values)


@njit(nogil=True, cache=True)
def _reflected(i, size):
    """Index i of a line padded by symmetric reflection (d c b a | a b c d) back in 0 .. size-1."""
    if i < 0:
        return -i - 1
    if i >= size:
        return 2 * size - 1 - i
    return i


@njit(nogil=True, cache=True)
def _pad(images, radius, out):
    """out[v * C + c] = channel c of view v of (N, H, W, C) images, rows and columns reflected
    by `radius` at the border: (N * C, H + 2 radius, W + 2 radius)."""
    views, rows, cols, channels = images.shape
    across = np.empty(cols + 2 * radius, np.int64)
    for j in range(cols + 2 * radius):
        across[j] = _reflected(j - radius, cols)
    for v in range(views):
        for c in range(channels):
            plane = out[v * channels + c]
            for i in range(rows + 2 * radius):
                y = _reflected(i - radius, rows)
                for j in range(cols + 2 * radius):
                    plane[i, j] = images[v, y, across[j], c]
    return out


def padded_planes(images: torch.Tensor, radius: int) -> torch.Tensor:
    """(N, H, W, C) float32 images as (N * C, H + 2 radius, W + 2 radius) planes, reflected half a
    sample symmetrically at the border (scipy's "reflect"); radius at most H and W."""
    if images.dtype != torch.float32 or images.ndim != 4:
        raise ValueError(f"expected (N, H, W, C) float32 images, got {tuple(images.shape)} {images.dtype}")
    views, rows, cols, channels = images.shape
    if radius < 0 or radius > min(rows, cols):
        raise ValueError(f"a reflection of {radius} pixels needs images at least that large, got {rows} x {cols}")
    out = torch.empty((views * channels, rows + 2 * radius, cols + 2 * radius), dtype=torch.float32)
    if out.numel():
        _pad(images.detach().numpy(), radius, out.numpy())
    return out


@njit(nogil=True, cache=True)
def _boxes_where(first, second, compare, out):
    """out[v] = (found, first row, last row + 1, first column, last column + 1) of the pixels of
    view v of (N, H, W, C) where some channel of `first` differs from `second` (compare) or
    from 0 (not compare)."""
    views, rows, cols, channels = first.shape
    for v in range(views):
        r0, r1, c0, c1 = rows, 0, cols, 0
        for y in range(rows):
            for x in range(cols):
                for c in range(channels):
                    value = first[v, y, x, c]
                    if (value != second[v, y, x, c]) if compare else (value != 0):
                        r0, r1, c0, c1 = min(r0, y), max(r1, y + 1), min(c0, x), max(c1, x + 1)
                        break
        out[v, 0] = 1 if r1 > 0 else 0
        out[v, 1], out[v, 2], out[v, 3], out[v, 4] = r0, r1, c0, c1
    return out


def boxes_where(first: torch.Tensor, second: torch.Tensor | None = None) -> list[tuple[int, int, int, int] | None]:
    """Per view of (N, H, W, C) images, the rows and columns around the pixels where some channel
    differs from `second` (or, without it, is not 0), None where there is none: the boxes of
    `(first != second).any(dim=-1)` without making that mask. NaN differs from everything."""
    if first.ndim != 4 or (second is not None and (second.shape != first.shape or second.dtype != first.dtype)):
        raise ValueError(f"expected (N, H, W, C) images of one shape and type, got {tuple(first.shape)}"
                         f" and {None if second is None else tuple(second.shape)}")  # fmt: skip
    found = np.empty((first.shape[0], 5), np.int64)
    array = first.detach().numpy()
    _boxes_where(array, array if second is None else second.detach().numpy(), second is not None, found)
    return [(int(r0), int(r1), int(c0), int(c1)) if hit else None for hit, r0, r1, c0, c1 in found]
