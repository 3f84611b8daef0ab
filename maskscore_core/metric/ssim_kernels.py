"""SSIM's compiled kernels: the 11 x 11 Gaussian window as one pass per plane, and Wang et al.'s
formula with the channels' mean as one pass per view; the same bits as torch's.

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
def _ssim_mean(mu_a, mu_b, aa, bb, ab, c1, c2, out):
    """out = SSIM from the filtered moments (C, H, W), averaged over the C channels (summed in
    channel order, then divided, as torch's mean over a leading dimension of three)."""
    channels, rows, cols = mu_a.shape
    two = np.float32(2.0)
    total = np.empty(cols, np.float32)
    for y in range(rows):
        for k in range(channels):
            for x in range(cols):
                mean_ab = mu_a[k, y, x] * mu_b[k, y, x]
                mean_b2 = mu_b[k, y, x] * mu_b[k, y, x]
                covariance = (ab[k, y, x] - mean_ab) * two + c2
                mean_term = mean_ab * two + c1
                mean_a2 = mu_a[k, y, x] * mu_a[k, y, x]
                variances = ((aa[k, y, x] - mean_a2) + (bb[k, y, x] - mean_b2)) + c2
                value = (mean_term * covariance) / (((mean_a2 + mean_b2) + c1) * variances)
                if k == 0:
                    total[x] = value
                else:
                    total[x] += value
        for x in range(cols):
            out[y, x] = total[x] / np.float32(channels)
    return out


def ssim_channel_mean(mu_a: torch.Tensor, mu_b: torch.Tensor, aa: torch.Tensor, bb: torch.Tensor, ab: torch.Tensor,
                      c1: float, c2: float) -> torch.Tensor:
    """SSIM (H, W) from (C, H, W) float32 moments, channels averaged; reads its inputs only."""
    moments = (mu_a, mu_b, aa, bb, ab)
    if any(m.dtype != torch.float32 or m.shape != mu_a.shape or m.ndim != 3 for m in moments):
        raise ValueError(f"expected five (C, H, W) float32 moments of one shape, got {[tuple(m.shape) for m in moments]}")
    out = torch.empty(mu_a.shape[1:], dtype=torch.float32)
    if out.numel() and mu_a.shape[0]:
        _ssim_mean(*(m.detach().numpy() for m in moments), np.float32(c1), np.float32(c2), out.numpy())
    return out
