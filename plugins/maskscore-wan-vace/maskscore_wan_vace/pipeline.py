"""Loading diffusers' WanVACEPipeline from a local directory and repainting masked frames with it.

VACE regenerates the white pixels of its masks but does not keep the others exactly (they pass
through its VAE), so the result is composited back onto the source outside the mask: what lies
outside the part is frame A's own pixels.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .weights import check_complete

MODEL_CLASS = "diffusers.WanVACEPipeline"
MULTIPLE = 16  # VAE downsampling (8) x transformer patch (2): frame sides must be multiples of it


def load(path: Path):
    """The pipeline in `path`, checked complete first, loaded without any network access."""
    check_complete(path)
    import torch
    from diffusers import WanVACEPipeline

    pipe = WanVACEPipeline.from_pretrained(str(path), local_files_only=True, dtype=torch.float32)
    for name in ("transformer", "vae", "text_encoder"):
        getattr(pipe, name).eval()
    pipe.set_progress_bar_config(disable=True)
    return pipe


def valid_frame_count(count: int) -> int:
    """Wan generates 4k+1 frames; other counts would be rounded by the pipeline."""
    return count if count % 4 == 1 else 4 * (count // 4) + 1


def repaint(pipe, frames: list[np.ndarray], mask: np.ndarray, prompt: str, seed: int, steps: int, guidance: float,
            reference: np.ndarray | None = None) -> list[np.ndarray]:  # fmt: skip
    """frames: (H, W, 3) uint8 each; mask: (F, H, W) bool, True = regenerate. Returns the frames
    with the masked pixels replaced by the pipeline's and every other pixel left as it was."""
    import torch
    from PIL import Image

    height, width = frames[0].shape[:2]
    if height % MULTIPLE or width % MULTIPLE:
        raise ValueError(f"wan-vace: frames of {width}x{height} px; both sides must be multiples of {MULTIPLE}")
    if valid_frame_count(len(frames)) != len(frames):
        raise ValueError(f"wan-vace: {len(frames)} frames; Wan generates 4k+1 frames")
    video = [Image.fromarray(f) for f in frames]
    masks = [Image.fromarray(np.where(m, 255, 0).astype(np.uint8), mode="L") for m in mask]
    with torch.inference_mode():
        out = pipe(
            prompt=prompt, video=video, mask=masks, height=height, width=width, num_frames=len(frames),
            num_inference_steps=steps, guidance_scale=guidance, generator=torch.Generator().manual_seed(seed),
            reference_images=None if reference is None else [Image.fromarray(reference)],
            output_type="np", max_sequence_length=64,
        ).frames[0]
    made = np.clip(np.rint(np.asarray(out) * 255.0), 0, 255).astype(np.uint8)
    return [np.where(m[..., None], g, f) for f, g, m in zip(frames, made, mask)]
