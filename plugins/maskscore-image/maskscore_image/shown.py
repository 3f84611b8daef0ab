"""Which facial actions a picture shows (`SHOWN_ACTIONS`, the modality's `shown_actions`), and
the measurement that chose them: an action set alone on a subject, drawn as this modality's
picture and read back through the detector and the fit (`read_back`)."""

from __future__ import annotations

# Those the detector and the landmark fit read back as themselves on every subject measured (the
# table in README.md, from `bench_landmark_fit.py --readback`): the refinement against the pixels
# reads more, but only where the subject's look explains the picture. A frame pair is an image edit only where
# these change. The fit's other actions read back on some faces and not on others, or on none:
# an edit made of them would make a row whose pictures barely differ, graded on the detector's noise.
SHOWN_ACTIONS: tuple[str, ...] = ("jawOpen", "mouthClose", "mouthSmileLeft", "mouthSmileRight")


def action_groups() -> dict[str, tuple[str, ...]]:
    """The fit's actions (`landmark_fit.PIXEL_ACTIONS`), a left/right pair as one group
    (mouthLeft and mouthRight are two moves, not a pair)."""
    from maskscore_core.trials.landmark_fit import PIXEL_ACTIONS

    groups: dict[str, tuple[str, ...]] = {}
    for name in PIXEL_ACTIONS:
        paired = name not in ("mouthLeft", "mouthRight") and name.endswith(("Left", "Right"))
        key = name.removesuffix("Left").removesuffix("Right") if paired else name
        groups[key] = groups.get(key, ()) + (name,)
    return groups


def read_back(names, subject, value: float = 0.5, size: int = 448, label: str = "") -> float:
    """The mean fitted value of the actions `names` set to `value` (every other action at rest)
    on `subject`'s phenotype, pose and look, drawn as this modality's picture of `size` px and
    read by the landmarks alone (`decode.landmark_fitter`): an edit must be read where the look
    does not explain a picture too."""
    import attrs
    import numpy as np

    from maskscore_core.body.anny_model import get_body_model
    from maskscore_face_landmarks.pixels import picture

    from .decode import landmark_fitter

    body = get_body_model()
    indices = [body.action_index(name) for name in names]
    expression = np.zeros(len(body.action_names))
    expression[indices] = value
    state = attrs.evolve(subject, expression=expression)
    fit = landmark_fitter().fit(picture(state, size), state, label or f"{', '.join(names)} at {value:g}")
    return float(fit.state.expression[indices].mean())
