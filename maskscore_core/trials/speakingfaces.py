"""The SpeakingFaces loader: one utterance of the dataset in, one MaskScore trial out.

SpeakingFaces (issai/Speaking_Faces, CC-BY-4.0) cannot be downloaded here; this module reads a
local copy in the layout its authors publish (IS2AI/SpeakingFaces README and the dataset card):

    ROOT/metadata/subjects.csv                    Sub_ID, Split, Age, Gender, Ethnicity, ...
    ROOT/metadata/commands/sub_{S}_trial_{T}.csv  one record per uttered command
    ROOT/sub_{S}_ia/trial_{T}/                    (also accepted: ROOT/{S}/sub_{S}_ia/trial_{T}/
                                                   and ROOT/sub_{S}/trial_{T}/)
        rgb_image_cmd/{S}_{T}_2_{P}_{C}_{F}_2.png          visual stream, 768x512
        rgb_image_cmd_aligned/{S}_{T}_2_{P}_{C}_{F}_3.png  visual aligned to the thermal one
        thr_image_cmd/{S}_{T}_2_{P}_{C}_{F}_1.png          thermal stream, 464x348
        mic1_audio_cmd_trim/{S}_{T}_2_{P}_{C}_1.wav        audio, left microphone
        mic2_audio_cmd_trim/{S}_{T}_2_{P}_{C}_2.wav        audio, right microphone

S subject (1..142), T trial (1, 2), 2 = the speaking session, P camera position (1..9), C command
id, F frame number; video runs at 28 frames per second and ships as numbered PNG frames. One
MaskScore trial is one utterance: (S, T, P, C).

The seven extraction steps of docs/design.md per utterance (`extract_utterance`):
1. representative frame: the frame whose mouth opening (inner-lip gap over eye distance, from
   the detected landmarks) is the median of the clip (lower median; ties by frame order);
2. ANNY SOMA fit to its landmarks (`landmark_fit`), then every `fit_stride`-th frame
   warm-started from its neighbour, frames in between interpolated;
3. metric depth from the depth-estimator slot (MoGe-3); no weights are reachable here, so asking
   for depth without a registered estimator is an error naming the slot;
4. depth and normals of the fitted mesh rendered by `maskscore_core.metric.render`;
5. the transcript from the commands CSV;
6. the synchronized audio cut to the clip's span, as 16 kHz mono wav (ffmpeg from imageio-ffmpeg);
7. the frame sequence, decoded (so a corrupt frame is caught) and written as numbered PNGs.

Landmarks come from the landmark-detector slot. Detectors are registered with
`register_landmark_detector` or installed as a `maskscore.landmark_detectors` entry point; the
`maskscore-face-landmarks` distribution installs `mediapipe-face-mesh` (mediapipe 0.10.14's
offline Face Mesh, 478 points), which step 2 uses by default. A detector returns
`landmark_fit.Landmarks2D` (or a bare (68, 2) array in the anny-68 order) and may offer
`anchors()`, where its points sit on the ANNY mesh; a frame where it finds no face, several
faces or a face too small fails the utterance with an error naming the frame's file.

A missing or corrupt file, or a clip too short, fails that utterance with an error naming the
file; the failure is recorded in `LoadResult.failures` and the other utterances still load.
"""

from __future__ import annotations

import csv
import json
import math
import re
import subprocess
from pathlib import Path
from typing import Callable, Protocol
import importlib.metadata

import attrs
import numpy as np

from maskscore_core.plugin.records import BodyState, Frame, Subject, Trial
from maskscore_core.trials import landmark_fit
from maskscore_core.metric.render import get_renderer
from maskscore_core.metric.views import ViewConfig

SOURCE_NAME = "speakingfaces"
FPS = 28.0
SESSION_SPEAKING = 2
VISUAL_SIZE = (768, 512)
THERMAL_SIZE = (464, 348)
VISUAL_DIAGONAL_FOV_DEG = 78.0  # Logitech C920 Pro HD
STREAMS = {  # name -> (folder, stream id in the file name)
    "thermal": ("thr_image_cmd", 1),
    "visual": ("rgb_image_cmd", 2),
    "visual_aligned": ("rgb_image_cmd_aligned", 3),
}
MIC_FOLDERS = {1: "mic1_audio_cmd_trim", 2: "mic2_audio_cmd_trim"}
AUDIO_RATE = 16_000

_IMAGE_NAME = re.compile(r"^(\d+)_(\d+)_(\d+)_(\d+)_(\d+)_(\d+)_(\d+)\.png$")
_AUDIO_NAME = re.compile(r"^(\d+)_(\d+)_(\d+)_(\d+)_(\d+)_(\d+)\.wav$")
_TRIAL_DIRS = ("sub_{s}_ia/trial_{t}", "{s}/sub_{s}_ia/trial_{t}", "sub_{s}/trial_{t}")


class SpeakingFacesError(ValueError):
    """A SpeakingFaces file that is missing, corrupt or unusable; `path` names it."""

    def __init__(self, path: Path | str, problem: str) -> None:
        self.path = str(path)
        super().__init__(f"{path}: {problem}")


class SpeakingFacesConfigError(ValueError):
    """A loader option that is unknown, out of range, or needs a slot nobody filled."""


# ---------------------------------------------------------------------------------------------
# Slots: landmark detector and depth estimator


class LandmarkDetector(Protocol):
    def detect(self, image: np.ndarray) -> "landmark_fit.Landmarks2D | np.ndarray | None":
        """(H, W, 3) uint8 RGB -> `Landmarks2D` (or (68, 2) pixels in `landmark_fit`'s anny-68
        order); None or `landmark_fit.FaceDetectionError` when there is no usable face."""


class DepthEstimator(Protocol):
    def estimate(self, image: np.ndarray) -> np.ndarray:
        """(H, W, 3) uint8 RGB -> (H, W) float32 metric depth in metres (MoGe-3's output)."""


_LANDMARK_DETECTORS: dict[str, Callable[[], LandmarkDetector]] = {}
_DEPTH_ESTIMATORS: dict[str, Callable[[], DepthEstimator]] = {}


def register_landmark_detector(name: str, factory: Callable[[], LandmarkDetector]) -> None:
    _LANDMARK_DETECTORS[name] = factory


def unregister_landmark_detector(name: str) -> None:
    _LANDMARK_DETECTORS.pop(name, None)


def register_depth_estimator(name: str, factory: Callable[[], DepthEstimator]) -> None:
    _DEPTH_ESTIMATORS[name] = factory


def unregister_depth_estimator(name: str) -> None:
    _DEPTH_ESTIMATORS.pop(name, None)


LANDMARK_DETECTOR_ENTRY_POINTS = "maskscore.landmark_detectors"
DEFAULT_LANDMARK_DETECTOR = "mediapipe-face-mesh"


def _installed_detectors() -> dict[str, Callable[[], LandmarkDetector]]:
    """Detectors installed as entry points (loaded when asked for, not at import)."""
    found = importlib.metadata.entry_points(group=LANDMARK_DETECTOR_ENTRY_POINTS)
    return {ep.name: (lambda ep=ep: ep.load()()) for ep in sorted(found, key=lambda ep: ep.name)}


def landmark_detector(name: str | None = None) -> LandmarkDetector:
    """The detector `name`; None: the one registered in code, else the installed default
    (`mediapipe-face-mesh`), else the only one installed."""
    installed = _installed_detectors()
    if name is None and not _LANDMARK_DETECTORS and DEFAULT_LANDMARK_DETECTOR in installed:
        name = DEFAULT_LANDMARK_DETECTOR
    registry = {**installed, **_LANDMARK_DETECTORS} if name is not None else (_LANDMARK_DETECTORS or installed)
    return _from_slot("landmark detector", registry, name, "2D face landmarks")


def _from_slot(slot: str, registry: dict, name: str | None, what: str):
    if not registry:
        raise SpeakingFacesConfigError(
            f"the {slot} slot ({what}) is empty: none is registered or installed; register one with"
            f" register_{slot.replace(' ', '_')}()" + (" or install maskscore-face-landmarks" if slot == "landmark detector" else "")
        )
    if name is None:
        if len(registry) > 1:
            raise SpeakingFacesConfigError(f"several {slot}s are registered ({sorted(registry)}); name one")
        name = next(iter(registry))
    if name not in registry:
        raise SpeakingFacesConfigError(f"unknown {slot} {name!r}; registered: {sorted(registry)}")
    return registry[name]()


# ---------------------------------------------------------------------------------------------
# Configuration


def _positive(_instance, attribute, value):
    if not value > 0:
        raise SpeakingFacesConfigError(f"speakingfaces: {attribute.name} must be positive, got {value}")


@attrs.frozen
class SpeakingFacesConfig:
    """Loader options (the `extract` hook's config dict, `path` is the dataset root).

    count: at most this many utterances (after sorting), None for all; subjects / positions:
    keep only these; stream: which visual stream is fitted; min_frames: shorter clips fail;
    fit_stride: fit every n-th frame, interpolate the rest; depth: run the depth slot (MoGe-3);
    render: render depth/normals of the fitted mesh on `render_views` views.
    """

    path: str
    count: int | None = None
    subjects: tuple[int, ...] | None = attrs.field(default=None, converter=lambda v: None if v is None else tuple(int(x) for x in v))
    positions: tuple[int, ...] | None = attrs.field(default=None, converter=lambda v: None if v is None else tuple(int(x) for x in v))
    stream: str = attrs.field(default="visual")
    mic: int = 1
    min_frames: int = attrs.field(default=8, validator=_positive)
    fit_stride: int = attrs.field(default=1, validator=_positive)
    diagonal_fov_deg: float = attrs.field(default=VISUAL_DIAGONAL_FOV_DEG, converter=float, validator=_positive)
    landmark_detector: str | None = None
    depth: bool = False
    depth_estimator: str | None = None
    render: bool = True
    render_views: int = attrs.field(default=8, validator=_positive)
    render_resolution: int = attrs.field(default=256, validator=_positive)
    fit_adam_steps: int = 100
    fit_lbfgs_steps: int = 300
    sequence_lbfgs_steps: int = 40

    def __attrs_post_init__(self) -> None:
        if self.stream not in STREAMS or self.stream == "thermal":
            raise SpeakingFacesConfigError(f"speakingfaces: stream must be 'visual' or 'visual_aligned', got {self.stream!r}")
        if self.mic not in MIC_FOLDERS:
            raise SpeakingFacesConfigError(f"speakingfaces: mic must be 1 or 2, got {self.mic!r}")

    @classmethod
    def from_dict(cls, options: dict) -> "SpeakingFacesConfig":
        options = dict(options)
        if "path" not in options or not options["path"]:
            raise SpeakingFacesConfigError("speakingfaces: config needs 'path', the dataset root")
        options.pop("seed", None)  # nothing random in the loader
        known = {field.name for field in attrs.fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise SpeakingFacesConfigError(f"unknown speakingfaces options {unknown}; known: {sorted(known)}")
        options["path"] = str(options["path"])
        return cls(**options)


# ---------------------------------------------------------------------------------------------
# The layout


@attrs.frozen
class Utterance:
    """One uttered command at one camera position: the unit that becomes a MaskScore trial."""

    subject: int
    trial: int
    position: int
    command: int
    folder: Path

    @property
    def key(self) -> str:
        return f"sf-{self.subject:03d}-{self.trial}-{self.position}-{self.command}"

    def stem(self) -> str:
        return f"{self.subject}_{self.trial}_{SESSION_SPEAKING}_{self.position}_{self.command}"

    def frame_paths(self, stream: str) -> list[Path]:
        """The utterance's frames of `stream`, in frame order."""
        folder_name, stream_id = STREAMS[stream]
        folder = self.folder / folder_name
        found = []
        if folder.is_dir():
            for path in folder.glob(f"{self.stem()}_*_{stream_id}.png"):
                match = _IMAGE_NAME.match(path.name)
                if match:
                    found.append((int(match.group(6)), path))
        return [path for _frame, path in sorted(found)]

    def audio_path(self, mic: int) -> Path:
        return self.folder / MIC_FOLDERS[mic] / f"{self.stem()}_{mic}.wav"


class SpeakingFacesLayout:
    """A local SpeakingFaces root: finds trial folders, utterances, transcripts, subjects."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        if not self.root.is_dir():
            raise SpeakingFacesError(self.root, "SpeakingFaces root folder not found")
        self._commands: dict[tuple[int, int], dict[tuple[int, int], str]] = {}
        self._subjects: dict[int, dict[str, str]] | None = None

    def trial_folders(self) -> list[tuple[int, int, Path]]:
        """(subject, trial, folder) for every trial folder in any accepted layout, sorted."""
        found: dict[tuple[int, int], Path] = {}
        patterns = ("sub_*_ia/trial_*", "*/sub_*_ia/trial_*", "sub_*/trial_*")
        for pattern in patterns:
            for folder in self.root.glob(pattern):
                match = re.search(r"sub_(\d+)(?:_ia)?/trial_(\d+)$", folder.as_posix())
                if folder.is_dir() and match:
                    found.setdefault((int(match.group(1)), int(match.group(2))), folder)
        return [(s, t, folder) for (s, t), folder in sorted(found.items())]

    def utterances(self) -> list[Utterance]:
        """Every (subject, trial, position, command) with frames or audio, sorted."""
        out = set()
        for subject, trial, folder in self.trial_folders():
            for sub_folder, pattern, expected in self._listing(folder):
                for path in sub_folder.glob(pattern):
                    match = expected.match(path.name)
                    if not match:
                        continue
                    s, t, session, p, c = (int(match.group(i)) for i in range(1, 6))
                    if (s, t) != (subject, trial) or session != SESSION_SPEAKING:
                        continue  # session 1 (silent) clips and misplaced files are not utterances
                    out.add(Utterance(subject, trial, p, c, folder))
        return sorted(out, key=lambda u: (u.subject, u.trial, u.position, u.command))

    @staticmethod
    def _listing(folder: Path):
        for name, (sub, _stream) in sorted(STREAMS.items()):
            if name != "thermal":
                yield folder / sub, "*.png", _IMAGE_NAME
        for mic, sub in sorted(MIC_FOLDERS.items()):
            yield folder / sub, "*.wav", _AUDIO_NAME

    def commands_csv(self, subject: int, trial: int) -> Path:
        return self.root / "metadata" / "commands" / f"sub_{subject}_trial_{trial}.csv"

    def transcript(self, utterance: Utterance) -> str:
        """The transcription of the utterance's command (the command text where it is blank)."""
        key = (utterance.subject, utterance.trial)
        if key not in self._commands:
            self._commands[key] = _read_commands(self.commands_csv(*key))
        table = self._commands[key]
        text = table.get((utterance.position, utterance.command))
        if text is None:
            raise SpeakingFacesError(
                self.commands_csv(*key), f"no record for command {utterance.command} at position {utterance.position}"
            )
        return text

    def subject_info(self, subject: int) -> dict[str, str]:
        """The subject's row of metadata/subjects.csv ({} when the file is absent)."""
        if self._subjects is None:
            path = self.root / "metadata" / "subjects.csv"
            self._subjects = _read_subjects(path) if path.is_file() else {}
        return self._subjects.get(subject, {})


def _normalise(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.strip().lower()).strip("_")


_COMMAND_ID_COLUMNS = ("command_id", "cmd_id", "commandid", "command_number")
_POSITION_COLUMNS = ("pos_id", "position_id", "position", "pos")
_TEXT_COLUMNS = ("transcription", "transcript", "text")
_NAME_COLUMNS = ("command_name", "command", "name")


def _pick(header: dict[str, str], names: tuple[str, ...]) -> str | None:
    for name in names:
        if name in header:
            return header[name]
    return None


def _read_commands(path: Path) -> dict[tuple[int, int], str]:
    """{(position, command id): transcript} from one commands CSV (column names are matched
    loosely: the published description names the fields, not their exact spelling)."""
    if not path.is_file():
        raise SpeakingFacesError(path, "commands file (transcripts) not found")
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
    except (UnicodeDecodeError, csv.Error) as exc:
        raise SpeakingFacesError(path, f"not a readable CSV file ({exc})") from exc
    if not rows:
        raise SpeakingFacesError(path, "commands file holds no records")
    header = {_normalise(name): name for name in rows[0] if name}
    cmd_col, pos_col = _pick(header, _COMMAND_ID_COLUMNS), _pick(header, _POSITION_COLUMNS)
    text_col, name_col = _pick(header, _TEXT_COLUMNS), _pick(header, _NAME_COLUMNS)
    if cmd_col is None or pos_col is None or (text_col is None and name_col is None):
        raise SpeakingFacesError(
            path, f"expected columns for command id, position and transcription; found {sorted(header.values())}"
        )
    table = {}
    for line, row in enumerate(rows, start=2):
        try:
            key = (int(row[pos_col]), int(row[cmd_col]))
        except (TypeError, ValueError):
            raise SpeakingFacesError(path, f"line {line}: position {row.get(pos_col)!r} / command {row.get(cmd_col)!r} is not a number") from None
        text = (row.get(text_col) or "").strip() if text_col else ""
        if not text and name_col:
            text = (row.get(name_col) or "").strip()
        if not text:
            raise SpeakingFacesError(path, f"line {line}: command {key[1]} has an empty transcription")
        table[key] = text
    return table


def _read_subjects(path: Path) -> dict[int, dict[str, str]]:
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
    except (UnicodeDecodeError, csv.Error) as exc:
        raise SpeakingFacesError(path, f"not a readable CSV file ({exc})") from exc
    out = {}
    for row in rows:
        norm = {_normalise(k): (v or "").strip() for k, v in row.items() if k}
        try:
            out[int(norm.get("sub_id", ""))] = norm
        except ValueError:
            raise SpeakingFacesError(path, f"row without a numeric Sub_ID: {row}") from None
    return out


def anny_age(years: float) -> float:
    """MakeHuman's age axis, which ANNY keeps: 0 = 1 year, 0.1875 = 11, 0.5 = 25, 1 = 90,
    piecewise linear in between, clamped to [0, 1]."""
    knots_years, knots_value = (1.0, 11.0, 25.0, 90.0), (0.0, 0.1875, 0.5, 1.0)
    return float(np.interp(years, knots_years, knots_value))


def subject_phenotype(info: dict[str, str]) -> dict[str, float]:
    """ANNY phenotype from the subjects table: gender (MakeHuman's convention, 0 female, 1 male)
    and age (`anny_age`). Labels the table does not give stay at ANNY's average (0.5)."""
    phenotype = {}
    gender = info.get("gender", "").lower()
    if gender in ("female", "f"):
        phenotype["gender"] = 0.0
    elif gender in ("male", "m"):
        phenotype["gender"] = 1.0
    try:
        age = float(info.get("age", ""))
    except ValueError:
        age = None
    if age is not None and math.isfinite(age):
        phenotype["age"] = anny_age(age)
    return dict(sorted(phenotype.items()))


# ---------------------------------------------------------------------------------------------
# Files


def _read_frame(path: Path) -> np.ndarray:
    import imageio.v3 as iio

    if not path.is_file():
        raise SpeakingFacesError(path, "frame not found")
    try:
        image = iio.imread(path)
    except Exception as exc:  # noqa: BLE001 - imageio raises many types for a bad file
        raise SpeakingFacesError(path, f"not a readable PNG frame ({type(exc).__name__}: {exc})") from exc
    if image.ndim == 2:
        image = np.repeat(image[..., None], 3, axis=2)
    if image.ndim != 3 or image.shape[2] < 3:
        raise SpeakingFacesError(path, f"frame has shape {image.shape}; expected an RGB image")
    return np.ascontiguousarray(image[..., :3]).astype(np.uint8)


def _ffmpeg() -> str:
    import imageio_ffmpeg

    return imageio_ffmpeg.get_ffmpeg_exe()


def cut_audio(source: Path, target: Path, duration_s: float) -> Path:
    """The first `duration_s` seconds of `source` as 16 kHz mono 16-bit wav (bit-exact ffmpeg)."""
    if not source.is_file():
        raise SpeakingFacesError(source, "audio file not found")
    target.parent.mkdir(parents=True, exist_ok=True)
    command = [
        _ffmpeg(), "-nostdin", "-v", "error", "-y", "-i", str(source), "-t", f"{duration_s:.6f}",
        "-ac", "1", "-ar", str(AUDIO_RATE), "-c:a", "pcm_s16le", "-map_metadata", "-1",
        "-fflags", "+bitexact", "-flags:a", "+bitexact", str(target),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        message = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"ffmpeg exit {done.returncode}"
        raise SpeakingFacesError(source, f"not a readable audio file ({message})")
    from maskscore_core.speech.audio import read_wav

    try:
        samples, _rate = read_wav(target)
    except Exception as exc:  # noqa: BLE001 - AudioFileError or wave errors
        raise SpeakingFacesError(source, f"audio could not be decoded ({exc})") from exc
    if samples.size < AUDIO_RATE * 0.1:
        raise SpeakingFacesError(source, f"audio is too short ({samples.size / AUDIO_RATE:.3f} s)")
    return target


# ---------------------------------------------------------------------------------------------
# Extraction


@attrs.frozen
class TrialFailure:
    key: str
    path: str
    error: str


@attrs.frozen
class LoadResult:
    trials: tuple[Trial, ...] = attrs.field(converter=tuple)
    failures: tuple[TrialFailure, ...] = attrs.field(converter=tuple)


# Mouth opening per landmark scheme: (upper inner lip, lower inner lip, eye A points, eye B points).
_MOUTH_POINTS = {
    landmark_fit.MEDIAPIPE_SCHEME: (13, 14, [33, 133], [263, 362]),  # eye corners
}


def mouth_opening(landmarks) -> float:
    """Inner-lip gap (upper middle to lower middle) over the distance between the eye centres."""
    landmarks = landmark_fit.as_landmarks(landmarks)
    points = np.asarray(landmarks.points, dtype=np.float64)
    if landmarks.scheme in _MOUTH_POINTS:
        upper_i, lower_i, eye_a, eye_b = _MOUTH_POINTS[landmarks.scheme]
        upper, lower = points[upper_i], points[lower_i]
        right, left = points[eye_a].mean(axis=0), points[eye_b].mean(axis=0)
    else:
        names = landmark_fit.face_landmarks().names
        upper, lower = points[names.index("lip_inner_2")], points[names.index("lip_inner_6")]
        right = points[[i for i, n in enumerate(names) if n.startswith("eye_right_")]].mean(axis=0)
        left = points[[i for i, n in enumerate(names) if n.startswith("eye_left_")]].mean(axis=0)
    return float(np.linalg.norm(upper - lower) / max(np.linalg.norm(left - right), 1e-9))


def representative_index(landmarks: list[np.ndarray]) -> int:
    """The frame whose mouth opening is the clip's (lower) median; ties go to the earlier frame."""
    order = sorted(range(len(landmarks)), key=lambda i: (mouth_opening(landmarks[i]), i))
    return order[(len(order) - 1) // 2]


def _interpolate(a: BodyState, b: BodyState, w: float) -> BodyState:
    return attrs.evolve(a, pose=(1 - w) * a.pose + w * b.pose, expression=(1 - w) * a.expression + w * b.expression)


def _fit_sequence(landmarks, rep, camera, phenotype, config, anchors=None) -> tuple[list[BodyState], landmark_fit.FitResult]:
    """Fit the representative frame cold, then every `fit_stride`-th frame outwards, each warm-
    started from the previous fit; frames in between are interpolated."""
    cold = landmark_fit.FitConfig(adam_steps=config.fit_adam_steps, lbfgs_steps=config.fit_lbfgs_steps)
    warm = landmark_fit.FitConfig(adam_steps=0, lbfgs_steps=config.sequence_lbfgs_steps)
    if anchors is not None and anchors.scheme == landmark_fit.MEDIAPIPE_SCHEME:
        cold = attrs.evolve(landmark_fit.PIXEL_FIT, adam_steps=config.fit_adam_steps, lbfgs_steps=config.fit_lbfgs_steps)
        warm = attrs.evolve(landmark_fit.PIXEL_FIT, adam_steps=0, lbfgs_steps=config.sequence_lbfgs_steps)
    rep_fit = landmark_fit.fit_landmarks(landmarks[rep], camera, phenotype, cold, anchors=anchors)
    n = len(landmarks)
    keys = sorted(set(range(rep % config.fit_stride, n, config.fit_stride)) | {0, n - 1, rep})
    fitted = {rep: rep_fit.state}
    for direction in (1, -1):
        previous = rep_fit.state
        for index in (k for k in (keys if direction > 0 else reversed(keys)) if (k - rep) * direction > 0):
            previous = landmark_fit.fit_landmarks(landmarks[index], camera, phenotype, warm, init=previous, anchors=anchors).state
            fitted[index] = previous
    states = []
    for i in range(n):
        if i in fitted:
            states.append(fitted[i])
            continue
        lo = max(k for k in fitted if k < i)
        hi = min(k for k in fitted if k > i)
        states.append(_interpolate(fitted[lo], fitted[hi], (i - lo) / (hi - lo)))
    return states, rep_fit


def _write_npy(path: Path, array: np.ndarray) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, np.ascontiguousarray(array), allow_pickle=False)
    return str(path)


def extract_utterance(
    layout: SpeakingFacesLayout,
    utterance: Utterance,
    config: SpeakingFacesConfig,
    workdir: Path,
    detector: LandmarkDetector,
    depth_estimator: DepthEstimator | None = None,
) -> Trial:
    """Run the seven steps on one utterance; raises SpeakingFacesError naming the bad file."""
    import imageio.v3 as iio

    out = Path(workdir) / "speakingfaces" / utterance.key
    transcript = layout.transcript(utterance)  # step 5, first: cheap, and fails fast
    frame_paths = utterance.frame_paths(config.stream)
    if len(frame_paths) < config.min_frames:
        folder = utterance.folder / STREAMS[config.stream][0]
        raise SpeakingFacesError(
            folder, f"utterance {utterance.key} has {len(frame_paths)} {config.stream} frames; at least {config.min_frames} are needed"
        )
    frames = [_read_frame(path) for path in frame_paths]  # step 7 (decode; written below)
    shapes = {frame.shape for frame in frames}
    if len(shapes) != 1:
        raise SpeakingFacesError(frame_paths[0].parent, f"frames of {utterance.key} differ in size: {sorted(shapes)}")
    height, width = frames[0].shape[:2]
    # step 6 before the fit: a missing or corrupt audio file fails the utterance cheaply
    audio = cut_audio(utterance.audio_path(config.mic), out / "audio.wav", len(frames) / FPS)
    landmarks = []
    for index, (path, frame) in enumerate(zip(frame_paths, frames)):
        try:
            found = detector.detect(frame)
        except landmark_fit.FaceDetectionError as exc:
            raise SpeakingFacesError(path, f"frame {index}: {exc}") from None
        if found is None:
            raise SpeakingFacesError(path, f"frame {index}: the landmark detector found no face")
        landmarks.append(landmark_fit.as_landmarks(found))
    rep = representative_index(landmarks)  # step 1
    camera = landmark_fit.PinholeCamera.from_diagonal_fov(width, height, config.diagonal_fov_deg)
    phenotype = subject_phenotype(layout.subject_info(utterance.subject))
    anchors = detector.anchors() if hasattr(detector, "anchors") else None
    states, rep_fit = _fit_sequence(landmarks, rep, camera, phenotype, config, anchors)  # step 2

    extras = {
        "position": str(utterance.position),
        "command_id": str(utterance.command),
        "representative_frame": str(rep),
        "fit_mean_error_px": f"{rep_fit.mean_error_px:.4f}",
        "camera_position": json.dumps([round(float(x), 9) for x in rep_fit.camera_position]),
        "source_frames": str(frame_paths[0].parent),
    }
    thermal = utterance.frame_paths("thermal")
    if thermal:
        extras["thermal_frames"] = str(thermal[0].parent)
    if config.depth:  # step 3
        if depth_estimator is None:
            raise SpeakingFacesConfigError("depth was asked for but the depth estimator (MoGe-3) slot is empty")
        depth = np.asarray(depth_estimator.estimate(frames[rep]), dtype=np.float32)
        if depth.shape != (height, width) or not np.isfinite(depth).all():
            raise SpeakingFacesError(frame_paths[rep], f"depth estimator returned {depth.shape} or non-finite depth")
        extras["estimated_depth"] = _write_npy(out / "estimated_depth.npy", depth)
    if config.render:  # step 4
        from maskscore_core.body.reference_mesh import get_reference_mesh

        renderer = get_renderer(ViewConfig(count=config.render_views, resolution=config.render_resolution))
        result = renderer.render(get_reference_mesh().vertices([rep_fit.state])[0], what=utterance.key)
        extras["render_depth"] = _write_npy(out / "render_depth.npy", result.depth.astype(np.float32))
        extras["render_normals"] = _write_npy(out / "render_normals.npy", result.normals.astype(np.float32))
    frame_dir = out / "frames"  # step 7: the decoded sequence, renumbered from 0
    frame_dir.mkdir(parents=True, exist_ok=True)
    for index, frame in enumerate(frames):
        iio.imwrite(frame_dir / f"frame_{index:05d}.png", frame)
    extras["video_frames"] = str(frame_dir)
    image_path = frame_dir / f"frame_{rep:05d}.png"
    landmarks_path = out / "landmarks.json"
    landmarks_path.write_text(
        json.dumps([np.round(l.points, 6).tolist() for l in landmarks], separators=(",", ":")) + "\n", encoding="utf-8"
    )
    extras["landmarks"] = str(landmarks_path)
    return Trial(
        trial_id=utterance.key,
        source=SOURCE_NAME,
        subject=Subject(subject_id=f"sf-{utterance.subject:03d}", phenotype=phenotype, voice="en-us"),
        transcript=transcript,
        fps=FPS,
        frames=tuple(Frame(index=i, time_s=i / FPS, state=s) for i, s in enumerate(states)),
        audio_path=str(audio),
        image_path=str(image_path),
        extras=dict(sorted(extras.items())),
    )


def load(root: str | Path, config: SpeakingFacesConfig | dict, workdir: str | Path) -> LoadResult:
    """Every selected utterance as a trial; failing utterances go to `failures`, the rest load."""
    if isinstance(config, dict):
        config = SpeakingFacesConfig.from_dict({**config, "path": str(root)})
    layout = SpeakingFacesLayout(root)
    detector = landmark_detector(config.landmark_detector)
    estimator = _from_slot("depth estimator", _DEPTH_ESTIMATORS, config.depth_estimator, "MoGe-3 metric depth") if config.depth else None
    utterances = [
        u
        for u in layout.utterances()
        if (config.subjects is None or u.subject in config.subjects)
        and (config.positions is None or u.position in config.positions)
    ]
    if config.count is not None:
        utterances = utterances[: config.count]
    if not utterances:
        raise SpeakingFacesError(layout.root, "no SpeakingFaces utterances found (expected sub_<S>_ia/trial_<T>/... folders)")
    trials, failures = [], []
    for utterance in utterances:
        try:
            trials.append(extract_utterance(layout, utterance, config, Path(workdir), detector, estimator))
        except SpeakingFacesConfigError:
            raise
        except SpeakingFacesError as exc:
            failures.append(TrialFailure(utterance.key, exc.path, str(exc)))
        except (landmark_fit.LandmarkFitError, OSError, ValueError) as exc:
            failures.append(TrialFailure(utterance.key, str(utterance.folder), f"{type(exc).__name__}: {exc}"))
    return LoadResult(trials, failures)


def load_trials(root: str | Path, config: SpeakingFacesConfig | dict, workdir: str | Path | None = None) -> list[Trial]:
    """The trials only (see `load` for the failures); failures are also written to
    workdir/speakingfaces/failures.json so that a run's skipped utterances stay visible."""
    workdir = Path(workdir) if workdir is not None else Path.cwd() / "out"
    result = load(root, config, workdir)
    report = workdir / "speakingfaces" / "failures.json"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(
        json.dumps([attrs.asdict(f) for f in result.failures], indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    return list(result.trials)
