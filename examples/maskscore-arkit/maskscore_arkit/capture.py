"""A face capture as Apple's Live Link Face app records it: one CSV row per frame.

Columns, in the app's order: `Timecode` (HH:MM:SS:FF, optionally .fff sub-frames, FF counted at
the capture's frame rate), `BlendShapeCount` (61: the 52 blendshapes and 9 angles), the 52 ARKit
blendshapes in capitalised names (EyeBlinkLeft ... TongueOut, each in [0, 1]), then HeadYaw,
HeadPitch, HeadRoll, LeftEyeYaw, LeftEyePitch, LeftEyeRoll, RightEyeYaw, RightEyePitch,
RightEyeRoll (radians, ARKit's unit). Columns are found by name; every problem is one line naming
the file, the row and the column.
"""

from __future__ import annotations

import csv
import io
import math
import re
from pathlib import Path

import attrs
import numpy as np

BLENDSHAPES: tuple[str, ...] = (
    "EyeBlinkLeft", "EyeLookDownLeft", "EyeLookInLeft", "EyeLookOutLeft", "EyeLookUpLeft", "EyeSquintLeft",
    "EyeWideLeft", "EyeBlinkRight", "EyeLookDownRight", "EyeLookInRight", "EyeLookOutRight", "EyeLookUpRight",
    "EyeSquintRight", "EyeWideRight", "JawForward", "JawRight", "JawLeft", "JawOpen", "MouthClose", "MouthFunnel",
    "MouthPucker", "MouthRight", "MouthLeft", "MouthSmileLeft", "MouthSmileRight", "MouthFrownLeft",
    "MouthFrownRight", "MouthDimpleLeft", "MouthDimpleRight", "MouthStretchLeft", "MouthStretchRight",
    "MouthRollLower", "MouthRollUpper", "MouthShrugLower", "MouthShrugUpper", "MouthPressLeft", "MouthPressRight",
    "MouthLowerDownLeft", "MouthLowerDownRight", "MouthUpperUpLeft", "MouthUpperUpRight", "BrowDownLeft",
    "BrowDownRight", "BrowInnerUp", "BrowOuterUpLeft", "BrowOuterUpRight", "CheekPuff", "CheekSquintLeft",
    "CheekSquintRight", "NoseSneerLeft", "NoseSneerRight", "TongueOut",
)  # fmt: skip
HEAD = ("HeadYaw", "HeadPitch", "HeadRoll")
EYES = ("LeftEyeYaw", "LeftEyePitch", "LeftEyeRoll", "RightEyeYaw", "RightEyePitch", "RightEyeRoll")
HEADER: tuple[str, ...] = ("Timecode", "BlendShapeCount", *BLENDSHAPES, *HEAD, *EYES)
BLENDSHAPE_COUNT = len(BLENDSHAPES) + len(HEAD) + len(EYES)  # 61, what the app writes
DEFAULT_FPS = 60.0  # the app's default when a capture is too short to show its rate
TIMECODE = re.compile(r"^(\d{2}):(\d{2}):(\d{2}):(\d{2,3})(?:\.(\d+))?$")


class ArkitError(ValueError):
    """A capture that cannot be read or used; the message is one line naming what is wrong."""


@attrs.frozen(eq=False)
class Capture:
    """Frames of one capture: blendshapes (T, 52) in BLENDSHAPES order, head (T, 3) yaw, pitch,
    roll and eyes (T, 6) in radians, and the frame rate."""

    blendshapes: np.ndarray
    head: np.ndarray
    eyes: np.ndarray
    fps: float = DEFAULT_FPS

    def __attrs_post_init__(self):
        count = len(self.blendshapes)
        if count == 0:
            raise ArkitError("a face capture needs at least one frame")
        for what, values, width in (("blendshapes", self.blendshapes, 52), ("head", self.head, 3), ("eyes", self.eyes, 6)):
            if np.shape(values) != (count, width):
                raise ArkitError(f"a capture's {what} must have shape ({count}, {width}), got {np.shape(values)}")
        check_values(self.blendshapes, self.head, self.eyes, "capture")


def check_values(blendshapes, head, eyes, where: str) -> None:
    """Blendshapes finite and in [0, 1], angles finite and within half a turn."""
    for names, values, low, high in ((BLENDSHAPES, blendshapes, 0.0, 1.0), (HEAD + EYES, np.hstack([head, eyes]), -math.pi, math.pi)):
        values = np.asarray(values, dtype=np.float64)
        bad = ~np.isfinite(values)
        if bad.any():
            row, col = np.argwhere(bad)[0]
            raise ArkitError(f"{where}: frame {row}: {names[col]} is NaN or infinite")
        bad = (values < low) | (values > high)
        if bad.any():
            row, col = np.argwhere(bad)[0]
            raise ArkitError(f"{where}: frame {row}: {names[col]} = {values[row, col]:g} is outside [{low:g}, {high:g}]")


def _frame_number(timecode: str, where: str) -> tuple[int, int]:
    match = TIMECODE.match(timecode.strip())
    if not match:
        raise ArkitError(f"{where}: Timecode {timecode!r} is not HH:MM:SS:FF (optionally .fff)")
    hours, minutes, seconds, frame = (int(g) for g in match.groups()[:4])
    return hours * 3600 + minutes * 60 + seconds, frame


def infer_fps(timecodes: list[str], where: str) -> float:
    """The frame rate the timecodes count frames at: one more than the last frame number before
    the seconds roll over; DEFAULT_FPS when the capture never crosses a second."""
    numbers = [_frame_number(t, where) for t in timecodes]
    for (second, frame), (next_second, _next_frame) in zip(numbers, numbers[1:]):
        if next_second > second:
            return float(frame + 1)
    return DEFAULT_FPS


def read_capture(path: Path) -> Capture:
    """Read a Live Link Face CSV; ArkitError (one line) for a missing file, missing columns,
    unparsable or out-of-range values, or no frames."""
    path = Path(path)
    if not path.is_file():
        raise ArkitError(f"face capture {path} does not exist")
    try:
        rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8-sig"))))
    except (UnicodeDecodeError, csv.Error) as err:
        raise ArkitError(f"{path} is not a CSV text file: {err}") from None
    rows = [row for row in rows if any(cell.strip() for cell in row)]
    if not rows:
        raise ArkitError(f"{path} is empty: expected a Live Link Face header ({', '.join(HEADER[:3])}, ...)")
    header = [name.strip() for name in rows[0]]
    missing = [name for name in HEADER if name not in header]
    if missing:
        raise ArkitError(f"{path}: missing {len(missing)} Live Link Face column(s): {', '.join(missing[:5])}"
                         + (" ..." if len(missing) > 5 else ""))  # fmt: skip
    if len(rows) == 1:
        raise ArkitError(f"{path} holds no frames (a header and no rows)")
    column = {name: header.index(name) for name in HEADER}
    values = np.empty((len(rows) - 1, len(HEADER) - 2))
    timecodes = []
    for number, row in enumerate(rows[1:], start=2):
        where = f"{path}: row {number}"
        if len(row) != len(header):
            raise ArkitError(f"{where} has {len(row)} cells, the header {len(header)}")
        timecodes.append(row[column["Timecode"]])
        count = row[column["BlendShapeCount"]].strip()
        if count != str(BLENDSHAPE_COUNT):
            raise ArkitError(f"{where}: BlendShapeCount is {count!r}, a Live Link Face capture has {BLENDSHAPE_COUNT}")
        for j, name in enumerate(HEADER[2:]):
            try:
                values[number - 2, j] = float(row[column[name]])
            except ValueError:
                raise ArkitError(f"{where}: {name} {row[column[name]]!r} is not a number") from None
    blendshapes, head, eyes = values[:, :52], values[:, 52:55], values[:, 55:]
    try:
        check_values(blendshapes, head, eyes, str(path))
    except ArkitError as err:  # name the CSV row (frame k is row k + 2)
        raise ArkitError(re.sub(r"frame (\d+)", lambda m: f"row {int(m.group(1)) + 2}", str(err), count=1)) from None
    return Capture(blendshapes, head, eyes, infer_fps(timecodes, str(path)))


def timecode(index: int, fps: float) -> str:
    """HH:MM:SS:FF.000 of frame `index` at `fps` frames per second (from 00:00:00:00)."""
    rate = max(1, int(round(fps)))
    seconds, frame = divmod(index, rate)
    return f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}:{frame:02d}.000"


def write_capture(capture: Capture, path: Path) -> None:
    """The capture as Live Link Face writes it; floats written exactly (repr), so reading gives
    the same values back."""
    lines = [",".join(HEADER)]
    for t in range(len(capture.blendshapes)):
        numbers = (*capture.blendshapes[t], *capture.head[t], *capture.eyes[t])
        lines.append(",".join([timecode(t, capture.fps), str(BLENDSHAPE_COUNT), *(repr(float(v)) for v in numbers)]))
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")
