"""The image representation: one RGB picture of frame A's subject, what an image editor outputs.

In memory an image asset holds an (H, W, 3) uint8 array; on disk it is a PNG (JPEG is read too).
Built-in frames are drawn by the one camera of pictures (`maskscore_face_landmarks.pixels.pixel_view`,
the same for every subject) with the frame's look, at `ImageOptions.image_resolution` pixels
(default 448: the face about 100 px wide; the detector needs at least 60 px, about 270 px of
picture at this framing).
"""

from __future__ import annotations

from pathlib import Path

import attrs
import numpy as np

from maskscore_core.dataset import reward_tables
from maskscore_core.plugin.context import setting

MODALITY = "image"
SUFFIXES = (".png", ".jpg", ".jpeg")
DEFAULT_RESOLUTION = 448


class ImageError(ValueError):
    """An image file or array that cannot be used (missing, empty, unreadable, not RGB)."""


@attrs.frozen
class ImageOptions:
    """The run config key the image modality reads (`ctx.config.options`): the picture's size."""

    image_resolution: int = setting(DEFAULT_RESOLUTION, lambda v: isinstance(v, int) and v >= 16,
                                    "a whole number of pixels of at least 16", int)  # fmt: skip


def resolution(ctx) -> int:
    return (ctx.config.options(ImageOptions) if ctx is not None else ImageOptions()).image_resolution


def as_rgb(image, what: str) -> np.ndarray:
    """(H, W, 3) uint8 from a decoded image (grey and RGBA are converted), or ImageError."""
    array = np.asarray(image)
    if array.ndim == 2:
        array = np.repeat(array[..., None], 3, axis=2)
    if array.ndim != 3 or array.shape[2] not in (3, 4) or array.size == 0:
        raise ImageError(f"{what}: not an RGB picture (array of shape {array.shape})")
    if array.dtype != np.uint8:
        raise ImageError(f"{what}: pixels are {array.dtype}, expected 8-bit")
    return np.ascontiguousarray(array[..., :3])


def read(path: Path) -> np.ndarray:
    """The pixels of a PNG or JPEG file; every problem names the file."""
    import imageio.v3 as iio

    if path.suffix.lower() not in SUFFIXES:
        raise ImageError(f"{path}: not a picture file (expected {', '.join(SUFFIXES)})")
    if not path.is_file():
        raise ImageError(f"{path}: image file does not exist")
    if path.stat().st_size == 0:
        raise ImageError(f"{path}: image file is empty")
    try:
        image = iio.imread(path)
    except Exception as err:  # noqa: BLE001 - imageio raises many types for a bad file
        raise ImageError(f"{path}: unreadable image ({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''})") from None
    return as_rgb(image, str(path))


def write(pixels: np.ndarray, path: Path) -> Path:
    import imageio.v3 as iio

    path.parent.mkdir(parents=True, exist_ok=True)
    iio.imwrite(path, as_rgb(pixels, str(path)), extension=".png")
    return path


def resolve(value, root) -> Path:
    return reward_tables.resolve(value, root, "an image table value", ImageError)
