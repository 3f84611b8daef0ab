"""How well the talker's check (plugins/maskscore-talker, `said.check`) tells speech of the phrase
from what a model may return instead, on spliced candidates whose stretch is known.

For built-in command pairs (frame A's command, another as frame B's, the voice cycling through
the built-in ones) the talker's span is found in frame A's espeak-ng audio and filled with:
espeak-ng saying the phrase in frame A's voice and in another voice (should pass), frame A's own
words there (a candidate doing nothing: passes whenever pocketsphinx fits the phrase to them,
the check's known blind spot), silence, white noise at -20 and -40 dBFS, and a 100 Hz buzz (what
a random Token2Wav says, at its frame rate) (should fail). Prints
how many of each pass and the mean time of one check.

    .venv/bin/python benchmarks/bench_talker_check.py --pairs 12
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

import numpy as np

from maskscore_core.speech.audio import load_speech_audio
from maskscore_core.speech.commands import load_commands
from maskscore_core.speech.synthesis import VOICES, synthesize
from maskscore_talker import said, span


def spoken(text: str, voice: str) -> np.ndarray:
    with tempfile.TemporaryDirectory() as tmp:
        return load_speech_audio(synthesize(text, voice, Path(tmp) / "s.wav"))


def buzz(size: int, rng) -> np.ndarray:
    """Harmonics of 100 Hz with random phases, as a random Token2Wav says (its frame rate)."""
    t = np.arange(size) / 16_000
    wave = sum(np.sin(2 * np.pi * 100 * k * t + rng.uniform(0, 2 * np.pi)) for k in range(1, 40))
    return np.round(wave / np.sqrt(np.mean(wave**2)) * 3277).astype(np.int16)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=12)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    commands, rng = load_commands(), random.Random(args.seed)
    noise = np.random.default_rng(args.seed)
    passed: dict[str, int] = {}
    seconds = []
    for index in range(args.pairs):
        a_text, b_text = rng.sample(commands, 2)
        voice = VOICES[index % len(VOICES)]
        a = spoken(a_text, voice)
        where = span.find(a, a_text, b_text)
        good = spoken(where.phrase, voice)
        stretches = {
            "phrase, frame A's voice": good,
            "phrase, another voice": spoken(where.phrase, VOICES[(index + 1) % len(VOICES)]),
            "frame A's own words": a[where.start:where.end],
            "silence": np.zeros(good.size, np.int16),
            "white noise -20 dBFS": noise.normal(0, 3277, good.size).round().astype(np.int16),
            "white noise -40 dBFS": noise.normal(0, 328, good.size).round().astype(np.int16),
            "100 Hz buzz -20 dBFS": buzz(good.size, noise),
        }
        for kind, stretch in stretches.items():
            candidate = span.splice(a, where, stretch)
            start = time.perf_counter()
            try:
                said.check(candidate, where, stretch.size)
                passed[kind] = passed.get(kind, 0) + 1
            except said.NotSaidError:
                passed.setdefault(kind, 0)
            seconds.append(time.perf_counter() - start)
    figures = {"pairs": args.pairs, "passed": passed, "mean_check_s": float(np.mean(seconds))}
    for kind, count in passed.items():
        print(f"{kind:26s} passes {count:3d} / {args.pairs}")
    print(f"one check: {figures['mean_check_s']:.2f} s on average")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
