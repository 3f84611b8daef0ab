"""The built-in trial source `anny`: synthetic talking-head trials that run anywhere.

`generate_trials(config, workdir)` draws subjects (`subjects`), gives each `trials_per_subject`
clips (`clips`), and writes under workdir:

- `audio/<trial_id>.wav`: the espeak-ng speech (16 kHz mono);
- `trials/<trial_id>.json`: the Trial record (records.converter), audio path relative to workdir;
- `video/<trial_id>/frame_00000.png` ...: rendered RGB frames, only when `render_video` is set
  (rendering costs time); the middle one is then the trial's `image_path` (its source frame).

Each trial also has an appearance (skin tan, key light, backdrop colour: `trials.appearances`,
drawn from the subject's own appearance stream), which changes between a subject's trials.

Every random choice comes from numpy Generators seeded with (seed, stream, subject, trial), so
the same config gives byte-identical files, and adding subjects or trials does not change the
ones already drawn.
"""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import numpy as np

from maskscore_core.plugin.records import Trial, converter
from maskscore_core.trials.appearances import trial_appearances
from maskscore_core.trials.clips import make_trial
from maskscore_core.trials.subjects import DEFAULT_MIN_DISTANCE, draw_subjects
from maskscore_core.metric.appearance import picture
from maskscore_core.metric.render import get_renderer
from maskscore_core.metric.views import ViewConfig

SOURCE_NAME = "anny"
_SUBJECT_STREAM, _TRIAL_STREAM, _COMMAND_STREAM, _APPEARANCE_STREAM = 0, 1, 2, 3
MAX_ALIGN_TRIES = 5


class SourceConfigError(ValueError):
    """An `anny` source option that is unknown or out of range."""


def _positive(_instance, attribute, value):
    if not value > 0:
        raise SourceConfigError(f"anny source: {attribute.name} must be positive, got {value}")


@attrs.frozen
class AnnySourceConfig:
    """Options of the built-in source. Clips use commands of at most `max_words` words."""

    seed: int = 0
    subjects: int = attrs.field(default=4, validator=_positive)
    trials_per_subject: int = attrs.field(default=2, validator=_positive)
    fps: float = attrs.field(default=25.0, converter=float, validator=_positive)
    min_distance: float = attrs.field(default=DEFAULT_MIN_DISTANCE, converter=float)
    max_words: int = attrs.field(default=6, validator=_positive)
    render_video: bool = False
    video_size: int = attrs.field(default=128, validator=_positive)

    @classmethod
    def from_dict(cls, options: dict) -> AnnySourceConfig:
        """Build from a plain dict (the `extract` hook's config); `count` means `subjects`."""
        options = dict(options)
        if "count" in options:
            options.setdefault("subjects", options.pop("count"))
        options.pop("path", None)  # the built-in source reads no files
        known = {field.name for field in attrs.fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise SourceConfigError(f"unknown anny source options {unknown}; known: {sorted(known)}")
        return cls(**options)


def _rng(config: AnnySourceConfig, *stream: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([int(config.seed), *stream]))


def _commands(max_words: int) -> list[str]:
    from maskscore_core import speech

    commands = [c for c in speech.load_commands() if len(c.split()) <= max_words]
    if len(commands) < 2:
        raise SourceConfigError(f"fewer than two built-in commands have at most {max_words} words")
    return commands


def trial_path(workdir: Path, trial_id: str) -> Path:
    return Path(workdir) / "trials" / f"{trial_id}.json"


def write_trial(trial: Trial, workdir: Path) -> Path:
    """The trial's JSON record, with its audio path relative to workdir (so files are portable)."""
    record = converter.unstructure(trial)
    for key in ("audio_path", "image_path"):
        if record[key]:
            record[key] = Path(record[key]).relative_to(Path(workdir)).as_posix()
    path = trial_path(workdir, trial.trial_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n", encoding="utf-8")
    return path


def read_trial(path: Path, workdir: Path | None = None) -> Trial:
    """A trial written by `write_trial`; the audio path is resolved against workdir."""
    path = Path(path)
    workdir = Path(workdir) if workdir is not None else path.parent.parent
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        trial = converter.structure(record, Trial)
    except FileNotFoundError:
        raise FileNotFoundError(f"trial file not found: {path}") from None
    except Exception as exc:  # json errors, or cattrs' ClassValidationError group
        raise ValueError(f"{path} is not a valid trial record: {exc}") from exc
    for key in ("audio_path", "image_path"):
        if getattr(trial, key):
            trial = attrs.evolve(trial, **{key: str(workdir / getattr(trial, key))})
    return trial


def render_frames(trial: Trial, workdir: Path, size: int) -> Path:
    """Render every frame of the trial (view 0 of the default views) as PNGs, shaded with the
    frame's appearance (`appearance.picture`); returns the folder."""
    import imageio.v3 as iio

    from maskscore_core.body.reference_mesh import get_reference_mesh

    folder = Path(workdir) / "video" / trial.trial_id
    folder.mkdir(parents=True, exist_ok=True)
    vertices = get_reference_mesh().vertices([frame.state for frame in trial.frames])
    renderer = get_renderer()
    view_0 = get_renderer(ViewConfig(count=1, resolution=size))  # the default views' camera 0
    for frame, verts in zip(trial.frames, vertices):
        if frame.state.appearance is None:
            image = renderer.render_rgb(verts, size, size, view_index=0)
        else:  # the frame's own skin, light and backdrop
            image = picture(view_0.render(verts), frame.state.appearance)
        iio.imwrite(folder / f"frame_{frame.index:05d}.png", image)
    return folder


def _make_aligned_trial(config, workdir, s_index, t_index, subject, order: list[str]) -> Trial:
    """The trial with the subject's next unused command that pocketsphinx can align.

    A few espeak-ng voice/command pairs do not align; such a command is dropped from `order`
    (so the choice stays deterministic) and the next one is tried, at most MAX_ALIGN_TRIES times.
    """
    from maskscore_core.speech import AlignmentError

    failures = []
    while order and len(failures) < MAX_ALIGN_TRIES:
        command = order[t_index] if t_index < len(order) else order[t_index % len(order)]
        rng = _rng(config, _TRIAL_STREAM, s_index, t_index)
        look = trial_look(s_index, t_index)
        appearance = trial_appearances(_rng(config, _APPEARANCE_STREAM, s_index), t_index + 1)[t_index]
        try:
            return make_trial(
                subject, t_index, command, config.fps, rng, workdir, look=look, source=SOURCE_NAME, appearance=appearance
            )
        except AlignmentError as exc:
            failures.append(str(exc))
            order.remove(command)
    raise SourceConfigError(f"no alignable command for {subject.subject_id} trial {t_index}: {'; '.join(failures)}")


def trial_look(subject_index: int, trial_index: int) -> str:
    """A subject's first trial has the usual look; later ones alternate between an accessory
    change and a regional change, starting with one or the other on alternate subjects, so that
    two trials per subject already give both the Part and the Region groups across subjects."""
    if trial_index == 0:
        return "usual"
    return "accessories" if (subject_index + trial_index) % 2 else "regions"


def generate_trials(config: AnnySourceConfig, workdir: Path) -> list[Trial]:
    """Make, write and return every trial of the config (subjects in order, then trials)."""
    if isinstance(config, dict):
        config = AnnySourceConfig.from_dict(config)
    workdir = Path(workdir)
    subjects = draw_subjects(_rng(config, _SUBJECT_STREAM), config.subjects, config.min_distance)
    commands = _commands(config.max_words)
    trials = []
    for s_index, subject in enumerate(subjects):
        # distinct commands for one subject's trials, so speech edits always change the words
        order = [commands[int(i)] for i in _rng(config, _COMMAND_STREAM, s_index).permutation(len(commands))]
        for t_index in range(config.trials_per_subject):
            trial = _make_aligned_trial(config, workdir, s_index, t_index, subject, order)
            if config.render_video:
                folder = render_frames(trial, workdir, config.video_size)
                middle = trial.frames[len(trial.frames) // 2].index
                trial = attrs.evolve(
                    trial,
                    image_path=str(folder / f"frame_{middle:05d}.png"),
                    extras={**trial.extras, "video_frames": folder.relative_to(workdir).as_posix()},
                )
            write_trial(trial, workdir)
            trials.append(trial)
    return trials


def load_trials(workdir: Path) -> list[Trial]:
    """Every trial JSON under workdir/trials, sorted by trial id."""
    folder = Path(workdir) / "trials"
    if not folder.is_dir():
        raise FileNotFoundError(f"no trials folder at {folder}")
    return [read_trial(path, workdir) for path in sorted(folder.glob("*.json"))]
