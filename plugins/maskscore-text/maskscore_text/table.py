"""Transcripts as files and as table values (docs/design.md's TextEditReward columns).

Transcripts are stored in the table itself (input_text, output_texts). `Text.write` also
keeps each one as `<name>.txt` under the dataset's assets (so every modality's assets are files
the dataset builder can check) and returns that path; the row (`Text.to_column`) reads the
transcripts back from those files. The only file a row names is the conditioning image, an RGB
render of frame A shared by every modality of the key.
"""

from __future__ import annotations

import os
from pathlib import Path

from .representation import TextError, check_text

SUFFIX = ".txt"
__all__ = ["SUFFIX", "transcript_of", "write_transcript"]


def write_transcript(text: str, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(check_text(text) + "\n", encoding="utf-8")
    return path


def transcript_of(value, root, what: str) -> str:
    """A row value as a transcript: the content of the `.txt` file `write` returned, or the
    value itself when it is already a transcript."""
    if isinstance(value, (str, os.PathLike)) and str(value).endswith(SUFFIX):
        path = Path(value) if Path(value).is_absolute() or root is None else Path(root) / value
        if not path.is_file():
            raise TextError(f"{what}: transcript file {path} does not exist")
        return check_text(path.read_text(encoding="utf-8").strip(), f"{what} ({path})")
    return check_text(value, what)

