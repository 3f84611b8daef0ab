"""Video as frames: clips given as pixels (an .mp4 file, or a folder of PNG frames and a frame
rate), decoded frame by frame through the face-landmark detector and the landmark fit.

A body-state clip (a folder with `frames.json`) decodes exactly; a pixel clip is what a video
editor outputs. Each frame is read by `maskscore_face_landmarks.pixels` (detected, fitted relative
to a neutral picture of frame A's subject, warm-started from the previous frame, then refined
against its pixels where frame A's look explains them: `photometric.refine_clip`), and the fitted
facial actions and head rotation are smoothed in time with Gaussian weights of 40 ms
(`pixels.smooth_states`). The frames must come from the one camera of pictures
(`maskscore_face_landmarks.pixels.pixel_view`, the same for every subject: `draw_clip` draws body
states with it) and show the face at least 60 px wide (frames of 270 px or more; 448 px puts it
at about 100 px).

A PNG folder names its frame rate in `clip.json` ({"fps": 25}); an .mp4 carries its own.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path

import attrs
import numpy as np

from .representation import FRAMES_FILE, VideoError

PIXEL_MANIFEST = "clip.json"
VIDEO_SUFFIXES = (".mp4", ".mov", ".mkv", ".webm", ".avi")


@attrs.frozen(eq=False)
class PixelClip:
    """A clip as pictures: (H, W, 3) uint8 frames, the frame rate, and where it came from."""

    frames: tuple[np.ndarray, ...] = attrs.field(converter=tuple)
    fps: float
    source: str
    names: tuple[str, ...] = attrs.field(converter=tuple)

    def __attrs_post_init__(self):
        if not self.frames:
            raise VideoError(f"{self.source}: the clip has no frames")
        if not (isinstance(self.fps, (int, float)) and math.isfinite(self.fps) and self.fps > 0):
            raise VideoError(f"{self.source}: a clip needs a positive, finite frame rate, got {self.fps!r}")
        if len(self.names) != len(self.frames):
            raise VideoError(f"{self.source}: {len(self.names)} frame names for {len(self.frames)} frames")


def is_pixel_clip(path: Path) -> bool:
    """An .mp4 (or other video file), or a folder of PNG frames without frames.json."""
    if path.is_file():
        return path.suffix.lower() in VIDEO_SUFFIXES
    return path.is_dir() and not (path / FRAMES_FILE).exists() and (path / PIXEL_MANIFEST).exists()


def _frame_rate(folder: Path) -> float:
    manifest = folder / PIXEL_MANIFEST
    try:
        fps = json.loads(manifest.read_text(encoding="utf-8")).get("fps")
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError) as err:
        raise VideoError(f"{manifest}: not a JSON object with an 'fps' ({err})") from None
    try:
        return float(fps)
    except (TypeError, ValueError):
        raise VideoError(f"{manifest}: 'fps' must be a number, got {fps!r}") from None


def read_png_folder(folder: Path) -> PixelClip:
    """Frames in name order (frame_00000.png, ...); each unreadable frame is named."""
    import imageio.v3 as iio

    fps = _frame_rate(folder)
    paths = sorted(folder.glob("*.png"))
    if not paths:
        raise VideoError(f"{folder}: the clip has no frames (no .png files)")
    frames = []
    for index, path in enumerate(paths):
        if path.stat().st_size == 0:
            raise VideoError(f"{path}: frame {index} is an empty file")
        try:
            image = iio.imread(path)
        except Exception as err:  # noqa: BLE001 - imageio raises many types for a bad file
            raise VideoError(f"{path}: frame {index} is not a readable PNG ({type(err).__name__})") from None
        frames.append(_rgb(image, f"{path}: frame {index}"))
    return PixelClip(frames, fps, str(folder), [f"{path} (frame {i})" for i, path in enumerate(paths)])


def read_video_file(path: Path) -> PixelClip:
    """Every frame of a video file, decoded by ffmpeg (imageio-ffmpeg), at its own frame rate."""
    import imageio_ffmpeg

    if path.stat().st_size == 0:
        raise VideoError(f"{path}: video file is empty")
    try:
        reader = imageio_ffmpeg.read_frames(str(path))
        meta = next(reader)
        width, height = meta["size"]
        frames = [np.frombuffer(raw, dtype=np.uint8).reshape(height, width, 3).copy() for raw in reader]
    except (OSError, RuntimeError, StopIteration, ValueError) as err:
        message = str(err).strip().splitlines()[-1] if str(err).strip() else type(err).__name__
        raise VideoError(f"{path}: not a readable video ({message})") from None
    if not frames:
        raise VideoError(f"{path}: the clip has no frames")
    return PixelClip(frames, float(meta.get("fps") or 0.0), str(path), [f"{path} (frame {i})" for i in range(len(frames))])


def write_video_file(frames, fps: float, path: Path) -> Path:
    """An .mp4 of `frames` (H.264, yuv444p so colours survive; ffmpeg's bit-exact flags)."""
    import imageio_ffmpeg

    frames = [np.ascontiguousarray(f, dtype=np.uint8) for f in frames]
    height, width = frames[0].shape[:2]
    writer = imageio_ffmpeg.write_frames(
        str(path), (width, height), fps=fps, codec="libx264", pix_fmt_out="yuv444p", quality=None,
        output_params=["-crf", "12", "-fflags", "+bitexact", "-map_metadata", "-1"], macro_block_size=1,
    )  # fmt: skip
    writer.send(None)
    for frame in frames:
        writer.send(frame)
    writer.close()
    return path


def write_png_folder(clip: PixelClip, folder: Path) -> Path:
    """The frames as frame_00000.png, ... and clip.json with the frame rate."""
    import imageio.v3 as iio

    folder.mkdir(parents=True, exist_ok=True)
    for index, frame in enumerate(clip.frames):
        iio.imwrite(folder / f"frame_{index:05d}.png", _rgb(frame, f"{clip.source}: frame {index}"), extension=".png")
    (folder / PIXEL_MANIFEST).write_text(json.dumps({"fps": clip.fps}) + "\n", encoding="utf-8")
    return folder


def read_pixel_clip(path: Path) -> PixelClip:
    return read_video_file(path) if path.is_file() else read_png_folder(path)


def _rgb(image, what: str) -> np.ndarray:
    array = np.asarray(image)
    if array.ndim == 2:
        array = np.repeat(array[..., None], 3, axis=2)
    if array.ndim != 3 or array.shape[2] not in (3, 4) or array.dtype != np.uint8:
        raise VideoError(f"{what} is not an 8-bit RGB picture ({array.dtype} {array.shape})")
    return np.ascontiguousarray(array[..., :3])


@functools.cache
def _fitter():
    from maskscore_face_landmarks.photometric import PhotometricFit
    from maskscore_face_landmarks.pixels import PIXEL_CLIP_FIT, PixelFitter
    from maskscore_face_landmarks.silhouette import SilhouetteFit

    return PixelFitter(config=PIXEL_CLIP_FIT, silhouette=SilhouetteFit(), photometric=PhotometricFit())


def draw_clip(states, fps: float, resolution: int, source: str) -> PixelClip:
    """Body states drawn as a pixel clip: each frame by the one camera of pictures
    (`maskscore_face_landmarks.pixels.picture`: the same for every subject, the frame's look or
    the default look), as an editor's frames are expected to come."""
    from maskscore_face_landmarks.pixels import picture

    frames = [picture(state, resolution) for state in states]
    return PixelClip(frames, fps, source, [f"{source} (frame {i})" for i in range(len(frames))])


def decode_states(clip: PixelClip, instance):
    """The clip's frames as body states (module docstring); errors name the file and frame."""
    try:
        from maskscore_face_landmarks.pixels import SEEN_PARTS, PixelFitError, decode_sequence
    except ImportError:
        raise VideoError(f"{clip.source}: a pixel clip needs maskscore-face-landmarks (pip install maskscore-video[pixels])") from None
    part = instance.instruction.part
    if part not in SEEN_PARTS:  # its change would not be seen: every rung would read alike
        raise VideoError(f"{clip.source}: a pixel clip is read through a face-landmark detector, which does not see"
                         f" the {part}; parts it sees: {', '.join(SEEN_PARTS)}")  # fmt: skip
    try:
        return decode_sequence(clip.frames, instance.a.state, clip.names, clip.fps, _fitter())
    except PixelFitError as err:
        raise VideoError(str(err)) from None
