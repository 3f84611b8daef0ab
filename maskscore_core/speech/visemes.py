"""Phones -> visemes -> ARKit facial actions over time: how speech moves the ANNY face.

Each CMU phone maps to a viseme (a mouth shape shared by phones that look alike, after the
common 15-viseme sets used for lip animation); each viseme is a small set of ARKit facial action
values (`VISEME_ACTIONS`, values in [0, 1]). Diphthongs glide between two visemes
(`DIPHTHONGS`: the first 60 % of the phone holds the first shape, the rest the second).

`activations_from_phones` lays the viseme targets on a 10 ms grid (pocketsphinx's frame shift),
leaves the rest pose in silences, smooths with a Gaussian of `COARTICULATION_SIGMA_S` (neighbouring
phones blend into each other, as lips and jaw cannot jump), and samples at the video frame
times k / fps. Only mouth and jaw actions move; brows, eyes and blinks are the trial source's
business. Columns follow the body model's action order.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy.ndimage import gaussian_filter1d

from maskscore_core.speech.errors import SpeechError
from maskscore_core.speech.phone import Phone
from maskscore_core.speech.phonemes import PHONES

GRID_S = 0.01
COARTICULATION_SIGMA_S = 0.02
DIPHTHONG_SPLIT = 0.6


def _both(name: str, value: float) -> dict[str, float]:
    """A symmetric action pair: mouthSmile -> mouthSmileLeft and mouthSmileRight."""
    return {f"{name}Left": value, f"{name}Right": value}


# viseme -> ARKit action values. Bilabials press the lips shut; open vowels drop the jaw.
VISEME_ACTIONS: dict[str, dict[str, float]] = {
    "sil": {},
    "PP": {"jawOpen": 0.05, "mouthClose": 0.5, **_both("mouthPress", 0.7), "mouthRollLower": 0.2, "mouthRollUpper": 0.1},
    "FF": {"jawOpen": 0.1, "mouthRollLower": 0.6, **_both("mouthUpperUp", 0.25), "mouthShrugUpper": 0.2},
    "TH": {"jawOpen": 0.18, "tongueOut": 0.5, **_both("mouthStretch", 0.1)},
    "DD": {"jawOpen": 0.15, **_both("mouthStretch", 0.15), **_both("mouthLowerDown", 0.1)},
    "kk": {"jawOpen": 0.22, **_both("mouthStretch", 0.1), **_both("mouthLowerDown", 0.1)},
    "CH": {"jawOpen": 0.15, "mouthFunnel": 0.5, "mouthPucker": 0.3, **_both("mouthUpperUp", 0.15), **_both("mouthLowerDown", 0.15)},
    "SS": {"jawOpen": 0.08, **_both("mouthStretch", 0.35), **_both("mouthSmile", 0.15)},
    "nn": {"jawOpen": 0.15, **_both("mouthStretch", 0.1)},
    "RR": {"jawOpen": 0.15, "mouthFunnel": 0.3, "mouthPucker": 0.35},
    "WU": {"jawOpen": 0.12, "mouthPucker": 0.7, "mouthFunnel": 0.35},
    "aa": {"jawOpen": 0.7, **_both("mouthLowerDown", 0.3), **_both("mouthStretch", 0.1)},
    "ah": {"jawOpen": 0.42, **_both("mouthLowerDown", 0.15)},
    "ae": {"jawOpen": 0.48, **_both("mouthStretch", 0.3), **_both("mouthSmile", 0.1), **_both("mouthUpperUp", 0.1)},
    "ih": {"jawOpen": 0.2, **_both("mouthSmile", 0.4), **_both("mouthStretch", 0.3)},
    "oh": {"jawOpen": 0.5, "mouthFunnel": 0.5, "mouthPucker": 0.25},
}

# phone -> viseme for the 34 monophthongs of the CMU set.
PHONE_VISEMES: dict[str, str] = {
    **dict.fromkeys(("P", "B", "M"), "PP"),
    **dict.fromkeys(("F", "V"), "FF"),
    **dict.fromkeys(("TH", "DH"), "TH"),
    **dict.fromkeys(("T", "D", "N", "L"), "DD"),
    **dict.fromkeys(("K", "G", "NG", "HH"), "kk"),
    **dict.fromkeys(("CH", "JH", "SH", "ZH"), "CH"),
    **dict.fromkeys(("S", "Z"), "SS"),
    **dict.fromkeys(("R", "ER"), "RR"),
    **dict.fromkeys(("W", "UW", "UH"), "WU"),
    "AA": "aa",
    "AH": "ah",
    **dict.fromkeys(("AE", "EH"), "ae"),
    **dict.fromkeys(("IH", "IY", "Y"), "ih"),
    "AO": "oh",
}
# Diphthongs glide from one viseme to another.
DIPHTHONGS: dict[str, tuple[str, str]] = {
    "AY": ("aa", "ih"),
    "AW": ("aa", "WU"),
    "OY": ("oh", "ih"),
    "EY": ("ae", "ih"),
    "OW": ("oh", "WU"),
}


@functools.cache
def action_names() -> tuple[str, ...]:
    """The 52 ARKit action names in the body model's order (the columns of every activation array)."""
    from maskscore_core.body.anny_model import get_body_model

    return get_body_model().action_names


@functools.cache
def viseme_vectors() -> dict[str, np.ndarray]:
    """Each viseme's action values as a (52,) vector in the body model's order."""
    names = action_names()
    vectors = {}
    for viseme, values in VISEME_ACTIONS.items():
        unknown = set(values) - set(names)
        if unknown:
            raise SpeechError(f"viseme {viseme!r} names facial actions the body model lacks: {sorted(unknown)}")
        vector = np.zeros(len(names))
        for name, value in values.items():
            vector[names.index(name)] = value
        vectors[viseme] = vector
    return vectors


def phone_visemes(phone: str) -> tuple[str, ...]:
    """The viseme(s) of a phone: one for most, two for diphthongs, 'sil' for silence."""
    if phone in ("SIL", "sil", ""):
        return ("sil",)
    if phone in DIPHTHONGS:
        return DIPHTHONGS[phone]
    try:
        return (PHONE_VISEMES[phone],)
    except KeyError:
        raise SpeechError(f"unknown phone {phone!r}; expected a CMU phone: {' '.join(PHONES)}") from None


def frame_count(fps: float, duration_s: float) -> int:
    """Number of video frames for a clip: round(duration * fps), at least 1."""
    if not (fps > 0 and math.isfinite(fps)):
        raise SpeechError(f"fps must be a positive number, got {fps}")
    if not (duration_s > 0 and math.isfinite(duration_s)):
        raise SpeechError(f"clip duration must be a positive number of seconds, got {duration_s}")
    return max(1, int(round(duration_s * fps)))


def _target_grid(phones: list[Phone], grid_count: int) -> np.ndarray:
    """Viseme targets held over each phone's span on the 10 ms grid, rest pose elsewhere."""
    vectors = viseme_vectors()
    grid = np.zeros((grid_count, len(action_names())))
    for phone in phones:
        visemes = phone_visemes(phone.phone)
        start = int(round(phone.start_s / GRID_S))
        end = max(start + 1, int(round(phone.end_s / GRID_S)))
        split = start + int(round((end - start) * DIPHTHONG_SPLIT)) if len(visemes) == 2 else end
        grid[start:min(split, grid_count)] = vectors[visemes[0]]
        if len(visemes) == 2:
            grid[split:min(end, grid_count)] = vectors[visemes[1]]
    return grid


def activations_from_phones(phones: list[Phone], fps: float, duration_s: float) -> np.ndarray:
    """(T, 52) facial actions in [0, 1] for a clip of duration_s seconds at fps (frame k at k / fps).

    T = round(duration_s * fps). Phones past the clip's end are cut off.
    """
    count = frame_count(fps, duration_s)
    for phone in phones:
        if not isinstance(phone, Phone):
            raise SpeechError(f"expected Phone records, got {type(phone).__name__}")
    grid_count = int(math.ceil(duration_s / GRID_S)) + 1
    grid = _target_grid(phones, grid_count)
    smooth = gaussian_filter1d(grid, COARTICULATION_SIGMA_S / GRID_S, axis=0, mode="nearest")
    grid_times = np.arange(grid_count) * GRID_S
    frame_times = np.arange(count) / fps
    out = np.stack([np.interp(frame_times, grid_times, smooth[:, j]) for j in range(smooth.shape[1])], axis=1)
    return np.clip(out, 0.0, 1.0)
