"""Speech audio from text with Debian's espeak-ng, as 16 kHz mono 16-bit wav.

espeak-ng is a rule-based formant synthesiser: the same text, voice, speed and pitch give the same
samples every time, which keeps built-in trials reproducible. Its 22,050 Hz output is resampled
to the 16 kHz that pocketsphinx expects. Subjects differ by voice (an accent and a variant that
sets pitch and timbre) and optionally speed (words per minute) and pitch (0-99).
"""

from __future__ import annotations

import io
import shutil
import subprocess
import wave
from pathlib import Path

import numpy as np

from maskscore_core.speech.audio import SAMPLE_RATE, resample, write_wav
from maskscore_core.speech.errors import SynthesisError

# espeak-ng voice specs ("language+variant") the built-in subjects are spoken with. Each was
# chosen because it changes the audio (espeak-ng 1.51 silently ignores an unknown variant, and any
# variant written after `en-gb`: `en-gb+f2` is byte for byte `en-gb`; `en` is the same British
# voice and does take a variant), because pocketsphinx aligns it (all 356 built-in commands, but
# 10 in en+travis and 1 in en-us+aunty), and because the voiceprint matcher (`speakers.identify`)
# tells it from the others: docs/speech.md has the measurements. Male voices first, then female
# ones (`trials.subjects` prefers a voice of the subject's sex).
MALE_VOICES: tuple[str, ...] = ("en-us+klatt3", "en+travis")
FEMALE_VOICES: tuple[str, ...] = ("en-us+aunty", "en-us+belinda", "en+anika")
VOICES: tuple[str, ...] = MALE_VOICES + FEMALE_VOICES
# How often the voiceprint matcher tells two built-in voices apart where it does not always: the
# share of sentence pairs (two different built-in commands, all 356) it separates; every pair not
# listed was separated in every sentence pair (docs/speech.md). CONFUSABLE_VOICES: the pairs it
# separates less than half of the time, which subjects avoid sharing (`trials.subjects`).
PARTLY_TOLD_APART: dict[frozenset[str], float] = {
    frozenset({"en-us+klatt3", "en+travis"}): 0.797,
    frozenset({"en-us+belinda", "en+anika"}): 0.471,
    frozenset({"en-us+aunty", "en-us+belinda"}): 0.998,
}
CONFUSABLE_VOICES: frozenset[frozenset[str]] = frozenset(pair for pair, share in PARTLY_TOLD_APART.items() if share < 0.5)
SPEED_RANGE_WPM = (80, 450)
PITCH_RANGE = (0, 99)


def voices() -> list[str]:
    """The espeak-ng voices MaskScore's built-in subjects use."""
    return list(VOICES)


def espeak_binary() -> str:
    """Path of the espeak-ng executable, or a SynthesisError saying how to install it."""
    binary = shutil.which("espeak-ng")
    if binary is None:
        raise SynthesisError("espeak-ng is not installed (not found on PATH); install it with `apt-get install espeak-ng`")
    return binary


def _espeak_samples(text: str, voice: str, speed: int | None, pitch: int | None) -> tuple[np.ndarray, int]:
    command = [espeak_binary(), "-v", voice, "--stdout", "--stdin"]
    if speed is not None:
        command += ["-s", str(int(speed))]
    if pitch is not None:
        command += ["-p", str(int(pitch))]
    result = subprocess.run(command, input=text.encode("utf-8"), capture_output=True, check=False)
    message = result.stderr.decode("utf-8", "replace").strip()
    if result.returncode != 0 or not result.stdout:
        raise SynthesisError(f"espeak-ng failed for voice {voice!r} (exit {result.returncode}): {message or 'no audio'}")
    try:
        with wave.open(io.BytesIO(result.stdout), "rb") as w:
            rate, raw = w.getframerate(), w.readframes(w.getnframes())
    except (wave.Error, EOFError) as exc:
        raise SynthesisError(f"espeak-ng returned unreadable audio for voice {voice!r}: {exc}") from exc
    samples = np.frombuffer(raw, dtype="<i2")
    if samples.size == 0:
        raise SynthesisError(f"espeak-ng produced no samples for {text!r} with voice {voice!r}")
    return samples, rate


def synthesize(text: str, voice: str, path: str | Path, *, speed: int | None = None, pitch: int | None = None) -> Path:
    """Speak `text` with espeak-ng `voice` into `path` (16 kHz mono 16-bit wav); returns the path.

    speed is in words per minute (espeak's default 175), pitch 0-99 (default 50).
    """
    if not isinstance(text, str) or not text.strip():
        raise SynthesisError(f"nothing to say: text is {text!r}")
    if not isinstance(voice, str) or not voice or voice.startswith("-"):
        raise SynthesisError(f"bad espeak-ng voice {voice!r}; MaskScore uses: {', '.join(VOICES)}")
    if speed is not None and not SPEED_RANGE_WPM[0] <= speed <= SPEED_RANGE_WPM[1]:
        raise SynthesisError(f"speed {speed} wpm is outside espeak-ng's range {SPEED_RANGE_WPM}")
    if pitch is not None and not PITCH_RANGE[0] <= pitch <= PITCH_RANGE[1]:
        raise SynthesisError(f"pitch {pitch} is outside espeak-ng's range {PITCH_RANGE}")
    samples, rate = _espeak_samples(text, voice, speed, pitch)
    return write_wav(path, resample(samples, rate, SAMPLE_RATE), SAMPLE_RATE)
