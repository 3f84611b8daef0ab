"""The video representation: a clip of per-frame ANNY body states, and its files.

On disk a clip is a folder: one RGB PNG per frame (a Mitsuba render of that frame's mesh, what a
viewer sees, shaded with the frame's look when it has one: skin, light, backdrop), `frames.json` (the per-frame `BodyState`s, the frame rate, the transcript) and
`audio.wav` (the aligned audio: the transcript spoken in the subject's voice). `frames.json` is
what decodes; the PNGs are there for people and for image-based reward models. Clips given as
pixels (an editor's frames) are read back through the face-landmark detector (`pixels.py`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import attrs
import numpy as np

from maskscore_core.dataset import reward_tables
from maskscore_core.dataset.asset_manifest import read_manifest
from maskscore_core.dataset.reward_tables import relative_to_root  # noqa: F401 - the plugin writes table paths with it
from maskscore_core.plugin.records import BodyState, Target, converter, structure_error

FORMAT = "maskscore-video/1"
FRAMES_FILE = "frames.json"
AUDIO_FILE = "audio.wav"
DEFAULT_FRAME_RESOLUTION = 128
# Per-frame render-and-compare looks at this many frames, evenly spaced over the clip (first and
# last included), so a long clip costs the same as a short one and every clip is compared on the
# same number of frames.
DEFAULT_SAMPLED_FRAMES = 4


class VideoError(ValueError):
    """A clip that cannot be read or used (missing folder or file, corrupt JSON, bad values)."""


@attrs.frozen
class Clip:
    """The frames of one clip: what is shown (states), how fast, and what is said."""

    states: tuple[BodyState, ...] = attrs.field(converter=tuple)
    fps: float
    transcript: str = ""
    voice: str = "en-us"

    def __attrs_post_init__(self):
        if not self.states:
            raise VideoError("a video clip needs at least one frame")
        if not (isinstance(self.fps, (int, float)) and math.isfinite(self.fps) and self.fps > 0):
            raise VideoError(f"a video clip needs a positive, finite frame rate, got {self.fps!r}")
        for i, state in enumerate(self.states):
            if not isinstance(state, BodyState):
                raise VideoError(f"frame {i} is a {type(state).__name__}, not a BodyState")

    def activations(self) -> np.ndarray:
        """(T, 52) facial actions, one row per frame: the video-derived activation sequence."""
        return np.stack([state.expression for state in self.states])


def part_activations(clip: Clip, part: str) -> np.ndarray | None:
    """(T, 52) activations of the edited part's facial actions (others zero), or None when the
    part has none (neck, hair, ears, accessories): activation agreement then has nothing to say
    about the edit, and the part is judged by per-frame render-and-compare alone.

    Restricting to the part keeps agreement about what the instruction asks for: a clip that
    changes the wrong part of the face must not agree better than one that changes the right one.
    """
    from maskscore_core.body import parts
    from maskscore_core.body.anny_model import get_body_model

    names = parts.part_actions(part)
    if not names:
        return None
    body = get_body_model()
    columns = [body.action_index(name) for name in names]
    full = clip.activations()
    out = np.zeros_like(full)
    out[:, columns] = full[:, columns]
    return out


def clip_appearance(clip: Clip):
    """The clip's one look (`records.Appearance`, or None when its frames carry none).

    A decoded clip carries one look, which the scorer applies to every compared frame; a clip
    whose look changes from frame to frame would be misjudged, so it is refused by name."""
    first = clip.states[0].appearance
    for index, state in enumerate(clip.states):
        if state.appearance != first:
            raise VideoError(
                f"frame {index} of the clip has another look (BodyState.appearance) than frame 0; a video clip"
                " is scored with one look for all its frames, so the look must stay the same within a clip"
            )
    return first


def clip_from_target(target: Target) -> Clip:
    return Clip(states=target.states, fps=float(target.fps), transcript=target.transcript, voice=target.subject.voice)


def sample_indices(frame_count: int, count: int) -> list[int]:
    """`count` frame indices evenly spaced over a clip (fewer when the clip is shorter)."""
    if count <= 0:
        raise VideoError(f"the number of sampled frames must be positive, got {count}")
    return sorted({int(round(x)) for x in np.linspace(0, frame_count - 1, min(count, frame_count))})


def frame_file(index: int) -> str:
    return f"frame_{index:05d}.png"


def frame_vertices(states) -> list[np.ndarray]:
    """Reference-mesh vertices of each state, evaluated one at a time: a frame's mesh is then
    bit-identical whichever clip (batch) it comes from."""
    from maskscore_core.body.reference_mesh import get_reference_mesh

    reference = get_reference_mesh()
    return [reference.vertices([state])[0] for state in states]


def frame_picture(renderer, state: BodyState, vertices: np.ndarray, resolution: int) -> np.ndarray:
    """(H, W, 3) uint8 picture of one frame from the renderer's single frontal view: shaded with
    the frame's look (skin, light, backdrop: `appearance.shade`) when it has one, else the
    renderer's plain picture (one fixed light, skin colour)."""
    from maskscore_core.metric import appearance

    if state.appearance is None:
        return renderer.render_rgb(vertices, resolution, resolution, view_index=0)
    return appearance.picture(renderer.render(vertices), state.appearance)


def write_clip(clip: Clip, folder: Path, resolution: int) -> None:
    """Render every frame to a PNG, write frames.json and the aligned audio."""
    import imageio.v3 as iio

    from maskscore_core.metric import render
    from maskscore_core.speech.synthesis import synthesize
    from maskscore_core.metric.views import ViewConfig

    folder.mkdir(parents=True, exist_ok=True)
    # One frontal camera: Hammersley sample 0 of 1 with offset u = 0.5 sits at yaw 0, pitch 0.
    renderer = render.get_renderer(ViewConfig(count=1, resolution=resolution, offset=(0.5, 0.0)))
    vertices = frame_vertices(clip.states)
    for index, (state, one_frame) in enumerate(zip(clip.states, vertices)):
        iio.imwrite(folder / frame_file(index), frame_picture(renderer, state, one_frame, resolution), extension=".png")
    manifest = {
        "format": FORMAT,
        "fps": clip.fps,
        "transcript": clip.transcript,
        "voice": clip.voice,
        "frame_files": [frame_file(i) for i in range(len(clip.states))],
        "frames": [converter.unstructure(state) for state in clip.states],
    }
    (folder / FRAMES_FILE).write_text(json.dumps(manifest, sort_keys=True, indent=1))
    if clip.transcript.strip():
        synthesize(clip.transcript, clip.voice, folder / AUDIO_FILE)


def read_clip(folder: Path) -> Clip:
    """Read a clip folder back; every problem names the file and what is wrong with it."""
    manifest_path = folder / FRAMES_FILE
    manifest = read_manifest(folder, FRAMES_FILE, FORMAT, VideoError, "video folder")
    frames = manifest.get("frames")
    files = manifest.get("frame_files")
    if not isinstance(frames, list) or not isinstance(files, list) or len(frames) != len(files):
        raise VideoError(f"{manifest_path}: 'frames' and 'frame_files' must be lists of equal length")
    missing = [name for name in files if not resolve(name, folder).is_file()]  # names stay inside the folder
    if missing:
        raise VideoError(f"video folder {folder} lacks {len(missing)} frame images (first: {missing[0]})")
    states = []
    for i, frame in enumerate(frames):
        try:
            states.append(converter.structure(frame, BodyState))
        except Exception as err:  # cattrs wraps the converter's ValueError in a group
            raise VideoError(f"{manifest_path}: frame {i} is not a valid body state: {structure_error(err)}") from None
    return Clip(
        states=states,
        fps=manifest.get("fps"),
        transcript=str(manifest.get("transcript", "")),
        voice=str(manifest.get("voice", "en-us")),
    )



def resolve(value, root) -> Path:
    """A table value back to a filesystem path (relative values are under the dataset root)."""
    return reward_tables.resolve(value, root, "a video table value", VideoError)
